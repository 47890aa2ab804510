"""Contract tests: ``sessions`` asks git for the tracked records while it reads them.

``sessions._records`` starts ``git ls-files`` in a thread before reading the records
(``docs/performance.md``). What it answers is what it answered when git ran after the
reading: a committed record is skipped, git's absence is an error only when there are
records to filter, and no thread (hence no git) outlives the call.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator.sessions.listing import RUNTIME, list_sessions
from tests.gitrepo import committed_repo


def record(repo: Path, packet: str, session: str) -> Path:
    path = repo / RUNTIME / "main" / packet / "reviewer-session.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"product": "codex", "sessionId": session, "updated": "2026-01-01T00:00:00Z"})
    )
    return path


def test_contract_a_committed_record_is_skipped_and_no_thread_is_left(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo", {"app.py": "x\n"})
    committed = record(repo, "p1", "committed-1")
    record(repo, "p2", "local-2")
    subprocess.run(["git", "-C", str(repo), "add", "-f", str(committed)], check=True)
    before = threading.active_count()
    listed = list_sessions(repo, env={"HOME": str(tmp_path / "home")})
    assert [item.session.session_id for item in listed] == ["local-2"]
    assert threading.active_count() == before
    # no record to filter: git was asked all the same, and is waited for
    empty = committed_repo(tmp_path / "empty", {"app.py": "x\n"})
    (empty / RUNTIME / "main").mkdir(parents=True)
    assert list_sessions(empty, env={"HOME": str(tmp_path / "home")}) == []
    assert threading.active_count() == before


def test_contract_without_git_records_are_refused_and_no_records_are_fine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = committed_repo(tmp_path / "repo", {"app.py": "x\n"})
    (repo / RUNTIME / "main").mkdir(parents=True)
    empty_path = tmp_path / "no-git"
    empty_path.mkdir()
    monkeypatch.setenv("PATH", str(empty_path))
    home = {"HOME": str(tmp_path / "home")}
    assert list_sessions(repo, env=home) == []  # nothing to filter: git is not needed
    record(repo, "p1", "s-1")
    with pytest.raises(InputError, match="git"):
        list_sessions(repo, env=home)


def test_contract_a_record_too_deep_to_parse_is_skipped_as_non_json(tmp_path: Path) -> None:
    # json.loads raises RecursionError (not a ValueError) on deep nesting: such a file is
    # skipped as any file that is not JSON, never the end of the whole listing.
    repo = committed_repo(tmp_path / "repo", {"app.py": "x\n"})
    record(repo, "p1", "s-1")
    deep = repo / RUNTIME / "main" / "p2" / "reviewer-session.json"
    deep.parent.mkdir(parents=True)
    deep.write_text("[" * 200_000)
    listed = list_sessions(repo, env={"HOME": str(tmp_path / "home")})
    assert [item.session.session_id for item in listed] == ["s-1"]
