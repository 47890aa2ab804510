"""A session supervisor started with the standard library alone, and consult's early spare.

:func:`start_supervisor` starts a supervisor exactly as the process layer's warm spare is
started where pidfds work (``docs/process-ownership.md``): fork/exec of
:func:`.subreaper.supervisor_argv`, a session and group of its own, ``/`` as its directory,
its marker as its whole environment, three pipes and its control pipe, a pidfd on it. It
imports nothing of anyio, so ``consult`` can start its session's supervisor before it
imports the dispatcher and the async runtime (about 7-8 ms of interpreter start that then
overlaps its own imports instead of following them): :func:`held` around the command,
:func:`adopt` in the pool (``process.Supervisors.prestart``), which then owns it as its
spare. :mod:`.process` starts every pidfd-watched supervisor with the same function, so
the early spare and a later one are the same process.

Whoever holds it ends it: a command that leaves :func:`held` before the pool adopted the
spare (a refused input, a refused repository, an exception, an interruption, a signal
that cancelled the command first) kills and reaps it there, synchronously, so nothing is
left, not even a zombie. One adoption only, and never across ``fork()``.
"""

from __future__ import annotations

import fcntl  # already imported by subprocess
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from review_loop.orchestrator import pidfd_start, subreaper

MARKER_ENV = "REVIEW_LOOP_SESSION_MARKER"
"""The variable carrying a session's marker: a supervisor's whole environment, and the
CLI's (beside what the allow-list passes); the reaper proves a session by it."""


def new_marker() -> str:
    """A fresh session marker: 32 lowercase hex digits, 128 random bits (``uuid4().hex``
    has 122; this needs no ``uuid`` import)."""
    return os.urandom(16).hex()


class Begun:
    """A supervisor started by :func:`start_supervisor`, not yet watched by an event loop:
    its ``Popen`` (pipes unbuffered), the pidfd on it, the write end of its control pipe
    (non-blocking), its marker, and the pid of the process that started it."""

    __slots__ = ("control", "marker", "owner", "pidfd", "popen", "taken")

    def __init__(
        self, popen: subprocess.Popen[bytes], pidfd: int, control: int, marker: str
    ) -> None:
        self.popen = popen
        self.pidfd = pidfd
        self.control = control
        self.marker = marker
        self.owner = os.getpid()
        self.taken = False
        """Whether it was taken, to adopt or to end it (:func:`_taken`): once only."""

    def end(self) -> None:
        """Kill and reap it, closing every descriptor it came with (its owner only: a
        forked child only closes its copies, and leaves its parent's supervisor alone)."""
        try:
            if self.owner == os.getpid():
                pidfd_start.end(self.popen, self.pidfd)
                return
            # Not this process's child: its copy of the Popen must not be listed, when it
            # goes, for subprocess's later waitpid on that number (by then perhaps one of
            # this process's own children); 0 is what Popen.poll concludes here (ECHILD).
            self.popen.returncode = 0
            pidfd_start.close(self.popen, self.pidfd)
        finally:
            os.close(self.control)


@contextmanager
def control_pipe() -> Iterator[tuple[int, int]]:
    """A supervisor's control pipe, ``(read, write)``, for the block that starts it with
    the read end (``pass_fds``). Leaving the block closes the read end (the supervisor
    has its own copy); the write end is made non-blocking for the owner, or closed too
    when the block raised or it could not be made so (the caller ends what it started).

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


def start_supervisor(marker: str) -> Begun:
    """Start a session supervisor now (fork/exec, no await) that waits for its session on
    its control pipe, carrying ``marker``; see the module's docstring for its shape.

    Raises:
        OSError: it could not be started (nothing is left behind, as on an interruption
            once it runs: it is killed and reaped, every descriptor closed).
    """
    started: tuple[subprocess.Popen[bytes], int] | None = None
    try:
        with control_pipe() as (read, write):  # an exception in it closes both ends
            argv = subreaper.supervisor_argv(owner=os.getpid(), control=read)
            started = pidfd_start.start(argv, cwd="/", env={MARKER_ENV: marker}, pass_fds=(read,))
            begun = Begun(*started, write, marker)
    except BaseException:  # interrupted once it runs (or its pipe refused): end it
        if started is not None:
            pidfd_start.end(*started)
        raise
    return begun


_held: Begun | None = None
"""The early spare while no pool has adopted it."""
_lock = threading.Lock()
"""Taking it from ``_held`` (to adopt or to end it) is one step, whatever thread asks."""


def available() -> bool:
    """Whether a supervisor can be started here without anyio: supervisors work and
    children can be watched through a pidfd. Elsewhere there is no early spare (the pool
    starts its spare with ``anyio.open_process``, as before)."""
    return subreaper.available() and pidfd_start.available()


@contextmanager
def held() -> Iterator[Begun | None]:
    """Start the early spare now, and end it when the block is left unless a pool
    adopted it (:func:`adopt`) meanwhile; yields it (``None`` where there is none: no
    pidfds or supervisors, it could not be started, or one is already held).

    Leaving the block ends only the spare this block started, and only while it is
    still held: once adopted, it is its pool's to end.
    """
    global _held
    mine: Begun | None = None
    try:  # from the start: an interruption once it runs (the lock's release) ends it too
        with _lock:
            if _held is None and available():
                with suppress(OSError):  # out of descriptors or processes: the pool starts one
                    mine = start_supervisor(new_marker())
                    _held = mine
        yield mine
    finally:
        unadopted = _taken(mine)
        if unadopted is not None:
            unadopted.end()


def adopt() -> Begun | None:
    """The early spare, now the caller's to watch and end (``None`` when there is none,
    it was adopted already, or it belongs to another process: after ``fork()`` the child
    never takes its parent's)."""
    begun = _held
    return _taken(begun) if begun is not None and begun.owner == os.getpid() else None


def _taken(begun: Begun | None) -> Begun | None:
    """``begun``, no longer held, unless it was taken already (``None`` then: another
    took it first). One that was started but not yet held is taken too (its block ends it)."""
    global _held
    with _lock:
        if begun is None or begun.taken:
            return None
        begun.taken = True
        if _held is begun:
            _held = None
        return begun
