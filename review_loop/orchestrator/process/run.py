"""One supervised subprocess: spawn, drain, deadline, TERM→grace→KILL, reap.

The invariants, coded once here (the design: ``docs/process-ownership.md``):

- The child starts in its own session and process group (``start_new_session=True``).
  On Linux the child is the session's supervisor (:mod:`.subreaper`), a child subreaper
  that runs the CLI: every process of the session stays its descendant, whatever it does
  (``setsid``, closing its stdio, dropping the environment marker, double-forking), and
  the supervisor ends them all (TERM, grace, KILL) when the CLI exits, when it is told to
  stop, or when review-loop dies. Elsewhere the CLI is the child, tracked by its group, the
  descendants seen while it runs and this run's environment marker.
- ``run_process`` never returns or raises before the child has been reaped, and no
  descendant it started survives: on deadline, STOP or cancellation the whole group and
  every member found get SIGTERM, then SIGKILL after ``grace`` seconds. All of that is
  shielded from cancellation (asyncio's repeated ``Task.cancel()`` included) and never
  raises.
- stdout and stderr are drained concurrently with bounded memory and bounded disk
  (:mod:`.capture`): the head and the tail in memory, stdout whole up to a cap in a spill
  file in review-loop's temp directory (never the repository), removed when the session
  ends; past the cap, or on a full disk, the middle is dropped and the result says so.
- A CLI whose stdout closed on output complete by its own format (the adapter says so,
  purely) has answered: it is ended as on a deadline, at once, however long it lingers.
- A descendant that keeps the output pipe open does not hang the call: once the child has
  exited (or been stopped) and ``grace`` has passed, strays are killed and the pipe is
  abandoned.
- Silence is not failure: nothing here kills a child for being quiet. Only with a stall
  time (``stall``, prefs ``stallMs``, off by default) is a session that shows no sign of
  life at all (no output, no CPU time in its tree: :mod:`.stall`) ended, as ``stalled``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import anyio.abc

from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator.process import procfs, shielded, subreaper
from review_loop.orchestrator.process.capture import OUTPUT_CAP as OUTPUT_CAP
from review_loop.orchestrator.process.capture import BoundedCapture as BoundedCapture
from review_loop.orchestrator.process.stall import watch as stall_watch

MARKER_ENV = "REVIEW_LOOP_SESSION_MARKER"
"""The variable carrying a session's marker: a supervisor's whole environment, and the
CLI's (beside what the allow-list passes); the reaper proves a session by it."""

STOP_POLL_S = 0.2
TRACK_POLL_S = 0.1
TRACK_POLL_MAX_S = 2.0
KILL_ROUNDS = 50
KILL_ROUND_S = 0.01
DEFAULT_HEAD_CAP = 4 * 1024 * 1024
DEFAULT_TAIL_CAP = 4 * 1024 * 1024
STDERR_CAP = 256 * 1024
SMALL_OUTPUT = 1024 * 1024
"""Output up to this size is judged complete in the event loop's thread (microseconds)."""
CHUNK = 65536


def new_marker() -> str:
    """A fresh session marker: 32 lowercase hex digits, 128 random bits."""
    return os.urandom(16).hex()


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    """What is known once the child is running, handed to ``on_started`` before stdin."""

    pid: int
    pgid: int
    marker: str
    argv: tuple[str, ...]


