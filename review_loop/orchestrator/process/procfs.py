"""Processes as ``/proc`` tells them: start times, states, families, environments.

The few things review-loop asks about other processes — when did pid N start, is it a
zombie, what are its children, what does its own environment say, signal it only if it is
still the process we found — are each one small ``/proc`` read on Linux. Importing psutil
for them cost every reviewer command about 10–15 ms of start-up (``docs/performance.md``); this
module reads ``/proc`` itself with the standard library and imports psutil (inside the
function that needs it) only where there is no ``/proc``.

Contract (what callers rely on; ``tests/orchestrator/process/test_procfs.py`` holds it against
psutil on live processes):

- :func:`start_time` is *exactly* ``psutil.Process(pid).create_time()``: the same formula
  on the same numbers — ``float(starttime) / SC_CLK_TCK + float(btime)``, field 22 of
  ``/proc/<pid>/stat`` and the ``btime`` line of ``/proc/stat`` — so values stored by either
  (session records, scratch-directory names) compare equal with ``==``.
- Identity against pid reuse is psutil's: a pid *and* its start in clock ticks since boot
  (psutil's ``create_time(monotonic=True)``). A :class:`Proc` is pinned when it is found;
  every later question (:meth:`Proc.alive`, :meth:`Proc.environ`, :meth:`Proc.children`,
  :meth:`Proc.send_signal`) is answered only while the pid still has that start, as
  ``psutil.Process.send_signal`` refuses a reused pid.
- Nothing raises for a process that vanished, became a zombie or cannot be read: where
  psutil raises ``NoSuchProcess``/``ZombieProcess``/``AccessDenied`` (every caller caught
  ``psutil.Error``), these return ``None``, ``False`` or an empty list.
  :func:`status` alone tells apart "no such process" (``None``) from "exists, unreadable"
  (:data:`UNREADABLE`), for a caller that must not treat the latter as gone.
- ``/proc/<pid>/stat`` is split at the *last* ``)``: a command name may hold spaces and
  parentheses.

Two deliberate differences from psutil, both stricter: :func:`environ` decodes the raw
block without psutil's text-mode newline translation (a ``\\r`` in a value stays a ``\\r``),
and :func:`running` counts a dead (``X``) process as not running, where psutil's
``status()`` calls it ``"dead"`` rather than ``"zombie"``.
"""

from __future__ import annotations

import os
import sys

from review_loop.orchestrator.process.subreaper import children as _child_pids
from review_loop.orchestrator.process.subreaper import descendants as _descendant_pids

LINUX = sys.platform.startswith("linux") and os.path.exists("/proc/self/stat")
"""Whether ``/proc`` is read directly; elsewhere psutil answers (imported on first use)."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if LINUX else 100
"""What ``/proc/<pid>/stat``'s start time counts in (psutil's ``CLOCK_TICKS``)."""

ZOMBIE = "zombie"
DEAD = "dead"
UNREADABLE = "unreadable"
""":func:`status` of a process that exists but whose ``/proc`` entry cannot be read."""
_STATUSES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": ZOMBIE,
    "X": DEAD,
    "x": DEAD,
    "K": "wake-kill",
    "W": "waking",
    "I": "idle",
    "P": "parked",
}
"""Linux's state letters, named as psutil's ``STATUS_*`` constants are."""


class _Stat:
    """The fields of ``/proc/<pid>/stat`` used here."""

    __slots__ = ("ppid", "start", "status")

    def __init__(self, status: str, ppid: int, start: float) -> None:
        self.status = status
        self.ppid = ppid
        self.start = start
        """Clock ticks since boot (Linux); psutil's ``create_time()`` elsewhere."""


def _parse_stat(data: bytes) -> _Stat | None:
    # The command name is between the first "(" and the LAST ")": it may hold both.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        letter = fields[0].decode("ascii")
        return _Stat(_STATUSES.get(letter, "?"), int(fields[1]), float(fields[19]))
    except (IndexError, ValueError):
        return None


