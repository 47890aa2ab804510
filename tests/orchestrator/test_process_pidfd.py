"""Process and contract tests of supervisors started without asyncio's child watcher.

Where pidfds work, a session supervisor (the warm spare, or one started on the spot) is
started by a synchronous fork/exec and watched by the event loop itself: its exit through
a pidfd, its pipes as non-blocking descriptors (``orchestrator/pidfd_process.py``). These
tests run real supervisors and real CLIs on asyncio and trio: no thread is started for a
supervisor; no descriptor and no child (zombie or running) is left after many sessions,
cancelled ones included; the spare has the same shape (session, group, directory,
environment, descriptors) whichever way it is started; and :class:`PidfdProcess` keeps
``anyio.abc.Process``'s contract (exit codes, concurrent waits, signals only before the
reap, end-of-file, a child that never reads or already exited).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator import pidfd_process, pidfd_start, reaper, subreaper
from review_loop.orchestrator.pidfd_process import PidfdProcess, spawn
from review_loop.orchestrator.process import (
    MARKER_ENV,
    Started,
    Supervisors,
    new_marker,
    open_supervisors,
    run_process,
)
from tests.fakes import FakeCLIs
from tests.orchestrator.ownership import (
    descriptor_limit,
    my_children,
    open_fds,
    spare_shape,
    wait_until,
)

pytestmark = pytest.mark.anyio
needs_pidfd = pytest.mark.skipif(
    not (subreaper.available() and pidfd_process.available()),
    reason="needs the session supervisor and pidfds (Linux 5.3+)",
)
GRACE = 0.5


def kinds(fds: list[str]) -> list[str]:
    """The descriptors' kinds only (``pipe``, ``anon_inode:[pidfd]``, a path)."""
    return sorted(entry.split(" -> ", 1)[1].split(":[")[0] for entry in fds)


