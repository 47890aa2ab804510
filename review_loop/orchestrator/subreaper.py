"""The session supervisor: a child subreaper that owns every process of one session.

Each reviewer session runs as ``<python> -I -S subreaper.py --grace S ... -- <argv...>``
(see ``docs/process-ownership.md``). The supervisor

1. marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER, 1)``), so that every
   process of the session whose parent dies is re-parented to it instead of to init — a
   helper that called ``setsid``, closed its stdio and dropped the environment marker, a
   double-forked daemon: all stay its descendants;
2. starts the CLI with the session's stdin, stdout and stderr, then lets go of its own
   copies of stdin and stdout (the pipes belong to the CLI and what it starts);
3. waits until the CLI exits, it is told to stop (SIGTERM, SIGINT, SIGHUP) or its owner —
   the review-loop process that started it — dies (``kill -9``);
4. then ends every descendant it has: SIGTERM, up to ``grace`` seconds, SIGKILL, reaping
   each (re-parented zombies included) until it has no child left (told to stop by a
   signal, it waits a little longer, so that the sender's own SIGKILL comes first);
5. exits as the CLI did (the same exit code, or killed by the same signal).

Attribution is exact because the subreaper is per session: everything re-parented to it
belongs to that session, whatever its environment says; no other session's process and no
process of a program embedding review-loop can ever be its descendant. The review-loop
process itself does not become a subreaper, so it never adopts (or reaps) anyone else's
orphans.

The module is also imported by :mod:`review_loop.orchestrator.process` for
:func:`available`, :func:`supervised_argv` and :func:`descendants`. As a script it imports
only the standard library and runs with ``-I -S``: nothing from the working directory (an
untrusted repository) or the environment can shadow a module or change the interpreter.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence  # loaded at interpreter start-up anyway

TYPE_CHECKING = False  # not typing's: importing typing would cost every session ~5 ms
if TYPE_CHECKING:
    import signal
else:  # the same functions and numbers without the enum module (~4 ms per session)
    import _signal as signal

SCRIPT = os.path.realpath(__file__)
"""This file, run by path (pathlib is not imported: it would cost the supervisor 5 ms)."""
SPAWN_FAILED_EXIT = 127
FAILURE_PREFIX = "review-loop-supervisor:"
"""Starts every line the supervisor itself writes on stderr."""
OWNER_POLL_S = 0.25
"""How often the supervisor checks that its owner still lives."""
POLL_S = 0.02
"""How often descendants that are not direct children are checked while they are ended."""
KILL_ROUNDS = 200
STOPPED_MARGIN_S = 1.0
"""Told to stop by a signal, the supervisor waits this much longer than ``grace`` before its
own SIGKILL: the sender (``run_process``, the reaper) escalates first and knows it did."""
REAP_AFTER_KILL_S = 5.0
"""How long SIGKILLed children are waited for (a process in uninterruptible sleep)."""

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_WATCHED = frozenset({signal.SIGCHLD, *_STOP_SIGNALS})
_DEFAULTED_IN_CLI = (signal.SIGPIPE, signal.SIGXFSZ, *_STOP_SIGNALS)
"""Python ignores SIGPIPE and SIGXFSZ; the CLI starts with default dispositions, as with
``subprocess`` (``restore_signals``)."""

_available: bool | None = None


# --- /proc: children, state ----------------------------------------------------------


def _children_from_task_files(pid: int) -> list[int] | None:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone
    found: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                found.extend(int(word) for word in handle.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return None  # a kernel without CONFIG_PROC_CHILDREN
        except (OSError, ValueError):
            continue
    return found


def _children_by_scan(pid: int) -> list[int]:
    found: list[int] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = stat_of(int(name))
            if info is not None and info[1] == pid:
                found.append(int(name))
    return found


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (zombies included), read from ``/proc``.

    Reads only ``pid``'s own ``task/*/children`` files, not every process on the machine
    (a full ``/proc`` scan is the fallback on a kernel without them).
    """
    direct = _children_from_task_files(pid)
    return _children_by_scan(pid) if direct is None else direct


def descendants(pid: int) -> list[int]:
    """Every descendant of ``pid``, parents before their children (zombies included)."""
    found: list[int] = []
    seen = {pid}
    queue = [pid]
    while queue:
        for child in children(queue.pop(0)):
            if child not in seen:
                seen.add(child)
                found.append(child)
                queue.append(child)
    return found


