"""Collaboration tests: the dispatcher over real processes of fake CLIs.

Records before the prompt (the real pid), a STOP file during a real run, a missing
executable, liveness lines, the reaper, the sandbox of a CLI without a read-only mode, the
probe cache, the warm supervisor. The policy itself (retry, fallback, resume, deadlines,
fan-out) is asserted over a fake runner, without a process: test_dispatcher_policy.py.
Every test runs on asyncio and trio; no process may outlive a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest

from review_loop.agents import outcomes
from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.process.reaper import reap_sync
from review_loop.prefs import PeerCommand, Prefs
from tests.fakes import FakeCLIs

pytestmark = pytest.mark.anyio


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo with space"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    return repo


def prefs(**changes: object) -> Prefs:
    base = {"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000}
    base.update(changes)
    return Prefs.validate(base)


def request(repo: Path, peer: str = "claude", **kw: object) -> PeerRequest:
    return PeerRequest(
        peer=peer,
        prompt="Is this right?",
        record_dir=repo / ".review-handoff" / "runtime" / "t" / peer,
        **kw,  # type: ignore[arg-type]
    )


async def test_delivered_reply_and_record(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "text": "looks right"}])
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(request(repo))
    assert delivery.state is DeliveryState.DELIVERED
    assert delivery.reply is not None and delivery.reply.text == "looks right"
    assert delivery.cost == 0.0125
    record = json.loads(Path(delivery.recordPath or "").read_text())
    assert record["product"] == "claude"
    assert record["sessionId"] == delivery.sessionId
    assert record["status"] == "finished" and record["state"] == "DELIVERED"
    assert record["cwd"] == str(repo)
    # the session id was chosen before launch and passed to the CLI
    assert delivery.sessionId in fakes.calls()[0]["argv"]


async def test_record_holds_pid_before_prompt_is_sent(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "hang"}])
    req = request(repo, timeout_ms=60_000)
    record_path = req.record_dir / "reviewer-session.json"
    async with (
        open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d,
        anyio.create_task_group() as group,
    ):
        group.start_soon(d.consult, req)
        with anyio.fail_after(20):
            while not (record_path.exists() and fakes.calls()):
                await anyio.sleep(0.05)
        record = json.loads(record_path.read_text())
        assert record["status"] == "running"
        cli = fakes.calls()[0]
        # The record names the session's leader: the CLI itself, or (Linux) the session
        # supervisor whose child it is; either way it leads the CLI's process group.
        assert record["pid"] == record["pgid"] == cli["pgid"]
        assert record["pid"] in (cli["pid"], psutil.Process(cli["pid"]).ppid())
        assert record["sessionId"] is not None
        group.cancel_scope.cancel()


async def consult_then_stop(
    repo: Path, fakes: FakeCLIs, req: PeerRequest, stop: Path
) -> outcomes.Delivery:
    """Ask ``req``; write the STOP file ``stop`` once the reviewer has been called."""

    async def press_stop() -> None:
        while not fakes.calls():
            await anyio.sleep(0.05)
        stop.write_text("")

    async with (
        open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d,
        anyio.create_task_group() as group,
    ):
        group.start_soon(press_stop)
        return await d.consult(req)


async def test_stop_file_during_run_is_delivery_unknown(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "hang"}])
    stop = repo / "run-STOP"
    req = request(repo, stop_files=(stop,))
    delivery = await consult_then_stop(repo, fakes, req, stop)
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    assert delivery.reason == "STOP interrupt"


async def test_missing_executable_is_not_submitted(repo: Path, fakes: FakeCLIs) -> None:
    p = prefs(peerCommands={"codex002": PeerCommand(product="codex", command=("nope-codex",))})
    async with open_dispatcher(repo=repo, prefs=p, progress=lambda _: None) as d:
        delivery = await d.consult(request(repo, "codex002"))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert delivery.reason == "spawn failed"


async def test_liveness_line_is_printed(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "delay": 1.0}])
    lines: list[str] = []
    async with open_dispatcher(repo=repo, prefs=prefs(livenessMs=300), progress=lines.append) as d:
        await d.consult(request(repo))
    assert len(lines) >= 2
    assert lines[0] == "[review-loop] reviewer=claude status=active elapsed=00:00 timeout=00:20"


async def test_reaper_ends_an_orphan_of_a_dead_owner(repo: Path, fakes: FakeCLIs) -> None:
    """A review-loop process killed mid-consult leaves a running CLI; the next call ends it."""
    fakes.script(claude=[{"mode": "hang"}])
    script = (
        "import anyio, sys\n"
        "from pathlib import Path\n"
        "from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher\n"
        "from review_loop.prefs import Prefs\n"
        "async def main():\n"
        "    async with open_dispatcher(repo=Path(sys.argv[1]), prefs=Prefs()) as d:\n"
        "        req = PeerRequest(peer='claude', prompt='x', record_dir=Path(sys.argv[2]))\n"
        "        await d.consult(req)\n"
        "anyio.run(main)\n"
    )
    record_dir = repo / ".review-handoff" / "runtime" / "t" / "orphan"
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(repo), str(record_dir)],
        env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])},
    )
    record_path = record_dir / "reviewer-session.json"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if record_path.exists() and json.loads(record_path.read_text()).get("status") == "running":
            break
        time.sleep(0.05)
    pid = json.loads(record_path.read_text())["pid"]
    owner.kill()  # SIGKILL: no cleanup runs in the owner
    owner.wait()
    reaped = reap_sync(repo, grace=0.5)
    assert [r.status for r in reaped] == ["orphaned"]
    assert json.loads(record_path.read_text())["state"] == "DELIVERY_UNKNOWN"
    for _ in range(100):
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"the orphan {pid} still runs")


async def test_grok_without_read_only_cannot_write_by_absolute_path(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy alone is no sandbox: the repository itself is mounted read-only as well."""
    monkeypatch.setenv("FAKE_GROK_VARIANT", "vibe")
    target = repo / "pwned.txt"
    fakes.script(grok=[{"mode": "ok", "text": "tried", "write": str(target)}])
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(request(repo, "grok"))
    assert delivery.ok
    assert not target.exists()
    assert (repo / "a.txt").read_text() == "hello\n"


