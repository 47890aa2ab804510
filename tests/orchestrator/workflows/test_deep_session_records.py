"""Contract tests: a session record nested too deep for ``json.loads`` is unreadable.

Records live under ``.review-handoff/`` in the reviewed repository (untrusted). On deep
nesting ``json.loads`` raises ``RecursionError``, not a ``ValueError``: the readers that
skip a record that is not JSON must skip this one too, never end the command with a crash.
"""

from __future__ import annotations

import json
from pathlib import Path

from review_loop.orchestrator.workflows import converge_store, review_run

DEEP = "[" * 200_000


def record_dir(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / ".review-handoff" / "runtime" / "r" / "p"
    directory.mkdir(parents=True)
    (directory / "reviewer-session.json").write_text(text)
    return directory


def test_contract_the_review_runs_stored_session_skips_a_record_too_deep(tmp_path: Path) -> None:
    good = record_dir(tmp_path / "good", json.dumps({"product": "codex", "sessionId": "s-1"}))
    assert review_run._stored_session(good, "codex") == "s-1"  # the reader works
    assert review_run._stored_session(record_dir(tmp_path / "deep", DEEP), "codex") is None


def test_contract_a_converge_runs_record_handle_skips_a_record_too_deep(tmp_path: Path) -> None:
    good = record_dir(tmp_path / "good", json.dumps({"product": "codex", "sessionId": "s-1"}))
    assert converge_store._read_record(good) == ("codex", "s-1")  # the reader works
    assert converge_store._read_record(record_dir(tmp_path / "deep", DEEP)) is None