class ProcessTree:
    """Every process that belongs to one session, and how to find them cheaply.

    Supervised (Linux, see :mod:`.subreaper`): the child is the session's supervisor, a
    child subreaper, so every process of the session is its descendant for as long as it
    lives; they are read from its ``/proc/<pid>/task/*/children`` files, not from a scan of
    the machine, and the supervisor itself ends them whenever the session ends. Otherwise:
    the group, the descendants seen by polling while it runs, and (on the stop path) every
    process carrying this run's environment marker.
    """

    def __init__(self, pid: int, marker: str, *, supervised: bool = False) -> None:
        self.pid = pid
        self.pgid = pid  # start_new_session: the child leads its own group
        self.marker = marker
        self.supervised = supervised
        self.seen: dict[int, procfs.Proc] = {}
        """Descendants seen while it ran, pinned by start time (a reused pid is not them)."""
        self.escalated = False
        self._protected: set[int] | None = None

    def track(self) -> None:
        """Remember the current descendants (pid and start time, to survive pid reuse)."""
        root = procfs.Proc.of(self.pid)
        for child in root.children(recursive=True) if root is not None else ():
            self.seen.setdefault(child.pid, child)

    def _protected_pids(self) -> set[int]:
        """This process and its ancestors: never signalled, whatever they carry."""
        if self._protected is None:
            me = os.getpid()
            self._protected = {me, *procfs.parents(me)}
        return self._protected

    def _subtree(self) -> dict[int, procfs.Proc]:
        found: dict[int, procfs.Proc] = {}
        for pid in subreaper.descendants(self.pid):
            proc = procfs.Proc.of(pid)  # pins the start time against reuse
            if proc is not None and proc.alive():
                found[pid] = proc
        return found

    def _scan(self) -> dict[int, procfs.Proc]:
        """The group and the marker, over every process of the machine (the stop path)."""
        found: dict[int, procfs.Proc] = {}
        protected = self._protected_pids()
        for pid in procfs.pids():
            proc = procfs.Proc.of(pid) if pid not in protected else None
            if proc is None or not proc.alive():
                continue
            try:
                in_group = os.getpgid(pid) == self.pgid
            except OSError:
                continue
            if in_group or (proc.environ() or {}).get(MARKER_ENV) == self.marker:
                found[pid] = proc
        return found

    def _members(self, *, thorough: bool) -> list[procfs.Proc]:
        found = {pid: proc for pid, proc in list(self.seen.items()) if proc.is_running()}
        if self.supervised:
            found.update(self._subtree())
        if thorough:
            found.update(self._scan())
        protected = self._protected_pids()
        return [p for p in found.values() if p.pid != self.pid and p.pid not in protected]

    def signal_all(self, sig: signal.Signals, *, thorough: bool = False) -> int:
        """Send ``sig`` to the group and every live member; returns how many got it.

        ``thorough`` (always, unsupervised) also looks over the machine for the marker.
        """
        count = 0
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)
            count += 1
        for proc in self._members(thorough=thorough or not self.supervised):
            count += proc.send_signal(sig)
        return count

    def kill_all(self) -> None:
        """SIGKILL everything: the supervisor's subtree first, then the group, then the marker.

        While the supervisor lives, what a killed process leaves is re-parented to it and
        found by the next round; killing the supervisor first would hand those to init.
        """
        if self.supervised:
            for _ in range(KILL_ROUNDS):
                members = self._members(thorough=False)
                if not members:
                    break
                for proc in members:
                    proc.send_signal(signal.SIGKILL)
                time.sleep(KILL_ROUND_S)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)
        for proc in self._members(thorough=True):  # a last look over the machine, once
            proc.send_signal(signal.SIGKILL)

    def kill_group(self) -> None:
        """The last resort when signalling failed unexpectedly: SIGKILL the group."""
        with suppress(OSError):
            os.killpg(self.pgid, signal.SIGKILL)

    def group_empty(self) -> bool:
        """No process left in the group, zombies included (one ``killpg(pgid, 0)``)."""
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return True
        return False

    def _group_alive(self) -> bool:
        if self.group_empty():
            return False  # the common case after a normal exit: nobody left in the group
        # killpg(0) succeeds for zombies too; look closer before calling it alive.
        for pid in procfs.pids():
            with suppress(OSError):
                if procfs.running(pid) and os.getpgid(pid) == self.pgid:
                    return True
        return False

    def _seen_alive(self) -> bool:
        return any(proc.alive() for proc in list(self.seen.values()))

    def quick_alive(self) -> bool:
        """The cheap check after a normal exit: the group, the subtree, the descendants seen.

        It reads no other process's environment and scans the machine only when the group
        still has members. Supervised, the subtree is complete: the supervisor adopted
        every orphan and ended them all before it exited.
        """
        if self._group_alive() or self._seen_alive():
            return True
        return self.supervised and any(
            subreaper.running(pid) for pid in subreaper.descendants(self.pid)
        )

    def alive(self, *, thorough: bool = False) -> bool:
        """Whether any process of this session other than the reaped child still runs.

        Unsupervised (or ``thorough``), this also scans every process for this run's
        environment marker, which finds a descendant that left the group with ``setsid``.
        """
        if self.quick_alive():
            return True
        if self.supervised and not thorough:
            return False
        return any(proc.alive() for proc in self._members(thorough=True))


