"""Unit tests: the Claude Code adapter (argv, env, parsing, session store, resume commands)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from review_loop.adapters.base import SessionFile
from review_loop.adapters.claude import ADAPTER, project_dir_name
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.models import (
    AgentRequest,
    Capabilities,
    DeliveryState,
    Failure,
    Outcome,
    Reply,
    Usage,
)
from tests.adapters.golden import CLAUDE_SID, PROMPT, REPO, finished, sample
from tests.adapters.test_contract import NO_PROJECT_CODE

NO_PROJECT_CODE_FLAGS = NO_PROJECT_CODE["claude"]

READ_ONLY = (
    "--permission-mode",
    "plan",
    "--tools",
    "Read,Grep,Glob",
    "--disallowedTools",
    "Write,Edit,NotebookEdit,Bash,Agent,WebFetch,WebSearch",
)
CAPS = Capabilities()


def test_new_session_argv_preassigns_the_requested_id() -> None:
    invocation = ADAPTER.build(
        AgentRequest(prompt=PROMPT, cwd=REPO, session_id=CLAUDE_SID),
        command=("claude",),
        capabilities=CAPS,
    )
    assert invocation.argv == (
        "claude", "-p", "--output-format", "json", *READ_ONLY, *NO_PROJECT_CODE_FLAGS,
        "--session-id", CLAUDE_SID,
    )  # fmt: skip
    assert invocation.session_id == CLAUDE_SID
    assert invocation.stdin == PROMPT.encode()
    assert invocation.cwd == REPO
    assert not invocation.isolate_in_copy


def test_new_session_without_an_id_gets_a_fresh_uuid4() -> None:
    request = AgentRequest(prompt=PROMPT, cwd=REPO)
    first = ADAPTER.build(request, command=("claude",), capabilities=CAPS)
    second = ADAPTER.build(request, command=("claude",), capabilities=CAPS)
    assert first.session_id is not None and second.session_id is not None
    assert first.session_id != second.session_id
    assert uuid.UUID(first.session_id).version == 4
    assert first.argv[-2:] == ("--session-id", first.session_id)


def test_resume_argv_uses_resume_instead_of_session_id() -> None:
    invocation = ADAPTER.build(
        AgentRequest(prompt=PROMPT, cwd=REPO, resume_session_id=CLAUDE_SID),
        command=("/opt/claude", "--model", "opus"),
        capabilities=CAPS,
    )
    assert invocation.argv == (
        "/opt/claude", "--model", "opus", "-p", "--output-format", "json", *READ_ONLY,
        *NO_PROJECT_CODE_FLAGS, "--resume", CLAUDE_SID,
    )  # fmt: skip
    assert "--session-id" not in invocation.argv
    assert invocation.session_id == CLAUDE_SID


def test_environment_disables_traffic_and_nested_launch_guard() -> None:
    invocation = ADAPTER.build(
        AgentRequest(prompt=PROMPT, cwd=REPO), command=("claude",), capabilities=CAPS
    )
    assert invocation.env == {
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    assert invocation.unset_env == ("CLAUDECODE",)


@pytest.mark.parametrize(
    "fields",
    [
        {"session_id": "not-a-uuid"},
        {"resume_session_id": "--dangerously-skip-permissions"},
        {"prompt": "   \n"},
        {"prompt": "bad \udc80 surrogate"},
    ],
    ids=["preassigned-not-uuid", "flag-like-resume", "blank-prompt", "surrogate"],
)
def test_unsafe_or_unusable_requests_are_refused(fields: dict[str, object]) -> None:
    request = AgentRequest(**{"prompt": PROMPT, "cwd": REPO, **fields})  # type: ignore[arg-type]
    with pytest.raises(AdapterRefusalError):
        ADAPTER.build(request, command=("claude",), capabilities=CAPS)


def test_empty_command_is_refused() -> None:
    with pytest.raises(AdapterRefusalError):
        ADAPTER.build(AgentRequest(prompt=PROMPT, cwd=REPO), command=(), capabilities=CAPS)


def test_capabilities_read_the_version() -> None:
    assert ADAPTER.probe_args() == ("--version",)
    caps = ADAPTER.capabilities("2.1.197 (Claude Code)\n")
    assert caps.version == "2.1.197"
    assert caps.read_only and caps.resumable and not caps.isolate_in_copy


def interpret(stdout: bytes = b"", stderr: bytes = b"", **changes: object) -> Outcome:
    invocation = ADAPTER.build(
        AgentRequest(prompt=PROMPT, cwd=REPO, session_id=CLAUDE_SID),
        command=("claude",),
        capabilities=CAPS,
    )
    return ADAPTER.interpret(invocation, finished(stdout, stderr, **changes))


def test_success_carries_cost_and_usage() -> None:
    outcome = interpret(sample("claude", "success.json"))
    assert isinstance(outcome, Reply)
    assert outcome.cost_usd == pytest.approx(0.0123)
    assert outcome.usage == Usage(input_tokens=10, output_tokens=5, cached_input_tokens=3)


def test_result_after_a_warning_line_is_still_read() -> None:
    stdout = b"Warning: something harmless\n" + sample("claude", "success.json")
    outcome = interpret(stdout)
    assert isinstance(outcome, Reply)
    assert outcome.text == "FAKE-ANSWER #1"


def test_empty_result_text_is_not_a_reply() -> None:
    data = json.loads(sample("claude", "success.json"))
    data["result"] = "  "
    outcome = interpret(json.dumps(data).encode())
    assert isinstance(outcome, Failure)
    assert outcome.reason == "empty output"
    assert outcome.session_id == CLAUDE_SID


def test_successful_json_with_non_zero_exit_is_not_a_reply() -> None:
    outcome = interpret(sample("claude", "success.json"), returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert outcome.reason == "non-zero exit 1"


def test_truncated_output_is_too_large_even_if_it_parses() -> None:
    outcome = interpret(sample("claude", "success.json"), stdout_truncated=True)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert outcome.reason == "output too large"
    assert outcome.session_id == CLAUDE_SID


def test_not_logged_in_in_text_mode_is_not_submitted() -> None:
    outcome = interpret(b"Not logged in \xc2\xb7 Please run /login\n", returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.NOT_SUBMITTED
    assert outcome.session_id is None


def test_unexplained_crash_keeps_the_preassigned_session_id() -> None:
    outcome = interpret(b"", b"Segmentation fault\n", returncode=139)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert outcome.reason == "non-zero exit 139"
    assert outcome.session_id == CLAUDE_SID
    assert "Segmentation fault" in outcome.detail


def test_api_error_detail_is_the_result_text() -> None:
    outcome = interpret(sample("claude", "api-401.json"), returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.detail.startswith("Failed to authenticate. API Error: 401")


# -- session store ---------------------------------------------------------------------------


def test_project_dir_name_escapes_every_non_alphanumeric() -> None:
    assert project_dir_name("/work/repo") == "-work-repo"
    assert project_dir_name("/tmp/research/My Repo.v2 space") == "-tmp-research-My-Repo-v2-space"
    assert project_dir_name("/tmp/é_x") == "-tmp---x"


def test_project_dir_name_for_long_paths_adds_a_java_hash() -> None:
    from review_loop.adapters.claude import _base36, _java_string_hash

    assert _java_string_hash("hello") == 99162322
    assert _java_string_hash("polygenelubricants") == -(2**31)
    assert _base36(2**31) == "zik0zk"
    long_path = "/" + "a" * 250
    name = project_dir_name(long_path)
    assert name == "-" + "a" * 199 + "-" + _base36(abs(_java_string_hash(long_path)))


def test_session_store_location(tmp_path: Path) -> None:
    home = tmp_path / "home"
    [store] = ADAPTER.session_stores({}, home, REPO)
    assert store.root == home / ".claude"
    assert store.pattern == "projects/-work-repo/*.jsonl"
    [store] = ADAPTER.session_stores({"CLAUDE_CONFIG_DIR": "/etc/cc"}, home, REPO)
    assert store.root == Path("/etc/cc")
    [store] = ADAPTER.session_stores({}, home, Path("/" + "b" * 300))
    assert store.pattern == "projects/-" + "b" * 199 + "-*/*.jsonl"


def session_file(
    head: bytes, *, directory: str = "-work-repo", stem: str = CLAUDE_SID
) -> SessionFile:
    path = Path("/home/u/.claude/projects") / directory / f"{stem}.jsonl"
    return SessionFile(path=path, head=head, mtime=1795946401.5)


def test_parse_session_reads_id_cwd_title_and_mtime() -> None:
    stored = ADAPTER.parse_session(session_file(sample("claude", "session.jsonl")), REPO)
    assert stored is not None
    assert stored.product == "claude"
    assert stored.session_id == CLAUDE_SID
    assert stored.cwd == "/work/repo"
    assert stored.title == "Review the change in src/app.py for thread safety and report findings."
    assert stored.updated == "2026-11-29T10:00:01.500Z"


def test_parse_session_skips_other_repositories_and_non_sessions() -> None:
    other = sample("claude", "session-other-cwd.jsonl")
    assert ADAPTER.parse_session(session_file(other), REPO) is None
    mine = sample("claude", "session.jsonl")
    assert ADAPTER.parse_session(session_file(mine, stem="agent-1234"), REPO) is None


def test_parse_session_finds_cwd_in_a_line_cut_by_the_head() -> None:
    head = (
        b'{"type":"user","message":{"role":"user","content":"'
        + b"x" * 500
        + b'"},"uuid":"u1","cwd":"/work/repo","sessionId":"'
    )
    stored = ADAPTER.parse_session(session_file(head), REPO)
    assert stored is not None
    assert stored.cwd == "/work/repo"
    assert stored.title is not None and stored.title.startswith("xxxx")
    assert len(stored.title) == 80


def test_parse_session_without_cwd_trusts_only_the_exact_project_directory() -> None:
    head = b'{"type":"queue-operation","operation":"enqueue","content":"' + b"y" * 100
    stored = ADAPTER.parse_session(session_file(head), REPO)
    assert stored is not None
    assert stored.cwd == str(REPO)
    assert ADAPTER.parse_session(session_file(head, directory="-work-repo-2"), REPO) is None


def test_escaped_key_inside_a_prompt_is_not_taken_for_cwd() -> None:
    head = b'{"type":"queue-operation","content":"see \\"cwd\\":\\"/etc\\" here'
    stored = ADAPTER.parse_session(session_file(head), REPO)
    assert stored is not None
    assert stored.cwd == str(REPO)


def test_resume_commands_match_the_original_tool() -> None:
    commands = ADAPTER.resume_commands(CLAUDE_SID, ("claude",))
    assert commands.interactive == f"claude --resume {CLAUDE_SID}"
    assert commands.headless == f'claude -p --resume {CLAUDE_SID} "<prompt>"'
    aliased = ADAPTER.resume_commands(CLAUDE_SID, ("ccw", "--profile", "work"))
    assert aliased.interactive == f"ccw --profile work --resume {CLAUDE_SID}"
