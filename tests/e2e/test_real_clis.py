"""Smoke tests of the real CLIs, driven directly (no dispatcher) against the fake model API.

They pin down what ``reference/cli-adapters.md`` reports for each pinned version: a one-shot
prompt returns the scripted answer (and a session id), resuming that id replays the first turn
to the model, an HTTP 401 comes back as an error, and a scripted read-only tool call runs.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import Ran, run
from tests.fakes.model_api import FAKE_API_KEY, FakeModelAPI, Reply, cli_env

CliBin = Callable[[str], Path]


def assert_uuid(value: Any) -> str:
    assert isinstance(value, str)
    uuid.UUID(value)  # raises when it is not one
    return value


# ----------------------------------------------------------------------------- claude


def claude(
    cli_bin: CliBin, api: FakeModelAPI, home: Path, repo: Path, prompt: str, *extra: str
) -> Ran:
    argv = [cli_bin("claude"), "-p", "--output-format", "json", "--permission-mode", "plan"]
    return run([*argv, *extra], env=cli_env("claude", api, home), cwd=repo, stdin=prompt)


def test_claude_one_shot(cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path):
    model_api.script("the scripted claude answer")
    ran = claude(cli_bin, model_api, cli_home, git_repo, "review this please")

    assert ran.returncode == 0, ran.describe()
    result = ran.json()
    assert result["type"] == "result"
    assert result["is_error"] is False
    assert result["result"] == "the scripted claude answer"
    assert_uuid(result["session_id"])
    (turn,) = model_api.turns("anthropic")
    assert turn.path == "/v1/messages"
    assert turn.headers["x-api-key"] == FAKE_API_KEY
    assert turn.headers["x-claude-code-session-id"] == result["session_id"]
    assert turn.body["stream"] is True
    assert "review this please" in turn.last_user_text


def test_claude_resume_replays_first_turn(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.script("first answer", "second answer")
    first = claude(cli_bin, model_api, cli_home, git_repo, "first question")
    assert first.returncode == 0, first.describe()
    sid = first.json()["session_id"]

    second = claude(cli_bin, model_api, cli_home, git_repo, "second question", "--resume", sid)

    assert second.returncode == 0, second.describe()
    assert second.json()["session_id"] == sid
    assert second.json()["result"] == "second answer"
    resumed = model_api.turns("anthropic")[-1]
    roles_texts = resumed.messages
    assert any(r == "user" and "first question" in t for r, t in roles_texts)
    assert any(r == "assistant" and "first answer" in t for r, t in roles_texts)
    assert "second question" in resumed.last_user_text
    session_files = list((cli_home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
    assert len(session_files) == 1


def test_claude_http_401_is_an_error(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.default = Reply.error(401, "fake 401 bad key")
    ran = claude(cli_bin, model_api, cli_home, git_repo, "anything")

    assert ran.returncode == 1, ran.describe()
    result = ran.json()
    assert result["is_error"] is True
    assert result["api_error_status"] == 401
    assert "fake 401 bad key" in result["result"]
    assert len(model_api.turns()) == 2  # CLAUDE_CODE_MAX_RETRIES=1: one retry, then it gives up


def test_claude_runs_a_read_tool(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    # In-band marker this time: the fake calls the tool, then quotes what the tool returned.
    readme = git_repo / "README.md"
    prompt = f'read the readme [[TOOL Read {{"file_path": "{readme}"}}]]'
    ran = claude(cli_bin, model_api, cli_home, git_repo, prompt)

    assert ran.returncode == 0, ran.describe()
    result = ran.json()["result"]
    assert result.startswith("TOOL RESULT: ")
    assert "hello from the e2e repo" in result
    assert [t.reply for t in model_api.turns("anthropic")] == ["tool", "text"]


# ----------------------------------------------------------------------------- codex


def codex(
    cli_bin: CliBin, api: FakeModelAPI, home: Path, repo: Path, prompt: str, *tail: str
) -> Ran:
    argv = [cli_bin("codex"), "exec", "--json", "-s", "read-only", *tail, "-"]
    return run(argv, env=cli_env("codex", api, home), cwd=repo, stdin=prompt)


def codex_events(ran: Ran) -> tuple[str | None, list[str], list[dict[str, Any]]]:
    """(thread_id, agent message texts, turn.failed events) of a ``codex exec --json`` run."""
    events = ran.jsonl()
    thread = next((e["thread_id"] for e in events if e.get("type") == "thread.started"), None)
    texts = [
        e["item"]["text"]
        for e in events
        if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
    ]
    failed = [e for e in events if e.get("type") == "turn.failed"]
    return thread, texts, failed


def test_codex_one_shot(cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path):
    model_api.script("the scripted codex answer")
    ran = codex(cli_bin, model_api, cli_home, git_repo, "review this please")

    assert ran.returncode == 0, ran.describe()
    thread, texts, failed = codex_events(ran)
    assert texts == ["the scripted codex answer"]
    assert not failed
    assert_uuid(thread)
    (turn,) = model_api.turns("responses")
    assert turn.path == "/v1/responses"
    assert turn.headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert turn.body["stream"] is True
    assert turn.last_user_text == "review this please"
    assert '"sandbox_mode":"read-only"' in turn.headers.get("x-codex-turn-metadata", "")


def test_codex_resume_replays_first_turn(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.script("first answer", "second answer")
    first = codex(cli_bin, model_api, cli_home, git_repo, "first question")
    assert first.returncode == 0, first.describe()
    thread, _, _ = codex_events(first)
    assert thread

    second = codex(cli_bin, model_api, cli_home, git_repo, "second question", "resume", thread)

    assert second.returncode == 0, second.describe()
    thread2, texts, failed = codex_events(second)
    assert thread2 == thread
    assert texts == ["second answer"]
    assert not failed
    resumed = model_api.turns("responses")[-1]
    assert ("user", "first question") in resumed.messages
    assert ("assistant", "first answer") in resumed.messages
    assert resumed.last_user_text == "second question"
    assert list((cli_home / ".codex" / "sessions").glob(f"*/*/*/rollout-*-{thread}.jsonl"))


def test_codex_http_401_is_an_error(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.default = Reply.error(401, "fake 401 bad key")
    ran = codex(cli_bin, model_api, cli_home, git_repo, "anything")

    assert ran.returncode == 1, ran.describe()
    _, texts, failed = codex_events(ran)
    assert not texts
    assert failed, ran.describe()
    message = failed[-1]["error"]["message"]
    assert "401" in message
    assert "fake 401 bad key" in message
    assert len(model_api.turns()) == 2  # stream_max_retries=1: one retry, then it gives up


def test_codex_unreachable_api_fails_fast_with_our_config(
    cli_bin: CliBin, cli_home: Path, git_repo: Path
):
    # By default codex retries a refused connection forever; the config cli_env writes
    # ([features] unbounded_connection_retries = false, stream_max_retries = 1) makes it give up.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    argv = [cli_bin("codex"), "exec", "--json", "-s", "read-only", "-"]
    env = cli_env("codex", f"http://127.0.0.1:{closed_port}", cli_home)
    ran = run(argv, env=env, cwd=git_repo, stdin="anything", timeout=30)

    assert ran.returncode == 1, ran.describe()
    _, texts, failed = codex_events(ran)
    assert not texts
    assert "Connection failed" in failed[-1]["error"]["message"]
    assert ran.seconds < 20


def test_codex_runs_a_read_only_command(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.script(Reply.tool_then("exec_command", {"cmd": "cat README.md"}, then="read it"))
    ran = codex(cli_bin, model_api, cli_home, git_repo, "read the readme")

    assert ran.returncode == 0, ran.describe()
    assert codex_events(ran)[1] == ["read it"]
    follow_up = model_api.turns("responses")[-1]
    output = follow_up.body["input"][-1]
    assert output["type"] == "function_call_output"
    assert "hello from the e2e repo" in str(output["output"])


# ----------------------------------------------------------------------------- gemini


def gemini(
    cli_bin: CliBin, api: FakeModelAPI, home: Path, repo: Path, prompt: str, *extra: str
) -> Ran:
    argv = [cli_bin("gemini"), "-o", "json", "--approval-mode", "plan", *extra, "-p", ""]
    return run(argv, env=cli_env("gemini", api, home), cwd=repo, stdin=prompt)


def test_gemini_one_shot(cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path):
    model_api.script("the scripted gemini answer")
    ran = gemini(cli_bin, model_api, cli_home, git_repo, "review this please")

    assert ran.returncode == 0, ran.describe()
    result = ran.json()
    assert result["response"] == "the scripted gemini answer"
    assert "error" not in result
    assert_uuid(result["session_id"])
    (turn,) = model_api.turns("gemini")
    assert turn.path.startswith("/v1beta/models/")
    assert turn.path.endswith(":streamGenerateContent")
    assert turn.query == {"alt": "sse"}
    assert turn.headers["x-goog-api-key"] == FAKE_API_KEY
    assert "review this please" in turn.last_user_text


def test_gemini_resume_replays_first_turn(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.script("first answer", "second answer")
    first = gemini(cli_bin, model_api, cli_home, git_repo, "first question")
    assert first.returncode == 0, first.describe()
    sid = first.json()["session_id"]

    second = gemini(cli_bin, model_api, cli_home, git_repo, "second question", "--resume", sid)

    assert second.returncode == 0, second.describe()
    assert second.json()["session_id"] == sid
    assert second.json()["response"] == "second answer"
    resumed = model_api.turns("gemini")[-1]
    assert any(r == "user" and "first question" in t for r, t in resumed.messages)
    assert ("assistant", "first answer") in resumed.messages
    assert "second question" in resumed.last_user_text


def test_gemini_http_401_is_an_error(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.default = Reply.error(401, "fake 401 bad key")
    ran = gemini(cli_bin, model_api, cli_home, git_repo, "anything")

    assert ran.returncode == 401 & 0xFF, ran.describe()  # 145: the HTTP status, truncated
    assert ran.stdout.strip() == ""
    error = ran.stderr_json()["error"]
    assert error["code"] == 401
    assert "fake 401 bad key" in error["message"]
    assert len(model_api.turns()) == 1  # a 401 is not retried
    assert list((cli_home / "tmp").glob("gemini-client-error-*.json"))  # TMPDIR, not /tmp


def test_gemini_runs_a_read_tool(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    readme = str(git_repo / "README.md")
    model_api.script(Reply.tool_then("read_file", {"file_path": readme}, then="read it"))
    ran = gemini(cli_bin, model_api, cli_home, git_repo, "read the readme")
    assert [t.reply for t in model_api.turns("gemini")] == ["tool", "text"], ran.describe()

    assert ran.returncode == 0, ran.describe()
    assert ran.json()["response"] == "read it"
    follow_up = model_api.turns("gemini")[-1]
    assert "hello from the e2e repo" in str(follow_up.body["contents"][-1]["parts"])


# ----------------------------------------------------------------------------- grok


def grok(cli_bin: CliBin, api: FakeModelAPI, home: Path, repo: Path, prompt: str) -> Ran:
    argv = [cli_bin("grok"), "-d", repo, "-p", prompt]  # no stdin support: argv only
    return run(argv, env=cli_env("grok", api, home), cwd=repo)


def grok_answer(ran: Ran) -> str:
    assistant = [m for m in ran.jsonl() if m.get("role") == "assistant"]
    assert assistant, ran.describe()
    return str(assistant[-1].get("content"))


def test_grok_one_shot(cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path):
    model_api.script("the scripted grok answer")
    ran = grok(cli_bin, model_api, cli_home, git_repo, "review this please")

    assert ran.returncode == 0, ran.describe()
    assert grok_answer(ran) == "the scripted grok answer"
    (turn,) = model_api.turns("chat")
    assert turn.path == "/v1/chat/completions"
    assert turn.headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert turn.body.get("stream") in (None, False)
    assert turn.last_user_text == "review this please"
    # 0.0.34 drops its settings into the repo it runs in: the adapter has to cope with that.
    assert (git_repo / ".grok" / "settings.json").is_file()


def test_grok_http_401_still_exits_zero(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    model_api.default = Reply.error(401, "fake 401 bad key")
    ran = grok(cli_bin, model_api, cli_home, git_repo, "anything")

    assert ran.returncode == 0, ran.describe()  # the trap the adapter must catch
    answer = grok_answer(ran)
    assert answer.startswith("Sorry, I encountered an error:")
    assert "401" in answer
    assert len(model_api.turns()) == 1  # the OpenAI SDK does not retry a 401


def test_grok_runs_a_read_tool(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    readme = str(git_repo / "README.md")
    model_api.script(Reply.tool_then("view_file", {"path": readme}, then="read it"))
    ran = grok(cli_bin, model_api, cli_home, git_repo, "read the readme")

    assert ran.returncode == 0, ran.describe()
    assert grok_answer(ran) == "read it"
    follow_up = model_api.turns("chat")[-1]
    assert follow_up.body["messages"][-1]["role"] == "tool"
    assert "hello from the e2e repo" in follow_up.body["messages"][-1]["content"]


@pytest.mark.parametrize("product", ["claude", "codex", "gemini", "grok"])
def test_cli_reports_its_pinned_version(product: str, cli_bin: CliBin, tmp_path: Path):
    pinned = {"claude": "2.1.197", "codex": "0.171.0", "gemini": "0.61.0", "grok": "1.0.1"}
    home = tmp_path / "home"
    env = cli_env(product, "http://127.0.0.1:9", home)
    ran = run([cli_bin(product), "--version"], env=env, cwd=tmp_path, timeout=30)
    assert ran.returncode == 0, ran.describe()
    assert pinned[product] in ran.stdout  # grok 0.0.34 calls itself 1.0.1


def test_a_hanging_model_is_bounded_and_leaves_no_process(
    cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path
):
    # codex's own stream idle timeout is minutes long: only our wall-clock bound ends this run.
    model_api.default = Reply.hang()
    argv = [cli_bin("codex"), "exec", "--json", "-s", "read-only", "-"]
    env = cli_env("codex", model_api, cli_home)
    with pytest.raises(pytest.fail.Exception, match="process group killed"):
        run(argv, env=env, cwd=git_repo, stdin="anything", timeout=3)
    assert model_api.turns()[0].reply == "hang"
