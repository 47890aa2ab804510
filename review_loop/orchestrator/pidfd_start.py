"""A child started synchronously and pinned by a pidfd, with the standard library alone.

The first half of :func:`.pidfd_process.spawn`: ``subprocess.Popen`` (fork/exec) and
``os.pidfd_open`` on the child, nothing of anyio. ``consult`` starts its session
supervisor with it before the async runtime is imported (:mod:`.early_spare`);
:mod:`.pidfd_process` wraps what it returns in a ``PidfdProcess`` watched by the event
loop. Either way the child is started by this one function, so it is the same process.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Sequence

_available: bool | None = None
_SHORT_OF = (errno.EMFILE, errno.ENFILE, errno.ENOMEM)
"""Why a pidfd may be refused for now only: the answer is not kept, the next call asks."""


def available() -> bool:
    """Whether children can be watched through a pidfd here: ``os.pidfd_open`` and
    ``signal.pidfd_send_signal`` both exist and are granted (a seccomp profile may allow
    one and refuse the other). Checked once per process, unless it was refused for lack
    of descriptors or memory (then ``False`` this time only)."""
    global _available
    if _available is None:
        try:
            pidfd = os.pidfd_open(os.getpid())
        except (AttributeError, OSError) as error:
            if getattr(error, "errno", None) not in _SHORT_OF:
                _available = False
            return False
        try:
            signal.pidfd_send_signal(pidfd, 0)  # to ourselves: checks, sends nothing
            _available = True
        except (AttributeError, OSError):
            _available = False
        finally:
            os.close(pidfd)
    return _available


def start(
    argv: Sequence[str], *, cwd: str, env: dict[str, str], pass_fds: Sequence[int] = ()
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``argv`` now (fork/exec, no thread) in a session and group of its own, with
    three pipes (unbuffered), ``cwd``, exactly ``env``, and no other descriptor than
    ``pass_fds``; returns once it has been executed, with a pidfd open on it.

    The caller owns both: it must reap the child and close the pidfd (:func:`end`).

    Raises:
        OSError: it could not be started, or its pidfd could not be opened (nothing is
            left behind: a started child is killed and reaped, as on any interruption).
    """
    popen = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        cwd=cwd,
        env=env,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    pidfd = -1
    try:
        pidfd = os.pidfd_open(popen.pid)
    except BaseException:  # out of descriptors, or interrupted (a KeyboardInterrupt): end
        end(popen, pidfd)  # the child rather than lose sight of it, and leave no descriptor
        raise
    return popen, pidfd


def end(popen: subprocess.Popen[bytes], pidfd: int) -> None:
    """Kill a child :func:`start` started, reap it (blocking: a killed child exits at
    once), then close its pidfd (``-1``: none) and our ends of its pipes. Only for a
    child nothing else waits for yet (no event loop watches its pidfd).

    Killed by pid: until this reaps it, the pid is still this child's (a zombie's at
    worst), never another process's.
    """
    try:
        popen.kill()
        popen.wait()
    finally:
        close(popen, pidfd)


def close(popen: subprocess.Popen[bytes], pidfd: int) -> None:
    """Close the pidfd (``-1``: none) and our ends of the pipes of a child :func:`start`
    started, and nothing else (see :func:`end`)."""
    if pidfd >= 0:
        os.close(pidfd)
    for file in (popen.stdin, popen.stdout, popen.stderr):
        if file is not None:
            file.close()
