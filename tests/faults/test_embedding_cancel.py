"""Collaboration tests: an embedding program cancels a two-peer consult, on asyncio and trio.

Rows: {cancellation from asyncio, cancellation from trio} × {hang, grandchild,
SIGTERM-ignoring, setsid escaper holding the pipe, detached helper after a normal answer}.
The program runs :func:`run_consult` on :func:`open_dispatcher` and cancels its scope
once both reviewers run. Checks: the cancellation propagates (the consult never
returns), every record is finished (``interrupted``; none left ``running``), the
``interrupted`` callback receives the document of what had ended (an answer that arrived
is kept), and no process of the run survives.

Then cancellation however often it comes: ``consult``, ``ask``, ``fan_out`` and
``run_process`` cancelled once and five times in a row (asyncio: ``Task.cancel()`` of the
awaiting task, which anyio's shield does not stop; trio: nested cancel scopes) while
SIGTERM-ignoring reviewers are being ended, ``/proc`` read at the instant the call raises;
an isolated consult cancelled every 10 ms, whose scratch copy must be gone by then too; and
a progress callback that raises, which is the caller's error.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.agents.models import Invocation
from review_loop.agents.outcomes import SessionRecord
from review_loop.orchestrator.dispatcher import (
    SESSION_FILE,
    Dispatcher,
    PeerRequest,
    open_dispatcher,
)
from review_loop.orchestrator.handoff.files import utc_now
from review_loop.orchestrator.handoff.git import ensure_layout
from review_loop.orchestrator.process.run import Started, run_process
from review_loop.orchestrator.workflows.consult import ConsultPlan, run_consult
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.faults.harness import (
    GRACE_MS,
    MODES,
    PEER_A,
    PEER_B,
    STUBBORN,
    WAIT_S,
    Mode,
    Scanner,
    describe_row,
    ignores_sigterm,
    record_of,
    row_is_set_up,
    script_row,
    unfinished,
)
from tests.gitrepo import committed_repo

pytestmark = pytest.mark.anyio


async def _wait_set_up(fakes: FakeCLIs, repo: Path, scanner: Scanner, mode: Mode) -> None:
    with anyio.move_on_after(WAIT_S):
        while not await anyio.to_thread.run_sync(row_is_set_up, fakes, repo, scanner, mode):
            await anyio.sleep(0.05)
        return
    raise AssertionError(
        f"the {mode.name} row was not set up: {describe_row(fakes, repo, scanner)}"
    )


@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
async def test_collaboration_embedding_program_cancels_a_two_peer_consult(
    mode: Mode,
    repo: Path,
    fakes: FakeCLIs,
    scanner: Scanner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    script_row(fakes, mode)
    prefs = Prefs.validate({"graceMs": GRACE_MS, "timeoutMs": 120_000, "livenessMs": 600_000})
    plan = ConsultPlan(peers=(PEER_A, PEER_B), question="Is the change right?")
    ensure_layout(repo)
    kept: list[dict[str, Any]] = []
    returned = False

    async def consult(dispatcher: Dispatcher) -> None:
        nonlocal returned
        await run_consult(dispatcher, plan, interrupted=kept.append)
        returned = True

    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(consult, dispatcher)
                await _wait_set_up(fakes, repo, scanner, mode)
                scope.cancel()  # the program's own cancellation (asyncio or trio)
    assert scope.cancelled_caught and not returned

    assert unfinished(repo) == []
    b_record = record_of(repo, PEER_B)
    assert b_record is not None and b_record["status"] == "interrupted"
    [document] = kept
    assert document["ok"] is False and document["status"] == "interrupted"
    assert PEER_B in document["interrupted"]
    by_peer = {result["peer"]: result for result in document["results"]}
    assert by_peer[PEER_B]["code"] == "interrupted"
    # B was launched: what it was asked may have arrived, so it is DELIVERY_UNKNOWN (never a
    # proven NOT_SUBMITTED) and its interrupted attempt is kept
    assert by_peer[PEER_B]["delivery"] == "DELIVERY_UNKNOWN"
    b_delivery = next(d for d in dispatcher.outcomes if d.peer == PEER_B)
    assert b_delivery.interrupted and b_delivery.state.value == "DELIVERY_UNKNOWN"
    assert [a.reason for a in b_delivery.attempts][-1:] == ["interrupted"]
    if mode.a_answers:
        assert by_peer[PEER_A]["text"] == f"answer from {PEER_A}"
        a_record = record_of(repo, PEER_A)
        assert a_record is not None and a_record["status"] == "finished"
    else:
        assert document["interrupted"] == [PEER_A, PEER_B]
    survivors = scanner.survivors()
    assert survivors == [], [" ".join(p.cmdline()) for p in survivors]


async def test_collaboration_a_record_left_starting_before_the_launch_is_finished(
    repo: Path, fakes: FakeCLIs, scanner: Scanner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancellation between an attempt's first record write and its launch (a namespace
    or a throw-away copy being prepared) must not leave ``starting`` behind. The record
    such an attempt leaves is planted, then the request is cancelled before it launches."""
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    prefs = Prefs.validate({"graceMs": GRACE_MS})
    request = PeerRequest(peer="grok", prompt="q", record_dir=repo / "runtime-test" / "grok")
    request.record_dir.mkdir(parents=True)
    planted = SessionRecord(
        product="grok",
        updated=utc_now(),
        cwd=str(repo),
        peer="grok",
        command=["grok"],
        ownerPid=os.getpid(),
        startedAt=utc_now(),
    )
    path = request.record_dir / SESSION_FILE
    path.write_text(json.dumps(planted.document()))

    async def consult_cancelled() -> tuple[Dispatcher, anyio.CancelScope]:
        """The request, cancelled at its first checkpoint (the probe)."""
        async with open_dispatcher(
            repo=repo, prefs=prefs, progress=lambda _: None, reap=False
        ) as dispatcher:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await dispatcher.consult(request)
        return dispatcher, scope

    dispatcher, scope = await consult_cancelled()
    assert scope.cancelled_caught
    record = json.loads(path.read_text())
    assert record["status"] == "interrupted" and record["state"] == "NOT_SUBMITTED"
    [delivery] = dispatcher.outcomes
    assert delivery.interrupted and delivery.state.value == "NOT_SUBMITTED"
    assert [a.reason for a in delivery.attempts] == ["interrupted"]
    events = (request.record_dir / "events.jsonl").read_text().splitlines()
    assert json.loads(events[-1])["reason"] == "interrupted"
    # a record of another owner (or already final) is never touched
    other = dataclasses.replace(planted, ownerPid=os.getppid())
    path.write_text(json.dumps(other.document()))
    await consult_cancelled()
    assert json.loads(path.read_text())["status"] == "starting"