def script(tmp_path: Path, name: str, body: str) -> Path:
    """An executable Python script (this interpreter) that runs ``body``."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(0o755)
    return path


def claude(tmp_path: Path, prompt: str = "hello") -> Invocation:
    return Invocation(argv=("claude", "-p"), stdin=prompt.encode(), cwd=tmp_path)


async def until(predicate: Callable[[], bool]) -> bool:
    return bool(await anyio.to_thread.run_sync(wait_until, predicate))


class Interrupted(BaseException):
    """Stands for a ``KeyboardInterrupt`` raised by a signal handler between two lines."""


# --- process tier: sessions through the real supervisor -----------------------------------


@needs_pidfd
async def test_no_thread_is_started_for_a_supervisor(fakes: FakeCLIs, tmp_path: Path) -> None:
    """Neither the spare nor the supervisor of a running session has a thread of its own
    in this process (asyncio's child watcher started one per supervisor: it fails there
    without the pidfd watch). Threads are compared while each session runs and while the
    next spare idles."""
    await anyio.to_thread.run_sync(lambda: None)  # the runtime's worker, if any, counts
    before = set(threading.enumerate())
    extra: list[list[str]] = []

    async def on_started(info: Started) -> None:
        extra.append([t.name for t in set(threading.enumerate()) - before])

    async with open_supervisors() as supervisors:
        for i in range(4):
            done = await run_process(
                claude(tmp_path, f"q{i}"),
                deadline=30,
                grace=GRACE,
                on_started=on_started,
                supervisors=supervisors,
            )
            assert done.returncode == 0, done
            assert json.loads(done.stdout)["result"] == f"FAKE-ANSWER from claude: q{i}"
            extra.append([t.name for t in set(threading.enumerate()) - before])
        assert supervisors.spare_pid is not None  # a spare idles as the last count is taken
    assert len(extra) == 8 and extra == [[]] * 8, extra


@needs_pidfd
async def test_a_spare_is_watched_through_a_pidfd(tmp_path: Path) -> None:
    """While the spare idles, this process holds a pidfd (its exit is watched by the event
    loop); once the pool is closed the spare is reaped and the pidfd is gone."""
    before = open_fds()
    async with open_supervisors() as supervisors:
        spare = supervisors.spare_pid
        assert spare is not None
        held = kinds(sorted(set(open_fds()) - set(before)))
        assert "anon_inode" in held, held  # the pidfd (its kind is 'anon_inode:[pidfd]')
    assert open_fds() == before
    assert spare not in my_children()


@needs_pidfd
async def test_no_descriptor_or_child_is_left_after_many_sessions(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """Descriptors and children are counted before and after sessions of every kind on
    one pool: answered, cancelled in ``on_started``, cancelled while the CLI hangs,
    cancelled while stdin is fed to a CLI that never reads, cancelled after varied short
    delays (wherever that lands), timed out, refused at spawn, handed to a spare killed
    while idle; then the pool is closed. Nothing may be left: no pipe, no pidfd, no zombie,
    no running child."""
    never_reads = script(tmp_path, "never-reads", "import time; time.sleep(60)")
    big = b"x" * (1024 * 1024)  # far past a pipe's buffer: the feed blocks

    async def session(
        supervisors: Supervisors, invocation: Invocation, deadline: float = 30
    ) -> Completed:
        return await run_process(
            invocation, deadline=deadline, grace=GRACE, supervisors=supervisors
        )

    async with open_supervisors() as supervisors:  # warm: the runtime's own descriptors
        await session(supervisors, claude(tmp_path))
    before, children_before = open_fds(), my_children()

    async with open_supervisors() as supervisors:
        for i in range(3):
            answered = await session(supervisors, claude(tmp_path, f"ok{i}"))
            assert answered.returncode == 0 and not answered.timed_out, answered

        with anyio.CancelScope() as scope:

            async def cancel_at_start(info: Started) -> None:
                scope.cancel()

            await run_process(
                claude(tmp_path),
                deadline=30,
                grace=GRACE,
                on_started=cancel_at_start,
                supervisors=supervisors,
            )
        assert scope.cancelled_caught

        fakes.script(claude=[{"mode": "hang"}])
        with anyio.move_on_after(0.5) as hung:
            await session(supervisors, claude(tmp_path))
        assert hung.cancelled_caught

        feeding = Invocation(argv=(str(never_reads),), stdin=big, cwd=tmp_path)
        with anyio.move_on_after(0.5) as fed:
            await session(supervisors, feeding)
        assert fed.cancelled_caught

        fakes.script(claude=[{"mode": "ok"}])
        for delay in (0, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064):
            with anyio.move_on_after(delay):
                await session(supervisors, claude(tmp_path))

        fakes.script(claude=[{"mode": "hang"}])
        late = await session(supervisors, claude(tmp_path), deadline=0.3)
        assert late.timed_out and late.returncode != 0, late

        nowhere = Invocation(argv=("claude", "-p"), stdin=b"q", cwd=tmp_path / "gone")
        done = await run_process(nowhere, deadline=30, grace=GRACE, supervisors=supervisors)
        assert done.spawn_error is not None and done.spawn_error.startswith("spawn failed")

        fakes.script(claude=[{"mode": "ok"}])
        dead = supervisors.spare_pid
        if dead is None:  # the last session's spare may still be on its way
            await supervisors.prestart()
            dead = supervisors.spare_pid
        assert dead is not None
        os.kill(dead, signal.SIGKILL)
        assert await until(lambda: subreaper.stat_of(dead) is None or not subreaper.running(dead))
        done = await run_process(
            claude(tmp_path), deadline=30, grace=GRACE, supervisors=supervisors
        )
        assert done.returncode == 0, done  # EPIPE: replaced by one started on the spot

    assert open_fds() == before
    assert my_children() == children_before


@needs_pidfd
@pytest.mark.parametrize("watched", [True, False], ids=["pidfd", "child-watcher"])
async def test_a_failed_on_started_closes_every_pipe_at_once(
    watched: bool, fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``on_started`` raises (its session record could not be written) before stdin is fed:
    the session is ended and all three pipes are closed before the error reaches the
    caller, not when the garbage collector frees the process (the caller keeps the error,
    and with it the frames that hold the process; stdin was left open before)."""
    monkeypatch.setattr(pidfd_start, "_available", watched)
    async with open_supervisors() as supervisors:  # warm: the runtime's own descriptors
        await run_process(claude(tmp_path), deadline=30, grace=GRACE, supervisors=supervisors)
    before, children_before = open_fds(), my_children()

    async def record_fails(info: Started) -> None:
        raise OSError(28, "No space left on device")

    invocation = claude(tmp_path)
    async with open_supervisors() as pool:
        with pytest.raises(OSError, match="No space") as kept:  # holds the traceback
            await run_process(
                invocation, deadline=30, grace=GRACE, on_started=record_fails, supervisors=pool
            )
    assert kept.value.__traceback__ is not None
    assert open_fds() == before
    assert my_children() == children_before