def _stat(pid: int) -> _Stat | None:
    """``pid``'s stat; ``None`` if no such process. ``PermissionError`` if unreadable."""
    if pid <= 0:
        return None  # /proc/0 does not exist; psutil refuses a negative pid
    if not LINUX:
        return _psutil_stat(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return _parse_stat(data)


def _stat_or_none(pid: int) -> _Stat | None:
    try:
        return _stat(pid)
    except OSError:
        return None


def _psutil_stat(pid: int) -> _Stat | None:
    import psutil

    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            return _Stat(proc.status(), proc.ppid(), proc.create_time())
    except psutil.AccessDenied as error:
        raise PermissionError(f"process {pid}") from error
    except psutil.Error:
        return None


def boot_time() -> float:
    """The ``btime`` line of ``/proc/stat`` as psutil's ``boot_time()`` gives it."""
    if not LINUX:
        import psutil

        return float(psutil.boot_time())
    with open("/proc/stat", "rb") as handle:
        for line in handle:
            if line.startswith(b"btime"):
                return float(line.strip().split()[1])
    raise RuntimeError("line 'btime' not found in /proc/stat")


def _seconds(start: float) -> float:
    """A :class:`_Stat`'s start as ``psutil.Process.create_time()`` returns it."""
    return start / CLOCK_TICKS + boot_time() if LINUX else start


def start_time(pid: int) -> float | None:
    """``psutil.Process(pid).create_time()`` (zombies too), or ``None`` if unreadable/gone."""
    info = _stat_or_none(pid)
    return None if info is None else _seconds(info.start)


def start_ticks(pid: int) -> float | None:
    """When ``pid`` started in clock ticks since boot (Linux; psutil's ``create_time()``
    elsewhere), or ``None`` if unreadable/gone.

    Unlike :func:`start_time`, a change of the wall clock does not change it: a lock that
    must never be taken from a live owner compares this (within one boot), never seconds.
    """
    info = _stat_or_none(pid)
    return None if info is None else info.start


def status(pid: int) -> str | None:
    """psutil's status name for ``pid`` (``"zombie"``, ``"running"``, ...).

    ``None`` when there is no such process; :data:`UNREADABLE` when it exists but its
    ``/proc`` entry cannot be read (psutil's ``AccessDenied``).
    """
    try:
        info = _stat(pid)
    except OSError:
        return UNREADABLE
    return None if info is None else info.status


def is_zombie(pid: int) -> bool:
    """Whether ``pid`` is a zombie (exited, not yet reaped by its parent)."""
    return status(pid) == ZOMBIE


def running(pid: int) -> bool:
    """Whether ``pid`` exists, can be read and is neither a zombie nor dead."""
    return status(pid) not in (None, ZOMBIE, DEAD, UNREADABLE)


def pids() -> list[int]:
    """Every process id on the machine, ascending (threads are not listed)."""
    if not LINUX:
        import psutil

        return sorted(psutil.pids())
    return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())


def ppid(pid: int) -> int | None:
    """The parent of ``pid`` (0 for the kernel's own), or ``None`` if gone/unreadable."""
    info = _stat_or_none(pid)
    return None if info is None else info.ppid


def parents(pid: int) -> list[int]:
    """The ancestors of ``pid``, nearest first (psutil's ``Process.parents()``).

    As psutil does, a parent pid whose process started after its child is a reused pid,
    not the parent, and the chain stops there.
    """
    found: list[int] = []
    info = _stat_or_none(pid)
    while info is not None and info.ppid > 0 and info.ppid not in found:
        parent = _stat_or_none(info.ppid)
        if parent is None or parent.start > info.start:
            break
        found.append(info.ppid)
        info = parent
    return found


def environ(pid: int) -> dict[str, str] | None:
    """``pid``'s own environment, as it was at its ``exec`` (psutil's ``environ()``).

    ``None`` when it is gone, a zombie (psutil's ``ZombieProcess``) or cannot be read
    (another user's process). Decoded with the file-system encoding and error handler, as
    psutil does.
    """
    if pid <= 0:
        return None
    if not LINUX:
        import psutil

        try:
            return dict(psutil.Process(pid).environ())
        except psutil.Error:
            return None
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            block = handle.read()
    except OSError:
        return None
    return _parse_environ(block)


def _parse_environ(block: bytes) -> dict[str, str]:
    """psutil's ``parse_environ_block``: NUL-terminated ``NAME=value`` entries up to an
    empty one (what follows the last NUL is not a terminated entry)."""
    text = block.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    found: dict[str, str] = {}
    for entry in text.split("\0")[:-1]:
        if not entry:
            break
        name, equals, value = entry.partition("=")
        if equals and name:
            found[name] = value
    return found


def children(pid: int, *, recursive: bool = False) -> list[int]:
    """The children (or every descendant) of ``pid``, zombies included; ``[]`` if gone.

    Read from ``pid``'s own ``/proc/<pid>/task/*/children`` files (a scan of ``/proc`` on a
    kernel without them); with ``recursive``, parents come before their children.
    """
    if pid <= 0:
        return []
    if not LINUX:
        import psutil

        try:
            return [child.pid for child in psutil.Process(pid).children(recursive=recursive)]
        except psutil.Error:
            return []
    return _descendant_pids(pid) if recursive else _child_pids(pid)


