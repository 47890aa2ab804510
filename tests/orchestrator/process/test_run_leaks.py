"""Process and contract tests of the process layer's leak guarantees, across sessions.

Real supervisors and real CLIs, on asyncio and trio: no descriptor and no child (zombie or
running) is left after sessions of every kind on one pool, cancelled ones included, nor
after a failed ``on_started`` or a start out of descriptors; stdin and output far past a
pipe's buffer go through; the spare's shape; a seccomp profile refusing the pidfd calls
still runs sessions; the control pipe's read end is never 0, 1 or 2; and a whole
``review-loop consult`` that fails or is signalled during start-up leaves no child.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator.process import reaper, subreaper
from review_loop.orchestrator.process.run import (
    MARKER_ENV,
    Started,
    Supervisors,
    new_marker,
    open_supervisors,
    run_process,
)
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo
from tests.orchestrator.process.ownership import (
    descriptor_limit,
    my_children,
    open_fds,
    spare_shape,
    wait_until,
)

needs_supervisor = pytest.mark.skipif(
    not subreaper.available(), reason="needs the session supervisor (Linux)"
)
pytestmark = pytest.mark.anyio
GRACE = 0.5


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


# --- process tier: sessions through the real supervisor -----------------------------------


@needs_supervisor
async def test_no_descriptor_or_child_is_left_after_many_sessions(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """Descriptors and children are counted before and after sessions of every kind on
    one pool: answered, cancelled in ``on_started``, cancelled while the CLI hangs,
    cancelled while stdin is fed to a CLI that never reads, cancelled after varied short
    delays (wherever that lands), timed out, refused at spawn, handed to a spare killed
    while idle; then the pool is closed. Nothing may be left: no pipe, no zombie,
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


@needs_supervisor
async def test_a_failed_on_started_closes_every_pipe_at_once(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """``on_started`` raises (its session record could not be written) before stdin is fed:
    the session is ended and all three pipes are closed before the error reaches the
    caller, not when the garbage collector frees the process (the caller keeps the error,
    and with it the frames that hold the process; stdin was left open before)."""
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


@needs_supervisor
async def test_stdin_to_a_cli_that_never_reads_and_exits(tmp_path: Path) -> None:
    """A CLI that answers without reading its (large) stdin: the feed ends with EPIPE and
    the answer comes back; nothing waits for a reader that will never come."""
    answers = script(tmp_path, "answers", "print('answered', flush=True)")
    invocation = Invocation(argv=(str(answers),), stdin=b"y" * (1024 * 1024), cwd=tmp_path)
    async with open_supervisors() as supervisors:
        with anyio.fail_after(30):  # hang-catching only
            done = await run_process(invocation, deadline=30, grace=GRACE, supervisors=supervisors)
    assert done.returncode == 0 and done.stdout == b"answered\n"


@needs_supervisor
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


@needs_supervisor
async def test_the_spare_s_shape(fakes: FakeCLIs, tmp_path: Path) -> None:
    """The spare (``anyio.open_process``) is a session and group of its own, ``/`` as its
    directory, its marker as its whole environment, three pipes and its control pipe and
    nothing else; and a session runs in it."""
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
        done = await run_process(
            claude(tmp_path, "shape"), deadline=30, grace=GRACE, supervisors=supervisors
        )
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"] == "FAKE-ANSWER from claude: shape"


@needs_supervisor
async def test_out_of_descriptors_a_session_fails_clearly_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """With the descriptor limit just past this process's descriptors by 0 to 11 (its
    control pipe, its three pipes and the start's own pipe are refused in turn), a session
    started on the spot either answers or is ``spawn failed: [Errno 24] ...``; no
    descriptor and no child is left either way."""
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
from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.process.run import open_supervisors, run_process


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
    print(json.dumps({"answers": answers, "spare": spare, "left": left}))


anyio.run(main, backend=sys.argv[2])
"""

PIDFD_SEND_SIGNAL, PIDFD_OPEN = 424, 434  # the same number on every Linux architecture


@needs_supervisor
@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="x86_64, aarch64")
@pytest.mark.parametrize("denied", [PIDFD_SEND_SIGNAL, PIDFD_OPEN], ids=["send", "open"])
async def test_a_seccomp_profile_refusing_a_pidfd_call_still_runs_sessions(
    denied: int, anyio_backend: str, tmp_path: Path
) -> None:
    """Under a seccomp filter that refuses ``pidfd_send_signal`` (while ``pidfd_open``
    works) or ``pidfd_open`` (inherited by the supervisors, whose signals go through a
    pidfd where they can), sessions answer, and the idle spare is killed and reaped when
    its pool closes."""
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
    assert result["answers"] == [[0, f"q{i}", None] for i in range(3)]
    assert result["spare"] is not None and result["left"] == []
    assert not subreaper.running(result["spare"])


def test_every_new_marker_is_one_the_reaper_accepts() -> None:
    """The reaper proves a recorded session by its marker and refuses one that is not 32
    lowercase hex digits: every marker ``run_process`` gives (``new_marker``) is one."""
    markers = {new_marker() for _ in range(1000)}
    assert len(markers) == 1000
    assert all(reaper.MARKER_PATTERN.fullmatch(marker) for marker in markers)


# --- process: the control pipe, and a whole consult ---------------------------------------


CONTROL_READER = r"""
import os, sys
import anyio
from review_loop.orchestrator.process.run import open_supervisors
from tests.orchestrator.process.ownership import wait_until
from review_loop.orchestrator.process import subreaper


async def main():
    async with open_supervisors() as pool:
        pid, control_end = pool.spare_pid, pool._spare.control
        assert wait_until(lambda: subreaper.stat_of(pid) == ("S", os.getpid()), 20)
        command = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        control = next(w for w in command if w.startswith(b"--control=")).split(b"=")[1]
        theirs = os.readlink(f"/proc/{pid}/fd/{control.decode()}")
        ours = os.readlink(f"/proc/self/fd/{control_end}")
        print(control.decode(), theirs == ours)


anyio.run(main, backend=sys.argv[1])
"""


@needs_supervisor
def test_process_without_stdin_the_spare_reads_its_control_pipe(anyio_backend: str) -> None:
    """Started with descriptor 0 closed, this process's first pipe is 0: the control
    pipe's read end must not be passed as 0, where the spare's own stdin pipe goes; the
    spare's ``--control`` names our control pipe."""
    done = subprocess.run(
        [sys.executable, "-c", CONTROL_READER, anyio_backend],
        preexec_fn=lambda: os.close(0),  # the child starts without a stdin
        cwd=Path(__file__).parents[3],
        capture_output=True,
        text=True,
        timeout=60,  # hang-catching only
    )
    assert done.returncode == 0, done.stderr[-2000:]
    control, same = done.stdout.split()
    assert int(control) > 2 and same == "True", done.stdout


# --- process: a whole consult --------------------------------------------------------------

# Runs ``review-loop consult`` as ``python -m review_loop`` does, optionally failing or
# signalling itself when the module named in argv[3] is imported, and writing at exit the
# children this process still has (zombies included).
HARNESS = r"""
import atexit, json, os, runpy, signal, sys
from review_loop.orchestrator.process import subreaper

out, action, at = sys.argv[1:4]
seen = {"left": None}
acted = []


def hook(event, args):
    if event != "import" or args[0] != at or acted:
        return
    acted.append(at)
    if action == "raise":
        raise RuntimeError("broken on purpose")
    if action == "interrupt":
        raise KeyboardInterrupt
    if action in ("SIGTERM", "SIGINT"):
        os.kill(os.getpid(), getattr(signal, action))


def report():
    seen["left"] = subreaper.children(os.getpid())
    with open(out, "w") as handle:
        json.dump(seen, handle)


atexit.register(report)
sys.addaudithook(hook)
sys.argv = ["review-loop", *sys.argv[4:]]
runpy.run_module("review_loop", run_name="__main__", alter_sys=True)
"""
DISPATCHER = "review_loop.orchestrator.dispatcher"
REAPER = "review_loop.orchestrator.process.reaper"


def consult(
    tmp_path: Path, repo: Path, words: list[str], action: str = "none", at: str = DISPATCHER
) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    out = tmp_path / "seen.json"
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(out), action, at, "consult", *words],
        cwd=repo,
        env=fakes.env(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,  # hang-catching only
    )
    return done, json.loads(out.read_text())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"a.txt": "a\n"})


