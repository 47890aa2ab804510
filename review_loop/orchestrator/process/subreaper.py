"""The session supervisor: a child subreaper that owns every process of one session.

Each reviewer session runs under ``<python> -I -S -c LAUNCH <this directory>
--owner=PID --control=FD`` (see :data:`LAUNCH` and ``docs/process-ownership.md``),
started *before* its session where it can be (a warm spare: its interpreter's start is
then off the session's path). The supervisor

1. marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER, 1)``), so that every
   process of the session whose parent dies is re-parented to it instead of to init — a
   helper that called ``setsid``, closed its stdio and dropped the environment marker, a
   double-forked daemon: all stay its descendants;
2. waits, idle, for its session on the control pipe ``FD``: one frame
   (:func:`session_frame`: the CLI's argv, its exact environment, working directory,
   grace, whether it gets stdin), read with exact reads, never a byte more. It exits at
   once, having started nothing, on end-of-file there (its owner closed the pipe, or
   died), when its owner is gone, or on SIGTERM/SIGINT/SIGHUP;
3. starts the CLI with the session's stdin, stdout and stderr, then lets go of its own
   copies of stdin and stdout (the pipes belong to the CLI and what it starts); a CLI
   launched by the reviewer sandbox (``unshare ... <python> -I -S wrapper.py``) is started
   in a fork of this warm interpreter, without a second interpreter's start
   (:func:`forked_start`);
4. waits until the CLI exits, it is told to stop (SIGTERM, SIGINT, SIGHUP) or its owner —
   the review-loop process that started it — dies (``kill -9``);
5. then ends every descendant it has: SIGTERM, up to ``grace`` seconds, SIGKILL, reaping
   each (re-parented zombies included) until it has no child left (told to stop by a
   signal, it waits a little longer, so that the sender's own SIGKILL comes first);
6. exits as the CLI did (the same exit code, or killed by the same signal).

Attribution is exact because the subreaper is per session: everything re-parented to it
belongs to that session, whatever its environment says; no other session's process and no
process of a program embedding review-loop can ever be its descendant. The review-loop
process itself does not become a subreaper, so it never adopts (or reaps) anyone else's
orphans.

The module is also imported by :mod:`review_loop.orchestrator.process.run` for
:func:`available`, :func:`supervisor_argv`, :func:`session_frame` and :func:`descendants`.
As a supervisor it imports only the standard library and runs with ``-I -S``: nothing from
the working directory (an untrusted repository) or the environment can shadow a module or
change the interpreter.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from contextlib import suppress

SCRIPT = os.path.realpath(__file__)
"""This file."""
LAUNCH = (
    "import sys; sys.path.append(sys.argv[1]); import subreaper; "
    "subreaper._run_as_script(sys.argv[2:])"
)
"""How a supervisor is started: this module imported from its own directory, appended
*after* the standard library (so no module it imports can be shadowed from there), which
reads its cached bytecode; a script run by path is compiled on every start (2–3 ms)."""
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
FRAME_LENGTH_BYTES = 4
"""A session frame starts with its payload's length, big-endian, in this many bytes."""
MAX_FRAME = 64 * 1024 * 1024
"""A larger frame is refused (argv and environment are far below Linux's own limits)."""

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
    import ctypes  # here: a Python built without it gets the unsupervised fallback

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
        except (ImportError, OSError, AttributeError):
            _available = False
    return _available


def supervisor_argv(*, owner: int, control: int) -> list[str]:
    """The command of a supervisor owned by ``owner`` that reads its session from ``control``.

    The owner's pid travels as an argument, so that a supervisor whose owner died before
    it even started (``getppid()`` is no longer the owner) knows. ``control`` is the read
    end of a pipe passed to it (``pass_fds``); the owner keeps the write end.
    """
    here = os.path.dirname(SCRIPT)
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        LAUNCH,
        here,
        f"--owner={owner}",
        f"--control={control}",
    ]


