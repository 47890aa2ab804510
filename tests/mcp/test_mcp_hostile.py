"""Contract, collaboration and process tests: ``review-loop mcp`` stays up whatever it is sent.

Driven over raw JSON-RPC lines (an SDK client refuses to send some of these, e.g. a lone
surrogate). Contract: review-loop's version in ``serverInfo``; each tool's four MCP
annotations; an unknown argument, a NUL, a lone surrogate, an oversized string or list is
answered with an error naming it. Collaboration: a question far past the 128 KiB a command
line word may hold reaches the reviewer whole. Process: 200 malformed or hostile calls sent
at once while eight consult calls are held open on running reviewers: each is answered, the
server stays up, and the held jobs then finish with their answers, no process left.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any

from mcp.types import LATEST_PROTOCOL_VERSION

from review_loop.orchestrator.mcp.server import ANNOTATIONS
from tests.fakes import FakeCLIs
from tests.faults.harness import WAIT_S, Scanner, wait_until

HELD = 8
HOSTILE = 200


class Raw:
    """``python -m review_loop mcp`` over pipes: lines out, answers read back by id."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.answers: dict[Any, dict[str, Any]] = {}
        self.unnamed: list[dict[str, Any]] = []  # answers with ``id: null`` (parse errors)
        self.buffer = b""
        self.init: dict[str, Any] = {}

    def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        # ensure_ascii escapes in the JSON text (\\ud800): what a client's bytes carry
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps({"jsonrpc": "2.0", **message}))

    def call(self, ident: int, tool: str, arguments: Any) -> None:
        params = {"name": tool, "arguments": arguments}
        self.send({"id": ident, "method": "tools/call", "params": params})

    def answer(self, ident: Any) -> dict[str, Any]:
        """The answer to ``ident`` (reading on until it arrives; fails, never hangs)."""
        while ident not in self.answers:
            self._read()
        return self.answers.pop(ident)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                assert selector.select(WAIT_S), "no answer from the MCP server"
            chunk = os.read(fd, 1 << 20)
            assert chunk, "the MCP server closed its stdout (it died)"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = json.loads(line)
        if "id" not in message:
            return  # a notification
        if message["id"] is None:
            self.unnamed.append(message)
        else:
            self.answers[message["id"]] = message