FAILURES = {
    "refused-repository": (["--repo", "{plain}"], "none", 1),
    "refused-input": (["--timeout", "soon"], "none", 1),
    "exception": ([], "raise", 1),
    "interruption": ([], "interrupt", 128 + signal.SIGINT),
    "SIGTERM": ([], "SIGTERM", 128 + signal.SIGTERM),
    "SIGINT": ([], "SIGINT", 128 + signal.SIGINT),
}


@needs_supervisor
@pytest.mark.parametrize(
    ("case", "at"),
    [(case, DISPATCHER) for case in FAILURES]
    + [(case, REAPER) for case in ("exception", "SIGTERM", "SIGINT")],
)
def test_process_a_consult_that_fails_in_start_up_leaves_no_process(
    case: str, at: str, tmp_path: Path, repo: Path
) -> None:
    """Refused (a directory outside any repository, a timeout that is no number), broken
    (an import raising), interrupted (``KeyboardInterrupt``), or sent SIGTERM / SIGINT
    while the dispatcher is imported, or once its pool's spare idles (``reaper`` is
    imported as the dispatcher opens): the process has no child left when it exits, not
    even a zombie, and the command answers as it always did."""
    extra, action, code = FAILURES[case]
    plain = tmp_path / "plain"
    plain.mkdir()
    words = ["--peer", "codex", "--question", "?", *(w.format(plain=plain) for w in extra)]
    done, seen = consult(tmp_path, repo, words, action, at)
    assert done.returncode == code, (done.stdout, done.stderr[-2000:])
    assert seen["left"] == []
    if code == 1:
        error = json.loads(done.stdout)["error"]
        expected = {"refused-repository": str(plain), "refused-input": "--timeout"}
        assert expected.get(case, "broken on purpose") in error
    elif action != "interrupt":
        document = json.loads(done.stdout)
        assert (document["status"], document["signal"]) == ("interrupted", action)


@needs_supervisor
def test_process_a_keyboard_interrupt_raised_as_the_dispatcher_opens_leaves_no_process(
    tmp_path: Path, repo: Path
) -> None:
    """A ``KeyboardInterrupt`` raised inside the event loop (as ``reaper`` is imported,
    while the pool's spare idles), not through a signal: however the command ends, the
    process has no child left when it exits, not even a zombie."""
    done, seen = consult(
        tmp_path, repo, ["--peer", "codex", "--question", "?"], "interrupt", REAPER
    )
    assert done.returncode != 0, done.stdout
    assert seen["left"] == []