def session_frame(
    argv: Sequence[str], env: dict[str, str], *, cwd: str, grace: float, stdin: bool
) -> bytes:
    """The frame that hands a waiting supervisor its session (see :func:`read_session`).

    ``argv[0]`` is a resolved path; ``env`` is exactly the CLI's environment (the
    supervisor's own is not used, so nothing its interpreter sets, such as PEP 538's
    ``LC_CTYPE``, reaches the CLI); without ``stdin`` the CLI's stdin is ``/dev/null``.
    Fields are NUL-separated (no argument, name or value can hold a NUL: ``exec`` refuses
    them, and so does this) and counted, so an empty argument survives.

    Raises:
        ValueError: a NUL in any field, an ``=`` in or an empty variable name, or no argv
            (what ``posix_spawn`` would refuse).
    """
    if not argv:
        raise ValueError("no command to run")
    for name in env:
        if not name or "=" in name:
            raise ValueError(f"illegal environment variable name: {name!r}")
    words = [repr(float(grace)), "1" if stdin else "0", cwd, str(len(argv)), *argv]
    words += [str(len(env)), *(f"{name}={value}" for name, value in env.items())]
    encoded = [os.fsencode(word) for word in words]
    if any(b"\0" in word for word in encoded):
        raise ValueError("embedded null byte")
    payload = b"\0".join(encoded)
    return len(payload).to_bytes(FRAME_LENGTH_BYTES, "big") + payload


class Session:
    """One session as its frame gave it: what to run, where, and how long to wait."""

    __slots__ = ("argv", "cwd", "env", "grace", "stdin")

    def __init__(
        self, argv: list[str], env: dict[str, str], cwd: str, grace: float, stdin: bool
    ) -> None:
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.grace = grace
        self.stdin = stdin


def parse_session(payload: bytes) -> Session:
    """The session a frame's payload (its bytes after the length) describes.

    Raises:
        ValueError: the payload is not one :func:`session_frame` writes.
    """
    words = [os.fsdecode(word) for word in payload.split(b"\0")]
    try:
        grace, stdin, cwd, argc = float(words[0]), words[1], words[2], int(words[3])
        argv = words[4 : 4 + argc]
        envc = int(words[4 + argc])
    except (IndexError, ValueError) as error:
        raise ValueError(f"malformed session frame: {error}") from None
    entries = words[5 + argc :]
    if stdin not in ("0", "1") or argc < 1 or len(argv) != argc or len(entries) != envc:
        raise ValueError("malformed session frame: counts or flags do not match")
    env: dict[str, str] = {}
    for entry in entries:
        name, equals, value = entry.partition("=")
        if not equals or not name:
            raise ValueError(f"malformed session frame: environment entry {entry!r}")
        env[name] = value
    return Session(argv, env, cwd, grace, stdin == "1")


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
    with suppress(OSError):  # nobody reads our stderr any more
        os.write(2, f"{FAILURE_PREFIX} {text}\n".encode())


def _read_exact(fd: int, size: int, owner: int) -> bytes | None:
    """Exactly ``size`` bytes from ``fd``, never one more; ``None`` at end-of-file or once
    the owner is gone (checked every ``OWNER_POLL_S`` while nothing arrives)."""
    data = bytearray()
    # poll, not select: the pipe keeps the owner's descriptor number (pass_fds), which in
    # an owner with many files open is past select()'s FD_SETSIZE (1024)
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    while len(data) < size:
        if not waiting.poll(OWNER_POLL_S * 1000):
            if os.getppid() != owner:
                return None
            continue
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_session(fd: int, owner: int) -> Session | None:
    """Wait, idle, for this supervisor's session on the control pipe ``fd``.

    ``None`` when there will be none: end-of-file (the owner closed the pipe, or exited)
    or the owner is gone. Raises ``ValueError`` for a frame that is not a session's.
    """
    head = _read_exact(fd, FRAME_LENGTH_BYTES, owner)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_FRAME:
        raise ValueError(f"session frame of {size} bytes (at most {MAX_FRAME})")
    payload = _read_exact(fd, size, owner)
    return None if payload is None else parse_session(payload)


def _become_subreaper() -> bool:
    """``prctl(PR_SET_CHILD_SUBREAPER, 1)``; whether it worked."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (ImportError, OSError, AttributeError):
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
        self.reap()
        if not children(self.me):
            return  # the usual end: the CLI exited and left nothing (no zombie either)
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


def _parse(args: Sequence[str]) -> tuple[int, int]:
    owner = control = -1
    for option in args:
        if option.startswith("--owner="):
            owner = int(option.split("=", 1)[1])
        elif option.startswith("--control="):
            control = int(option.split("=", 1)[1])
        else:
            raise ValueError(f"unknown option {option!r}")
    if owner < 1 or control < 0:
        raise ValueError("expected: --owner=PID --control=FD")
    return owner, control


def _idle(owner: int, control: int) -> Session | None:
    """Before the session: any stop signal ends this process at once (it started nothing
    yet); its session, or ``None`` when there will be none."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)  # SIGINT too: no KeyboardInterrupt traceback
    try:
        return read_session(control, owner)
    finally:
        os.close(control)  # never inherited by the CLI