@needs_pidfd
async def test_stdin_to_a_cli_that_never_reads_and_exits(tmp_path: Path) -> None:
    """A CLI that answers without reading its (large) stdin: the feed ends with EPIPE and
    the answer comes back; nothing waits for a reader that will never come."""
    answers = script(tmp_path, "answers", "print('answered', flush=True)")
    invocation = Invocation(argv=(str(answers),), stdin=b"y" * (1024 * 1024), cwd=tmp_path)
    async with open_supervisors() as supervisors:
        with anyio.fail_after(30):  # hang-catching only
            done = await run_process(invocation, deadline=30, grace=GRACE, supervisors=supervisors)
    assert done.returncode == 0 and done.stdout == b"answered\n"


@needs_pidfd
async def test_output_past_the_cap_is_spilled_through_the_pipes(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """Output far past a pipe's buffer and the in-memory head arrives whole through the
    non-blocking pipe: its head and tail in memory, all of it in the spill file, read back
    whole (it is under the output cap) and the spill removed."""
    fakes.script(claude=[{"mode": "huge", "bytes": 3 * 1024 * 1024}])
    cap = 64 * 1024
    async with open_supervisors() as supervisors:
        done = await run_process(
            claude(tmp_path),
            deadline=60,
            grace=GRACE,
            supervisors=supervisors,
            spill_dir=tmp_path,
            head_cap=cap,
            tail_cap=cap,
        )
    line = b"x" * 65536 + b"\n"  # what the fake writes, as many whole lines as fit
    expected = line * (3 * 1024 * 1024 // len(line))
    assert done.returncode == 0 and not done.stdout_truncated
    assert done.stdout_bytes == len(expected) and done.stdout_dropped == 0
    assert done.stdout == expected
    assert list(tmp_path.glob("review-loop-output-*")) == []


@needs_pidfd
@pytest.mark.parametrize("watched", [True, False], ids=["pidfd", "child-watcher"])
async def test_the_spare_has_the_same_shape_either_way(
    watched: bool, fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started by fork/exec and watched through a pidfd, or (where pidfds do not work)
    through ``anyio.open_process``, the spare is the same process: a session and group of
    its own, ``/`` as its directory, its marker as its whole environment, three pipes and
    its control pipe and nothing else; and a session runs in it."""
    monkeypatch.setattr(pidfd_start, "_available", watched)
    async with open_supervisors() as supervisors:
        spare = supervisors.spare_pid
        assert spare is not None
        assert await until(
            lambda: subreaper.LAUNCH.encode() in Path(f"/proc/{spare}/cmdline").read_bytes()
        )
        assert await until(lambda: subreaper.stat_of(spare) == ("S", os.getpid()))
        shape = spare_shape(spare)
        assert shape == {
            "session": True,
            "group": True,
            "cwd": "/",
            "environ": MARKER_ENV.encode(),
            "fds": ["pipe", "pipe", "pipe", "pipe"],
            "control": True,
            "parent": True,
        }, shape
        is_pidfd = isinstance(supervisors._spare.process, PidfdProcess)  # type: ignore[union-attr]
        assert is_pidfd == watched
        done = await run_process(
            claude(tmp_path, "shape"), deadline=30, grace=GRACE, supervisors=supervisors
        )
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"] == "FAKE-ANSWER from claude: shape"


@needs_pidfd
async def test_out_of_descriptors_a_session_fails_clearly_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """With the descriptor limit just past this process's descriptors by 0 to 11 (its
    control pipe, its three pipes and the start's own pipe are refused in turn), a session
    started on the spot either answers or is ``spawn failed: [Errno 24] ...``; no
    descriptor and no child is left either way. (A pidfd needs fewer descriptors than the
    start already held: the limit never refuses it alone; see
    ``test_a_child_whose_watch_cannot_be_set_up_is_killed_and_reaped``.)"""
    echo = script(tmp_path, "echo", "import sys; sys.stdout.write(sys.stdin.read())")
    invocation = Invocation(argv=(str(echo),), stdin=b"fd", cwd=tmp_path)
    await run_process(invocation, deadline=30, grace=GRACE)  # warm: the runtime's own
    before, children_before = open_fds(), my_children()
    outcomes = []
    for room in range(12):
        with descriptor_limit(room):
            done = await run_process(invocation, deadline=30, grace=GRACE)
        outcomes.append((done.returncode, done.stdout, done.spawn_error))
        assert open_fds() == before
        assert my_children() == children_before
    refused = (None, b"", "spawn failed: [Errno 24] Too many open files")
    assert set(outcomes) <= {refused, (0, b"fd", None)}, outcomes
    assert outcomes[0] == refused and outcomes[-1] == (0, b"fd", None)


SANDBOXED_POOL = r"""
import ctypes, json, os, struct, sys
from pathlib import Path

import anyio


def deny(number):
    # A seccomp filter: syscall `number` fails with EPERM, every other one is allowed.
    code = [(0x20, 0, 0, 0), (0x15, 0, 1, number), (0x06, 0, 0, 0x50001), (0x06, 0, 0, 0x7FFF0000)]
    program = b"".join(struct.pack("HBBI", *op) for op in code)
    buffer = ctypes.create_string_buffer(program, len(program))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    fprog = Fprog(len(code), ctypes.addressof(buffer))
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
        sys.exit(77)  # no seccomp here


deny(int(sys.argv[1]))
from review_loop.agents.models import Invocation
from review_loop.orchestrator import pidfd_process, subreaper
from review_loop.orchestrator.process import open_supervisors, run_process


async def main():
    answers = []
    async with open_supervisors() as pool:
        for i in range(3):
            invocation = Invocation(argv=(sys.argv[3],), stdin=b"q%d" % i, cwd=Path("/"))
            done = await run_process(invocation, deadline=30, grace=0.5, supervisors=pool)
            answers.append([done.returncode, done.stdout.decode(), done.spawn_error])
        await pool.prestart()
        spare = pool.spare_pid  # killed and reaped as the pool closes
    left = subreaper.children(os.getpid())
    watched = pidfd_process.available()
    print(json.dumps({"pidfd": watched, "answers": answers, "spare": spare, "left": left}))


anyio.run(main, backend=sys.argv[2])
"""

PIDFD_SEND_SIGNAL, PIDFD_OPEN = 424, 434  # the same number on every Linux architecture


@needs_pidfd
@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="x86_64, aarch64")
@pytest.mark.parametrize("denied", [PIDFD_SEND_SIGNAL, PIDFD_OPEN], ids=["send", "open"])
async def test_a_seccomp_profile_refusing_a_pidfd_call_gets_the_child_watcher(
    denied: int, anyio_backend: str, tmp_path: Path
) -> None:
    """Under a seccomp filter that refuses ``pidfd_send_signal`` (while ``pidfd_open``
    works) or ``pidfd_open``, supervisors are started with ``anyio.open_process``: sessions
    answer, and the idle spare is killed and reaped when its pool closes. With only
    ``pidfd_open`` probed, the spare was watched through a pidfd and closing the pool
    raised ``PermissionError`` before the spare was reaped."""
    program = tmp_path / "sandboxed_pool.py"
    program.write_text(SANDBOXED_POOL)
    echo = script(tmp_path, "echo", "import sys; sys.stdout.write(sys.stdin.read())")
    argv = [sys.executable, str(program), str(denied), anyio_backend, str(echo)]
    with anyio.fail_after(60):  # hang-catching only
        ran = await anyio.run_process(argv, check=False)
    if ran.returncode == 77:
        pytest.skip("seccomp filters cannot be installed here")
    assert ran.returncode == 0, ran.stderr.decode()
    result = json.loads(ran.stdout)
    assert result["pidfd"] is False
    assert result["answers"] == [[0, f"q{i}", None] for i in range(3)]
    assert result["spare"] is not None and result["left"] == []
    assert not subreaper.running(result["spare"])


@needs_pidfd
def test_a_pidfd_refused_for_lack_of_descriptors_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Out of descriptors (``EMFILE``) when first asked, :func:`available` says no that
    time only; once descriptors are free, pidfds are used again (the first answer was kept
    for the whole process before)."""
    monkeypatch.setattr(pidfd_start, "_available", None)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest = os.open(os.devnull, os.O_RDONLY)  # every number below it is taken
    os.close(lowest)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
    try:
        short = pidfd_process.available()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert short is False
    assert pidfd_process.available() is True


def test_every_new_marker_is_one_the_reaper_accepts() -> None:
    """The reaper proves a recorded session by its marker and refuses one that is not 32
    lowercase hex digits: every marker ``run_process`` gives (``new_marker``) is one."""
    markers = {new_marker() for _ in range(1000)}
    assert len(markers) == 1000
    assert all(reaper.MARKER_PATTERN.fullmatch(marker) for marker in markers)


# --- contract: PidfdProcess is an anyio Process ------------------------------------------


def python(*code: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", "; ".join(code)]


async def test_exit_codes_and_signals_are_reported_as_anyio_does(tmp_path: Path) -> None:
    """The exit code; ``-N`` for a child killed by signal ``N``; ``None`` until waited."""
    exits = spawn(python("import sys", "sys.exit(7)"), cwd="/", env={})
    assert exits.returncode is None
    assert await exits.wait() == 7 and exits.returncode == 7
    await exits.aclose()
    sleeps = spawn(python("import time", "time.sleep(60)"), cwd="/", env={})
    sleeps.kill()
    assert await sleeps.wait() == -signal.SIGKILL
    await sleeps.aclose()


async def test_only_its_own_pid_is_reaped() -> None:
    """Waiting for one child never takes another child's status (no ``waitpid(-1)``): the
    embedding program's own exited child is still a zombie for it to wait for."""
    other = subprocess.Popen(python("import sys", "sys.exit(3)"))
    assert await until(lambda: subreaper.stat_of(other.pid) == ("Z", os.getpid()))
    child = spawn(python("import sys", "sys.exit(5)"), cwd="/", env={})
    assert await child.wait() == 5
    await child.aclose()
    assert subreaper.stat_of(other.pid) == ("Z", os.getpid())
    assert other.wait(timeout=30) == 3


async def test_concurrent_waits_all_see_the_one_exit(tmp_path: Path) -> None:
    """Several tasks wait at once (one watches the pidfd at a time); all get the code, the
    child is reaped once, and its pidfd is closed; signals after the reap are no-ops."""
    before = open_fds()
    child = spawn(python("import time", "time.sleep(0.3)"), cwd="/", env={})
    codes: list[int] = []

    async def waiter() -> None:
        codes.append(await child.wait())

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(waiter)
    assert codes == [0, 0, 0]
    child.kill()  # reaped: nothing is sent (a reused pid is never signalled)
    child.terminate()
    await child.aclose()
    assert open_fds() == before
    assert child.pid not in my_children()


async def test_a_reap_interrupted_after_the_close_signals_nothing_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An interruption (a ``KeyboardInterrupt``) right after the reap closed the pidfd, and
    that number is at once another child's pidfd: a later ``kill`` of the reaped child
    sends nothing, and the other child lives. (The number was forgotten only after the
    close: the kill went to the other child.)"""
    reaped = spawn(python("pass"), cwd="/", env={})
    other = spawn(python("import time", "time.sleep(60)"), cwd="/", env={})
    number = reaped._pidfd
    real_close = os.close

    def close_then_interrupt(fd: int) -> None:
        real_close(fd)
        if fd == number:
            monkeypatch.setattr(os, "close", real_close)
            raise Interrupted

    monkeypatch.setattr(os, "close", close_then_interrupt)
    with pytest.raises(Interrupted):
        await reaped.wait()
    os.dup2(other._pidfd, number)  # the number is another child's pidfd now
    try:
        reaped.kill()
        assert await reaped.wait() == 0
        with anyio.move_on_after(0.2):
            await other.wait()
        assert other.returncode is None and subreaper.running(other.pid)
    finally:
        os.close(number)
        other.kill()
        await other.aclose()
    await reaped.aclose()


async def test_a_cancelled_wait_leaves_the_child_to_a_later_wait() -> None:
    """Cancelling a wait leaves the child unreaped and its pidfd open; a later wait reaps."""
    child = spawn(python("import time", "time.sleep(60)"), cwd="/", env={})
    with anyio.move_on_after(0.1) as scope:
        await child.wait()
    assert scope.cancelled_caught and child.returncode is None
    child.terminate()
    assert await child.wait() == -signal.SIGTERM
    await child.aclose()


async def test_pipes_carry_bytes_both_ways_and_end_of_file() -> None:
    """What is sent arrives (more than a pipe's buffer, both ways); closing our end is
    the child's end-of-file; the child's exit is ours (``EndOfStream``)."""
    echo = python(
        "import sys",
        "data = sys.stdin.buffer.read()",
        "sys.stdout.buffer.write(data[::-1])",
        "sys.stderr.buffer.write(b'%d' % len(data))",
    )
    child = spawn(echo, cwd="/", env={})
    assert child.stdin and child.stdout and child.stderr
    payload = os.urandom(300_000)
    out = bytearray()
    err = bytearray()

    async def read_all(stream: object, into: bytearray) -> None:
        while True:
            try:
                into += await stream.receive()  # type: ignore[attr-defined]
            except anyio.EndOfStream:
                return

    async with anyio.create_task_group() as group:
        group.start_soon(read_all, child.stdout, out)
        group.start_soon(read_all, child.stderr, err)
        await child.stdin.send(payload)
        await child.stdin.aclose()
    assert bytes(out) == payload[::-1] and bytes(err) == b"300000"
    assert await child.wait() == 0
    await child.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await child.stdout.receive()


async def test_sending_to_a_child_that_exited_is_a_broken_resource() -> None:
    """``EPIPE`` (SIGPIPE is ignored here) becomes ``BrokenResourceError``."""
    child = spawn(python("import os", "os.close(0)"), cwd="/", env={})
    assert await child.wait() == 0
    assert child.stdin is not None
    with pytest.raises(anyio.BrokenResourceError):
        await child.stdin.send(b"z" * 200_000)
    await child.aclose()


async def test_a_send_to_a_child_that_never_reads_is_cancellable() -> None:
    """A full pipe waits (it never blocks the event loop) until cancelled."""
    child = spawn(python("import time", "time.sleep(60)"), cwd="/", env={})
    assert child.stdin is not None
    with anyio.move_on_after(0.2) as scope:
        await child.stdin.send(b"w" * (1024 * 1024))
    assert scope.cancelled_caught
    child.kill()
    await child.aclose()
    assert child.returncode == -signal.SIGKILL


@needs_pidfd
@pytest.mark.parametrize(
    ("where", "error"),
    [
        ("pidfd_open", OSError(24, "Too many open files")),
        ("pidfd_open", Interrupted()),
        ("set_blocking", Interrupted()),
    ],
    ids=["pidfd-emfile", "pidfd-interrupted", "wrap-interrupted"],
)
def test_a_child_whose_watch_cannot_be_set_up_is_killed_and_reaped(
    where: str, error: BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child has been started, then its pidfd cannot be opened (out of descriptors)
    or an interruption arrives while it is opened or its pipes are wrapped: ``spawn``
    raises that, and leaves nothing: the child killed and reaped, no pipe, no pidfd.
    (Only ``OSError`` from ``pidfd_open`` was handled: an interruption left the child
    running and, once its pidfd was open, the pidfd too.)"""
    started: list[int] = []
    real_open, real_set_blocking = os.pidfd_open, os.set_blocking

    def pidfd_open(pid: int, flags: int = 0) -> int:
        started.append(pid)
        if where == "pidfd_open":
            raise error
        return real_open(pid, flags)

    def set_blocking(fd: int, blocking: bool) -> None:
        if started:  # the child's pipes, not the test's own set-up
            raise error
        real_set_blocking(fd, blocking)

    before = open_fds()
    monkeypatch.setattr(os, "pidfd_open", pidfd_open)
    monkeypatch.setattr(os, "set_blocking", set_blocking)
    with pytest.raises(type(error)):
        spawn(python("import time", "time.sleep(60)"), cwd="/", env={})
    monkeypatch.undo()
    left = [pid for pid in started if pid in my_children()]
    for pid in left:  # only when it fails: this test's child is ended by the test
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert len(started) == 1 and not left
    assert open_fds() == before


async def test_a_child_that_cannot_be_started_leaves_nothing(tmp_path: Path) -> None:
    """An executable that does not exist raises ``OSError``; no descriptor is left."""
    before = open_fds()
    with pytest.raises(FileNotFoundError):
        spawn([str(tmp_path / "no-such-program")], cwd="/", env={})
    assert open_fds() == before
