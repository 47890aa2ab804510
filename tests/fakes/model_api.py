"""A fake model API on 127.0.0.1 that the real ``claude``, ``codex``, ``gemini``, ``grok``,
``opencode`` and ``qwen`` CLIs can complete a turn against — stdlib only.

One server speaks all four wire shapes (see ``reference/cli-adapters.md`` §5):

================================  =========================================================
Anthropic Messages (SSE)          ``POST /v1/messages`` (claude), plus ``HEAD /`` preflight
OpenAI Responses (SSE)            ``POST /v1/responses`` (codex)
OpenAI Chat Completions          ``POST /v1/chat/completions``: JSON (grok 0.0.34), or SSE
                                  chunks when the body says ``"stream": true`` (opencode, qwen)
Gemini                            ``POST /v1beta/models/<m>:streamGenerateContent?alt=sse``
                                  (the turn) and ``:generateContent`` (utility calls such as the
                                  model router, answered with JSON that fits the asked schema)
================================  =========================================================

Each *turn* request (the four main calls above, not the preflight or Gemini's utility calls)
takes the next reply from a per-test queue (:meth:`FakeModelAPI.script`), else follows in-band
markers in the last user message, else gets :attr:`FakeModelAPI.default` (``FAKE-ANSWER #<n>``):

- ``ECHO: some text``   → answers ``some text`` (to the end of that line)
- ``[[HTTP 401]]``      → that status, with a body in the API's own error shape
- ``[[TOOL name {json}]]`` → one tool call, then (on the request carrying the tool result) a text
  reply quoting the tool result
- ``[[DELAY 1.5]]``     → waits that many seconds, then answers as usual
- ``[[HANG]]``          → never answers, until the server shuts down (or :meth:`release_hangs`)
- ``[[REFUSE quota]]``  → the provider's own refusal of that kind (``rate_limit``, ``quota``,
  ``billing``, ``usage_limit``, ``auth``, ``expired``, ``model``): its status and body, in the
  API's own shape (:mod:`tests.fakes.refusals`)

Every request is logged (method, path, query, headers, JSON body) in :attr:`FakeModelAPI.requests`.

Usage::

    with serve_model_api() as api:
        api.script("first answer", Reply.error(401, "bad key"))
        env = cli_env("claude", api, home)
        ...
        assert api.turns()[0].last_user_text == "the prompt"
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import http.server
import itertools
import json
import os
import re
import socket
import threading
import time
import urllib.parse
import uuid
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.fakes.refusals import (
    REFUSAL_KINDS,
    REFUSAL_SHAPES,
    RefusalKind,
    RefusalShape,
    refusal_response,
)

__all__ = [
    "FAKE_API_KEY",
    "PRODUCTS",
    "FakeModelAPI",
    "LoggedRequest",
    "Reply",
    "cli_env",
    "prepare_home",
    "serve_model_api",
]

FAKE_API_KEY = "sk-fake-review-loop-0000"
"""The dummy key every CLI is given; the server accepts any key and never checks it."""

PRODUCTS = ("claude", "codex", "gemini", "grok", "opencode", "qwen")

Api = Literal["anthropic", "responses", "chat", "gemini"]
ReplyKind = Literal["text", "tool", "error", "hang", "refusal"]

_MARKER_HTTP = re.compile(r"\[\[HTTP (\d{3})(?: ([^\]]*))?\]\]")
_MARKER_TOOL = re.compile(r"\[\[TOOL (\S+) (\{.*?\})\]\]", re.DOTALL)
_MARKER_DELAY = re.compile(r"\[\[DELAY (\d+(?:\.\d+)?)\]\]")
_MARKER_ECHO = re.compile(r"ECHO: ?(.*)")
_MARKER_REFUSE = re.compile(r"\[\[REFUSE (" + "|".join(REFUSAL_KINDS) + r")\]\]")


# --------------------------------------------------------------------------- scripted replies


@dataclass(frozen=True)
class Reply:
    """One scripted answer to one turn request. Build with the class methods."""

    kind: ReplyKind
    text: str | None = None  # text: None → quote the tool result if the turn carries one
    tool_name: str = ""
    tool_args: Mapping[str, Any] = field(default_factory=dict)
    status: int = 0
    message: str = ""
    delay: float = 0.0
    namespace: str = ""  # Responses API: the tool's namespace (codex offers MCP tools in one)
    shape: RefusalShape | None = None  # a refusal: whose body (None: the API's own provider)

    @classmethod
    def answer(cls, text: str, *, delay: float = 0.0) -> Reply:
        return cls("text", text=text, delay=delay)

    @classmethod
    def tool(
        cls,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        delay: float = 0.0,
        namespace: str = "",
    ) -> Reply:
        """A single tool call. :meth:`FakeModelAPI.script` accepts :meth:`tool_then` pairs too.

        ``namespace``: the Responses API's ``namespace`` of the call (codex offers each MCP
        server's tools as one namespace, ``mcp__<server>``, and routes a call by it)."""
        args = dict(arguments or {})
        return cls("tool", tool_name=name, tool_args=args, delay=delay, namespace=namespace)

    @classmethod
    def tool_then(
        cls,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        then: str | None = None,
        *,
        namespace: str = "",
    ) -> tuple[Reply, Reply]:
        """A tool call followed by a text reply (``then=None`` quotes the tool result)."""
        return cls.tool(name, arguments, namespace=namespace), cls("text", text=then)

    @classmethod
    def error(cls, status: int, message: str | None = None, *, delay: float = 0.0) -> Reply:
        """An HTTP error in the API's own error shape."""
        return cls("error", status=status, message=message or f"fake {status}", delay=delay)

    @classmethod
    def refuse(
        cls, kind: RefusalKind, *, shape: RefusalShape | None = None, delay: float = 0.0
    ) -> Reply:
        """The provider's own refusal of ``kind`` (:func:`~tests.fakes.refusals.refusal_response`):
        its status and body in the shape of the API the request came in on, or in ``shape``
        (chat completions: ``"openai"``, ``"openrouter"`` or ``"vllm"`` instead of xAI's)."""
        if kind not in REFUSAL_KINDS:
            raise ValueError(f"refusal kind {kind!r}: expected one of {REFUSAL_KINDS}")
        if shape is not None and shape not in REFUSAL_SHAPES:
            raise ValueError(f"refusal shape {shape!r}: expected one of {REFUSAL_SHAPES}")
        return cls("refusal", message=kind, delay=delay, shape=shape)

    @classmethod
    def hang(cls) -> Reply:
        """Never answer (until the server shuts down or :meth:`FakeModelAPI.release_hangs`)."""
        return cls("hang")

    def with_delay(self, seconds: float) -> Reply:
        return dataclasses.replace(self, delay=seconds)