def stat_of(pid: int) -> tuple[str, int] | None:
    """``(state, ppid)`` of ``pid`` from ``/proc/<pid>/stat``, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 2:
        return None
    return fields[0], int(fields[1])


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    info = stat_of(pid)
    return info is not None and info[0] not in ("Z", "X", "x")


# --- in the review-loop process -------------------------------------------------------


def _prctl_get_subreaper() -> bool:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    value = ctypes.c_int(0)
    return int(libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)) == 0


def available() -> bool:
    """Whether sessions can run under the supervisor here (checked once per process).

    Linux only: ``prctl(PR_GET_CHILD_SUBREAPER)`` must work (kernel 3.4+, no seccomp
    refusal), ``/proc`` must be mounted, and this interpreter must be runnable by path
    (``sys.executable``). Elsewhere sessions run directly and are tracked by their group,
    the descendants seen while they run, and the environment marker.
    """
    global _available
    if _available is None:
        try:
            _available = (
                sys.platform.startswith("linux")
                and bool(sys.executable)
                and os.access(sys.executable, os.X_OK)
                and os.path.isfile(SCRIPT)
                and os.path.isdir("/proc/self/task")
                and _prctl_get_subreaper()
            )
        except (OSError, AttributeError):
            _available = False
    return _available


def supervised_argv(argv: Sequence[str], *, grace: float, env: dict[str, str]) -> list[str]:
    """The command that runs ``argv`` (``argv[0]`` a resolved path) under the supervisor.

    The owner is this process: its pid travels as an argument, so that a supervisor
    whose owner died before it even started (``getppid()`` is no longer the owner) knows.
    ``env`` is the environment the CLI must get; the supervisor's interpreter may add
    ``LC_CTYPE`` to its own (PEP 538 locale coercion), so the CLI's value (or its absence)
    travels as an argument and is restored before the CLI starts.
    """
    lc_ctype = f"--lc-ctype={env['LC_CTYPE']}" if "LC_CTYPE" in env else "--no-lc-ctype"
    owner = f"--owner={os.getpid()}"
    return [sys.executable, "-I", "-S", SCRIPT, f"--grace={grace!r}", owner, lc_ctype, "--", *argv]


def spawn_failure(returncode: int | None, stderr: bytes) -> str | None:
    """What the supervisor said when it could not start the CLI, or ``None``."""
    if returncode != SPAWN_FAILED_EXIT:
        return None
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.startswith(f"{FAILURE_PREFIX} cannot run: "):
            return line[len(f"{FAILURE_PREFIX} cannot run: ") :]
    return None


# --- the supervisor process -----------------------------------------------------------


def _say(text: str) -> None:
    try:  # noqa: SIM105 - contextlib would cost every session's start-up ~1 ms
        os.write(2, f"{FAILURE_PREFIX} {text}\n".encode())
    except OSError:
        pass  # nobody reads our stderr any more


def _become_subreaper() -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _send_checked(pid: int, parent: int, sig: int) -> None:
    """Signal ``pid`` only while it is still the child of ``parent`` (no pid reuse).

    A pidfd pins the process; checking its parent after opening it proves the pidfd names
    the descendant that was found, not a process that took over a recycled pid.
    """
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        info = stat_of(pid)
        try:
            if info is not None and info[1] == parent:
                os.kill(pid, sig)
        except OSError:
            pass  # it is gone
        return
    try:
        info = stat_of(pid)
        if info is not None and info[1] == parent:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


class Supervisor:
    """One session: the CLI's pid, its wait status once reaped, and what stopped it."""

    def __init__(self, grace: float, owner: int) -> None:
        self.grace = grace
        self.me = os.getpid()
        self.owner = owner
        self.cli = 0
        self.cli_status: int | None = None

    def reap(self) -> None:
        """Collect every child that has exited (the CLI's status is kept)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.cli:
                self.cli_status = status

    def live(self) -> list[tuple[int, int]]:
        """``(pid, parent)`` of every descendant that is not a zombie."""
        found: list[tuple[int, int]] = []
        for pid in descendants(self.me):
            info = stat_of(pid)
            if info is not None and info[0] not in ("Z", "X", "x"):
                found.append((pid, info[1]))
        return found

    def wait(self) -> str:
        """Until the CLI exits, a stop signal arrives, or the owner dies; says which."""
        while True:
            self.reap()
            if self.cli_status is not None:
                return "exited"
            if os.getppid() != self.owner:
                return "owner died"
            info = signal.sigtimedwait(_WATCHED, OWNER_POLL_S)
            if info is not None and info.si_signo != signal.SIGCHLD:
                return f"signal {info.si_signo}"

    def end_all(self, grace: float) -> None:
        """SIGTERM every descendant, wait up to ``grace``, SIGKILL the rest, reap them all."""
        termed: set[int] = set()
        deadline = time.monotonic() + grace
        while True:
            self.reap()
            alive = self.live()
            if not alive:
                break
            for pid, parent in alive:
                if pid not in termed:  # also one started after the first round
                    termed.add(pid)
                    _send_checked(pid, parent, signal.SIGTERM)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            signal.sigtimedwait(_WATCHED, min(POLL_S, remaining))
        for _ in range(KILL_ROUNDS):
            self.reap()
            alive = self.live()
            if not alive:
                break
            for pid, parent in alive:
                _send_checked(pid, parent, signal.SIGKILL)
            signal.sigtimedwait(_WATCHED, POLL_S)
        give_up = time.monotonic() + REAP_AFTER_KILL_S
        while children(self.me) and time.monotonic() < give_up:
            self.reap()
            signal.sigtimedwait(_WATCHED, POLL_S)
        left = [pid for pid, _ in self.live()]
        if left:
            _say(f"still running after SIGKILL (uninterruptible?), left behind: {left}")


def _release_stdio() -> None:
    """Point our stdin and stdout at /dev/null: the pipes' ends belong to the CLI now.

    Holding stdin's read end would block a writer whose CLI exited unread; holding stdout
    would delay end-of-file. stderr stays, for our own diagnostics.
    """
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    if null > 2:
        os.close(null)


def _exit_as(status: int | None) -> int:
    """Exit with the CLI's code, or die of the signal that killed it."""
    if status is None:
        _say("the CLI did not end after SIGKILL (uninterruptible?); leaving it")
        return 128 + signal.SIGKILL
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    sig = -code
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of the supervisor
    except (ImportError, OSError, ValueError):
        pass
    if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be caught anyway
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    return 128 + sig  # a signal whose default action is not to terminate