@contextmanager
def server(env: dict[str, str], errlog: IO[str]) -> Iterator[Raw]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "review_loop", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=env,
    )
    raw = Raw(proc)
    try:
        client = {"name": "hostile-test", "version": "0"}
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": client,
        }
        raw.send({"id": 0, "method": "initialize", "params": params})
        raw.init = raw.answer(0)["result"]
        raw.send({"method": "notifications/initialized"})
        yield raw
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the client is gone: the server stops every job and exits
        try:
            proc.wait(timeout=WAIT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()


def refusal(answer: dict[str, Any]) -> str:
    """The text of an error answer: a tool error (``isError``) or a JSON-RPC error."""
    if "error" in answer:
        return str(answer["error"]["message"])
    result = answer["result"]
    assert result.get("isError") is True, answer
    return str(result["content"][0]["text"])


def test_contract_version_and_annotations(env: dict[str, str], tmp_path: Path) -> None:
    with (tmp_path / "server.err").open("w") as err, server(env, err) as raw:
        raw.send({"id": 1, "method": "tools/list"})
        tools = raw.answer(1)["result"]["tools"]
    assert raw.init["serverInfo"] == {"name": "review-loop", "version": version("review-loop")}
    assert {tool["name"] for tool in tools} == set(ANNOTATIONS)
    hints = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
    for tool in tools:
        annotations = tool["annotations"]
        assert all(isinstance(annotations.get(hint), bool) for hint in hints), tool
    by_name = {tool["name"]: tool["annotations"] for tool in tools}
    read_only = {name for name, a in by_name.items() if a["readOnlyHint"]}
    assert read_only == {"consult", "job_wait", "jobs", "sessions", "evidence"}
    assert {name for name, a in by_name.items() if a["destructiveHint"]} == {"job_cancel", "close"}
    assert {name for name, a in by_name.items() if a["openWorldHint"]} == {
        "consult",
        "run",
        "preflight",
        "converge",
    }


def test_contract_every_string_is_checked_and_unknown_arguments_named(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    base = {"repo": str(repo), "question": "Right?", "peers": ["codex"]}
    cases: list[tuple[str, Any, str]] = [
        ("consult", {**base, "bogus": 1, "other": 2}, "arguments: this tool takes no argument"),
        ("consult", {**base, "question": "a\x00b"}, "question: holds a NUL character"),
        ("consult", {**base, "peers": ["codex", "co\x00dex"]}, "peers[1]: holds a NUL"),
        ("consult", {**base, "repo": str(repo) + "\x00"}, "repo: holds a NUL character"),
        ("consult", {**base, "question": "a\ud800b"}, "params.arguments.question holds a lone"),
        ("consult", {**base, "peers": ["\udfff"]}, "params.arguments.peers[0] holds a lone"),
        ("consult", {**base, "repo": "/" + "x" * 5000}, "repo: is 5001 bytes long (UTF-8)"),
        ("consult", {**base, "peers": ["codex"] * 65}, "peers: 65 items are too many"),
        ("consult", {**base, "question": {"a": 1}}, "question: an object is not a value"),
        ("job_wait", {"job_id": "x\x00"}, "job_id: holds a NUL character"),
        ("evidence", {"repo": str(repo), "paths": ["a", "b\x00"]}, "paths[1]: holds a NUL"),
    ]
    with (tmp_path / "server.err").open("w") as err, server(env, err) as raw:
        for ident, (tool, arguments, _) in enumerate(cases, start=1):
            raw.call(ident, tool, arguments)
        texts = [refusal(raw.answer(ident)) for ident in range(1, len(cases) + 1)]
        raw.call(99, "jobs", {})
        alive = raw.answer(99)["result"]["structuredContent"]
    for text, (_, _, expected) in zip(texts, cases, strict=True):
        assert expected in text, text
    assert "'bogus', 'other'" in texts[0] and "(accepted: fallback, host, peers" in texts[0]
    assert "\x00" not in "".join(texts)  # never echoed raw
    assert alive == {"jobs": []}  # nothing was started by any of them


def test_collaboration_a_question_past_the_command_lines_limit_reaches_the_reviewer(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    question = "Is this diff right?\n" + "+ a line of the pasted diff\n" * 40_000  # 1.1 MB
    assert len(question.encode()) > 8 * 128 * 1024
    fakes.script(codex=[{"mode": "ok", "text": "read it all"}])
    arguments = {"repo": str(repo), "question": question, "peers": ["codex"], "wait_seconds": 60}
    with (tmp_path / "server.err").open("w") as err, server(env, err) as raw:
        raw.call(1, "consult", arguments)
        state = raw.answer(1)["result"]["structuredContent"]
        while state["state"] == "running":
            raw.call(2, "job_wait", {"job_id": state["jobId"], "wait_seconds": 60})
            state = raw.answer(2)["result"]["structuredContent"]
    assert state["exitCode"] == 0, state
    assert "read it all" in state["document"]["text"]
    (call,) = fakes.calls()
    assert question.strip() in call["stdin"] + " ".join(call["argv"])


def _hostile_calls(repo: Path) -> Iterator[tuple[str, Any]]:
    """``(tool, arguments)``, or ``("", a raw line)``: every kind of abuse, in turn."""
    good = {"repo": str(repo), "question": "Right?", "peers": ["codex"]}
    kinds: list[tuple[str, Any]] = [
        ("consult", {**good, "question": "a\x00b"}),
        ("consult", {**good, "peers": ["co\x00dex"]}),
        ("consult", {**good, "repo": f"{repo}\x00"}),
        ("consult", {**good, "question": "\ud800"}),
        ("consult", {**good, "peers": ["\udbff"]}),
        ("consult", {**good, "repo": "/" + "y" * 9000}),
        ("consult", {**good, "bogus": True}),
        ("consult", {**good, "peers": ["codex"] * 100}),
        ("consult", {**good, "question": 12345}),
        ("consult", {**good, "question": ["a", "b"]}),
        ("consult", {**good, "wait_seconds": "abc"}),
        ("consult", {**good, "wait_seconds": 1e308}),
        ("consult", {**good, "wait_seconds": -1}),
        ("consult", {"repo": str(repo)}),
        ("consult", {**good, "repo": "relative/repo"}),
        ("consult", None),
        ("job_wait", {"job_id": "nope"}),
        ("job_wait", {"job_id": "\x00"}),
        ("job_cancel", {"job_id": "f" * 32}),
        ("close", {"repo": str(repo), "packet": "../../etc/passwd", "reason": "x"}),
        ("fix_completion", {"repo": str(repo), "packet": "p", "body": "b\x00"}),
        ("evidence", {"repo": str(repo), "base": "HEAD\x00"}),
        ("sessions", {"repo": str(repo), "product": "\udc80"}),
        ("no_such_tool", {}),
    ]
    protocol = [
        "{not json",  # answered with id null: -32700
        json.dumps({"jsonrpc": "2.0", "id": "{}", "method": "tools/nope", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": "{}", "method": "tools/call", "params": ["x"]}),
    ]
    cycle = len(kinds) + len(protocol)
    for number in range(HOSTILE):
        index = number % cycle
        if index < len(kinds):
            yield kinds[index]
        else:
            yield "", protocol[index - len(kinds)]


def test_process_200_hostile_calls_while_jobs_run_are_all_answered_and_the_jobs_finish(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, scanner: Scanner, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    fakes.script(codex=[{"mode": "ok", "text": "the held answer", "wait_for": str(release)}])
    good = {"repo": str(repo), "question": "Right?", "peers": ["codex"], "wait_seconds": 120}
    with (tmp_path / "server.err").open("w") as err, server(env, err) as raw:
        for ident in range(1, HELD + 1):  # held open: each waits on its running job
            raw.call(ident, "consult", good)
        wait_until(f"{HELD} held reviewers running", lambda: _statuses(repo) == ["running"] * HELD)
        idents: list[Any] = []
        for number, (tool, arguments) in enumerate(_hostile_calls(repo), start=1000):
            if tool:
                raw.call(number, tool, arguments)
                idents.append(number)
            elif arguments.startswith("{not"):
                raw.send_line(arguments)
            else:
                named = f"raw-{number}"
                raw.send_line(arguments.replace('"{}"', json.dumps(named)))
                idents.append(named)
        texts = [refusal(raw.answer(ident)) for ident in idents]  # an error answer, each
        raw.call(5000, "jobs", {})
        jobs = raw.answer(5000)["result"]["structuredContent"]["jobs"]
        release.write_text("go")
        held = [raw.answer(ident)["result"]["structuredContent"] for ident in range(1, HELD + 1)]
        parse_errors = HOSTILE - len(idents)
        while len(raw.unnamed) < parse_errors:
            raw._read()
    assert raw.proc.returncode == 0  # it stayed up, and stopped when the client left
    assert len(texts) + parse_errors == HOSTILE and parse_errors > 0
    assert [a["error"]["code"] for a in raw.unnamed] == [-32700] * parse_errors
    assert len(jobs) == HELD and {job["state"] for job in jobs} == {"running"}
    for state in held:
        assert state["state"] == "finished" and state["exitCode"] == 0, state
        assert "the held answer" in state["document"]["text"]
    assert scanner.survivors() == []
    assert _statuses(repo) == ["finished"] * HELD


def _statuses(repo: Path) -> list[str]:
    """The status of every session record of ``repo``."""
    records = sorted((repo / ".review-handoff").rglob("reviewer-session.json"))
    return [str(json.loads(path.read_text()).get("status")) for path in records]
