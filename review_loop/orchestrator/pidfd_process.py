"""A child process started synchronously and watched through a pidfd (Linux 5.3+).

``anyio.open_process`` on asyncio goes through asyncio's child watcher, which on Python
3.11 starts one thread per child and waits until that thread runs (2-3 ms of every
session's supervisor start, in ``threading.Condition.wait``). Here the child is started by
``subprocess.Popen`` (fork/exec, the same call asyncio and trio make underneath, with the
same arguments: the process is the same) and then watched by the event loop itself, on
asyncio and trio alike:

- its exit through a pidfd (``os.pidfd_open``): readable once the process has exited,
  then reaped with ``os.waitpid(pid, WNOHANG)`` — that pid only, never ``-1``, so no
  other child's status is taken from whoever waits for it;
- its pipes as non-blocking descriptors, read and written when ``anyio.wait_readable`` /
  ``anyio.wait_writable`` say so;
- signals through the pidfd (``pidfd_send_signal``): until the child is reaped its pid
  cannot be reused, and afterwards nothing is sent.

:class:`PidfdProcess` is an ``anyio.abc.Process``, so :mod:`.process` uses it as it uses
what ``anyio.open_process`` returns. :func:`available` says whether this works here;
elsewhere callers use ``anyio.open_process``. The start itself needs no anyio and is
:mod:`.pidfd_start`'s (``consult`` uses it before anyio is imported); :func:`watch` wraps
what it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from contextlib import suppress
from io import FileIO

import anyio
import anyio.abc
import anyio.lowlevel

from review_loop.orchestrator import pidfd_start
from review_loop.orchestrator.pidfd_start import available as available

UNKNOWN_STATUS = 255
"""The exit code given when the child was reaped by someone else (a ``waitpid(-1)`` in
the embedding program) and its status is lost: not a success (asyncio's own choice)."""


class PipeReceiveStream(anyio.abc.ByteReceiveStream):
    """Our end of a child's output pipe, read without blocking when the loop says so."""

    def __init__(self, file: FileIO) -> None:
        self._file = file
        os.set_blocking(file.fileno(), False)  # our end only: the child's is its own

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint_if_cancelled()
        while True:
            if self._file.closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._file.fileno(), max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._file.fileno())
                continue
            except OSError as error:
                raise anyio.BrokenResourceError from error
            break
        if not data:
            raise anyio.EndOfStream
        # Data that was already there did not yield: a child that floods its output must
        # not starve the other tasks (trio's own pipe streams do the same).
        await anyio.lowlevel.cancel_shielded_checkpoint()
        return data

    async def aclose(self) -> None:
        _close(self._file)


class PipeSendStream(anyio.abc.ByteSendStream):
    """Our end of a child's input pipe, written without blocking when the loop says so.

    A child that exited (or closed its end) makes ``send`` raise
    ``anyio.BrokenResourceError`` (``EPIPE``: Python ignores ``SIGPIPE``); one that never
    reads leaves ``send`` waiting until it is cancelled.
    """

    def __init__(self, file: FileIO) -> None:
        self._file = file
        os.set_blocking(file.fileno(), False)

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        view = memoryview(item)
        while view:
            if self._file.closed:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._file.fileno(), view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._file.fileno())
            except OSError as error:  # BrokenPipeError: nobody reads any more
                raise anyio.BrokenResourceError from error
        await anyio.lowlevel.cancel_shielded_checkpoint()

    async def aclose(self) -> None:
        _close(self._file)


def _close(file: FileIO) -> None:
    """Close ``file`` once, first waking any task still waiting on its descriptor."""
    if not file.closed:
        anyio.notify_closing(file.fileno())
        file.close()


class PidfdProcess(anyio.abc.Process):
    """A started child: its pipes, its exit (through its pidfd) and its signals.

    ``returncode`` is set by :meth:`wait` (as on asyncio: it does not poll). Every path
    that started one must :meth:`wait` for it: that reaps the child and closes the pidfd.
    """

    def __init__(self, popen: subprocess.Popen[bytes], pidfd: int) -> None:
        self._popen = popen
        self._pidfd = pidfd
        self._returncode: int | None = None
        self._lock: anyio.Lock | None = None
        self._stdin = PipeSendStream(popen.stdin) if isinstance(popen.stdin, FileIO) else None
        self._stdout = PipeReceiveStream(popen.stdout) if isinstance(popen.stdout, FileIO) else None
        self._stderr = PipeReceiveStream(popen.stderr) if isinstance(popen.stderr, FileIO) else None

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stderr

    def _reap(self) -> bool:
        """Collect the child's status if it has exited (this pid only); whether it has."""
        try:
            pid, status = os.waitpid(self._popen.pid, os.WNOHANG)
        except ChildProcessError:
            code = UNKNOWN_STATUS  # reaped behind our back: the status is gone
        else:
            if pid == 0:
                return False
            code = os.waitstatus_to_exitcode(status)
        self._returncode = code
        # The Popen object must not think it still runs: its finalizer would list it for
        # subprocess's own later waitpid (and warn).
        self._popen.returncode = code
        # Forgotten before it is closed: once closed its number may be another descriptor's
        # (another child's pidfd, even) at once, and an interruption between the two steps
        # must not leave send_signal holding it.
        pidfd, self._pidfd = self._pidfd, -1
        os.close(pidfd)
        return True

    async def wait(self) -> int:
        """Until the child has exited; reaps it (once) and returns its exit code (``-N``
        when a signal ``N`` killed it). Safe to call from several tasks at once."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:  # one waiter on the pidfd at a time (anyio allows one)
            while self._returncode is None and not self._reap():
                await anyio.wait_readable(self._pidfd)
        assert self._returncode is not None
        return self._returncode

    def send_signal(self, sig: signal.Signals) -> None:
        """Signal the child through its pidfd; nothing once it has been reaped."""
        if self._pidfd >= 0:
            with suppress(ProcessLookupError):  # exited, not reaped yet: nothing to signal
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def aclose(self) -> None:
        """Close our pipe ends and wait for the child (killed if this wait is cancelled)."""
        with anyio.CancelScope(shield=True) as scope:
            for stream in (self._stdin, self._stdout, self._stderr):
                if stream is not None:
                    await stream.aclose()
            scope.shield = False
            try:
                await self.wait()
            except BaseException:
                scope.shield = True
                self.kill()
                await self.wait()
                raise


def spawn(
    argv: Sequence[str], *, cwd: str, env: dict[str, str], pass_fds: Sequence[int] = ()
) -> PidfdProcess:
    """Start ``argv`` now (fork/exec, no thread, no await) in a session and group of its
    own, with three pipes, ``cwd``, exactly ``env``, and no other descriptor than
    ``pass_fds``; returns once it has been executed (:func:`.pidfd_start.start`).

    Raises:
        OSError: it could not be started, or its pidfd could not be opened (nothing is
            left behind: a started child is killed and reaped, as on any interruption).
    """
    return watch(*pidfd_start.start(argv, cwd=cwd, env=env, pass_fds=pass_fds))


def watch(popen: subprocess.Popen[bytes], pidfd: int) -> PidfdProcess:
    """A child :func:`.pidfd_start.start` started, now watched by the event loop (its
    pipes made non-blocking). On any exception while that is set up (an interruption) the
    child is killed and reaped and every descriptor closed before it is raised."""
    try:
        return PidfdProcess(popen, pidfd)
    except BaseException:
        pidfd_start.end(popen, pidfd)
        raise
