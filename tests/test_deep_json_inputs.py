"""Contract tests: JSON nested too deep for ``json.loads`` is "not JSON", never a crash.

``json.loads`` raises ``RecursionError`` (not a ``ValueError``) on deep nesting. Each reader
here takes untrusted text — a reviewer's reply (which a hostile repository can steer), a
diff of the repository, a file under ``.review-handoff/``, a journal line — and treats what
is not JSON as such; nesting too deep must take that same path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.agents import review_prompt, verification_audit, verify_diff
from review_loop.orchestrator.journal import store
from review_loop.orchestrator.workflows import pending_answer

DEEP = "[" * 200_000


def fenced(text: str) -> str:
    return f"Here it is:\n```json\n{text}\n```\n"


def test_contract_a_verdict_nested_too_deep_is_a_parse_failure() -> None:
    assert verify_diff.parse_verdict(fenced(DEEP)) == verify_diff.PARSE_FAILURE


def test_contract_scenarios_nested_too_deep_are_none() -> None:
    assert verify_diff.parse_scenarios_reply(fenced(DEEP)) is None


def test_contract_an_audit_reply_nested_too_deep_holds_no_json_object() -> None:
    with pytest.raises(verification_audit.ConcernReplyError, match="no JSON object"):
        verification_audit._json_object(fenced(DEEP))


def test_contract_an_untracked_symlink_chunk_with_a_path_too_deep_has_no_path() -> None:
    chunk = f"review-evidence untracked-symlink-v1\nmode 120000\n{DEEP}\n"
    assert review_prompt._chunk_path(chunk.split("\n")) is None
    named = 'review-evidence untracked-symlink-v1\nmode 120000\n"link"\n'
    assert review_prompt._chunk_path(named.split("\n")) == "link"  # the reader works


def test_contract_a_pending_answer_nested_too_deep_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "pending-answer.json"
    path.write_text(DEEP)
    assert pending_answer._read(path, in_repo=False) is None


def test_contract_a_journal_line_nested_too_deep_is_no_event() -> None:
    assert store._event(DEEP.encode()) is None


DEEP_OBJECT = '{"a":' * 200_000


def test_contract_a_cli_stdout_nested_too_deep_holds_no_json_object() -> None:
    from review_loop.adapters import _common, base

    assert _common.parse_json_object(DEEP_OBJECT) is None
    assert _common.parse_json_object('{"result": "ok"}') == {"result": "ok"}  # it works
    deep = DEEP_OBJECT.encode()
    assert _common.last_json_lines(b"x" * 2 * len(deep) + b"\n" + deep + b"\n", 1) is None
    assert list(base.json_lines(DEEP_OBJECT + '\n{"type":"done"}')) == [{"type": "done"}]


def test_contract_a_codex_rollout_whose_first_line_is_nested_too_deep_is_no_crash() -> None:
    from review_loop.adapters.base import SessionFile
    from review_loop.adapters.codex import ADAPTER

    path = Path("/h/.codex/sessions/2026/11/29/rollout-x.jsonl")
    head = b"[" * 8192  # the head a session store reads (8 KiB), nested past the limit
    stored = ADAPTER.parse_session(SessionFile(path=path, head=head, mtime=0.0), Path("/r"))
    assert stored is None
