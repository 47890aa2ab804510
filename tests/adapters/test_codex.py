"""Unit tests: the Codex adapter (argv order, JSONL parsing, truncation, rollout store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from review_loop.adapters.base import SessionFile
from review_loop.adapters.codex import ADAPTER
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.models import (
    AgentRequest,
    Capabilities,
    DeliveryState,
    Failure,
    Invocation,
    Outcome,
    Reply,
    Usage,
)
from tests.adapters.golden import CODEX_TID, PROMPT, REPO, cut_middle, finished, sample

CAPS = Capabilities()
EXEC_FLAGS = (
    "exec", "--json", "-s", "read-only", "-c", 'sandbox_mode="read-only"',
    "-c", 'approval_policy="never"', "--skip-git-repo-check",
    "--disable", "unbounded_connection_retries", "--ignore-rules",
    "-c", 'projects={"/work/repo"={trust_level="untrusted"}}', "-C", "/work/repo",
)  # fmt: skip


def build(resume: str | None = None) -> Invocation:
    request = AgentRequest(prompt=PROMPT, cwd=REPO, resume_session_id=resume)
    return ADAPTER.build(request, command=("codex",), capabilities=CAPS)


def interpret(stdout: bytes = b"", stderr: bytes = b"", **changes: object) -> Outcome:
    return ADAPTER.interpret(build(), finished(stdout, stderr, **changes))


def events(*items: dict[str, object]) -> bytes:
    return b"".join(json.dumps(item, ensure_ascii=False).encode() + b"\n" for item in items)


def test_new_session_argv() -> None:
    invocation = build()
    assert invocation.argv == ("codex", *EXEC_FLAGS, "-")
    assert invocation.stdin == PROMPT.encode()
    assert invocation.session_id is None
    assert invocation.env == {}


def test_resume_puts_every_exec_flag_before_the_subcommand() -> None:
    invocation = build(CODEX_TID)
    assert invocation.argv == ("codex", *EXEC_FLAGS, "resume", CODEX_TID, "-")
    after = invocation.argv[invocation.argv.index("resume") :]
    assert "-s" not in after  # `codex exec resume` rejects -s
    assert invocation.session_id == CODEX_TID


def test_directory_that_reads_as_a_flag_is_refused() -> None:
    request = AgentRequest(prompt=PROMPT, cwd=Path("-weird"))
    with pytest.raises(AdapterRefusalError):
        ADAPTER.build(request, command=("codex",), capabilities=CAPS)


def test_capabilities_read_the_version_after_a_warning() -> None:
    probe = "WARNING: proceeding, even though we could not create PATH aliases\ncodex-cli 0.171.0\n"
    assert ADAPTER.capabilities(probe).version == "0.171.0"
    assert ADAPTER.capabilities(None).version is None


def test_success_carries_usage_and_ignores_warnings() -> None:
    outcome = interpret(sample("codex", "success.jsonl"))
    assert isinstance(outcome, Reply)
    assert outcome.usage == Usage(input_tokens=10, output_tokens=5, cached_input_tokens=2)
    assert outcome.cost_usd is None


def test_last_agent_message_wins() -> None:
    stdout = events(
        {"type": "thread.started", "thread_id": CODEX_TID},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "final"}},
        {"type": "turn.completed", "usage": {}},
    )
    outcome = interpret(stdout)
    assert isinstance(outcome, Reply)
    assert outcome.text == "final"
    assert outcome.usage is None


def test_turn_failed_with_exit_zero_is_still_a_failure() -> None:
    stdout = events(
        {"type": "thread.started", "thread_id": CODEX_TID},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "partial"}},
        {"type": "turn.failed", "error": {"message": "stream closed"}},
    )
    outcome = interpret(stdout)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert (outcome.reason, outcome.detail, outcome.session_id) == (
        "turn failed",
        "stream closed",
        CODEX_TID,
    )


def test_answer_with_non_zero_exit_is_not_a_reply() -> None:
    outcome = interpret(sample("codex", "success.jsonl"), returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.reason == "non-zero exit 1"
    assert outcome.session_id == CODEX_TID


def test_refusal_words_after_the_model_answered_do_not_prove_anything() -> None:
    stdout = events(
        {"type": "thread.started", "thread_id": CODEX_TID},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}},
        {"type": "turn.failed", "error": {"message": "Missing environment variable: 'X'."}},
    )
    outcome = interpret(stdout, returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN


def test_thread_without_answer_is_empty_output_with_the_thread_id() -> None:
    outcome = interpret(events({"type": "thread.started", "thread_id": CODEX_TID}))
    assert isinstance(outcome, Failure)
    assert (outcome.reason, outcome.session_id) == ("empty output", CODEX_TID)


def test_resume_failure_keeps_the_resumed_id() -> None:
    invocation = build(CODEX_TID)
    outcome = ADAPTER.interpret(invocation, finished(b"", b"boom\n", returncode=1))
    assert isinstance(outcome, Failure)
    assert outcome.session_id == CODEX_TID
    assert not outcome.session_not_found


def long_stream(final_text: str, filler: str = "x") -> bytes:
    output = filler * 200_000
    return events(
        {"type": "thread.started", "thread_id": CODEX_TID},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "early note"}},
        {
            "type": "item.completed",
            "item": {"type": "command_execution", "aggregated_output": output},
        },
        {"type": "item.completed", "item": {"type": "agent_message", "text": final_text}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 2}},
    )


def test_truncated_stream_reads_the_answer_from_the_tail() -> None:
    data = long_stream("FINAL")
    stdout = cut_middle(data, 4096, 4096)
    outcome = interpret(stdout, stdout_truncated=True, stdout_bytes=len(data))
    assert isinstance(outcome, Reply)
    assert outcome.text == "FINAL"
    assert outcome.session_id == CODEX_TID


def test_truncated_stream_whose_answer_was_cut_is_too_large() -> None:
    data = long_stream("F" * 50_000)
    stdout = cut_middle(data, 4096, 4096)
    outcome = interpret(stdout, stdout_truncated=True, stdout_bytes=len(data))
    assert isinstance(outcome, Failure)
    assert outcome.reason == "output too large"
    assert outcome.session_id == CODEX_TID


def test_truncated_stream_cut_inside_a_character_still_reads_the_tail() -> None:
    data = long_stream("Ünïcödé ✓", filler="é")
    stdout = cut_middle(data, 4097, 4097)  # both cuts split a two-byte character
    with pytest.raises(UnicodeDecodeError):
        stdout.decode()
    outcome = interpret(stdout, stdout_truncated=True, stdout_bytes=len(data))
    assert isinstance(outcome, Reply)
    assert outcome.text == "Ünïcödé ✓"


# -- session store ---------------------------------------------------------------------------


def test_session_store_location(tmp_path: Path) -> None:
    [store] = ADAPTER.session_stores({}, tmp_path, REPO)
    assert store.root == tmp_path / ".codex"
    assert store.pattern == "sessions/*/*/*/rollout-*.jsonl"
    assert store.head_bytes == 8192
    [store] = ADAPTER.session_stores({"CODEX_HOME": "/srv/codex"}, tmp_path, REPO)
    assert store.root == Path("/srv/codex")


def rollout(name: str, head_bytes: int | None = 8192) -> SessionFile:
    data = sample("codex", name)
    path = Path(f"/h/.codex/sessions/2026/11/29/rollout-2026-11-29T10-00-00-{CODEX_TID}.jsonl")
    return SessionFile(
        path=path, head=data if head_bytes is None else data[:head_bytes], mtime=1795946401.5
    )


@pytest.mark.parametrize("head_bytes", [8192, None], ids=["cut-line-1", "whole-file"])
def test_parse_rollout_reads_line_one(head_bytes: int | None) -> None:
    stored = ADAPTER.parse_session(rollout("rollout-this-repo.jsonl", head_bytes), REPO)
    assert stored is not None
    assert (stored.product, stored.session_id, stored.cwd) == ("codex", CODEX_TID, "/work/repo")
    assert stored.updated == "2026-11-29T10:00:01.500Z"


def test_parse_rollout_skips_other_repositories() -> None:
    assert ADAPTER.parse_session(rollout("rollout-other-repo.jsonl"), REPO) is None
    assert ADAPTER.parse_session(rollout("rollout-other-repo.jsonl", None), REPO) is None


def test_parse_rollout_skips_files_that_do_not_start_with_session_meta() -> None:
    head = events({"timestamp": "t", "type": "event_msg", "payload": {"cwd": "/work/repo"}})
    path = Path(f"/h/.codex/sessions/2026/11/29/rollout-x-{CODEX_TID}.jsonl")
    assert ADAPTER.parse_session(SessionFile(path=path, head=head, mtime=0.0), REPO) is None


def test_parse_rollout_falls_back_to_the_file_name_for_the_id() -> None:
    head = events({"type": "session_meta", "payload": {"cwd": "/work/repo"}})
    path = Path(f"/h/.codex/sessions/2026/11/29/rollout-2026-11-29T10-00-00-{CODEX_TID}.jsonl")
    stored = ADAPTER.parse_session(SessionFile(path=path, head=head, mtime=0.0), REPO)
    assert stored is not None
    assert stored.session_id == CODEX_TID
    assert stored.updated == "1970-01-01T00:00:00.000Z"


def test_resume_commands_match_the_original_tool() -> None:
    commands = ADAPTER.resume_commands(CODEX_TID, ("codex",))
    assert commands.interactive == f"codex resume {CODEX_TID}"
    assert commands.headless == f'codex exec resume {CODEX_TID} "<prompt>"'


@pytest.mark.parametrize(
    "change",
    [
        {"timed_out": True, "returncode": -15},
        {"stopped": True, "returncode": -15},
        {"cancelled": True, "returncode": -9},
    ],
    ids=["timeout", "stopped", "cancelled"],
)
def test_interrupted_run_keeps_the_thread_it_started(change: dict[str, object]) -> None:
    # Real 0.171 output of a run killed while the model hung (tests/e2e/test_consult_real.py):
    # thread.started, a metadata warning, turn.started — the session exists in codex's store.
    stdout = sample("codex", "timeout-after-thread-started.jsonl")
    outcome = interpret(stdout, **change)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert outcome.session_id == CODEX_TID


def test_interrupted_resume_without_output_keeps_the_resumed_id() -> None:
    outcome = ADAPTER.interpret(build(CODEX_TID), finished(b"", timed_out=True, returncode=-15))
    assert isinstance(outcome, Failure)
    assert (outcome.reason, outcome.session_id) == ("timeout", CODEX_TID)


def test_spawn_error_has_no_session() -> None:
    outcome = ADAPTER.interpret(
        build(CODEX_TID), finished(b"", spawn_error="gone", returncode=None)
    )
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.NOT_SUBMITTED
    assert outcome.session_id is None