# -- cancellation however often it comes, and a caller's callback that raises ----------------

APIS = ("consult", "fan_out")
REPEATS = (1, 5)


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (no /proc entry, or a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@dataclass
class _AtEnd:
    """What was true at the instant the call returned or raised (read synchronously)."""

    alive: list[int]
    tagged: list[int]
    statuses: list[Any]
    copies: list[str] = field(default_factory=list)  # scratch copies left in the temp dir


class _Sessions:
    """The sessions of one call: when they run, and what is left of them at its end."""

    def __init__(self, repo: Path, fakes: FakeCLIs, scanner: Scanner, peers: tuple[str, ...]):
        self.repo, self.fakes, self.scanner, self.peers = repo, fakes, scanner, peers
        self.pids: list[int] = []

    def running(self, *, stubborn: bool) -> bool:
        """Every peer's record says ``running`` and its CLI runs (ignoring SIGTERM if
        ``stubborn``); notes the supervisors' pids (the records') and the CLIs' (logged)."""
        records = [record_of(self.repo, peer) for peer in self.peers]
        if any(r is None or r.get("status") != "running" or not r.get("pid") for r in records):
            return False
        called = {call["product"]: call["pid"] for call in self.fakes.calls()}
        if not set(self.peers) <= set(called):
            return False
        clis = [called[peer] for peer in self.peers]
        if any(_gone(pid) or (stubborn and not ignores_sigterm(pid)) for pid in clis):
            return False
        self.pids = [int(r["pid"]) for r in records if r is not None] + clis
        return True

    def at_end(self) -> _AtEnd:
        records = [record_of(self.repo, peer) or {} for peer in self.peers]
        return _AtEnd(
            alive=[pid for pid in self.pids if not _gone(pid)],
            tagged=[proc.pid for proc in self.scanner.tagged()],
            statuses=[r.get("status") for r in records],
        )

    async def wait_running(self, *, stubborn: bool) -> None:
        with anyio.move_on_after(WAIT_S):
            while not await anyio.to_thread.run_sync(lambda: self.running(stubborn=stubborn)):
                await anyio.sleep(0.05)
            return
        raise AssertionError(f"the sessions did not start: {self.at_end()}")


def _call(dispatcher: Dispatcher, api: str) -> tuple[tuple[str, ...], Callable[[], Awaitable[Any]]]:
    """The peers and the call of ``api`` (``fan_out``: two peers at once)."""
    if api == "fan_out":
        requests = [PeerRequest(peer=p, prompt="Is it right?") for p in (PEER_A, PEER_B)]
        return (PEER_A, PEER_B), partial(dispatcher.fan_out, requests)
    return (PEER_B,), partial(dispatcher.consult, PeerRequest(peer=PEER_B, prompt="Is it right?"))


async def _cancelled_repeatedly(
    backend: str,
    call: Callable[[], Awaitable[Any]],
    times: int,
    sessions: _Sessions,
    interval: float = 0.05,
) -> tuple[bool, _AtEnd]:
    """Run ``call`` until its sessions run, cancel it up to ``times`` times ``interval``
    apart (until it ended), and return (whether it returned, what was left at the instant
    it returned or raised).

    asyncio: ``Task.cancel()`` of the task awaiting it, as an embedding program does.
    trio (no task handles): ``times`` nested cancel scopes, innermost first.
    """
    ended: list[_AtEnd] = []
    returned = False

    async def awaiting(scopes: list[anyio.CancelScope]) -> None:
        nonlocal returned
        try:
            with ExitStack() as stack:
                for scope in scopes:
                    stack.enter_context(scope)
                await call()
                returned = True
        finally:
            ended.append(sessions.at_end())  # synchronously: the instant it ended

    if backend == "asyncio":
        import asyncio  # the embedding program's own loop: only this test names it

        task = asyncio.ensure_future(awaiting([]))
        await sessions.wait_running(stubborn=True)
        for _ in range(times):
            if task.done():
                break
            task.cancel()
            await anyio.sleep(interval)
        await asyncio.wait([task])
        assert task.cancelled() or returned, task.exception()
    else:
        scopes = [anyio.CancelScope() for _ in range(times)]
        async with anyio.create_task_group() as group:
            group.start_soon(awaiting, scopes)
            await sessions.wait_running(stubborn=True)
            for scope in reversed(scopes):
                if ended:
                    break
                scope.cancel()
                await anyio.sleep(interval)
    return returned, ended[0]


@pytest.mark.parametrize("times", REPEATS, ids=[f"cancel-x{n}" for n in REPEATS])
@pytest.mark.parametrize("api", APIS)
async def test_collaboration_a_call_cancelled_however_often_ends_its_sessions_first(
    api: str,
    times: int,
    anyio_backend: str,
    repo: Path,
    fakes: FakeCLIs,
    scanner: Scanner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reviewers ignore SIGTERM, so ending them takes the whole grace and a SIGKILL;
    the cancellations keep coming during it. At the instant the call raises, no process
    of it is alive (the supervisors and CLIs by pid, and everything carrying the test's
    tag) and every record is finished ``interrupted``."""
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    fakes.script(**{PEER_A: [STUBBORN], PEER_B: [STUBBORN]})
    prefs = Prefs.validate({"graceMs": GRACE_MS, "timeoutMs": 120_000, "livenessMs": 600_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        peers, call = _call(dispatcher, api)
        sessions = _Sessions(repo, fakes, scanner, peers)
        returned, end = await _cancelled_repeatedly(anyio_backend, call, times, sessions)
        assert not returned
        assert end.alive == [] and end.tagged == [], end
        assert end.statuses == ["interrupted"] * len(peers)
        assert [d.interrupted for d in dispatcher.outcomes] == [True] * len(peers)
    assert unfinished(repo) == []


class _CallerError(Exception):
    """The embedding program's own error, raised by its progress callback."""


@pytest.mark.parametrize("api", ["consult", "fan_out"])
@pytest.mark.parametrize("when", ["while-running", "on-the-answer"])
async def test_collaboration_a_progress_callback_that_raises_is_the_callers_error(
    when: str,
    api: str,
    repo: Path,
    fakes: FakeCLIs,
    scanner: Scanner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The caller gets its own exception (not a group of internals); its sessions are
    ended before it is raised and every record is finished: ``interrupted`` when the
    callback broke while the reviewer ran, ``finished`` with the answer kept in
    ``outcomes`` when it broke on the answer's line."""
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    running = when == "while-running"
    step = STUBBORN if running else {"mode": "ok", "text": "the answer"}
    fakes.script(**{PEER_A: [step], PEER_B: [step]})
    trigger = "status=active" if running else "status=answered"
    broke = _CallerError("the caller's handler broke")
    ended: list[_AtEnd] = []
    holder: list[_Sessions] = []

    def progress(line: str) -> None:
        if trigger in line and (not running or holder[0].running(stubborn=True)):
            raise broke

    prefs = Prefs.validate({"graceMs": GRACE_MS, "timeoutMs": 120_000, "livenessMs": 100})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=progress) as dispatcher:
        peers, call = _call(dispatcher, api)
        holder.append(_Sessions(repo, fakes, scanner, peers))
        raised: BaseException | None = None
        try:
            await call()
        except BaseException as error:  # what it raises (and only that) is the point
            ended.append(holder[0].at_end())  # synchronously: the instant it raised
            raised = error
        assert raised is broke, repr(raised)
        [end] = ended
        assert end.alive == [] and end.tagged == [], end
        if running:
            assert "interrupted" in end.statuses and "running" not in end.statuses, end
        else:
            assert "finished" in end.statuses and "running" not in end.statuses, end
            texts = [d.reply.text for d in dispatcher.outcomes if d.reply is not None]
            assert texts and texts[0] == "the answer"
    assert unfinished(repo) == []


STUBBORN_CHILD = (
    "import os, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(3600)\n"
)


@pytest.mark.parametrize("times", REPEATS, ids=[f"cancel-x{n}" for n in REPEATS])
async def test_process_run_process_cancelled_however_often_reaps_before_it_raises(
    times: int, anyio_backend: str, tmp_path: Path
) -> None:
    """``run_process`` itself (what every session, probe and namespace check runs on):
    a child that ignores SIGTERM, cancelled again and again while it is being ended; at
    the instant ``run_process`` raises, the supervisor and the child are gone."""
    pid_file = tmp_path / "child.pid"
    started: list[int] = []

    async def on_started(info: Started) -> None:
        started.append(info.pid)

    invocation = Invocation(
        argv=(sys.executable, "-c", STUBBORN_CHILD, str(pid_file)), cwd=tmp_path
    )

    class _Child(_Sessions):
        def running(self, *, stubborn: bool) -> bool:
            if not started or not pid_file.exists():
                return False
            child = int(pid_file.read_text())
            self.pids = [started[0], child]
            return ignores_sigterm(child)

        def at_end(self) -> _AtEnd:
            return _AtEnd(alive=[p for p in self.pids if not _gone(p)], tagged=[], statuses=[])

    sessions = _Child(tmp_path, FakeCLIs(tmp_path / "unused"), Scanner(""), ())
    call = partial(run_process, invocation, deadline=None, grace=0.5, on_started=on_started)
    returned, end = await _cancelled_repeatedly(anyio_backend, call, times, sessions)
    assert not returned
    assert end.alive == [], end


async def test_collaboration_an_isolated_consult_cancelled_again_and_again_leaves_no_copy(
    anyio_backend: str,
    tmp_path: Path,
    fakes: FakeCLIs,
    scanner: Scanner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An isolated request (a throw-away copy of a 3,000-file repository) cancelled every
    10 ms until it raises (asyncio: ``Task.cancel()``; trio: nested scopes): its session's
    teardown does not end at the process layer's edge, the copy's removal runs to its end
    too. At the instant the call raises, no process of it is alive, its record is
    finished, and no scratch copy is left in the temp directory."""
    from review_loop.orchestrator.sandbox.isolation import SCRATCH_PREFIX, namespace_available

    if not await namespace_available():
        pytest.skip("no read-only mount namespace here: isolated requests are refused")
    files = {f"m{i}.txt": f"line {i}\n" for i in range(3_000)}
    repo = committed_repo(tmp_path / "big", files)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    fakes.script(**{PEER_B: [STUBBORN]})
    prefs = Prefs.validate({"graceMs": GRACE_MS, "timeoutMs": 120_000, "livenessMs": 600_000})

    class _Isolated(_Sessions):
        def at_end(self) -> _AtEnd:
            end = super().at_end()
            copies = [p.name for p in temp.iterdir() if p.name.startswith(SCRATCH_PREFIX)]
            return dataclasses.replace(end, copies=copies)

    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        request = PeerRequest(peer=PEER_B, prompt="Is it right?", isolate=True)
        sessions = _Isolated(repo, fakes, scanner, (PEER_B,))
        call = partial(dispatcher.consult, request)
        returned, end = await _cancelled_repeatedly(anyio_backend, call, 200, sessions, 0.01)
    assert not returned
    assert end.alive == [] and end.tagged == [], end
    assert end.statuses == ["interrupted"] and end.copies == [], end