ScriptItem = Reply | str | tuple[Reply, ...]


# --------------------------------------------------------------------------- request log


@dataclass
class LoggedRequest:
    """One request the server received, as the CLI sent it."""

    seq: int
    method: str
    path: str  # without the query string
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None
    raw_body: bytes
    api: str  # anthropic | responses | chat | gemini | gemini-utility | head | other
    turn: bool  # a main-turn request (took a reply from the script)
    reply: str = ""  # what it got: "text", "tool", "error 401", "hang", "utility", ...
    at: float = field(default_factory=time.time)

    @property
    def messages(self) -> list[tuple[str, str]]:
        """The conversation the request carried, as ``(role, text)`` pairs, in every API."""
        return _conversation(self.api, self.body)

    @property
    def user_texts(self) -> list[str]:
        return [text for role, text in self.messages if role == "user"]

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts
        return texts[-1] if texts else ""

    @property
    def all_text(self) -> str:
        """Every message text joined (handy for ``"first prompt" in req.all_text``)."""
        return "\n".join(text for _, text in self.messages)


# --------------------------------------------------------------------------- the server


class FakeModelAPI:
    """State of one running fake server. Create it with :func:`serve_model_api`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._log: list[LoggedRequest] = []
        self._seq = itertools.count(1)
        self._turns = itertools.count(1)
        self._closing = threading.Event()
        self._release = threading.Event()
        self._logged = threading.Condition(self._lock)
        self.by_api: dict[str, Reply] = {}
        """A reply for every turn of one API (``{"anthropic": Reply.refuse("quota")}``),
        before the queue: one provider refuses while the others answer."""
        self.default: Reply | None = None
        """Reply used when the queue is empty and no marker applies; None → ``FAKE-ANSWER #n``."""
        self.head_status = 200
        """Status for ``HEAD /`` (Claude Code's preflight)."""
        self.host = "127.0.0.1"
        self.port = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- public API ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[LoggedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._log)

    def turns(self, api: str | None = None) -> list[LoggedRequest]:
        """The main-turn requests (optionally of one API), oldest first."""
        return [r for r in self.requests if r.turn and (api is None or r.api == api)]

    def script(self, *items: ScriptItem) -> FakeModelAPI:
        """Queue replies for the next turn requests. A ``str`` is a text reply; a tuple (from
        :meth:`Reply.tool_then`) is queued in order."""
        with self._lock:
            for item in items:
                if isinstance(item, str):
                    self._queue.append(Reply.answer(item))
                elif isinstance(item, tuple):
                    self._queue.extend(item)
                else:
                    self._queue.append(item)
        return self

    @property
    def pending(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._queue)

    def wait_for_requests(self, count: int, timeout: float = 10.0, *, turns: bool = True) -> None:
        """Block until at least ``count`` (turn) requests arrived; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        with self._logged:
            while True:
                have = sum(1 for r in self._log if r.turn or not turns)
                if have >= count:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"got {have} of {count} requests in {timeout}s")
                self._logged.wait(left)

    def release_hangs(self) -> None:
        """Let every hanging (and future hanging) reply end by closing its connection."""
        self._release.set()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeModelAPI:
        server = _Server((self.host, 0), _Handler)
        server.api = self
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-model-api:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end hanging replies, cut open connections and join every thread."""
        self._closing.set()
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.abort_connections()
        server.server_close()  # joins the handler threads (block_on_close)
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- internals used by the handler --------------------------------------------------------

    def _log_request(self, req: LoggedRequest) -> None:
        with self._logged:
            self._log.append(req)
            self._logged.notify_all()

    def _next_reply(self, req: LoggedRequest) -> Reply:
        with self._lock:
            if req.api in self.by_api:
                return self.by_api[req.api]
            if self._queue:
                return self._queue.popleft()
        return self._reply_from_markers(req)

    def _reply_from_markers(self, req: LoggedRequest) -> Reply:
        if _ends_with_tool_result(req.api, req.body):
            return Reply("text", text=None)
        last = req.last_user_text
        delay = 0.0
        if m := _MARKER_DELAY.search(last):
            delay = float(m.group(1))
        if "[[HANG]]" in last:
            return Reply.hang()
        if m := _MARKER_REFUSE.search(last):
            return Reply("refusal", message=m.group(1), delay=delay)
        if m := _MARKER_HTTP.search(last):
            return Reply.error(int(m.group(1)), m.group(2), delay=delay)
        if m := _MARKER_TOOL.search(last):
            return Reply.tool(m.group(1), json.loads(m.group(2)), delay=delay)
        if m := _MARKER_ECHO.search(last):
            return Reply.answer(m.group(1).strip(), delay=delay)
        if self.default is not None:
            return self.default.with_delay(delay) if delay else self.default
        return Reply("text", text=f"FAKE-ANSWER #{next(self._turns)}", delay=delay)

    def _wait(self, seconds: float | None) -> bool:
        """Sleep (or hang when ``seconds`` is None); False when the server is shutting down."""
        if seconds is None:
            while not (self._closing.is_set() or self._release.is_set()):
                self._closing.wait(0.05)
            return False
        return not self._closing.wait(seconds)


