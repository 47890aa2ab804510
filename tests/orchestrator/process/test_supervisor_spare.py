"""Process and contract tests of the warm spare: a session supervisor started ahead.

A supervisor's interpreter start is taken off each session's path by starting it early
(``process.Supervisors``): it waits, idle, for its session on a control pipe. These tests
run real supervisors and real fake CLIs (asyncio and trio): a session runs in the spare
and gets exactly its environment, stdin, directory; a spare dead while idle is replaced;
an idle spare ends with its owner (closed, ``kill -9``, even when a forked child still
holds the pipe) and starts nothing; after ``fork()`` the child never takes its parent's
spare; no spare survives the pool or a dispatcher. The frame contract: the supervisor
never reads a byte past its frame, so nothing sent after it can be mixed into it.

The no-survivor fixture finds processes by a token in their environment; an idle spare's
environment is only its marker, so spares are counted here as this process's children
running the supervisor's script.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import anyio
import psutil
import pytest

from review_loop.agents.models import Invocation
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.process import procfs, subreaper
from review_loop.orchestrator.process.run import (
    MARKER_ENV,
    Started,
    Supervisors,
    child_env,
    open_supervisors,
    run_process,
)
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.orchestrator.process.ownership import ROOT, kill_all, wait_until

pytestmark = pytest.mark.anyio
needs_supervisor = pytest.mark.skipif(
    not subreaper.available(), reason="needs the session supervisor (Linux)"
)
GRACE = 0.5


def supervisors_alive() -> list[psutil.Process]:
    """This process's children that run the supervisor's script (zombies excluded)."""
    found = []
    for child in psutil.Process().children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and subreaper.LAUNCH in child.cmdline():
                found.append(child)
        except psutil.Error:
            continue
    return found


def gone(pid: int) -> bool:
    """Exited and reaped: not even a zombie is left."""
    try:
        psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return True
    return False


def ended(pid: int) -> bool:
    """Exited: a zombie, or already reaped (asyncio's child watcher reaps at once)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def until(predicate: Callable[[], bool]) -> bool:
    return bool(await anyio.to_thread.run_sync(wait_until, predicate))


async def run_recording(
    invocation: Invocation, supervisors: Supervisors
) -> tuple[Started, bytes, int | None]:
    seen: list[Started] = []

    async def on_started(info: Started) -> None:
        seen.append(info)

    done = await run_process(
        invocation, deadline=30, grace=GRACE, on_started=on_started, supervisors=supervisors
    )
    assert done.spawn_error is None, done.spawn_error
    return seen[0], done.stdout, done.returncode


@needs_supervisor
async def test_a_session_runs_in_the_spare_and_a_new_spare_follows(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """The spare started at open runs the first session (same pid, already idle). After
    one session no spare is started for nothing (a consult runs one); from the second on,
    a spare follows each session and runs the next. Closing kills and reaps the spare."""

    async def ask(supervisors: Supervisors, question: str) -> int:
        invocation = Invocation(argv=("claude", "-p"), stdin=question.encode(), cwd=tmp_path)
        started, stdout, code = await run_recording(invocation, supervisors)
        assert code == 0
        assert json.loads(stdout)["result"] == f"FAKE-ANSWER from claude: {question}"
        assert gone(started.pid)  # the session's supervisor, reaped by run_process
        return started.pid

    async with open_supervisors() as supervisors:
        first = supervisors.spare_pid
        assert first is not None
        assert await ask(supervisors, "one") == first
        assert supervisors.spare_pid is None and supervisors_alive() == []
        assert await ask(supervisors, "two") != first  # started on the spot
        second = supervisors.spare_pid
        assert second is not None
        # the spare exists; until it has exec'd its command line is still this process's
        assert await until(lambda: [p.pid for p in supervisors_alive()] == [second])
        assert await ask(supervisors, "three") == second
        last = supervisors.spare_pid
        assert last is not None and last != second
    assert gone(last)
    assert supervisors_alive() == []


@needs_supervisor
async def test_the_spare_is_neutral_and_the_cli_gets_exactly_its_own(tmp_path: Path) -> None:
    """The idle spare's own environment is its marker alone; the CLI it runs gets exactly
    what ``child_env`` built with that marker, in the session's directory, with
    ``/dev/null`` as stdin when the invocation has none."""
    work = tmp_path / "work dir"
    work.mkdir()
    script = 'pwd; readlink /proc/self/fd/0; tr "\\0" "\\n" </proc/$$/environ'
    async with open_supervisors() as supervisors:
        spare = supervisors.spare_pid
        assert spare is not None
        # Popen returns once exec began; /proc/<pid>/environ is filled in a moment later
        assert await until(lambda: MARKER_ENV in psutil.Process(spare).environ())
        marker = psutil.Process(spare).environ()[MARKER_ENV]
        assert psutil.Process(spare).environ() == {MARKER_ENV: marker}
        invocation = Invocation(argv=("/bin/sh", "-c", script), cwd=work, env={"LC_CTYPE": "C"})
        started, stdout, code = await run_recording(invocation, supervisors)
    assert code == 0 and started.pid == spare and started.marker == marker
    cwd, stdin, *entries = stdout.decode().splitlines()
    assert cwd == str(work) and stdin == os.devnull
    got = dict(entry.split("=", 1) for entry in entries if entry)
    assert got == child_env(invocation, marker)  # the shell's own, as exec gave it


@needs_supervisor
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
async def test_a_spare_dead_while_idle_is_replaced(
    fakes: FakeCLIs, tmp_path: Path, sig: signal.Signals
) -> None:
    """A spare killed while idle (it starts nothing and dies at once, even on SIGTERM) is
    noticed when its session is handed over: the session runs in a fresh supervisor."""
    async with open_supervisors() as supervisors:
        dead = supervisors.spare_pid
        assert dead is not None
        os.kill(dead, sig)
        assert await until(lambda: ended(dead))
        invocation = Invocation(argv=("claude", "-p"), stdin=b"still there?", cwd=tmp_path)
        with anyio.fail_after(60):  # hang-catching only
            started, stdout, code = await run_recording(invocation, supervisors)
        assert code == 0 and started.pid != dead
        assert json.loads(stdout)["result"] == "FAKE-ANSWER from claude: still there?"
        assert gone(dead)
    assert supervisors_alive() == []


@needs_supervisor
async def test_a_dead_spares_control_pipe_is_closed_once(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand-over to a dead spare closes its control pipe; ending that spare then must
    not close the same number again: by then it may be another file's (a worker thread's
    /proc read, a record being written). Here a file takes the number as the spare is
    ended, as another thread's could, and must still be open afterwards."""
    async with open_supervisors() as supervisors:
        dead = supervisors.spare_pid
        spare = supervisors._spare
        assert dead is not None and spare is not None
        number = spare.control
        os.kill(dead, signal.SIGKILL)
        assert await until(lambda: ended(dead))
        taken: list[int] = []

        def take_the_number(pid: int) -> None:
            if pid == dead and not taken:  # _discard's first step, after the close
                other = os.open(os.devnull, os.O_RDONLY)
                taken.append(os.dup2(other, number))
                os.close(other)

        # _discard kills the spare through its pinned identity: the number is taken then.
        real = procfs.Proc.send_signal

        def reuse_then_send(proc: procfs.Proc, sig: int) -> bool:
            take_the_number(proc.pid)
            return real(proc, sig)

        monkeypatch.setattr(procfs.Proc, "send_signal", reuse_then_send)
        invocation = Invocation(argv=("claude", "-p"), stdin=b"still there?", cwd=tmp_path)
        with anyio.fail_after(60):  # hang-catching only
            _, _, code = await run_recording(invocation, supervisors)
        assert code == 0 and taken == [number]
        try:
            os.fstat(number)  # the other file's descriptor is still its own
        finally:
            with suppress(OSError):
                os.close(number)
    assert supervisors_alive() == []


@needs_supervisor
async def test_a_session_runs_when_the_control_pipe_is_past_descriptor_1024(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """The control pipe keeps its number in the supervisor (``pass_fds``); in a program
    with more than 1024 descriptors open (a server, an embedding program) it is past
    ``select()``'s FD_SETSIZE, and the supervisor must still wait on it (``poll``), not
    exit with no session, so that every session of that program fails to start."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:  # raise this process's own limit, as a server would (restored below)
        if hard != resource.RLIM_INFINITY and hard < 1200:
            pytest.skip("the hard limit allows fewer than 1200 open files")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        async with open_supervisors() as supervisors:
            invocation = Invocation(argv=("claude", "-p"), stdin=b"many files", cwd=tmp_path)
            with anyio.fail_after(60):  # hang-catching only
                _, stdout, code = await run_recording(invocation, supervisors)
            assert code == 0
            assert json.loads(stdout)["result"] == "FAKE-ANSWER from claude: many files"
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert supervisors_alive() == []


@needs_supervisor
async def test_an_unstartable_session_in_the_spare_is_a_spawn_error(tmp_path: Path) -> None:
    """The spare reports what it could not start (a missing directory) as a spawn error."""
    async with open_supervisors() as supervisors:
        invocation = Invocation(argv=("/bin/true",), cwd=tmp_path / "missing")
        done = await run_process(invocation, deadline=10, grace=GRACE, supervisors=supervisors)
    assert done.returncode is None
    assert done.spawn_error == (
        f"spawn failed: [Errno 2] No such file or directory: '{tmp_path / 'missing'}'"
    )
    assert supervisors_alive() == []


@needs_supervisor
async def test_concurrent_sessions_share_one_pool(fakes: FakeCLIs, tmp_path: Path) -> None:
    """Sessions at once: one takes the spare, the others start their own; all answer."""
    answers: list[bytes] = []

    async def one(supervisors: Supervisors, i: int) -> None:
        invocation = Invocation(argv=("claude", "-p"), stdin=f"q{i}".encode(), cwd=tmp_path)
        _, stdout, code = await run_recording(invocation, supervisors)
        assert code == 0
        answers.append(stdout)

    async with open_supervisors() as supervisors, anyio.create_task_group() as group:
        for i in range(4):
            group.start_soon(one, supervisors, i)
    results = sorted(json.loads(a)["result"] for a in answers)
    assert results == [f"FAKE-ANSWER from claude: q{i}" for i in range(4)]
    assert supervisors_alive() == []


@needs_supervisor
async def test_no_spare_outlives_a_dispatcher(fakes: FakeCLIs, tmp_path: Path) -> None:
    """A program embedding review-loop: once ``open_dispatcher`` exits, no supervisor it
    started (idle or not) is left."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    record_dir = repo / ".review-handoff" / "runtime" / "t" / "claude"
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(PeerRequest(peer="claude", prompt="q", record_dir=record_dir))
        assert delivery.ok
    assert supervisors_alive() == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_after_fork_the_child_never_takes_its_parents_spare(backend: str) -> None:
    """A forked child sees the pool but not the spare: it belongs to the parent's pid."""
    if not subreaper.available():
        pytest.skip("needs the session supervisor (Linux)")

    async def main() -> None:
        async with open_supervisors() as supervisors:
            spare = supervisors.spare_pid
            assert spare is not None
            child = os.fork()
            if child == 0:
                os._exit(0 if supervisors.take() is None else 1)
            _, status = os.waitpid(child, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            assert supervisors.spare_pid == spare and not ended(spare)  # the parent's, alive

    anyio.run(main, backend=backend)
    assert supervisors_alive() == []


OWNER = """
import anyio, os, sys, time
from review_loop.orchestrator.process.run import open_supervisors
async def main():
    async with open_supervisors() as supervisors:
        print("spare", supervisors.spare_pid, flush=True)
        if sys.argv[1] == "fork" and os.fork() == 0:  # a child holding the pipe's write end
            print("child", os.getpid(), flush=True)
            time.sleep(3600)
        await anyio.sleep(3600)
anyio.run(main, backend=sys.argv[2])
"""


@needs_supervisor
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("fork", [False, True], ids=["alone", "forked-child-holds-the-pipe"])
def test_an_idle_spare_ends_when_its_owner_is_killed(fork: bool, backend: str) -> None:
    """``kill -9`` of the owner: its idle spare exits on its own (end-of-file, or, when a
    forked child of the owner still holds the pipe, the owner watch), starting nothing."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, "fork" if fork else "alone", backend],
        stdout=subprocess.PIPE,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    left: list[psutil.Process] = []
    try:
        assert owner.stdout is not None
        said = dict(owner.stdout.readline().split() for _ in range(2 if fork else 1))
        spare = psutil.Process(int(said[b"spare"]))
        forked = [int(said[b"child"])] if fork else []
        left = [spare, *(psutil.Process(pid) for pid in forked)]
        # the spare exists; until it has exec'd its command line is the owner's (or empty)
        assert wait_until(lambda: subreaper.LAUNCH in spare.cmdline())
        assert spare.ppid() == owner.pid
        owner.kill()
        owner.wait()
        assert wait_until(lambda: ended(spare.pid))
        if fork:
            assert psutil.Process(forked[0]).is_running()  # it was the pipe's last holder
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        kill_all(left)


def test_the_supervisor_reads_its_frame_and_not_one_byte_more() -> None:
    """What follows a frame on the pipe stays there: a header can never swallow (or be
    mixed with) bytes sent after it, whatever the reads return."""
    env = {"A": "x=y", "EMPTY": "", "RAW": os.fsdecode(b"\xff\xfe")}
    argv = ["/bin/cli", "", "two words", os.fsdecode(b"\xc3(")]
    frame = subreaper.session_frame(argv, env, cwd="/some dir", grace=1.5, stdin=True)
    read, write = os.pipe()
    try:
        os.write(write, frame + b"PROMPT BYTES")
        os.close(write)
        session = subreaper.read_session(read, os.getppid())
        assert session is not None
        assert os.read(read, 100) == b"PROMPT BYTES"
        assert os.read(read, 100) == b""  # end-of-file: nothing else was there
        assert (session.argv, session.env, session.cwd) == (argv, env, "/some dir")
        assert (session.grace, session.stdin) == (1.5, True)
        assert subreaper.read_session(read, os.getppid()) is None  # end-of-file: no session
    finally:
        os.close(read)


@pytest.mark.parametrize(
    ("argv", "env", "why"),
    [
        (["/bin/cli", "a\0b"], {}, "embedded null byte"),
        (["/bin/cli"], {"A": "x\0"}, "embedded null byte"),
        (["/bin/cli"], {"A=B": "x"}, "illegal environment variable name"),
        (["/bin/cli"], {"": "x"}, "illegal environment variable name"),
        ([], {}, "no command"),
    ],
)
def test_a_frame_refuses_what_exec_would(argv: list[str], env: dict[str, str], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        subreaper.session_frame(argv, env, cwd="/", grace=1.0, stdin=False)


@pytest.mark.parametrize(
    "payload",
    [b"", b"1.0\x001\x00/\x002\x00/bin/cli\x000", b"x\x001\x00/\x001\x00/bin/cli\x000", b"1\x002"],
)
def test_a_malformed_frame_is_refused(payload: bytes) -> None:
    with pytest.raises(ValueError, match="malformed session frame"):
        subreaper.parse_session(payload)


@needs_supervisor
async def test_a_session_refused_before_its_frame_is_sent_does_not_keep_the_spare(
    tmp_path: Path,
) -> None:
    """An argument ``exec`` refuses (a NUL) raises before the taken spare gets a frame:
    the spare is ended and reaped then, not left idle (with its control pipe's write end
    open here) until this process exits, beyond the pool's reach."""
    async with open_supervisors() as supervisors:
        spare = supervisors.spare_pid
        assert spare is not None
        invocation = Invocation(argv=(sys.executable, "-c", "print(1)\0"), cwd=tmp_path)
        with pytest.raises(ValueError, match="null byte"):
            await run_process(invocation, deadline=30, grace=GRACE, supervisors=supervisors)
        assert supervisors.spare_pid is None
        assert await until(lambda: ended(spare))
    assert supervisors_alive() == []