def _parse(args: Sequence[str]) -> tuple[float, int, str | None, list[str]]:
    if "--" not in args:
        raise ValueError("expected: --grace=S --owner=PID --lc-ctype=V|--no-lc-ctype -- argv...")
    split = list(args).index("--")
    grace, owner, lc_ctype = 1.0, os.getppid(), None
    for option in args[:split]:
        if option.startswith("--grace="):
            grace = float(option.split("=", 1)[1])
        elif option.startswith("--owner="):
            owner = int(option.split("=", 1)[1])
        elif option.startswith("--lc-ctype="):
            lc_ctype = option.split("=", 1)[1]
        elif option != "--no-lc-ctype":
            raise ValueError(f"unknown option {option!r}")
    argv = list(args[split + 1 :])
    if not argv:
        raise ValueError("no command after --")
    return grace, owner, lc_ctype, argv


def _cli_env(lc_ctype: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LC_CTYPE", None)
    if lc_ctype is not None:
        env["LC_CTYPE"] = lc_ctype
    return env


def main(args: Sequence[str]) -> int:
    """Run one session (see the module docstring); returns the exit code to use."""
    try:
        grace, owner, lc_ctype, argv = _parse(args)
    except ValueError as error:
        _say(f"usage: {error}")
        return 2
    if not _become_subreaper():
        _say("prctl(PR_SET_CHILD_SUBREAPER) failed; orphans of this session are not adopted")
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    if os.getppid() != owner:
        return 128 + signal.SIGHUP  # the owner died before we started: start nothing
    supervisor = Supervisor(grace, owner)
    try:
        supervisor.cli = os.posix_spawn(
            argv[0], argv, _cli_env(lc_ctype), setsigmask=(), setsigdef=_DEFAULTED_IN_CLI
        )
    except OSError as error:
        _say(f"cannot run: {error}")
        return SPAWN_FAILED_EXIT
    _release_stdio()
    why = supervisor.wait()
    stopped = why.startswith("signal")
    supervisor.end_all(grace + STOPPED_MARGIN_S if stopped else grace)
    return _exit_as(supervisor.cli_status)


def _run_as_script(args: Iterable[str]) -> None:
    sys.exit(main(list(args)))


if __name__ == "__main__":
    _run_as_script(sys.argv[1:])
