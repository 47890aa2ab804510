"""Unit tests: the Grok adapter (variant detection, both argv shapes, parsing, store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from review_loop.adapters.base import SessionFile
from review_loop.adapters.grok import ADAPTER, BUILD, UNKNOWN, VIBE
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.models import (
    AgentRequest,
    Capabilities,
    DeliveryState,
    Failure,
    Invocation,
    Outcome,
    Reply,
)
from tests.adapters.golden import GROK_SID, PROMPT, REPO, cut_middle, finished, sample

BUILD_FLAGS = (
    "--output-format", "json", "--sandbox", "read-only", "--tools", "read_file,grep,list_dir",
    "--disallowed-tools", "search_tool,use_tool", "--deny", "MCPTool",
    "--permission-mode", "dontAsk", "--no-subagents", "--disable-web-search", "--no-auto-update",
)  # fmt: skip
VIBE_HELP = sample("grok", "help-vibe-0.0.34.txt").decode()
BUILD_HELP = sample("grok", "help-build-synthetic.txt").decode()
BUILD_CAPS = ADAPTER.capabilities(BUILD_HELP)
VIBE_CAPS = ADAPTER.capabilities(VIBE_HELP)


def build(caps: Capabilities, prompt: str = PROMPT, resume: str | None = None) -> Invocation:
    request = AgentRequest(prompt=prompt, cwd=REPO, resume_session_id=resume)
    return ADAPTER.build(request, command=("grok",), capabilities=caps)


def test_probe_is_help() -> None:
    assert ADAPTER.probe_args() == ("--help",)


def test_npm_grok_cli_is_detected_from_its_real_help() -> None:
    caps = VIBE_CAPS
    assert caps.variant == VIBE
    assert (caps.read_only, caps.resumable, caps.isolate_in_copy) == (False, False, True)


def test_npm_help_mixed_with_version_output_is_still_detected() -> None:
    assert ADAPTER.capabilities("1.0.1\n" + VIBE_HELP).variant == VIBE


def test_grok_build_is_detected_from_sandbox_and_output_format() -> None:
    assert BUILD_CAPS.variant == BUILD
    assert BUILD_CAPS.read_only and BUILD_CAPS.resumable and not BUILD_CAPS.isolate_in_copy


@pytest.mark.parametrize(
    "probe", [None, "", "Usage: grok [options]\n  --output-format <f>\n"], ids=repr
)
def test_unknown_help_is_never_assumed_read_only(probe: str | None) -> None:
    caps = ADAPTER.capabilities(probe)
    assert caps.variant == UNKNOWN
    assert not caps.read_only and not caps.resumable and caps.isolate_in_copy


def test_grok_build_argv_new_and_resume() -> None:
    new = build(BUILD_CAPS)
    assert new.argv == ("grok", "-p", PROMPT, *BUILD_FLAGS)
    assert (new.stdin, new.session_id, new.isolate_in_copy) == (None, None, False)
    resumed = build(BUILD_CAPS, resume=GROK_SID)
    assert resumed.argv == ("grok", "-r", GROK_SID, "-p", PROMPT, *BUILD_FLAGS)
    assert resumed.session_id == GROK_SID


def test_grok_build_prompt_that_looks_like_a_flag_stays_a_value() -> None:
    invocation = build(BUILD_CAPS, prompt="--sandbox off")
    assert invocation.argv[1:3] == ("-p", "\n--sandbox off")
    assert invocation.argv[3:] == BUILD_FLAGS


@pytest.mark.parametrize("caps", [VIBE_CAPS, ADAPTER.capabilities(None), Capabilities()])
def test_unsafe_variants_run_isolated_with_the_prompt_as_one_argument(caps: Capabilities) -> None:
    invocation = build(caps, prompt="-rf / ; $(x)")
    assert invocation.argv == ("grok", "-d", "/work/repo", "-p", "-rf / ; $(x)")
    assert invocation.isolate_in_copy
    assert invocation.stdin is None
    assert invocation.cwd == REPO
    assert not {"-k", "--api-key", "-u", "--base-url"} & set(invocation.argv)


@pytest.mark.parametrize("caps", [VIBE_CAPS, Capabilities()])
def test_unsafe_variants_cannot_resume(caps: Capabilities) -> None:
    with pytest.raises(AdapterRefusalError, match="no sessions"):
        build(caps, resume=GROK_SID)


@pytest.mark.parametrize("caps", [VIBE_CAPS, BUILD_CAPS], ids=["vibe", "build"])
@pytest.mark.parametrize(
    "prompt", ["x" * 131_072, "é" * 70_000, "nul \x00 byte"], ids=["128KiB", "multibyte", "nul"]
)
def test_prompt_that_cannot_be_one_argument_is_refused(caps: Capabilities, prompt: str) -> None:
    with pytest.raises(AdapterRefusalError):
        build(caps, prompt=prompt)


def test_prompt_just_under_the_argument_limit_is_accepted() -> None:
    assert build(VIBE_CAPS, prompt="x" * 131_071).argv[-1] == "x" * 131_071


# -- interpret: Grok Build -------------------------------------------------------------------


def interpret_build(stdout: bytes = b"", stderr: bytes = b"", **changes: object) -> Outcome:
    return ADAPTER.interpret(build(BUILD_CAPS), finished(stdout, stderr, **changes))


@pytest.mark.parametrize("key", ["result", "output"])
def test_build_text_may_come_from_result_or_output(key: str) -> None:
    outcome = interpret_build(json.dumps({key: "answer", "session_id": GROK_SID}).encode())
    assert isinstance(outcome, Reply)
    assert (outcome.text, outcome.session_id) == ("answer", GROK_SID)


def test_build_non_zero_exit_is_delivery_unknown_with_session() -> None:
    outcome = interpret_build(sample("grok", "build-success.json"), returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert outcome.session_id == GROK_SID


def test_build_missing_session_on_resume_is_flagged() -> None:
    invocation = build(BUILD_CAPS, resume=GROK_SID)
    stderr = f"Error: session {GROK_SID} not found\n".encode()
    outcome = ADAPTER.interpret(invocation, finished(b"", stderr, returncode=1))
    assert isinstance(outcome, Failure)
    assert outcome.session_not_found
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN  # wording not measured


def test_build_truncated_output_is_too_large() -> None:
    outcome = interpret_build(sample("grok", "build-success.json"), stdout_truncated=True)
    assert isinstance(outcome, Failure)
    assert outcome.reason == "output too large"


# -- interpret: npm grok-cli -----------------------------------------------------------------


def interpret_vibe(stdout: bytes = b"", stderr: bytes = b"", **changes: object) -> Outcome:
    return ADAPTER.interpret(build(VIBE_CAPS), finished(stdout, stderr, **changes))


def test_vibe_reply_has_no_session() -> None:
    outcome = interpret_vibe(sample("grok", "vibe-success.jsonl"))
    assert isinstance(outcome, Reply)
    assert outcome.session_id is None
    assert outcome.usage is None


def test_vibe_error_outside_the_agent_loop_exits_one() -> None:
    stdout = b'{"role":"user","content":"q"}\n{"role":"assistant","content":"Error: boom"}\n'
    outcome = interpret_vibe(stdout, returncode=1)
    assert isinstance(outcome, Failure)
    assert (outcome.state, outcome.reason) == (DeliveryState.DELIVERY_UNKNOWN, "non-zero exit 1")
    assert outcome.detail == "Error: boom"


def test_vibe_truncated_output_trusts_only_a_whole_last_line() -> None:
    filler = json.dumps({"role": "tool", "tool_call_id": "c", "content": "x" * 100_000})
    data = sample("grok", "vibe-success.jsonl").replace(
        b'{"role": "assistant", "content": "FAKE',
        filler.encode() + b'\n{"role": "assistant", "content": "FAKE',
    )
    outcome = interpret_vibe(cut_middle(data, 4096, 4096), stdout_truncated=True)
    assert isinstance(outcome, Reply)
    assert outcome.text == "FAKE-ANSWER #1"

    long_answer = json.dumps({"role": "assistant", "content": "A" * 100_000}).encode() + b"\n"
    data = sample("grok", "vibe-success.jsonl") + long_answer
    outcome = interpret_vibe(cut_middle(data, 4096, 4096), stdout_truncated=True)
    assert isinstance(outcome, Failure)
    assert outcome.reason == "output too large"


# -- session store and resume commands -------------------------------------------------------


def test_session_store_location(tmp_path: Path) -> None:
    [store] = ADAPTER.session_stores({}, tmp_path, REPO)
    assert store.root == tmp_path / ".grok" / "sessions"
    assert store.pattern == "*/*/summary.json"
    [store] = ADAPTER.session_stores({"GROK_HOME": "/g"}, tmp_path, REPO)
    assert store.root == Path("/g/sessions")


def summary(head: bytes, project: str = "%2Fwork%2Frepo") -> SessionFile:
    path = Path(f"/h/.grok/sessions/{project}/{GROK_SID}/summary.json")
    return SessionFile(path=path, head=head, mtime=1795946401.5)


def test_parse_summary() -> None:
    stored = ADAPTER.parse_session(summary(sample("grok", "build-summary.json")), REPO)
    assert stored is not None
    assert (stored.product, stored.session_id, stored.cwd) == ("grok", GROK_SID, "/work/repo")
    assert stored.title == "Thread safety review of src/app.py"
    assert stored.updated == "2026-11-29T10:00:01.500Z"


def test_parse_summary_of_another_repository_is_skipped() -> None:
    head = json.dumps({"info": {"id": GROK_SID, "cwd": "/work/other"}}).encode()
    assert ADAPTER.parse_session(summary(head), REPO) is None


def test_parse_summary_without_fields_falls_back_to_the_path() -> None:
    stored = ADAPTER.parse_session(summary(b"{}"), REPO)
    assert stored is not None
    assert (stored.session_id, stored.cwd, stored.title) == (GROK_SID, "/work/repo", None)
    assert ADAPTER.parse_session(summary(b"{}", project="%2Fwork%2Fother"), REPO) is None


def test_resume_commands_for_grok_build() -> None:
    commands = ADAPTER.resume_commands(GROK_SID, ("grok",))
    assert commands.interactive == f"grok -r {GROK_SID}"
    assert commands.headless == f'grok -r {GROK_SID} -p "<prompt>"'
    aliased = ADAPTER.resume_commands(GROK_SID, ("grok00x",), capabilities=BUILD_CAPS)
    assert aliased.interactive == f"grok00x -r {GROK_SID}"


def test_resume_commands_for_a_cli_without_sessions_are_none() -> None:
    commands = ADAPTER.resume_commands(GROK_SID, ("grok",), capabilities=VIBE_CAPS)
    assert (commands.interactive, commands.headless) == (None, None)