async def _quick_alive(tree: ProcessTree) -> bool:
    """``tree.quick_alive()``, in a worker thread only when it may scan the machine (the
    group still has members): after the usual normal exit it is a few syscalls, cheaper
    than the thread hop."""
    if tree.group_empty():
        return tree.quick_alive()
    return await anyio.to_thread.run_sync(tree.quick_alive)


async def _terminate(
    process: anyio.abc.Process | None, tree: ProcessTree, grace: float, *, thorough: bool = False
) -> None:
    """SIGTERM everything in the tree, SIGKILL what is left after ``grace``, reap the child.

    ``thorough`` also finds (and waits for) the session's processes by the marker over the
    whole machine. Shielded from cancellation, and it raises nothing of its own: whatever
    goes wrong while signalling, the group gets SIGKILL and the child is reaped before this
    returns. asyncio's ``Task.cancel()``, which a shield does not stop, cannot cut it short
    either, however often it comes: such a cancellation is raised once the child is reaped
    (:func:`.shielded.to_the_end`).
    """
    # Without a child to wait for, something outside the subtree holds the pipe: look wide.
    thorough = thorough or process is None
    alive = partial(tree.alive, thorough=thorough)

    async def end_tree() -> None:
        try:
            await anyio.to_thread.run_sync(
                lambda: tree.signal_all(signal.SIGTERM, thorough=thorough)
            )
            with anyio.move_on_after(grace):
                if process is not None:
                    await process.wait()
                while await anyio.to_thread.run_sync(alive):
                    await anyio.sleep(0.05)
            if await anyio.to_thread.run_sync(alive) or (
                process is not None and process.returncode is None
            ):
                tree.escalated = True
                await anyio.to_thread.run_sync(tree.kill_all)
        except Exception:  # ending the session matters more than why signalling failed
            tree.kill_group()
        finally:
            if process is not None:
                with suppress(Exception):
                    await process.wait()

    # Shielded, and not cut short by asyncio's Task.cancel() either, however often it comes.
    await shielded.to_the_end(end_tree)


async def _close_streams(process: anyio.abc.Process) -> None:
    """Close the child's three pipes (stdin too: the feed closes it, but no feed ran if
    ``on_started`` raised), every one of them, however often the task is cancelled.

    Shielded; asyncio's ``Task.cancel()``, which the shield does not stop, lands at a
    close's final checkpoint, after the pipe is closed: it is kept, the other pipes are
    closed, then it is raised. (Cheaper than :func:`.shielded.to_the_end` on every
    session's path.)
    """
    cancelled: BaseException | None = None
    with anyio.CancelScope(shield=True):
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                try:
                    await stream.aclose()
                except anyio.get_cancelled_exc_class() as cancel:
                    cancelled = cancel
                except Exception:  # a pipe that will not close is closed enough
                    pass
    if cancelled is not None:
        raise cancelled


