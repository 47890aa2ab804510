"""Protocol tests of ``review-loop mcp`` through the SDK's own stdio client, both backends.

Contract: every tool is listed with its input and output JSON Schemas; a refused input is
refused with the CLI's own message. Collaboration: a consult job started, polled with
progress, answered by a fake reviewer. Process: a job cancelled, the server stopped by
SIGTERM or killed with SIGKILL, the client gone mid-job: no reviewer survives (the
``scanner`` fixture fails the test on any tagged survivor) and the record reads
``interrupted``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import WAIT_S, Scanner, record_of, unfinished
from tests.mcp.client import connected, server_process, structured
from tests.test_cli import run_cli

pytestmark = pytest.mark.anyio

AGREE = "## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE"
TOOLS = {
    "consult",
    "job_wait",
    "job_cancel",
    "jobs",
    "sessions",
    "evidence",
    "run",
    "fix_completion",
    "close",
    "preflight",
    "converge",
}


async def until(what: str, check: Callable[[], Any]) -> Any:
    """Poll ``check`` until truthy; fail (never hang) after the generous bound."""
    with anyio.move_on_after(WAIT_S):
        while True:
            value = check()
            if value:
                return value
            await anyio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def running(repo: Path, peer: str) -> bool:
    record = record_of(repo, peer)
    return record is not None and record.get("status") == "running"


async def test_contract_every_tool_is_listed_with_its_schemas(
    env: dict[str, str], tmp_path: Path
) -> None:
    async with connected(env, tmp_path / "server.err") as session:
        listed = (await session.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert tool.description, tool.name
        assert tool.inputSchema["type"] == "object", tool.name
        assert tool.outputSchema is not None, tool.name
        assert "properties" in tool.outputSchema, tool.name
    by_name = {tool.name: tool for tool in listed}
    assert set(by_name["consult"].inputSchema["required"]) == {"repo", "question"}
    assert by_name["job_wait"].inputSchema["properties"]["wait_seconds"]["maximum"] == 120
    assert "document" in by_name["consult"].outputSchema["properties"]
    assert "ok" in by_name["sessions"].outputSchema["properties"]


async def test_contract_a_refused_input_reads_as_the_cli_says_it(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    args = ["--repo", str(repo), "--question", "Right?", "--peer", "nosuch"]
    cli_code, cli_document, _ = run_cli("consult", *args, env=env)
    async with connected(env, tmp_path / "server.err") as session:
        result = await session.call_tool(
            "consult",
            {"repo": str(repo), "question": "Right?", "peers": ["nosuch"], "wait_seconds": 60},
        )
        state = structured(result)
        relative = await session.call_tool("sessions", {"repo": "repo"})
        outside = await session.call_tool(
            "close", {"repo": str(repo), "packet": "../elsewhere.md", "reason": "accept-concerns"}
        )
    assert cli_code == 1
    assert state["state"] == "finished"
    assert state["exitCode"] == cli_code
    assert state["document"] == cli_document
    assert "--peer: unknown product" in state["document"]["error"]
    assert relative.isError
    assert "repo: 'repo' is a relative path" in relative.content[0].text  # type: ignore[union-attr]
    assert outside.isError
    assert "packet: ../elsewhere.md is outside the repository" in outside.content[0].text  # type: ignore[union-attr]
    assert not (repo.parent / "elsewhere.md").exists()


async def test_collaboration_consult_job_is_polled_and_answered(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "answer from codex"}])
    progress: list[str] = []

    async def noted(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with connected(env, tmp_path / "server.err") as session:
        started = structured(
            await session.call_tool(
                "consult",
                {"repo": str(repo), "question": "Is it right?", "peers": ["codex"]},
                progress_callback=noted,
            )
        )
        state = started
        while state["state"] == "running":
            state = structured(
                await session.call_tool(
                    "job_wait",
                    {"job_id": started["jobId"], "wait_seconds": 5},
                    progress_callback=noted,
                )
            )
        listed = structured(await session.call_tool("jobs", {}))
    document = state["document"]
    assert document["ok"] is True, document
    assert document["peer"] == "codex"
    assert "answer from codex" in document["text"]
    assert state["exitCode"] == 0
    assert state["progressLines"] >= 1
    assert progress, "no progress notification reached the client"
    assert [job["jobId"] for job in listed["jobs"]] == [started["jobId"]]
    assert record_of(repo, "codex")["status"] == "finished"  # type: ignore[index]


async def finished(session: Any, result: Any) -> dict[str, Any]:
    """The finished state of the job a tool started (polled with job_wait)."""
    state = structured(result)
    while state["state"] == "running":
        state = structured(
            await session.call_tool("job_wait", {"job_id": state["jobId"], "wait_seconds": 10})
        )
    return state


async def test_collaboration_every_command_tool_runs_its_command(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    (repo / "a.txt").write_text("changed\n")
    packet = {"repo": str(repo), "packet": "no-such-packet"}
    async with connected(env, tmp_path / "server.err") as session:
        evidence = structured(await session.call_tool("evidence", {"repo": str(repo)}))
        review = await finished(
            session,
            await session.call_tool(
                "run", {"repo": str(repo), "reviewer": "simulated", "wait_seconds": 60}
            ),
        )
        fix = structured(await session.call_tool("fix_completion", {**packet, "body": "done"}))
        closed = structured(
            await session.call_tool("close", {**packet, "reason": "accept-concerns"})
        )
        (repo / "plan.md").write_text("# Plan\n- T1\n")
        (repo / "host.md").write_text("## Scope\nT1\n\n" + AGREE + "\n")
        fakes.script(any_=[{"mode": "ok", "text": "position\n\n" + AGREE}])
        ready = await finished(
            session, await session.call_tool("preflight", {"repo": str(repo), "host": "grok"})
        )
        converged = await finished(
            session,
            await session.call_tool(
                "converge",
                {"repo": str(repo), "plan": "plan.md", "host_position": "host.md", "host": "grok"},
            ),
        )
    assert evidence["ok"] is True and evidence["status"] == "attested", evidence
    assert review["exitCode"] == 0, review
    assert review["document"]["verdict"] == "NO_FINDINGS"
    where = ["--repo", str(repo), "--packet", "no-such-packet"]
    fix_cli = run_cli("fix-completion", *where, "--body", "done", env=env)
    close_cli = run_cli("close", *where, "--reason", "accept-concerns", env=env)
    assert fix == fix_cli[1] and fix["ok"] is False, fix
    assert closed == close_cli[1] and closed["ok"] is False, closed
    assert ready["document"]["status"] == "ready", ready
    assert converged["document"]["status"] == "converged", converged
    assert converged["document"]["rounds"] == 1


async def test_process_a_cancelled_job_ends_its_reviewer(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, scanner: Scanner, tmp_path: Path
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    async with connected(env, tmp_path / "server.err") as session:
        started = structured(
            await session.call_tool(
                "consult", {"repo": str(repo), "question": "Right?", "peers": ["codex"]}
            )
        )
        await until("the reviewer running", lambda: running(repo, "codex"))
        # a client's tool call that times out leaves the job running
        polled = structured(
            await session.call_tool("job_wait", {"job_id": started["jobId"], "wait_seconds": 0})
        )
        assert polled["state"] == "running"
        state = structured(await session.call_tool("job_cancel", {"job_id": started["jobId"]}))
        server = server_process(scanner)
        assert scanner.survivors(within=10) == [server]  # the server alone is left
    assert state["state"] == "finished"
    assert state["cancelled"] is True
    assert state["document"]["status"] == "interrupted"
    assert state["document"]["signal"] == "SIGTERM"
    assert state["document"]["interrupted"] == ["codex"]
    assert record_of(repo, "codex")["status"] == "interrupted"  # type: ignore[index]
    assert unfinished(repo) == []


async def test_process_a_timed_out_tool_call_leaves_the_job_running(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "late answer", "delay": 2}])
    async with connected(env, tmp_path / "server.err") as session:
        started = structured(
            await session.call_tool(
                "consult",
                {"repo": str(repo), "question": "Right?", "peers": ["codex"], "wait_seconds": 0},
            )
        )
        with anyio.move_on_after(0.5):  # the host gives up on its tool call
            await session.call_tool("job_wait", {"job_id": started["jobId"], "wait_seconds": 60})
        state = started
        while state["state"] == "running":
            state = structured(
                await session.call_tool("job_wait", {"job_id": started["jobId"], "wait_seconds": 5})
            )
    assert state["document"]["ok"] is True, state
    assert "late answer" in state["document"]["text"]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
async def test_process_server_stopped_mid_job_leaves_no_reviewer(
    how: str, env: dict[str, str], repo: Path, fakes: FakeCLIs, scanner: Scanner, tmp_path: Path
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    # the session breaks when its server goes: the SDK raises that out of its task groups
    with pytest.raises((_Stopped, BaseExceptionGroup)) as stopped:
        await _stop_server_mid_job(getattr(signal, how), env, repo, scanner, tmp_path)
    assert _holds(stopped.value, _Stopped), stopped.value
    assert scanner.survivors() == []
    assert record_of(repo, "codex")["status"] == "interrupted"  # type: ignore[index]
    assert unfinished(repo) == []


async def test_process_a_client_gone_mid_job_leaves_no_reviewer(
    env: dict[str, str], repo: Path, fakes: FakeCLIs, scanner: Scanner, tmp_path: Path
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    async with connected(env, tmp_path / "server.err") as session:
        await session.call_tool(
            "consult", {"repo": str(repo), "question": "Right?", "peers": ["codex"]}
        )
        await until("the reviewer running", lambda: running(repo, "codex"))
        server = server_process(scanner)
    # The client closed the server's stdin: the server stops its jobs and exits by itself,
    # printing its closing document (the SDK client kills a server still there after 2 s).
    server.wait(timeout=WAIT_S)  # its exit code went to the SDK client, which reaped it
    assert scanner.survivors() == []
    assert record_of(repo, "codex")["status"] == "interrupted"  # type: ignore[index]
    assert unfinished(repo) == []
    assert '"status": "stopped"' in (tmp_path / "server.err").read_text()


async def _stop_server_mid_job(
    sig: signal.Signals, env: dict[str, str], repo: Path, scanner: Scanner, tmp_path: Path
) -> None:
    async with connected(env, tmp_path / "server.err") as session:
        await session.call_tool(
            "consult", {"repo": str(repo), "question": "Right?", "peers": ["codex"]}
        )
        await until("the reviewer running", lambda: running(repo, "codex"))
        server = server_process(scanner)
        os.kill(server.pid, sig)
        await until("the server gone", lambda: not server.is_running() or _zombie(server))
        await until("the record finished", lambda: not running(repo, "codex"))
        raise _Stopped


class _Stopped(Exception):
    """Raised by the test once it has seen what it came for."""


def _zombie(proc: Any) -> bool:
    import psutil

    try:
        return bool(proc.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def _holds(error: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(error, kind):
        return True
    return isinstance(error, BaseExceptionGroup) and any(
        _holds(inner, kind) for inner in error.exceptions
    )


def test_contract_no_other_command_imports_the_sdk(repo: Path, env: dict[str, str]) -> None:
    # The SDK (and its HTTP stack) costs start-up time; only `review-loop mcp` may pay it.
    probe = (
        "import sys\n"
        "from review_loop.orchestrator.cli import run\n"
        "for argv in (['sessions', '--repo', sys.argv[1]], ['mcp', '--help'], ['help']):\n"
        "    run(argv, stdout=lambda text: None)\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe, str(repo)],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
    )
    assert ran.stdout.strip() == "[]", ran.stdout