# --- a launched script, run in a fork of this warm interpreter -----------------------

NAMESPACE_LAUNCHER = "unshare"
"""The launcher :func:`forked_start` recognises: util-linux ``unshare``, which makes
namespaces and execs its command, changing nothing else (with :data:`LAUNCHER_WORDS`)."""
LAUNCHER_WORDS = frozenset({"--mount", "--user", "--map-root-user", "--propagation", "private"})
"""The only ``unshare`` options a forked start accepts: each makes a user or mount
namespace or sets its propagation, all of which a process gets by joining them."""
JOINED = ("user", "mnt")
"""The namespaces joined, user first (it grants the rights to join its mount namespace)."""
_SCRIPT_FLAGS = ("-I", "-S")


class ForkedStart:
    """``launcher... <this interpreter> -I -S script.py args...``, taken apart."""

    __slots__ = ("args", "launcher", "script")

    def __init__(self, launcher: list[str], script: str, args: list[str]) -> None:
        self.launcher = launcher
        self.script = script
        self.args = args


def forked_start(argv: Sequence[str]) -> ForkedStart | None:
    """The parts of ``argv`` when this supervisor can run it in a fork of itself, else ``None``.

    That is ``<unshare> [LAUNCHER_WORDS...] <sys.executable> -I -S <script.py> args...``:
    the namespace launcher, then this very interpreter, isolated as this supervisor is, on
    a standard-library-only script (an absolute path) that defines ``main(args) -> int``.
    Run that way, the interpreter's start (tens of milliseconds, on every session's path)
    is skipped: the fork joins the namespaces the launcher made and calls the script's
    ``main`` (:func:`_run_forked`). Anything else is spawned as it is.
    """
    if sys.executable not in argv:
        return None
    index = list(argv).index(sys.executable)
    launcher, rest = list(argv[:index]), list(argv[index + 1 :])
    if (
        not launcher
        or os.path.basename(launcher[0]) != NAMESPACE_LAUNCHER
        or not set(launcher[1:]) <= LAUNCHER_WORDS
        or tuple(rest[:2]) != _SCRIPT_FLAGS
        or len(rest) < 3
        or not os.path.isabs(rest[2])
        or not rest[2].endswith(".py")
        or not os.path.basename(rest[2])[:-3].isidentifier()
    ):
        return None
    return ForkedStart(launcher, rest[2], rest[3:])


LAUNCHER_FAILED = f"the namespace launcher ({NAMESPACE_LAUNCHER}) failed"
"""How the supervisor names a launcher that made no namespace: a spawn failure
(``cannot run: <LAUNCHER_FAILED> (exit N)``), nothing of the session ran."""


def _ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"exit {code}" if code >= 0 else f"signal {-code}"


def _libc_setns(fd: int, what: str) -> None:
    import ctypes  # imported while idle already (_become_subreaper)

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, 0) != 0:
        raise OSError(ctypes.get_errno(), f"setns({what}): {os.strerror(ctypes.get_errno())}")


def _find(name: str, env: dict[str, str]) -> str:
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if os.path.isabs(path) and os.access(path, os.X_OK) and os.path.isfile(path):
            return path
    raise OSError(f"{name} is not on PATH")


def _launch_holder(start: ForkedStart, env: dict[str, str]) -> tuple[int, int, int]:
    """Run the launcher on ``cat``: ``(pid, its stdin, its stdout)``. ``cat`` holds the
    namespaces the launcher made until its stdin closes; its echo of one byte says it runs,
    so the launcher has made them (its errors go to the session's stderr, as before)."""
    to_holder, from_holder = os.pipe(), os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, to_holder[0], 0),
        (os.POSIX_SPAWN_DUP2, from_holder[1], 1),
    ]
    argv = [*start.launcher, _find("cat", env)]
    try:
        pid = os.posix_spawn(
            argv[0], argv, env, file_actions=actions, setsigmask=(), setsigdef=_DEFAULTED_IN_CLI
        )
    finally:
        os.close(to_holder[0])
        os.close(from_holder[1])
    return pid, to_holder[1], from_holder[0]