async def _drain(
    stream: anyio.abc.ByteReceiveStream | None, sink: BoundedCapture, done: anyio.Event
) -> None:
    try:
        if stream is None:
            return
        while True:
            try:
                data = await stream.receive(CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            sink.feed(data)
    finally:
        done.set()


async def _feed(stream: anyio.abc.ByteSendStream | None, data: bytes | None) -> None:
    if stream is None:
        return
    try:
        if data:
            await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the child exited or closed stdin; what it did is judged from its output
    finally:
        with suppress(Exception):
            await stream.aclose()


def resolve_executable(argv0: str, env: dict[str, str]) -> str | None:
    """The path ``argv0`` runs as under ``env``'s PATH (``shutil.which``'s answer), or
    ``None`` if it is not there.

    A relative answer (through an empty or relative entry, or ``argv0`` such as
    ``./cli``) is made absolute against the working directory it was found in: the CLI
    is started in its session's own directory, where that name would be another file
    (one the repository holds) or none.
    """
    found = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if found is None or os.path.isabs(found):
        return found
    try:
        return os.path.join(os.getcwd(), found)
    except OSError:  # the working directory is gone: nothing relative is there now
        return None


def child_env(invocation: Invocation, marker: str) -> dict[str, str]:
    """The allow-listed environment (see :mod:`.environment`) and this run's marker."""
    from review_loop.orchestrator.process.environment import child_environment

    return child_environment(invocation, {MARKER_ENV: marker})


SEND_SESSION_S = 30.0
"""How long a supervisor may take to accept its session frame (a frame larger than the
pipe's buffer waits for it to read) before it counts as dead and is replaced."""


class _Supervisor:
    """A started supervisor that has not been handed its session yet."""

    __slots__ = ("control", "marker", "pinned", "process")

    def __init__(
        self, process: anyio.abc.Process, control: int, marker: str, pinned: procfs.Proc | None
    ) -> None:
        self.process = process
        self.control = control
        """The write end of its control pipe (non-blocking); -1 once closed."""
        self.marker = marker
        """Its own environment carries it: the session it runs gets this marker."""
        self.pinned = pinned
        """It, pinned by its start time when it was started (a reused pid is not it)."""


@contextmanager
def _control_pipe() -> Iterator[tuple[int, int]]:
    """A supervisor's control pipe, ``(read, write)``, for the block that starts it with
    the read end (``pass_fds``). Leaving the block closes the read end (the supervisor
    has its own copy); the write end is made non-blocking for the owner, or closed too
    when the block raised (the caller ends what it started).

    The read end is never 0, 1 or 2 (free when this process was started without them):
    the child's own stdin, stdout and stderr pipes would be put over it, and it would
    read its session from its stdin, the control pipe left without a reader.
    """
    read, write = os.pipe()  # both close-on-exec: no other child inherits either end
    try:
        if read <= 2:
            low, read = read, -1
            try:
                read = fcntl.fcntl(low, fcntl.F_DUPFD_CLOEXEC, 3)
            finally:
                os.close(low)
        yield read, write
        os.set_blocking(write, False)
    except BaseException:
        os.close(write)
        raise
    finally:
        if read >= 0:
            os.close(read)


async def _start_supervisor(marker: str) -> _Supervisor:
    """Start a supervisor (its own session and group) that waits for its session frame.

    It gets the session's three pipes now, and as its own environment only the marker (the
    CLI's comes with the frame); its working directory is ``/`` until then. Raises
    ``OSError`` when it cannot be started. Shielded: a process that exists is returned.
    """
    with anyio.CancelScope(shield=True), _control_pipe() as (read, write):
        process = await anyio.open_process(
            subreaper.supervisor_argv(owner=os.getpid(), control=read),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd="/",
            env={MARKER_ENV: marker},
            start_new_session=True,
            pass_fds=(read,),
        )
    return _Supervisor(process, write, marker, procfs.Proc.of(process.pid))


async def _send_session(supervisor: _Supervisor, frame: bytes) -> bool:
    """Write ``frame`` to the supervisor's control pipe, then close it; whether it was taken.

    ``False`` when the supervisor is gone (the pipe has no reader: it exited or was killed
    while idle) or did not accept the frame within ``SEND_SESSION_S``.
    """
    view = memoryview(frame)
    try:
        with anyio.move_on_after(SEND_SESSION_S):
            while view:
                try:
                    view = view[os.write(supervisor.control, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(supervisor.control)
        return not view
    except OSError:  # BrokenPipeError: no reader any more
        return False
    finally:
        os.close(supervisor.control)
        supervisor.control = -1  # _discard must not close the number again (reused by then)


async def _discard(supervisor: _Supervisor) -> None:
    """End a supervisor that has no session (or lost it) and reap it. Never raises.

    It started nothing (its group and subtree are empty), so it is simply killed: waiting
    for it to see end-of-file would wait for its interpreter's start when it is still
    starting. Killed through its pinned identity (never a reused pid), not through
    anyio's process handle: that would reap it behind the event loop's child watcher.
    """
    process = supervisor.process
    with anyio.CancelScope(shield=True):
        if supervisor.pinned is not None:
            supervisor.pinned.send_signal(signal.SIGKILL)
        if supervisor.control >= 0:
            with suppress(OSError):
                os.close(supervisor.control)
            supervisor.control = -1
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with suppress(Exception):
                    await stream.aclose()
        with suppress(Exception):
            await process.wait()


class Supervisors:
    """Session supervisors started ahead of their sessions: one warm spare at a time.

    A supervisor's own start (a Python interpreter, 10–20 ms) would otherwise sit on every
    session's path. Open one with :func:`open_supervisors` and pass it to
    :func:`run_process`: a session takes the spare (its interpreter is already up, idle on
    its control pipe) and hands it its CLI's argv, environment and directory; a new spare
    is started once that session's CLI has exited (from the pool's second session on: see
    :meth:`refill`). The spare is this process's direct child, in a session of its own,
    with only its marker as environment; it never outlives its owner (it exits on
    end-of-file on its control pipe, when this process exits or is killed, and when its
    owner is gone) and :meth:`aclose` kills and reaps it. A spare that died while idle is
    noticed when its session is handed over (the pipe has no reader) and replaced by a
    supervisor started on the spot. After ``fork()`` the child never uses
    its parent's spare: the spare belongs to the pid that started it.
    """

    def __init__(self) -> None:
        self._owner = os.getpid()
        self._spare: _Supervisor | None = None
        self._starting = False
        self._closed = False
        self._sessions = 0

    @property
    def spare_pid(self) -> int | None:
        """The idle spare's pid, if one is ready (for diagnostics and tests)."""
        return None if self._spare is None else self._spare.process.pid

    def _usable(self) -> bool:
        return not self._closed and self._owner == os.getpid() and subreaper.available()

    async def prestart(self) -> None:
        """Start a spare now unless one is ready (or starting). It returns once the process
        has been executed; its interpreter starts meanwhile. Failing to start one is not
        an error: the next session starts its own."""
        if not self._usable() or self._spare is not None or self._starting:
            return
        self._starting = True
        try:
            spare = await _start_supervisor(new_marker())
        except OSError:
            return
        finally:
            self._starting = False
        if self._usable() and self._spare is None:
            self._spare = spare
        else:  # closed meanwhile, or another spare won
            await _discard(spare)

    def take(self) -> _Supervisor | None:
        """The spare, now this caller's (``None`` if there is none for this process)."""
        if not self._usable():
            return None
        self._sessions += 1
        spare, self._spare = self._spare, None
        return spare

    async def replace(self, _started: Started | None = None) -> None:
        """Start a spare now in place of the one just taken for a run that is no session
        (the sandbox's once-per-process check before the first session; an ``on_started``
        of it): the session after it then finds a spare whose interpreter started while
        the check ran, and the check does not count as a session for :meth:`refill`."""
        self._sessions = max(0, self._sessions - 1)
        await self.prestart()

    async def refill(self) -> None:
        """After a session: start the next spare, once this pool has run a second session.

        A pool that has run one session may run no other (a ``consult`` process runs one):
        a spare started then would only be killed at close, and its start would cost that
        one session's caller (about 2-10 ms here) for nothing. From the second session on,
        the caller evidently runs several, and each next one finds its spare ready.
        """
        if self._sessions > 1:
            await self.prestart()

    async def aclose(self) -> None:
        """End the spare (if any) and start no other. Never raises."""
        self._closed = True
        spare, self._spare = self._spare, None
        if spare is not None and self._owner == os.getpid():
            await _discard(spare)


@asynccontextmanager
async def open_supervisors() -> AsyncIterator[Supervisors]:
    """:class:`Supervisors` whose spare starts now (overlapping the caller's own set-up)
    and is ended when the block exits, however it exits."""
    supervisors = Supervisors()
    try:
        await supervisors.prestart()
        yield supervisors
    finally:
        await supervisors.aclose()


async def _supervise(
    invocation: Invocation,
    argv: list[str],
    env: dict[str, str],
    grace: float,
    supervisor: _Supervisor | None,
) -> anyio.abc.Process | Completed:
    """Hand the session to ``supervisor`` (or to one started now if there is none, or it
    is dead), or a ``Completed`` with the spawn error. Shielded from cancellation: once a
    supervisor has the session, the caller gets it, to end it."""
    try:
        frame = subreaper.session_frame(
            argv, env, cwd=str(invocation.cwd), grace=grace, stdin=invocation.stdin is not None
        )
    except ValueError:  # what exec refuses (a NUL): the taken spare must not stay idle
        if supervisor is not None:
            await _discard(supervisor)
        raise
    with anyio.CancelScope(shield=True):
        for _ in range(2):  # a dead spare is replaced once; a fresh one must take it
            if supervisor is None:
                try:
                    supervisor = await _start_supervisor(env[MARKER_ENV])
                except OSError as error:
                    return Completed(returncode=None, spawn_error=f"spawn failed: {error}")
            if await _send_session(supervisor, frame):
                return supervisor.process
            await _discard(supervisor)
            supervisor = None
    return Completed(returncode=None, spawn_error="spawn failed: the session supervisor exited")


async def _spawn(
    invocation: Invocation,
    argv: list[str],
    env: dict[str, str],
    grace: float,
    supervisor: _Supervisor | None,
) -> tuple[anyio.abc.Process, bool] | Completed:
    """Start ``argv`` in a session of its own, under a supervisor where there is one.

    Returns the process and whether it is supervised, or a ``Completed`` with the spawn
    error. The spawn is shielded from cancellation: once a process exists, the caller must
    get it, to end it.
    """
    if subreaper.available():
        supervised = await _supervise(invocation, argv, env, grace, supervisor)
        return supervised if isinstance(supervised, Completed) else (supervised, True)
    try:
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                argv,
                stdin=subprocess.PIPE if invocation.stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(invocation.cwd),
                env=env,
                start_new_session=True,
            )
    except OSError as error:
        return Completed(returncode=None, spawn_error=f"spawn failed: {error}")
    return process, False


async def _start(
    invocation: Invocation, grace: float, supervisors: Supervisors | None
) -> tuple[anyio.abc.Process, ProcessTree] | Completed:
    """The session's process (its supervisor, where there is one) and its tree, or a
    ``Completed`` saying why it did not start."""
    marker = new_marker()
    env = child_env(invocation, marker)
    executable = resolve_executable(invocation.argv[0], env)
    if executable is None:
        return Completed(returncode=None, spawn_error=f"executable not found: {invocation.argv[0]}")
    spare = supervisors.take() if supervisors is not None else None
    if spare is not None:  # a supervisor carries its session's marker from its own start
        marker = env[MARKER_ENV] = spare.marker
    spawned = await _spawn(invocation, [executable, *invocation.argv[1:]], env, grace, spare)
    if isinstance(spawned, Completed):
        return spawned
    return spawned[0], ProcessTree(spawned[0].pid, marker, supervised=spawned[1])


def launcher_failed(completed: Completed) -> bool:
    """Whether ``completed`` is a session whose namespace launcher failed in the
    supervisor's forked start (``subreaper.LAUNCHER_FAILED``): no namespace can be made
    here, and nothing of the session ran."""
    failed = f"spawn failed: {subreaper.LAUNCHER_FAILED} ("
    return completed.spawn_error is not None and completed.spawn_error.startswith(failed)


async def _answered(out: BoundedCapture, done: anyio.Event, complete: _Complete) -> bool:
    """Whether stdout closed on output that is complete by the adapter's own format.

    Waits for end-of-file on stdout (the CLI, and whatever it started, let go of it), then
    asks ``complete`` once, in a worker thread (it may parse up to the output cap).
    """
    await done.wait()
    small = out.total <= min(SMALL_OUTPUT, out.head_cap)  # the usual answer: no thread hop
    if not small:
        await anyio.to_thread.run_sync(out.settle)
    so_far = Completed(
        returncode=None,
        stdout=out.value(),
        stdout_truncated=out.truncated,
        stdout_bytes=out.total,
    )
    return complete(so_far) if small else await anyio.to_thread.run_sync(complete, so_far)


_Complete = Callable[[Completed], bool]


async def _track(tree: ProcessTree) -> None:
    """Remember the tree's descendants until cancelled (unsupervised sessions only).

    Each scan reads /proc whole; with many sessions at once that adds up, so the interval
    backs off. A descendant that escapes the group later is still found at termination by
    this run's environment marker.
    """
    interval = TRACK_POLL_S
    while True:
        await anyio.to_thread.run_sync(tree.track)
        await anyio.sleep(interval)
        interval = min(interval * 2, TRACK_POLL_MAX_S)


class _Session:
    """One started session, step by step for :func:`run_process`: its process and tree,
    its captured output, and what ended the wait for its exit.

    The invariants these steps keep are the module's (above); :func:`run_process` orders
    the steps and owns the clean-up that must run however they end.
    """

    def __init__(self, process: anyio.abc.Process, tree: ProcessTree, out: BoundedCapture) -> None:
        self.process = process
        self.tree = tree
        self.out = out
        self.err = BoundedCapture(STDERR_CAP, STDERR_CAP, keep_cap=0)  # never needed whole
        self.out_done = anyio.Event()
        self.err_done = anyio.Event()
        self.timed_out = self.stopped = self.answered = self.stalled = False

    def start_io(self, group: anyio.abc.TaskGroup, stdin: bytes | None) -> None:
        """Drain stdout and stderr, feed stdin, and (unsupervised) track descendants."""
        group.start_soon(_drain, self.process.stdout, self.out, self.out_done)
        group.start_soon(_drain, self.process.stderr, self.err, self.err_done)
        group.start_soon(_feed, self.process.stdin, stdin)
        if not self.tree.supervised:  # supervised, every descendant stays in its subtree
            group.start_soon(_track, self.tree)

    async def wait_exit_or_stop(
        self, stop_files: Sequence[Path], complete: _Complete | None, stall: float | None
    ) -> bool:
        """Wait until the child exits, or a stop file appears (returns True), or stdout
        closed on complete output (``answered``), or the tree stalled (``stalled``)."""
        hit = False
        async with anyio.create_task_group() as inner:

            async def watch_stop() -> None:
                nonlocal hit
                while True:
                    if any(path.exists() for path in stop_files):
                        hit = True
                        inner.cancel_scope.cancel()
                        return
                    await anyio.sleep(STOP_POLL_S)

            if stop_files:
                inner.start_soon(watch_stop)
            if stall is not None:
                inner.start_soon(self._watch_stall, stall, inner.cancel_scope)
            if complete is not None:
                inner.start_soon(self._watch_answer, complete, inner.cancel_scope)
            await self.process.wait()
            inner.cancel_scope.cancel()
        return hit

    async def _watch_answer(self, complete: _Complete, scope: anyio.CancelScope) -> None:
        if await _answered(self.out, self.out_done, complete):
            self.answered = True
            scope.cancel()

    async def _watch_stall(self, seconds: float, scope: anyio.CancelScope) -> None:
        await stall_watch(
            seconds,
            self.process.pid,
            lambda: self.out.total + self.err.total,
            supervised=self.tree.supervised,
        )
        self.stalled = True
        scope.cancel()

    async def end(self, grace: float) -> None:
        """Once the wait is over: end the tree if anything of it may be left, then let the
        pipes reach end-of-file within ``grace`` (a stray holding them is ended first)."""
        process, tree = self.process, self.tree
        # A supervisor killed by a signal (kill -9 of its pid) may have ended nothing and
        # its escapers went to init: find what is left by the marker, machine-wide.
        lost = tree.supervised and (process.returncode or 0) < 0
        ended = self.timed_out or self.stopped or self.stalled or lost or self.answered
        if ended or await _quick_alive(tree):
            await _terminate(process, tree, grace, thorough=lost)
        with anyio.move_on_after(grace):
            await self.out_done.wait()
            await self.err_done.wait()
        if not (self.out_done.is_set() and self.err_done.is_set()):
            # A stray descendant holds the pipe: end it, then stop reading.
            await _terminate(None, tree, grace)
            with anyio.move_on_after(grace):
                await self.out_done.wait()
                await self.err_done.wait()

    def result(self, start: float) -> Completed:
        """What the session left (a supervisor's report of a failed spawn as such)."""
        process, out, err = self.process, self.out, self.err
        failure = None
        if self.tree.supervised:
            failure = subreaper.spawn_failure(process.returncode, err.value())
        if failure is not None:
            return Completed(
                returncode=None, stderr=err.value(), spawn_error=f"spawn failed: {failure}"
            )
        return Completed(
            returncode=process.returncode,
            stdout=out.value(),
            stderr=err.value(),
            stdout_truncated=out.truncated,
            stdout_bytes=out.total,
            stdout_dropped=out.dropped,
            stdout_spill_error=out.spill_error,
            output_complete=self.answered and (process.returncode or 0) < 0,
            elapsed_ms=int((anyio.current_time() - start) * 1000),
            timed_out=self.timed_out,
            stopped=self.stopped,
            stalled=self.stalled and not self.timed_out,
            killed_after_grace=self.tree.escalated,
        )


async def run_process(
    invocation: Invocation,
    *,
    deadline: float | None,
    grace: float,
    stop_files: Sequence[Path] = (),
    on_started: Callable[[Started], Awaitable[None]] | None = None,
    spill_dir: Path | None = None,
    head_cap: int = DEFAULT_HEAD_CAP,
    tail_cap: int = DEFAULT_TAIL_CAP,
    output_cap: int = OUTPUT_CAP,
    complete: _Complete | None = None,
    supervisors: Supervisors | None = None,
    stall: float | None = None,
) -> Completed:
    """Run ``invocation`` to completion under a deadline and return what it left.

    Args:
        invocation: argv, env, stdin and cwd, as an adapter built them.
        deadline: seconds from start after which the child is stopped (``None``: none).
        grace: seconds between SIGTERM and SIGKILL, and how long a stray descendant may
            keep the output pipe open after the child exited.
        stop_files: paths polled every 200 ms; when one appears the child is stopped.
        on_started: awaited with the pid and group once the child runs, before any byte
            of stdin is written (the session record is written here).
        spill_dir: where stdout past its in-memory head is spilled (default: review-loop's
            temp directory; see :mod:`.capture`).
        output_cap: the most of stdout kept whole; past it the middle is dropped.
        complete: whether what a CLI printed is complete by its format (the adapter's
            ``output_complete``). When it says so at stdout's end-of-file, the session
            is ended at once and ``Completed.output_complete`` is set if it had to be.
        supervisors: where a supervisor started ahead is taken from (and a new one started
            once this session's CLI exited); without it, the session's supervisor is
            started now.
        stall: seconds without a sign of life (no output, no CPU time or process change
            in the tree: :mod:`.stall`) after which the child is stopped as on a deadline
            and ``Completed.stalled`` is set (``None``: never).

    Never raises for the child's own failures (they are in the result). Cancellation is
    re-raised after the tree has been ended and the child reaped.
    """
    start = anyio.current_time()
    started = await _start(invocation, grace, supervisors)
    if isinstance(started, Completed):
        return started
    process, tree = started
    session = _Session(
        process, tree, BoundedCapture(head_cap, tail_cap, spill_dir, keep_cap=output_cap)
    )
    try:
        if on_started is not None:
            await on_started(
                Started(pid=process.pid, pgid=process.pid, marker=tree.marker, argv=invocation.argv)
            )
        async with anyio.create_task_group() as group:
            session.start_io(group, invocation.stdin)
            with anyio.move_on_after(deadline if deadline is not None else float("inf")) as scope:
                # assigned only if the wait returned: a deadline at the same moment wins
                session.stopped = await session.wait_exit_or_stop(stop_files, complete, stall)
            session.timed_out = scope.cancelled_caught and not session.answered
            if supervisors is not None and tree.supervised:
                # The next session's supervisor starts now: not earlier, where its start
                # would compete with this CLI for the processor.
                group.start_soon(supervisors.refill)
            await session.end(grace)
            group.cancel_scope.cancel()
        await anyio.to_thread.run_sync(session.out.settle)  # the whole stdout, if kept whole
    except BaseException:
        await _terminate(process, tree, grace)
        raise
    finally:
        session.out.close()  # the spill goes with its session, whatever happened
        session.err.close()
        await _close_streams(process)
    return session.result(start)