@contextlib.contextmanager
def serve_model_api() -> Iterator[FakeModelAPI]:
    """Run a :class:`FakeModelAPI` on a free 127.0.0.1 port for the duration of the block."""
    api = FakeModelAPI().start()
    try:
        yield api
    finally:
        api.close()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins every handler thread
    block_on_close = True
    allow_reuse_address = True
    api: FakeModelAPI

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def abort_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # every response carries Content-Length and Connection: close
    timeout = 60  # socket timeout: a silent client cannot pin a thread forever

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the request log is the record

    # -- entry points -------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        req = self._record(api="head", turn=False)
        status = self.server.api.head_status if req.path == "/" else 404
        req.reply = f"head {status}"
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # -- routing ------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        api: str
        turn = False
        if self.command == "POST" and path.rstrip("/").endswith("/v1/messages"):
            api, turn = "anthropic", True
        elif self.command == "POST" and path.endswith("/messages/count_tokens"):
            api = "anthropic-count"
        elif self.command == "POST" and path.endswith("/responses"):
            api, turn = "responses", True
        elif self.command == "POST" and path.endswith("/chat/completions"):
            api, turn = "chat", True
        elif self.command == "POST" and path.endswith(":streamGenerateContent"):
            api, turn = "gemini", True
        elif self.command == "POST" and path.endswith(":generateContent"):
            api = "gemini-utility"
        elif self.command == "POST" and path.endswith(":countTokens"):
            api = "gemini-count"
        else:
            api = "other"
        req = self._record(api=api, turn=turn)
        fake = self.server.api
        if api == "anthropic-count":
            req.reply = "count"
            return self._send_json(200, {"input_tokens": 10})
        if api == "gemini-count":
            req.reply = "count"
            return self._send_json(200, {"totalTokens": 10})
        if api == "gemini-utility":
            req.reply = "utility"
            return self._send_json(200, _gemini_utility_reply(req.body))
        if not turn:
            req.reply = "404"
            return self._send_json(
                404, {"error": {"message": f"fake model API: no route {self.command} {path}"}}
            )

        reply = fake._next_reply(req)
        req.reply = reply.kind if reply.kind != "error" else f"error {reply.status}"
        if reply.kind == "refusal":
            req.reply = f"refusal {reply.message}"
        if reply.kind == "hang":
            fake._wait(None)
            self.close_connection = True
            return None
        if reply.delay and not fake._wait(reply.delay):
            self.close_connection = True
            return None
        if reply.kind == "error":
            return self._send_json(reply.status, _error_body(api, reply.status, reply.message))
        model = str((req.body or {}).get("model") or _model_from_path(path) or "fake-model")
        if reply.kind == "refusal":
            return self._send_json(*refusal_response(reply.shape or api, reply.message, model))
        text = reply.text
        if reply.kind == "text" and text is None:
            result = _last_tool_result(api, req.body)
            text = f"TOOL RESULT: {result}" if result is not None else "FAKE-ANSWER"
        if api == "anthropic":
            return self._send_sse(_anthropic_events(reply, text, model))
        if api == "responses":
            return self._send_sse(_responses_events(reply, text, model))
        if api == "chat" and isinstance(req.body, dict) and req.body.get("stream") is True:
            return self._send_sse(_chat_completion_chunks(reply, text, model), done=True)
        if api == "chat":
            return self._send_json(200, _chat_completion(reply, text, model))
        return self._send_sse(_gemini_events(reply, text))

    # -- plumbing -----------------------------------------------------------------------------

    def _record(self, *, api: str, turn: bool) -> LoggedRequest:
        split = urllib.parse.urlsplit(self.path)
        raw = self._read_body()
        body: Any = None
        if raw:
            with contextlib.suppress(ValueError):
                body = json.loads(raw)
        req = LoggedRequest(
            seq=next(self.server.api._seq),
            method=self.command,
            path=split.path,
            query=dict(urllib.parse.parse_qsl(split.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw_body=raw,
            api=api,
            turn=turn,
        )
        self.server.api._log_request(req)
        return req

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = self.headers.get("Content-Encoding", "").lower()
        with contextlib.suppress(OSError, zlib.error, EOFError):
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            elif encoding == "deflate":
                raw = zlib.decompress(raw)
        return raw

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _send_sse(self, events: list[tuple[str | None, Any]], *, done: bool = False) -> None:
        parts = []
        for name, data in events:
            prefix = f"event: {name}\n" if name else ""
            parts.append(f"{prefix}data: {json.dumps(data)}\n\n")
        if done:  # OpenAI's chat stream ends with a literal [DONE]
            parts.append("data: [DONE]\n\n")
        body = "".join(parts).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


# --------------------------------------------------------------------------- wire shapes


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _anthropic_events(reply: Reply, text: str | None, model: str) -> list[tuple[str | None, Any]]:
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message: dict[str, Any] = {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    if reply.kind == "tool":
        block = {"type": "tool_use", "id": _new_id("toolu_"), "name": reply.tool_name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(reply.tool_args)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text or ""}
        stop = "end_turn"
    events += [
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _responses_events(reply: Reply, text: str | None, model: str) -> list[tuple[str | None, Any]]:
    item: dict[str, Any]
    if reply.kind == "tool":
        item = {
            "id": _new_id("fc_"),
            "type": "function_call",
            "status": "completed",
            "call_id": _new_id("call_"),
            "name": reply.tool_name,
            "arguments": json.dumps(reply.tool_args),
        }
        if reply.namespace:
            item["namespace"] = reply.namespace
    else:
        item = {
            "id": _new_id("msg_"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text or "", "annotations": []}],
        }
    response = {
        "id": _new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "completed",
        "output": [item],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }
    return [
        (
            "response.created",
            {"type": "response.created", "response": {**response, "status": "in_progress"}},
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": response}),
    ]


def _chat_completion(reply: Reply, text: str | None, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or ""}
    finish = "stop"
    if reply.kind == "tool":
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": _new_id("call_"),
                    "type": "function",
                    "function": {"name": reply.tool_name, "arguments": json.dumps(reply.tool_args)},
                }
            ],
        }
        finish = "tool_calls"
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chat_completion_chunks(
    reply: Reply, text: str | None, model: str
) -> list[tuple[str | None, Any]]:
    """The streamed form of :func:`_chat_completion`: a role delta, the content (or the tool
    call) delta, the finish reason, then a usage chunk (as ``stream_options.include_usage``
    asks), in ``chat.completion.chunk`` objects."""
    whole = _chat_completion(reply, text, model)
    message = whole["choices"][0]["message"]
    common = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"]}
    common["model"] = model
    if message.get("tool_calls"):
        (call,) = message["tool_calls"]
        delta: dict[str, Any] = {"tool_calls": [{"index": 0, **call}]}
    else:
        delta = {"content": message["content"]}

    def chunk(choice_delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": choice_delta, "finish_reason": finish}
        return {**common, "choices": [choice]}

    return [
        (None, chunk({"role": "assistant", "content": ""}, None)),
        (None, chunk(delta, None)),
        (None, chunk({}, whole["choices"][0]["finish_reason"])),
        (None, {**common, "choices": [], "usage": whole["usage"]}),
    ]


def _gemini_events(reply: Reply, text: str | None) -> list[tuple[str | None, Any]]:
    if reply.kind == "tool":
        part: dict[str, Any] = {"functionCall": {"name": reply.tool_name, "args": reply.tool_args}}
    else:
        part = {"text": text or ""}
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }
    return [(None, chunk)]


def _gemini_utility_reply(body: Any) -> dict[str, Any]:
    """Answer a non-streaming ``generateContent`` (router, next-speaker check...) with JSON that
    fits the requested schema, or a short text when no JSON was asked for."""
    config = (body or {}).get("generationConfig") or (body or {}).get("config") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema or config.get("responseMimeType") == "application/json":
        text = json.dumps(_fill_schema(schema or {"type": "object"}))
    else:
        text = "FAKE-UTILITY"
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }


