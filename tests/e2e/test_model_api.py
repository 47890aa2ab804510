"""The fake model API on its own, over plain HTTP (urllib): every wire shape, the error shapes,
scripting, delays and hangs, the request log, clean shutdown, and the per-CLI env helpers."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_api import (
    FAKE_API_KEY,
    FakeModelAPI,
    Reply,
    cli_env,
    serve_model_api,
)

ANTHROPIC = "/v1/messages?beta=true"
RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
GEMINI_STREAM = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
GEMINI_JSON = "/v1beta/models/gemini-x-lite:generateContent"


def post(
    api: FakeModelAPI,
    path: str,
    body: Any,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
) -> tuple[int, dict[str, str], bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        api.base_url + path,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


def sse(raw: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) for each SSE event."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
        events.append((name, json.loads("\n".join(data))))
    return events


def anthropic_body(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        **extra,
    }


def responses_body(text: str) -> dict[str, Any]:
    return {
        "model": "gpt-x",
        "stream": True,
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "d"}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        ],
    }


def chat_body(text: str) -> dict[str, Any]:
    return {
        "model": "grok-x",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": text}],
    }


def gemini_body(text: str) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": text}]}]}


@pytest.fixture
def api() -> Any:
    with serve_model_api() as server:
        yield server


# ----------------------------------------------------------------------------- wire shapes


def test_anthropic_text_stream(api: FakeModelAPI):
    api.script("hello there")
    status, headers, raw = post(api, ANTHROPIC, anthropic_body("hi"))

    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = sse(raw)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    assert events[0][1]["message"]["model"] == "claude-x"
    assert events[3][1]["delta"] == {"type": "text_delta", "text": "hello there"}
    assert events[5][1]["delta"]["stop_reason"] == "end_turn"


def test_anthropic_tool_call_then_text(api: FakeModelAPI):
    api.script(Reply.tool_then("Read", {"file_path": "/x"}, then="done reading"))
    _, _, raw = post(api, ANTHROPIC, anthropic_body("go"))
    events = dict(sse(raw))
    block = events["content_block_start"]["content_block"]
    assert block["type"] == "tool_use"
    assert block["name"] == "Read"
    delta = events["content_block_delta"]["delta"]
    assert delta["type"] == "input_json_delta"
    assert json.loads(delta["partial_json"]) == {"file_path": "/x"}
    assert events["message_delta"]["delta"]["stop_reason"] == "tool_use"

    _, _, raw = post(api, ANTHROPIC, anthropic_body("next"))
    assert dict(sse(raw))["content_block_delta"]["delta"]["text"] == "done reading"


def test_head_preflight(api: FakeModelAPI):
    def head(path: str) -> int:
        req = urllib.request.Request(api.base_url + path, method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            err.close()
            return err.code

    assert head("/") == 200
    api.head_status = 404
    assert head("/") == 404
    (first, second) = api.requests
    assert (first.method, first.api, first.turn, first.reply) == ("HEAD", "head", False, "head 200")
    assert second.reply == "head 404"
    assert api.turns() == []


def test_responses_text_stream(api: FakeModelAPI):
    api.script("codex says hi")
    status, headers, raw = post(api, RESPONSES, responses_body("hi"))

    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = sse(raw)
    assert [name for name, _ in events] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ]
    item = events[1][1]["item"]
    assert item["type"] == "message"
    assert item["role"] == "assistant"
    assert item["content"] == [{"type": "output_text", "text": "codex says hi", "annotations": []}]
    completed = events[2][1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"] == [item]
    assert completed["usage"]["total_tokens"] == 15


def test_responses_tool_call(api: FakeModelAPI):
    api.script(Reply.tool("exec_command", {"cmd": "ls"}))
    _, _, raw = post(api, RESPONSES, responses_body("go"))
    item = sse(raw)[1][1]["item"]
    assert item["type"] == "function_call"
    assert item["name"] == "exec_command"
    assert item["call_id"].startswith("call_")
    assert json.loads(item["arguments"]) == {"cmd": "ls"}


def test_chat_completion_text_and_tool(api: FakeModelAPI):
    api.script("grok says hi", Reply.tool("bash", {"command": "ls"}))
    status, headers, raw = post(api, CHAT, chat_body("hi"))
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    body = json.loads(raw)
    assert body["object"] == "chat.completion"
    assert body["model"] == "grok-x"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "grok says hi"}
    assert body["choices"][0]["finish_reason"] == "stop"

    choice = json.loads(post(api, CHAT, chat_body("go"))[2])["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": "ls"}


def test_gemini_stream_text_and_tool(api: FakeModelAPI):
    api.script("gemini says hi", Reply.tool("read_file", {"file_path": "a"}))
    status, headers, raw = post(api, GEMINI_STREAM, gemini_body("hi"))
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    ((name, chunk),) = sse(raw)
    assert name is None  # plain `data:` lines
    candidate = chunk["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "gemini says hi"}]}
    assert candidate["finishReason"] == "STOP"

    ((_, chunk),) = sse(post(api, GEMINI_STREAM, gemini_body("go"))[2])
    assert chunk["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "read_file", "args": {"file_path": "a"}}}
    ]


def test_gemini_utility_call_gets_json_fitting_the_schema(api: FakeModelAPI):
    api.script("kept for the turn")
    schema = {
        "type": "object",
        "properties": {
            "complexity_reasoning": {"type": "string"},
            "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100},
            "next_speaker": {"type": "string", "enum": ["model", "user"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    body = {
        **gemini_body("route me"),
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema},
    }
    status, _, raw = post(api, GEMINI_JSON, body)

    assert status == 200
    text = json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {
        "complexity_reasoning": "fake",
        "complexity_score": 1,
        "next_speaker": "user",
        "tags": [],
    }
    (req,) = api.requests
    assert (req.api, req.turn, req.reply) == ("gemini-utility", False, "utility")
    assert api.pending == 1  # a utility call never eats a scripted reply


def test_token_counting_and_unknown_routes(api: FakeModelAPI):
    assert json.loads(post(api, "/v1/messages/count_tokens", {})[2]) == {"input_tokens": 10}
    assert json.loads(post(api, "/v1beta/models/m:countTokens", {})[2]) == {"totalTokens": 10}
    status, _, raw = post(api, "/nowhere", {})
    assert status == 404
    assert "no route POST /nowhere" in json.loads(raw)["error"]["message"]
    assert [r.api for r in api.requests] == ["anthropic-count", "gemini-count", "other"]
    assert api.turns() == []


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        (
            ANTHROPIC,
            anthropic_body("x"),
            {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}},
        ),
        (
            RESPONSES,
            responses_body("x"),
            {
                "error": {
                    "message": "bad key",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        ),
        (
            CHAT,
            chat_body("x"),
            {
                "error": {
                    "message": "bad key",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        ),
        (
            GEMINI_STREAM,
            gemini_body("x"),
            {"error": {"code": 401, "message": "bad key", "status": "UNAUTHENTICATED"}},
        ),
    ],
    ids=["anthropic", "responses", "chat", "gemini"],
)
def test_scripted_401_in_each_api_shape(api: FakeModelAPI, path: str, body: Any, expected: Any):
    api.script(Reply.error(401, "bad key"))
    status, headers, raw = post(api, path, body)
    assert status == 401
    assert headers["Content-Type"] == "application/json"
    assert json.loads(raw) == expected
    assert api.turns()[0].reply == "error 401"


def test_error_types_follow_the_status(api: FakeModelAPI):
    api.script(Reply.error(529), Reply.error(500), Reply.error(503))
    assert json.loads(post(api, ANTHROPIC, anthropic_body("x"))[2])["error"] == {
        "type": "overloaded_error",
        "message": "fake 529",
    }
    assert json.loads(post(api, RESPONSES, responses_body("x"))[2])["error"]["type"] == (
        "server_error"
    )
    assert json.loads(post(api, GEMINI_STREAM, gemini_body("x"))[2])["error"]["status"] == (
        "UNAVAILABLE"
    )


# ----------------------------------------------------------------------------- scripting


def test_default_reply_counts_turns_and_can_be_replaced(api: FakeModelAPI):
    def answer() -> str:
        return json.loads(post(api, CHAT, chat_body("q"))[2])["choices"][0]["message"]["content"]

    assert answer() == "FAKE-ANSWER #1"
    assert answer() == "FAKE-ANSWER #2"
    api.default = Reply.answer("always this")
    assert answer() == "always this"
    api.script("queued first")
    assert answer() == "queued first"
    assert answer() == "always this"


def test_in_band_markers(api: FakeModelAPI):
    def chat(text: str) -> tuple[int, Any]:
        status, _, raw = post(api, CHAT, chat_body(text))
        return status, json.loads(raw)

    assert chat("please\nECHO: echo me back\nthanks")[1]["choices"][0]["message"]["content"] == (
        "echo me back"
    )
    status, body = chat("fail [[HTTP 429 slow down]] now")
    assert status == 429
    assert body["error"]["message"] == "slow down"
    assert body["error"]["type"] == "rate_limit_exceeded"
    _, body = chat('call [[TOOL view_file {"path": "/etc/hostname"}]]')
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("view_file", {"path": "/etc/hostname"})


def test_follow_up_quotes_the_tool_result_in_each_api(api: FakeModelAPI):
    anthropic = anthropic_body("x")
    anthropic["messages"].append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "file body A"}],
        }
    )
    responses = responses_body("x")
    responses["input"].append({"type": "function_call_output", "call_id": "c", "output": "out B"})
    chat = chat_body("x")
    chat["messages"].append({"role": "tool", "tool_call_id": "c", "content": "tool C"})
    gemini = gemini_body("x")
    gemini["contents"].append(
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"o": "D"}}}]}
    )

    texts = [
        sse(post(api, ANTHROPIC, anthropic)[2])[3][1]["delta"]["text"],
        sse(post(api, RESPONSES, responses)[2])[1][1]["item"]["content"][0]["text"],
        json.loads(post(api, CHAT, chat)[2])["choices"][0]["message"]["content"],
        sse(post(api, GEMINI_STREAM, gemini)[2])[0][1]["candidates"][0]["content"]["parts"][0][
            "text"
        ],
    ]
    assert texts == [
        "TOOL RESULT: file body A",
        "TOOL RESULT: out B",
        "TOOL RESULT: tool C",
        'TOOL RESULT: {"o": "D"}',
    ]


def test_delay(api: FakeModelAPI):
    api.script(Reply.answer("late", delay=0.4))
    started = time.monotonic()
    assert post(api, CHAT, chat_body("q"))[0] == 200
    assert time.monotonic() - started >= 0.4

    started = time.monotonic()
    assert post(api, CHAT, chat_body("[[DELAY 0.3]] ECHO: marker late"))[0] == 200
    assert time.monotonic() - started >= 0.3


def test_hang_until_released(api: FakeModelAPI):
    api.script(Reply.hang())
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            post(api, CHAT, chat_body("q"), timeout=20)
            outcome.append(None)
        except (http.client.RemoteDisconnected, ConnectionError, urllib.error.URLError) as err:
            outcome.append(err)

    caller = threading.Thread(target=call)
    caller.start()
    api.wait_for_requests(1, timeout=5)
    time.sleep(0.3)
    assert outcome == []  # still hanging
    api.release_hangs()
    caller.join(timeout=5)
    assert not caller.is_alive()
    assert outcome
    assert outcome[0] is not None  # the connection closed without an answer
    assert api.turns()[0].reply == "hang"


def test_hang_ends_when_the_server_closes() -> None:
    outcome: list[BaseException | None] = []
    with serve_model_api() as api:
        api.script(Reply.hang())

        def call() -> None:
            try:
                post(api, ANTHROPIC, anthropic_body("[[HANG]]"), timeout=20)
                outcome.append(None)
            except (http.client.RemoteDisconnected, ConnectionError, urllib.error.URLError) as e:
                outcome.append(e)

        caller = threading.Thread(target=call)
        caller.start()
        api.wait_for_requests(1, timeout=5)
    # Closed, not timed out: a request the server did not end would fail only after the
    # client's own 20 s with a TimeoutError, which the call does not catch (no outcome).
    caller.join(timeout=60)
    assert outcome
    assert outcome[0] is not None


# ----------------------------------------------------------------------------- request log


def test_request_log_records_what_was_sent(api: FakeModelAPI):
    post(
        api,
        ANTHROPIC,
        anthropic_body("first", system=[{"type": "text", "text": "sys"}]),
        headers={"x-api-key": "k1", "X-Custom": "v"},
    )
    body = anthropic_body("second")
    body["messages"][0:0] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "FAKE-ANSWER #1"}]},
    ]
    post(api, ANTHROPIC, body)

    first, second = api.requests
    assert (first.seq, second.seq) == (1, 2)
    assert first.method == "POST"
    assert first.path == "/v1/messages"
    assert first.query == {"beta": "true"}
    assert first.headers["x-api-key"] == "k1"
    assert first.headers["x-custom"] == "v"
    assert first.body["system"] == [{"type": "text", "text": "sys"}]
    assert (
        first.raw_body
        == json.dumps(anthropic_body("first", system=[{"type": "text", "text": "sys"}])).encode()
    )
    assert (first.api, first.turn, first.reply) == ("anthropic", True, "text")
    assert second.messages == [
        ("user", "first"),
        ("assistant", "FAKE-ANSWER #1"),
        ("user", "second"),
    ]
    assert second.user_texts == ["first", "second"]
    assert second.last_user_text == "second"
    assert "FAKE-ANSWER #1" in second.all_text
    assert api.turns("anthropic") == [first, second]
    assert api.turns("chat") == []


def test_request_log_reads_each_api_and_compressed_bodies(api: FakeModelAPI):
    post(
        api,
        RESPONSES,
        gzip.compress(json.dumps(responses_body("zipped")).encode()),
        headers={"Content-Encoding": "gzip"},
    )
    post(api, CHAT, chat_body("chatty"))
    post(api, GEMINI_STREAM, gemini_body("gem"))
    responses, chat, gemini = api.requests
    assert responses.messages == [("developer", "d"), ("user", "zipped")]
    assert chat.messages == [("system", "s"), ("user", "chatty")]
    assert gemini.messages == [("user", "gem")]
    assert gemini.query == {"alt": "sse"}
    assert [r.api for r in api.requests] == ["responses", "chat", "gemini"]


def test_wait_for_requests_times_out(api: FakeModelAPI):
    with pytest.raises(TimeoutError, match="got 0 of 1"):
        api.wait_for_requests(1, timeout=0.2)


# ----------------------------------------------------------------------------- lifecycle


def test_clean_shutdown_leaves_no_thread_and_frees_the_port():
    before = set(threading.enumerate())
    with serve_model_api() as api:
        assert api.base_url == f"http://127.0.0.1:{api.port}"
        post(api, CHAT, chat_body("q"))
        port = api.port
    assert set(threading.enumerate()) - before == set()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 1):
        pass


def test_two_servers_get_two_ports():
    with serve_model_api() as one, serve_model_api() as two:
        assert one.port != two.port
        one.script("from one")
        assert json.loads(post(two, CHAT, chat_body("q"))[2])["choices"][0]["message"][
            "content"
        ] == ("FAKE-ANSWER #1")
        assert one.pending == 1


# ----------------------------------------------------------------------------- env helpers


def test_cli_env_is_built_from_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-key-must-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-must-not-leak")
    for product in ("claude", "codex", "gemini", "grok"):
        env = cli_env(product, "http://127.0.0.1:1234", tmp_path / product)
        assert "sk-real-key-must-not-leak" not in env.values()
        assert env["HOME"] == str(tmp_path / product)
        assert env["TMPDIR"] == str(tmp_path / product / "tmp")
        assert Path(env["TMPDIR"]).is_dir()
        assert env["REVIEW_LOOP_TEST_TOKEN"]  # so the no-orphan guard can see the CLI


def test_cli_env_per_product(tmp_path: Path):
    with serve_model_api() as api:
        base = api.base_url
        claude = cli_env("claude", api, tmp_path / "c")
        codex = cli_env("codex", api, tmp_path / "x")
        gemini = cli_env("gemini", api, tmp_path / "g")
        grok = cli_env("grok", api, tmp_path / "k")

    assert claude["ANTHROPIC_BASE_URL"] == base
    assert claude["ANTHROPIC_API_KEY"] == FAKE_API_KEY
    assert claude["CLAUDE_CODE_MAX_RETRIES"] == "1"

    assert codex["CODEX_HOME"] == str(tmp_path / "x" / ".codex")
    assert codex["FAKE_API_KEY"] == FAKE_API_KEY
    config = tomllib.loads((tmp_path / "x" / ".codex" / "config.toml").read_text())
    assert config["model_provider"] == "fake"
    assert config["model_providers"]["fake"] == {
        "name": "fake",
        "base_url": f"{base}/v1",
        "env_key": "FAKE_API_KEY",
        "wire_api": "responses",
        "request_max_retries": 1,
        "stream_max_retries": 1,
    }
    assert config["features"] == {"unbounded_connection_retries": False}

    assert gemini["GOOGLE_GEMINI_BASE_URL"] == base
    assert gemini["GEMINI_API_KEY"] == FAKE_API_KEY
    assert gemini["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    settings = json.loads((tmp_path / "g" / ".gemini" / "settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}

    assert grok["GROK_BASE_URL"] == f"{base}/v1"
    assert grok["GROK_API_KEY"] == FAKE_API_KEY
    assert grok["GROK_MODEL"]

    with pytest.raises(ValueError, match="unknown product"):
        cli_env("copilot", base, tmp_path / "z")