async def test_grok_build_runs_read_only_in_place(repo: Path, fakes: FakeCLIs) -> None:
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(request(repo, "grok"))
    assert delivery.ok
    argv = fakes.calls()[0]["argv"]
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert fakes.calls()[0]["cwd"] == str(repo)


async def test_probe_is_cached_until_the_executable_changes(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch, user_state: Path
) -> None:
    monkeypatch.setenv("FAKE_GROK_VARIANT", "build")
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        assert (await d.consult(request(repo, "grok"))).ok
    assert (user_state / "probes.json").exists()
    monkeypatch.setenv("FAKE_GROK_VARIANT", "vibe")  # the cached probe still says "build"
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        await d.consult(request(repo, "grok"))  # answers in the other variant's format
    assert "--sandbox" in fakes.calls()[1]["argv"]
    exe = fakes.bin / "grok"
    exe.write_text(exe.read_text() + "\n# upgraded\n")  # a new install: probe again
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        assert (await d.consult(request(repo, "grok"))).ok
    # ... as the npm variant: answered in its format, isolated (the fake cannot log from a
    # read-only file system; tests/orchestrator/sandbox/test_isolation.py covers that run)
    assert len(fakes.calls()) == 2


async def test_grok_without_read_only_is_refused_where_no_namespace_can_be_made(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a read-only mount namespace the unsafe CLI never starts: NOT_SUBMITTED."""
    from review_loop.orchestrator.sandbox import isolation

    monkeypatch.setenv("FAKE_GROK_VARIANT", "vibe")
    monkeypatch.setattr(isolation, "_available", False)
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(request(repo, "grok"))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert "no read-only mode" in delivery.detail
    assert fakes.calls() == []


async def test_missing_cli_without_read_only_is_not_submitted(repo: Path, fakes: FakeCLIs) -> None:
    """The isolation wrapper must not turn a missing executable into a crash."""
    p = prefs(peerCommands={"grok002": PeerCommand(product="grok", command=("nope-grok",))})
    async with open_dispatcher(repo=repo, prefs=p, progress=lambda _: None) as d:
        delivery = await d.consult(request(repo, "grok002"))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert delivery.reason == "spawn failed"
    assert delivery.detail == "executable not found: nope-grok"


def test_reaper_marks_a_session_whose_process_is_gone_as_lost(repo: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record_dir = repo / ".review-handoff" / "runtime" / "t" / "lost"
    record_dir.mkdir(parents=True)
    running = {
        "product": "codex", "sessionId": "s-1", "updated": "2026-11-29T10:00:00.000Z",
        "cwd": str(repo), "peer": "codex", "status": "running", "pid": dead.pid,
        "pgid": dead.pid, "ownerPid": dead.pid, "startedAt": "2026-11-29T10:00:00.000Z",
    }  # fmt: skip
    (record_dir / "reviewer-session.json").write_text(json.dumps(running))
    finished = dict(running, status="finished", sessionId="s-2")
    (repo / ".review-handoff" / "runtime" / "t" / "done").mkdir()
    (repo / ".review-handoff" / "runtime" / "t" / "done" / "reviewer-session.json").write_text(
        json.dumps(finished)
    )
    reaped = reap_sync(repo, grace=0.1)
    assert [(r.sessionId, r.status, r.state) for r in reaped] == [
        ("s-1", "lost", "DELIVERY_UNKNOWN")
    ]
    assert json.loads((record_dir / "reviewer-session.json").read_text())["status"] == "lost"
    assert reap_sync(repo, grace=0.1) == []  # marked once; a finished record is left alone


async def test_first_session_runs_under_the_supervisor_started_at_open(
    repo: Path, fakes: FakeCLIs
) -> None:
    from review_loop.orchestrator.process import subreaper

    if not subreaper.available():
        pytest.skip("no session supervisor on this platform")
    fakes.script(claude=[{"mode": "ok", "text": "warm"}])
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        assert d.supervisors is not None
        spare = d.supervisors.spare_pid
        assert spare is not None  # started while the repository was located and reaped
        delivery = await d.consult(request(repo))
    assert delivery.ok
    record = json.loads(Path(delivery.recordPath or "").read_text())
    assert record["pid"] == spare  # the session's leader is that supervisor
    assert record["ownerStart"] == psutil.Process().create_time()


async def test_open_dispatcher_keeps_the_prefs_it_is_given(repo: Path, fakes: FakeCLIs) -> None:
    model = prefs(graceMs=250, peerCommands={"cc9": {"product": "claude", "command": ["claude"]}})
    async with open_dispatcher(repo=repo, prefs=model, progress=lambda _: None) as d:
        assert d.prefs is model
        delivery = await d.consult(request(repo, "cc9"))
    assert delivery.ok and delivery.product == "claude" and delivery.peer == "cc9"


async def test_an_unasked_request_whose_record_is_nested_too_deep_is_not_finished(
    repo: Path,
) -> None:
    """The interrupted outcome of a request never launched reads back its record (to finish
    one this process left unfinished); a file there nested too deep for json.loads
    (RecursionError, not a ValueError) is not ours to finish, never a crash."""
    asked = request(repo)
    asked.directory.mkdir(parents=True)
    (asked.directory / "reviewer-session.json").write_text("[" * 200_000)
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lambda _: None) as d:
        delivery = d.outcome_of(asked)
    assert delivery.reason == "interrupted"
    assert delivery.attempts == []
    assert (asked.directory / "reviewer-session.json").read_text() == "[" * 200_000
