"""Process tests: ``review-loop mcp`` stopped by a signal exits 128 + the signal.

As every command that runs reviewers (``docs/process-ownership.md``): TERM, HUP or INT
stop the server (its jobs' reviewers ended, their records ``interrupted``) and the exit
status says which signal did it, not 2. The closing ``interrupted`` document is on
stderr; stdout carries nothing but the protocol's own lines. The server is driven here
over raw JSON-RPC lines (the SDK client reaps the server itself and hides its exit status).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from mcp.types import LATEST_PROTOCOL_VERSION

from tests.fakes import FakeCLIs
from tests.faults.harness import WAIT_S, Scanner, record_of, unfinished, wait_until

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


def send(proc: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    proc.stdin.flush()


def read_line(stream: IO[str]) -> str:
    """One protocol line, or a failure after the hang-catching bound."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        assert selector.select(WAIT_S), "no answer from the MCP server"
    return stream.readline()


def started_server(env: dict[str, str], errlog: IO[str]) -> subprocess.Popen[str]:
    """``python -m review_loop mcp``, initialised (so its signal handlers are in place)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "review_loop", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=env,
        text=True,
    )
    client = {"name": "exit-test", "version": "0"}
    params = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client}
    send(proc, {"id": 1, "method": "initialize", "params": params})
    assert proc.stdout is not None
    answer = json.loads(read_line(proc.stdout))
    assert answer["id"] == 1 and "result" in answer, answer
    send(proc, {"method": "notifications/initialized"})
    return proc


def stopped(proc: subprocess.Popen[str], sig: signal.Signals, errlog: Path) -> dict[str, Any]:
    """Send ``sig``, wait for the exit; the closing document from stderr."""
    os.kill(proc.pid, sig)
    try:
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None and proc.stdin is not None
    for line in proc.stdout.read().splitlines():  # nothing but protocol messages
        assert json.loads(line)["jsonrpc"] == "2.0", line
    proc.stdin.close()
    proc.stdout.close()
    text = errlog.read_text()
    closing = text[text.rindex('{\n  "ok"') :]
    document: dict[str, Any] = json.loads(closing)
    return document


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_process_server_stopped_by_a_signal_exits_128_plus_the_signal(
    sig: signal.Signals, env: dict[str, str], scanner: Scanner, tmp_path: Path
) -> None:
    errlog = tmp_path / "server.err"
    with errlog.open("w") as err:
        proc = started_server(env, err)
    document = stopped(proc, sig, errlog)
    assert proc.returncode == 128 + sig, errlog.read_text()
    assert document["ok"] is False and document["status"] == "interrupted"
    assert document["signal"] == sig.name
    assert scanner.survivors() == []


def test_process_server_stopped_mid_job_exits_143_and_ends_the_reviewer(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, scanner: Scanner, tmp_path: Path
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    errlog = tmp_path / "server.err"
    with errlog.open("w") as err:
        proc = started_server(env, err)
    arguments = {"repo": str(repo), "question": "Right?", "peers": ["codex"]}
    send(
        proc,
        {"id": 2, "method": "tools/call", "params": {"name": "consult", "arguments": arguments}},
    )

    def running() -> bool:
        record = record_of(repo, "codex")
        return record is not None and record.get("status") == "running"

    wait_until("the reviewer running", running)
    document = stopped(proc, signal.SIGTERM, errlog)
    assert proc.returncode == 128 + signal.SIGTERM, errlog.read_text()
    assert document["status"] == "interrupted" and document["signal"] == "SIGTERM"
    assert scanner.survivors() == []
    assert record_of(repo, "codex")["status"] == "interrupted"  # type: ignore[index]
    assert unfinished(repo) == []