def _join_launched_namespaces(start: ForkedStart, env: dict[str, str]) -> None:
    """Enter the namespaces the launcher makes, as its command would run in them.

    A launcher that fails (no namespace can be made here; its message is already on
    stderr) raises: the session is the supervisor's spawn failure, never the exit code of
    a command that ran (:func:`launcher_failed`).
    """
    pid, feed, echo = _launch_holder(start, env)
    try:
        with suppress(BrokenPipeError):
            os.write(feed, b"\n")
        ready = os.read(echo, 1) == b"\n"
        joined = (
            [os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY) for name in JOINED] if ready else []
        )
    finally:
        os.close(feed)
        os.close(echo)
        _, status = os.waitpid(pid, 0)
    if not ready:
        raise OSError(f"{LAUNCHER_FAILED} ({_ended(status)})")
    for kind, fd in zip(JOINED, joined, strict=True):
        if os.fstat(fd).st_ino != os.stat(f"/proc/self/ns/{kind}").st_ino:
            _libc_setns(fd, kind)
        elif kind == "mnt":  # a launcher that made none: never mount in ours
            raise OSError("the launcher made no mount namespace")
        os.close(fd)


def _run_forked(session: Session, start: ForkedStart) -> None:
    """In the fork: join the launcher's namespaces, then run the script's ``main`` in this
    interpreter, as ``<python> -I -S script`` would have run (the CLI's environment, stdin,
    working directory, signal dispositions). Never returns; nothing runs if a step fails."""
    try:
        if not session.stdin:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        os.environ.clear()  # the script sees, and execs with, the CLI's environment
        os.environ.update(session.env)
        _join_launched_namespaces(start, session.env)  # SIGPIPE still ignored: a launcher
        for sig in _DEFAULTED_IN_CLI:  # that exits at once must not kill us mid-write
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(session.cwd)  # looked up again: joining a mount namespace moved us to its /
        sys.path.append(os.path.dirname(start.script))  # after the standard library
        name = os.path.basename(start.script)[:-3]
        if name in sys.modules:
            raise OSError(f"{name} is a module of the supervisor")
        module = __import__(name)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        code = int(module.main(list(start.args)))
        sys.stderr.flush()
    except BaseException as error:  # nothing may run past a failed step
        _say(f"cannot run: {error}")
        code = SPAWN_FAILED_EXIT
    os._exit(code)


def _start_cli(supervisor: Supervisor, session: Session) -> None:
    """chdir to the session's directory and start the CLI (raises ``OSError``): in a fork
    of this process for a launched script (:func:`forked_start`), else by ``posix_spawn``."""
    os.chdir(session.cwd)
    start = forked_start(session.argv)
    if start is not None:
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_forked(session, start)
        supervisor.cli = pid
        return
    actions = [] if session.stdin else [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    supervisor.cli = os.posix_spawn(
        session.argv[0],
        session.argv,
        session.env,
        file_actions=actions,
        setsigmask=(),
        setsigdef=_DEFAULTED_IN_CLI,
    )


def main(args: Sequence[str]) -> int:
    """Wait for a session, run it (see the module docstring); returns the exit code to use."""
    try:
        owner, control = _parse(args)
    except ValueError as error:
        _say(f"usage: {error}")
        return 2
    subreaper = _become_subreaper()  # while idle: off the session's path
    try:
        session = _idle(owner, control)
    except (OSError, ValueError) as error:
        _say(f"no session: {error}")
        return 2
    if session is None:
        return 0  # closed before a session was handed over: nothing was started
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    if not subreaper:
        _say("prctl(PR_SET_CHILD_SUBREAPER) failed; orphans of this session are not adopted")
    if os.getppid() != owner:
        return 128 + signal.SIGHUP  # the owner died before the session started: start nothing
    supervisor = Supervisor(session.grace, owner)
    try:
        _start_cli(supervisor, session)
    except OSError as error:
        _say(f"cannot run: {error}")
        return SPAWN_FAILED_EXIT
    _release_stdio()
    why = supervisor.wait()
    stopped = why.startswith("signal")
    supervisor.end_all(session.grace + STOPPED_MARGIN_S if stopped else session.grace)
    return _exit_as(supervisor.cli_status)


def _run_as_script(args: Iterable[str]) -> None:
    # No interpreter tear-down (about 5 ms, on every session's path): nothing is buffered,
    # every write above is an os.write.
    os._exit(main(list(args)))


if __name__ == "__main__":
    _run_as_script(sys.argv[1:])
