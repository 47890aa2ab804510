"""Unit tests: the Gemini CLI adapter (argv, stderr JSON errors, usage, chat store)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from review_loop.adapters.base import SessionFile
from review_loop.adapters.gemini import ADAPTER
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
from tests.adapters.golden import GEMINI_SID, PROMPT, REPO, finished, sample

CAPS = Capabilities()
POLICY = Path(__file__).parents[2] / "review_loop" / "adapters" / "gemini_read_only.toml"
DEFAULTS = Path(__file__).parents[2] / "review_loop" / "adapters" / "gemini_defaults.json"
HEAD = (
    "gemini", "-o", "json", "--approval-mode", "plan", "--admin-policy", str(POLICY),
    "--skip-trust", "-p", "",
)  # fmt: skip


def build(**fields: object) -> Invocation:
    request = AgentRequest(**{"prompt": PROMPT, "cwd": REPO, **fields})  # type: ignore[arg-type]
    return ADAPTER.build(request, command=("gemini",), capabilities=CAPS)


def interpret(stdout: bytes = b"", stderr: bytes = b"", **changes: object) -> Outcome:
    return ADAPTER.interpret(build(session_id=GEMINI_SID), finished(stdout, stderr, **changes))


def test_new_session_argv_preassigns_the_id() -> None:
    invocation = build(session_id=GEMINI_SID)
    assert invocation.argv == (*HEAD, "--session-id", GEMINI_SID)
    assert invocation.session_id == GEMINI_SID
    assert invocation.stdin == PROMPT.encode()
    assert invocation.env == {
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(DEFAULTS),
    }


def test_new_session_without_an_id_gets_a_uuid() -> None:
    invocation = build()
    assert invocation.session_id is not None
    assert invocation.argv == (*HEAD, "--session-id", invocation.session_id)


def test_resume_argv_replaces_the_session_id_flag() -> None:
    invocation = build(resume_session_id=GEMINI_SID)
    assert invocation.argv == (*HEAD, "--resume", GEMINI_SID)
    assert "--session-id" not in invocation.argv
    assert invocation.session_id == GEMINI_SID


def test_read_only_policy_denies_leaving_plan_mode_and_writing() -> None:
    # gemini silently ignores a missing or unreadable policy file, so check it here: headless
    # 0.61 auto-approves exit_plan_mode and then runs every tool (tests/e2e/test_consult_real).
    assert POLICY.is_file()
    rules = tomllib.loads(POLICY.read_text())["rule"]
    denied = {
        tool
        for rule in rules
        if rule["decision"] == "deny" and "modes" not in rule and rule["priority"] >= 999
        for tool in ([rule["toolName"]] if isinstance(rule["toolName"], str) else rule["toolName"])
    }
    assert {"exit_plan_mode", "write_file", "replace", "run_shell_command"} <= denied
    assert "," not in str(POLICY)  # --admin-policy splits its value at commas


GEMINI_CHAINS = ("preview", "auto-preview", "default", "auto-default", "lite")  # 0.61's own


def test_every_run_gets_the_system_defaults_that_bound_a_refusal() -> None:
    # gemini silently ignores a missing defaults file and then retries a refusal without
    # end (tests/e2e/test_gemini_refusals_real.py), so check what it must say here.
    assert build().env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"] == str(DEFAULTS)
    settings = json.loads(DEFAULTS.read_text())
    assert settings["general"]["maxAttempts"] == 2
    assert settings["experimental"]["dynamicModelConfiguration"] is True
    assert settings["modelConfigs"]["modelChains"] == {name: [] for name in GEMINI_CHAINS}


def error_document(message: str, code: int) -> str:
    return json.dumps({"session_id": GEMINI_SID, "error": {"message": message, "code": code}})


def test_gemini_s_own_error_class_names_a_429() -> None:
    # Google says "exceeded your current quota" for a per-minute limit and a daily quota
    # alike; gemini told them apart (RetryableQuotaError / TerminalQuotaError).
    exceeded = "You exceeded your current quota, please check your plan and billing details."
    for error_class, reason in (
        ("RetryableQuotaError", "rate_limited"),
        ("TerminalQuotaError", "quota_exhausted"),
    ):
        stderr = f"Full report available at: x.json {error_class}: {exceeded}\n"
        outcome = interpret(b"", (stderr + error_document(exceeded, 429)).encode(), returncode=1)
        assert isinstance(outcome, Failure)
        assert (outcome.state, outcome.reason) == (DeliveryState.DELIVERY_UNKNOWN, reason)


def test_a_model_without_capacity_is_a_rate_not_a_used_up_quota() -> None:
    busy = "No capacity available for model gemini-x: MODEL_CAPACITY_EXHAUSTED"
    stderr = f"TerminalQuotaError: {busy}\n{error_document(busy, 429)}"
    outcome = interpret(b"", stderr.encode(), returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.reason == "rate_limited"


def test_an_exit_code_in_the_error_document_is_not_an_http_status() -> None:
    # a 404's document carries gemini's exit code 1; without the class, the words name it
    missing = "models/gemini-x is not found for API version v1beta"
    outcome = interpret(b"", error_document(missing, 1).encode(), returncode=1)
    assert isinstance(outcome, Failure)
    assert outcome.reason == "model_unavailable"


def test_preassigned_id_must_be_a_uuid() -> None:
    with pytest.raises(AdapterRefusalError):
        build(session_id="latest")


def test_capabilities_read_the_version() -> None:
    assert ADAPTER.probe_args() == ("--version",)
    assert ADAPTER.capabilities("0.61.0\n").version == "0.61.0"


def test_usage_is_summed_over_models() -> None:
    outcome = interpret(sample("gemini", "success.json"))
    assert isinstance(outcome, Reply)
    assert outcome.usage == Usage(input_tokens=14, output_tokens=8, cached_input_tokens=2)


def test_success_without_stats_has_no_usage() -> None:
    stdout = json.dumps({"session_id": GEMINI_SID, "response": "ok"}).encode()
    outcome = interpret(stdout)
    assert isinstance(outcome, Reply)
    assert outcome.usage is None


def test_error_json_after_log_lines_on_stderr_is_found() -> None:
    stderr = b"Loaded cached credentials.\n" + sample("gemini", "api-401.stderr.json")
    outcome = interpret(b"", stderr, returncode=145)
    assert isinstance(outcome, Failure)
    assert (outcome.state, outcome.reason) == (DeliveryState.DELIVERY_UNKNOWN, "auth_failed")
    assert "fake 401" in outcome.detail


def test_error_object_after_a_stack_dump_is_the_last_top_level_object() -> None:
    # Real 0.61 stderr: the stack dump holds braces ("_ApiError: {...}", "Turn.run (...) {")
    # before the pretty-printed error object, so neither the whole text nor one line parses.
    outcome = interpret(
        b"", sample("gemini", "api-401-after-stack-trace.stderr.txt"), returncode=145
    )
    assert isinstance(outcome, Failure)
    assert (outcome.state, outcome.reason) == (DeliveryState.DELIVERY_UNKNOWN, "auth_failed")
    assert outcome.session_id == GEMINI_SID
    assert outcome.detail == (
        '{"error":{"code":401,"message":"fake 401 bad key","status":"UNAUTHENTICATED"}}'
    )


def test_last_error_object_wins_and_trailing_lines_are_ignored() -> None:
    first = json.dumps({"session_id": GEMINI_SID, "error": {"message": "old", "code": 500}})
    last = json.dumps(
        {"session_id": GEMINI_SID, "error": {"message": "new", "code": 401}}, indent=2
    )
    stderr = f"log {{ not json\n{first}\n{last}\nflushing telemetry }}\n".encode()
    outcome = interpret(b"", stderr, returncode=145)
    assert isinstance(outcome, Failure)
    assert (outcome.reason, outcome.detail) == ("auth_failed", "new")


def test_auth_error_later_in_a_run_is_not_proof_of_non_submission() -> None:
    stderr = json.dumps(
        {"session_id": GEMINI_SID, "error": {"message": "OAuth token expired", "code": 41}}
    ).encode()
    outcome = interpret(b"", stderr, returncode=41)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN


def test_input_error_other_than_session_handling_is_delivery_unknown() -> None:
    outcome = interpret(b"", b"Something about an @ command\n", returncode=42)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert outcome.reason == "non-zero exit 42"


def test_session_id_taken_is_not_submitted() -> None:
    stderr = (
        f'Error starting session: Session ID "{GEMINI_SID}" already exists. '
        "Use --resume to resume it, or provide a different ID.\n"
    ).encode()
    outcome = interpret(b"", stderr, returncode=42)
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.NOT_SUBMITTED
    assert not outcome.session_not_found


def test_error_object_on_stdout_is_a_failure() -> None:
    stdout = json.dumps({"session_id": GEMINI_SID, "error": {"message": "x", "code": 500}})
    outcome = interpret(stdout.encode())
    assert isinstance(outcome, Failure)
    assert outcome.reason == "api error 500"


def test_truncated_output_is_too_large() -> None:
    outcome = interpret(sample("gemini", "success.json"), stdout_truncated=True)
    assert isinstance(outcome, Failure)
    assert (outcome.reason, outcome.session_id) == ("output too large", GEMINI_SID)


def test_empty_response_is_not_a_reply() -> None:
    outcome = interpret(json.dumps({"session_id": GEMINI_SID, "response": ""}).encode())
    assert isinstance(outcome, Failure)
    assert outcome.reason == "empty output"


# -- session store ---------------------------------------------------------------------------


def test_session_store_location(tmp_path: Path) -> None:
    [store] = ADAPTER.session_stores({}, tmp_path, REPO)
    assert store.root == tmp_path / ".gemini" / "tmp"
    assert store.pattern == "*/chats/session-*.jsonl"
    assert store.sidecars == ("../.project_root",)
    [store] = ADAPTER.session_stores({"GEMINI_CLI_HOME": "/alt"}, tmp_path, REPO)
    assert store.root == Path("/alt/.gemini/tmp")


def chat(head: bytes, project_root: bytes | None) -> SessionFile:
    path = Path("/h/.gemini/tmp/repo/chats/session-2026-11-29T10-00-3c9b1f2e.jsonl")
    sidecars = {} if project_root is None else {"../.project_root": project_root}
    return SessionFile(path=path, head=head, mtime=1795946401.5, sidecars=sidecars)


def test_parse_session_with_matching_project_root() -> None:
    head = sample("gemini", "session.jsonl")
    stored = ADAPTER.parse_session(chat(head, sample("gemini", "project_root.txt")), REPO)
    assert stored is not None
    assert (stored.product, stored.session_id, stored.cwd) == ("gemini", GEMINI_SID, "/work/repo")
    assert stored.title == "Review the change in src/app.py for thread safety."
    assert stored.updated == "2026-11-29T10:00:01.500Z"


def test_parse_session_of_another_project_is_skipped() -> None:
    head = sample("gemini", "session.jsonl")
    assert ADAPTER.parse_session(chat(head, b"/work/other\n"), REPO) is None


def test_parse_session_without_sidecar_checks_the_project_hash() -> None:
    meta = {
        "sessionId": GEMINI_SID,
        "projectHash": hashlib.sha256(b"/work/repo").hexdigest(),
        "kind": "main",
        "summary": "Thread safety review",
    }
    head = json.dumps(meta).encode() + b"\n"
    stored = ADAPTER.parse_session(chat(head, None), REPO)
    assert stored is not None
    assert stored.title == "Thread safety review"
    meta["projectHash"] = "0" * 64
    assert ADAPTER.parse_session(chat(json.dumps(meta).encode(), None), REPO) is None


def test_subagent_chats_and_unreadable_heads_are_skipped() -> None:
    meta = {"sessionId": GEMINI_SID, "kind": "subagent"}
    assert ADAPTER.parse_session(chat(json.dumps(meta).encode(), b"/work/repo"), REPO) is None
    assert ADAPTER.parse_session(chat(b"\xff\xfe", b"/work/repo"), REPO) is None


def test_resume_commands() -> None:
    commands = ADAPTER.resume_commands(GEMINI_SID, ("gemini",))
    assert commands.interactive == f"gemini --resume {GEMINI_SID}"
    assert commands.headless == f'gemini --resume {GEMINI_SID} -p "<prompt>"'