def cpu_ticks(pid: int) -> int | None:
    """The CPU time ``pid`` used, its own and its reaped children's, in clock ticks
    (``utime + stime + cutime + cstime`` of ``/proc/<pid>/stat``); ``None`` if it is gone
    or unreadable (psutil's ``cpu_times()`` where there is no ``/proc``)."""
    if pid <= 0:
        return None
    if not LINUX:
        import psutil

        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            return None
        total = times.user + times.system + times.children_user + times.children_system
        return int(total * CLOCK_TICKS)
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return sum(int(field) for field in fields[11:15])
    except ValueError:
        return None


def ppid_map() -> dict[int, int]:
    """``{pid: parent pid}`` for every process, from one read of each ``/proc/<pid>/stat``."""
    found: dict[int, int] = {}
    for pid in pids():
        info = _stat_or_none(pid)
        if info is not None:
            found[pid] = info.ppid
    return found


def descendants_by_scan(pid: int) -> list[int]:
    """Every descendant of ``pid`` by its parent pid, over the whole machine.

    psutil's ``children(recursive=True)``: a second view, independent of the ``children``
    files :func:`children` reads (which the kernel documents as a snapshot that may miss a
    process while the tree changes).
    """
    below: dict[int, list[int]] = {}
    for child, parent in ppid_map().items():
        below.setdefault(parent, []).append(child)
    found: list[int] = []
    seen = {pid}
    queue = [pid]
    while queue:
        for child in below.get(queue.pop(0), []):
            if child not in seen:  # pids reused during the scan may form a cycle
                seen.add(child)
                found.append(child)
                queue.append(child)
    return found


class Proc:
    """A process pinned by its pid and start: what ``psutil.Process`` guards against reuse.

    Built by :meth:`of`; every question after that is answered for *this* process only,
    never for another that reused its pid meanwhile.
    """

    __slots__ = ("_start", "pid")

    def __init__(self, pid: int, start: float) -> None:
        self.pid = pid
        self._start = start

    @classmethod
    def of(cls, pid: int) -> Proc | None:
        """The process that has ``pid`` now (zombies too), or ``None`` if gone/unreadable."""
        info = _stat_or_none(pid)
        return None if info is None else cls(pid, info.start)

    def __repr__(self) -> str:
        return f"Proc(pid={self.pid}, start={self._start})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Proc):
            return NotImplemented
        return (self.pid, self._start) == (other.pid, other._start)

    def __hash__(self) -> int:
        return hash((self.pid, self._start))

    def create_time(self) -> float:
        """When it started, as ``psutil.Process.create_time()`` (and :func:`start_time`)."""
        return _seconds(self._start)

    def _now(self) -> _Stat | None:
        """Its stat now, or ``None`` if it is gone, unreadable or its pid was reused."""
        info = _stat_or_none(self.pid)
        return info if info is not None and info.start == self._start else None

    def is_running(self) -> bool:
        """Whether it still exists, zombie or not (psutil's ``is_running()``)."""
        return self._now() is not None

    def status(self) -> str | None:
        """Its status name now, or ``None`` if it is gone (or its pid reused)."""
        info = self._now()
        return None if info is None else info.status

    def alive(self) -> bool:
        """Whether it still runs: same pid and start, neither zombie nor dead."""
        return self.status() not in (None, ZOMBIE, DEAD)

    def environ(self) -> dict[str, str] | None:
        """Its own environment (:func:`environ`), ``None`` if gone or reused.

        The start is checked again *after* the read: the block read was this process's.
        """
        found = environ(self.pid)
        return found if found is not None and self.is_running() else None

    def children(self, *, recursive: bool = False) -> list[Proc]:
        """Its children (or descendants), pinned; ``[]`` if it is gone or reused.

        As psutil does, a pid that started before this process is not its child.
        """
        if not self.is_running():
            return []
        pinned = (self.pin_later(pid) for pid in children(self.pid, recursive=recursive))
        return [proc for proc in pinned if proc is not None]

    def pin_later(self, pid: int) -> Proc | None:
        """``pid`` pinned, if it runs and did not start before this process.

        A process found as this one's descendant (or group member) that is older than this
        one cannot be what was found: its pid was reused. ``None`` then, or if it is gone.
        """
        proc = Proc.of(pid)
        return proc if proc is not None and proc._start >= self._start else None

    def send_signal(self, sig: int) -> bool:
        """Send ``sig`` if the pid still has this start; whether it was sent.

        ``False`` when it is gone, its pid was reused, or signalling is not permitted (the
        cases where psutil raises). Never to pid 0 or a negative pid (a group).
        """
        if self.pid <= 0 or not self.is_running():
            return False
        try:
            os.kill(self.pid, sig)
        except OSError:
            return False
        return True
