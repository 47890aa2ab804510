"""Process tests: every descendant of a session is owned, and nothing else is touched.

Real processes through the real process layer (fake CLIs on a temporary PATH, and
``sys.executable`` scripts). A reviewer that answers normally but leaves a detached helper
or a double-forked daemon without the marker, a session cancelled or whose owner is killed
with SIGKILL: 0 survivors. A program embedding review-loop keeps its own children. Each
async test runs on asyncio and trio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import psutil
import pytest

from review_loop.agents.models import Completed, DeliveryState, Invocation
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.process.run import MARKER_ENV, Started, child_env, run_process
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.orchestrator.process import ownership
from tests.orchestrator.process.ownership import (
    kill_all,
    noted,
    noted_count,
    wait_until,
    with_marker,
)

pytestmark = pytest.mark.anyio

GRACE = 0.5
LEAVE_ALL = ["detached", "daemon", "daemon-pipe"]


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    fakes = FakeCLIs(tmp_path / "fakes")
    for key, value in fakes.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("REVIEW_LOOP_ENV_PASSTHROUGH", ownership.PASSTHROUGH)
    return fakes


def claude(cwd: Path) -> Invocation:
    return Invocation(argv=("claude", "-p"), stdin=b"question", cwd=cwd)


async def run_recording(
    invocation: Invocation, *, deadline: float | None, grace: float
) -> tuple[list[Started], Completed]:
    """``run_process``, keeping what ``on_started`` was told (pid, marker)."""
    seen: list[Started] = []

    async def on_started(info: Started) -> None:
        seen.append(info)

    done = await run_process(invocation, deadline=deadline, grace=grace, on_started=on_started)
    return seen, done


def assert_nothing_left(fakes: FakeCLIs, marker: str, expected_noted: int) -> None:
    """Every process the fake left is gone, and nothing carries the session's marker."""
    assert noted_count(fakes) == expected_noted  # the fake really left them
    left, marked = noted(fakes), with_marker(marker)
    kill_all(left + marked)
    assert left == [] and marked == []


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
@pytest.mark.parametrize("leave", [["detached"], ["daemon"], ["daemon-pipe"], LEAVE_ALL])
async def test_helpers_left_after_a_normal_answer_are_ended(
    fakes: FakeCLIs, tmp_path: Path, leave: list[str]
) -> None:
    """A setsid'd helper on /dev/null, a double-forked daemon without the marker (with or
    without the pipe): all gone when ``run_process`` returns, the answer intact."""
    fakes.script(claude=[{"mode": "ok-leaving", "leave": leave, "text": "answered"}])
    seen, done = await run_recording(claude(tmp_path), deadline=30, grace=GRACE)
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"] == "answered"
    assert not done.killed_after_grace  # they ended on SIGTERM
    assert_nothing_left(fakes, seen[0].marker, len(leave))


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
async def test_consult_delivers_and_leaves_nothing(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the dispatcher: DELIVERED, and 0 survivors right after the consult returns."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    fakes.script(claude=[{"mode": "ok-leaving", "leave": LEAVE_ALL, "text": "fine"}])
    prefs = Prefs.validate({"graceMs": 500, "livenessMs": 60_000})
    record_dir = repo / ".review-handoff" / "runtime" / "t" / "claude"
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
        delivery = await d.consult(PeerRequest(peer="claude", prompt="q", record_dir=record_dir))
    assert delivery.state == DeliveryState.DELIVERED
    assert delivery.reply is not None and delivery.reply.text == "fine"
    marker = json.loads((record_dir / "reviewer-session.json").read_text())["marker"]
    assert_nothing_left(fakes, marker, len(LEAVE_ALL))


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
async def test_one_session_ending_leaves_a_concurrent_session_alone(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """Attribution with several sessions: A's leftovers are ended when A answers, while B,
    still working, is untouched and answers later."""
    fakes.script(
        claude=[{"mode": "ok-leaving", "leave": LEAVE_ALL, "text": "A"}],
        codex=[{"mode": "slow-stream", "lines": 8, "interval": 0.25, "text": "B"}],
    )
    results: dict[str, tuple[list[Started], Completed]] = {}

    async def run(name: str, argv: tuple[str, ...]) -> None:
        invocation = Invocation(argv=argv, stdin=b"q", cwd=tmp_path)
        results[name] = await run_recording(invocation, deadline=30, grace=GRACE)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "B", ("codex", "exec", "--json", "-"))
        group.start_soon(run, "A", ("claude", "-p"))
    (a_seen, a), (b_seen, b) = results["A"], results["B"]
    assert a.returncode == 0 and json.loads(a.stdout)["result"] == "A"
    assert b.returncode == 0 and b'"text": "B"' in b.stdout and not b.timed_out
    assert b.stderr.count(b"progress") == 8  # B ran to its end, never signalled
    assert_nothing_left(fakes, a_seen[0].marker, len(LEAVE_ALL))
    assert with_marker(b_seen[0].marker) == []


@pytest.mark.parametrize("mode", ["stubborn-escape", "setsid-grandchild"])
async def test_cancellation_ends_every_descendant_then_reraises(
    fakes: FakeCLIs, tmp_path: Path, mode: str
) -> None:
    """Cancelled while a SIGTERM-ignoring escaper holds the pipe: all ended, the child
    reaped, and the cancellation still reaches the caller."""
    fakes.script(claude=[{"mode": mode}])
    seen: list[Started] = []

    async def on_started(info: Started) -> None:
        seen.append(info)

    with anyio.move_on_after(2.0) as scope:
        await run_process(claude(tmp_path), deadline=None, grace=GRACE, on_started=on_started)
    assert scope.cancelled_caught
    with pytest.raises(psutil.NoSuchProcess):  # reaped: not even a zombie is left
        psutil.Process(seen[0].pid).status()
    expected = 1 if mode == "stubborn-escape" else 0
    assert_nothing_left(fakes, seen[0].marker, expected)


async def test_an_error_after_the_spawn_still_ends_and_reaps_the_session(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """``on_started`` failing (say, the record cannot be written): the error reaches the
    caller only after the session was ended and its child reaped."""
    fakes.script(claude=[{"mode": "hang"}])
    seen: list[Started] = []

    async def on_started(info: Started) -> None:
        seen.append(info)
        raise RuntimeError("no space left for the record")

    with pytest.raises(RuntimeError, match="no space left"):
        await run_process(claude(tmp_path), deadline=30, grace=GRACE, on_started=on_started)
    with pytest.raises(psutil.NoSuchProcess):  # reaped: not even a zombie is left
        psutil.Process(seen[0].pid).status()
    assert with_marker(seen[0].marker) == []


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
async def test_the_supervisor_ends_the_session_when_its_owner_is_killed(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """``kill -9`` of review-loop: the session ends without waiting for any later command."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    fakes.script(claude=[{"mode": "stubborn-escape"}])
    # the supervisor, the CLI and its SIGTERM-ignoring escaper
    _, marker = ownership.kill_owner_mid_session(repo, grace_ms=500, marked=3)
    assert wait_until(lambda: not with_marker(marker)), "the session outlived its owner"
    kill_all(with_marker(marker))


@pytest.mark.parametrize("supervised", [True, False], ids=["supervised", "fallback"])
async def test_an_embedding_programs_own_children_are_never_signalled(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, supervised: bool
) -> None:
    """The embedding program's children — in its own group, and in a session of their own —
    outlive sessions that time out, escape, are cancelled or answer and leave helpers;
    nobody reaped them behind the program's back. With the supervisor and without."""
    if supervised and not subreaper.available():
        pytest.skip("needs a child subreaper (Linux)")
    if not supervised:
        monkeypatch.setattr(subreaper, "_available", False)
    own = [ownership.victim(new_session=False), ownership.victim(new_session=True)]
    try:
        fakes.script(
            claude=[
                {"mode": "hang"},
                {"mode": "setsid-grandchild"},
                # without a subreaper, helpers detached after a normal exit are not found
                {"mode": "ok-leaving", "leave": LEAVE_ALL if supervised else []},
                {"mode": "stubborn-escape"},
            ]
        )
        await run_process(claude(tmp_path), deadline=0.5, grace=GRACE)
        await run_process(claude(tmp_path), deadline=0.5, grace=GRACE)
        await run_process(claude(tmp_path), deadline=30, grace=GRACE)
        with anyio.move_on_after(1.0):
            await run_process(claude(tmp_path), deadline=None, grace=GRACE)
        assert [p.poll() for p in own] == [None, None]  # alive, and still ours to wait for
        assert all(psutil.Process(p.pid).ppid() == os.getpid() for p in own)
    finally:
        for proc in own:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
async def test_the_cli_gets_exactly_its_environment(tmp_path: Path) -> None:
    """The supervisor's interpreter adds nothing (no PEP 538 ``LC_CTYPE``) and drops
    nothing: the CLI sees what ``child_env`` built, its marker included."""
    printer = "/usr/bin/env"  # not Python: its own start-up would coerce LC_CTYPE=C too
    for extra in ({}, {"LC_CTYPE": "C"}):
        invocation = Invocation(argv=(printer, "-0"), cwd=tmp_path, env=extra)
        seen, done = await run_recording(invocation, deadline=30, grace=GRACE)
        pairs = (item.split(b"=", 1) for item in done.stdout.split(b"\0") if item)
        got = {key.decode(): value.decode() for key, value in pairs}
        assert got == child_env(invocation, seen[0].marker)
        assert got[MARKER_ENV] == seen[0].marker


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
async def test_a_cli_that_cannot_be_executed_is_a_spawn_error(tmp_path: Path) -> None:
    """The supervisor reports an exec failure as a spawn error, as a direct spawn would."""
    broken = tmp_path / "broken-cli"
    broken.write_bytes(b"\x00\x01 not a program")
    broken.chmod(0o755)
    done = await run_process(Invocation(argv=(str(broken),), cwd=tmp_path), deadline=10, grace=1)
    assert done.spawn_error is not None
    assert done.spawn_error.startswith("spawn failed: [Errno 8] Exec format error")
    assert done.returncode is None


async def test_without_a_subreaper_escapers_are_still_ended(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback (no subreaper: not Linux): group, descendants seen, and the marker."""
    monkeypatch.setattr(subreaper, "_available", False)
    fakes.script(claude=[{"mode": "stubborn-escape"}])
    seen, done = await run_recording(claude(tmp_path), deadline=1.0, grace=GRACE)
    assert done.timed_out
    assert seen[0].pid == json.loads(fakes.log_path.read_text().splitlines()[0])["pid"]
    assert_nothing_left(fakes, seen[0].marker, 1)


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
def test_the_supervisor_dies_as_the_cli_did(tmp_path: Path) -> None:
    """Exit code and fatal signal are passed on, so callers see the CLI's own status."""
    for code, expected in (("raise SystemExit(3)", 3), ("import os; os.kill(os.getpid(), 9)", -9)):
        assert run_supervised([sys.executable, "-c", code], tmp_path) == expected


def run_supervised(argv: list[str], cwd: Path) -> int:
    """A supervisor started by hand and handed ``argv`` on its control pipe; its exit."""
    read, write = os.pipe()
    supervisor = subreaper.supervisor_argv(owner=os.getpid(), control=read)
    with subprocess.Popen(supervisor, pass_fds=(read,)) as proc:
        os.close(read)
        frame = subreaper.session_frame(
            argv, dict(os.environ), cwd=str(cwd), grace=0.5, stdin=False
        )
        os.write(write, frame)
        os.close(write)
    return proc.returncode