# Values a utility call must get for the CLI to carry on sensibly, by property name.
_UTILITY_VALUES: dict[str, Any] = {
    "next_speaker": "user",  # gemini's "should the model keep talking?" check: no
    "complexity_score": 1,  # gemini's model router: simple task
}


def _fill_schema(schema: Mapping[str, Any], name: str = "") -> Any:
    if name in _UTILITY_VALUES:
        return _UTILITY_VALUES[name]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = str(kind or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {key: _fill_schema(sub, key) for key, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "fake"


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
}
_OPENAI_ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    """``status``/``message`` in the error shape of ``api``."""
    if api == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == "gemini":
        return {
            "error": {
                "code": status,
                "message": message,
                "status": _GOOGLE_STATUS.get(status, "UNKNOWN"),
            }
        }
    return {
        "error": {
            "message": message,
            "type": _OPENAI_ERROR_TYPES.get(status, "server_error"),
            "param": None,
            "code": _OPENAI_ERROR_CODES.get(status),
        }
    }


# --------------------------------------------------------------------------- reading requests


def _model_from_path(path: str) -> str:
    m = re.search(r"/models/([^/:]+):", path)
    return m.group(1) if m else ""


def _block_text(content: Any) -> str:
    """Text of a message ``content`` in any of the four APIs (str, or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def _conversation(api: str, body: Any) -> list[tuple[str, str]]:
    if not isinstance(body, dict):
        return []
    out: list[tuple[str, str]] = []
    if api in ("anthropic", "chat"):
        for msg in body.get("messages") or []:
            if isinstance(msg, dict):
                out.append((str(msg.get("role", "")), _block_text(msg.get("content"))))
    elif api == "responses":
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        for item in items:
            if isinstance(item, dict) and item.get("type", "message") == "message":
                out.append((str(item.get("role", "")), _block_text(item.get("content"))))
    elif api.startswith("gemini"):
        for msg in body.get("contents") or []:
            if isinstance(msg, dict):
                role = "assistant" if msg.get("role") == "model" else str(msg.get("role", "user"))
                out.append((role, _block_text(msg.get("parts"))))
    return out


def _tool_results(api: str, body: Any) -> list[str]:
    """Tool results carried by the *last* message/items of a request, as text."""
    if not isinstance(body, dict):
        return []
    if api == "anthropic":
        # Claude Code may put a {"role": "system"} entry after the last user message: skip it.
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        while msgs and msgs[-1].get("role") == "system":
            msgs.pop()
        content = msgs[-1].get("content") if msgs else None
        if isinstance(content, list):
            return [
                _block_text(b.get("content"))
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    elif api == "responses":
        items = body.get("input") or []
        last_item = items[-1] if isinstance(items, list) and items else None
        if isinstance(last_item, dict) and last_item.get("type") == "function_call_output":
            output = last_item.get("output")
            return [output if isinstance(output, str) else json.dumps(output)]
    elif api == "chat":
        msgs = body.get("messages") or []
        if msgs and isinstance(msgs[-1], dict) and msgs[-1].get("role") == "tool":
            return [_block_text(msgs[-1].get("content"))]
    elif api == "gemini":
        contents = body.get("contents") or []
        parts = contents[-1].get("parts") if contents and isinstance(contents[-1], dict) else []
        return [
            json.dumps(p["functionResponse"].get("response"))
            for p in parts or []
            if isinstance(p, dict) and "functionResponse" in p
        ]
    return []


def _ends_with_tool_result(api: str, body: Any) -> bool:
    return bool(_tool_results(api, body))


def _last_tool_result(api: str, body: Any) -> str | None:
    results = _tool_results(api, body)
    return results[-1] if results else None


# --------------------------------------------------------------------------- homes and env

_PASS_THROUGH_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "REVIEW_LOOP_TEST_TOKEN")


def _base_url_of(api: FakeModelAPI | str) -> str:
    return (api.base_url if isinstance(api, FakeModelAPI) else api).rstrip("/")


def prepare_home(product: str, api: FakeModelAPI | str, home: Path) -> Path:
    """Write the config files ``product`` needs into the throw-away ``home`` (idempotent)."""
    base = _base_url_of(api)
    home.mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    if product == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            "\n".join(
                [
                    'model = "fake-model"',
                    'model_provider = "fake"',
                    "check_for_update_on_startup = false",
                    "",
                    "[model_providers.fake]",
                    'name = "fake"',
                    f'base_url = "{base}/v1"',
                    'env_key = "FAKE_API_KEY"',
                    'wire_api = "responses"',
                    "request_max_retries = 1",
                    "stream_max_retries = 1",
                    "",
                    "[features]",
                    "unbounded_connection_retries = false",
                    "",
                ]
            )
        )
    elif product == "gemini":
        gemini_dir = home / ".gemini"
        gemini_dir.mkdir(exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
        }
        (gemini_dir / "settings.json").write_text(json.dumps(settings, indent=2))
    elif product == "opencode":
        # The user's own config: an OpenAI-compatible provider at the fake API (bundled in
        # the binary, nothing to install), no autoupdate, no sharing.
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": f"{base}/v1", "apiKey": "{env:FAKE_API_KEY}"},
            "models": {"fake-model": {"name": "Fake Model"}},
        }
        config = {
            "provider": {"fake": provider},
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": False,
            "share": "disabled",
        }
        config_dir = home / ".config" / "opencode"
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "opencode.json").write_text(json.dumps(config, indent=2))
    elif product == "qwen":
        qwen_dir = home / ".qwen"
        qwen_dir.mkdir(exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "openai", "baseUrl": f"{base}/v1"}},
            "model": {"name": "fake-model"},  # qwen's own retry settings: its defaults
            "privacy": {"usageStatisticsEnabled": False},
            "$version": 4,
        }
        (qwen_dir / "settings.json").write_text(json.dumps(settings, indent=2))
    elif product not in PRODUCTS:
        raise ValueError(f"unknown product {product!r}; expected one of {PRODUCTS}")
    return home


def cli_env(
    product: str,
    api: FakeModelAPI | str,
    home: Path,
    *,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A clean environment in which ``product`` talks to ``api`` with ``home`` as its HOME.

    Writes the config files it needs (:func:`prepare_home`). Built from scratch — nothing of
    the caller's environment leaks in but PATH, locale and the test token — so a real API key
    can never reach a test. ``api`` may be a URL (e.g. a closed port).
    """
    prepare_home(product, api, home)
    base = _base_url_of(api)
    env = {k: os.environ[k] for k in _PASS_THROUGH_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(
        {
            "HOME": str(home),
            "USERPROFILE": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "NO_COLOR": "1",
            "TMPDIR": str(home / "tmp"),  # error reports and per-project temp dirs stay here
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    if product == "claude":
        env.update(
            {
                "ANTHROPIC_BASE_URL": base,
                "ANTHROPIC_API_KEY": FAKE_API_KEY,
                "CLAUDE_CODE_MAX_RETRIES": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
            }
        )
    elif product == "codex":
        env.update({"CODEX_HOME": str(home / ".codex"), "FAKE_API_KEY": FAKE_API_KEY})
    elif product == "gemini":
        env.update(
            {
                "GOOGLE_GEMINI_BASE_URL": base,
                "GEMINI_API_KEY": FAKE_API_KEY,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            }
        )
    elif product == "grok":
        env.update(
            {
                "GROK_BASE_URL": f"{base}/v1",
                "GROK_API_KEY": FAKE_API_KEY,
                "GROK_MODEL": "grok-code-fast-1",
            }
        )
    elif product == "opencode":
        env.update({"FAKE_API_KEY": FAKE_API_KEY, "OPENCODE_DISABLE_MODELS_FETCH": "1"})
    elif product == "qwen":
        env.update({"OPENAI_API_KEY": FAKE_API_KEY})
    # review-loop passes reviewers only an allow-list of the caller's environment: the test
    # token and the fake provider's key (codex's env_key) are this "user's" additions.
    env["REVIEW_LOOP_ENV_PASSTHROUGH"] = "REVIEW_LOOP_TEST_TOKEN FAKE_API_KEY"
    if extra:
        env.update(extra)
    return env
