"""The start-up reaper: sessions whose owner died, ended only when proven ours.

A record that still says ``starting``/``running`` while its owner (the ``review-loop``
process that wrote it) is dead tells of a crash (``kill -9``). Records live under
``.review-handoff/`` in the reviewed repository, so they are untrusted input: one can be
committed, forged or copied. Nothing is signalled on the record's word alone.

What is proven before anything is signalled (``docs/process-ownership.md``):

- the record is well formed: ``pid`` > 1, ``pgid`` equal to ``pid`` (every session leads
  its own group), a ``procStart``, an ``ownerStart``, and a ``marker`` of 32 hex digits;
- the session's leader, if it still runs with the recorded start time, carries the
  record's marker in its *own* environment (``/proc/<pid>/environ``); if it does not, the
  record is untrusted and nothing at all is signalled;
- the processes ended are those carrying the marker in their own environment, and, when
  the leader is proven, its descendants and the members of its group;
- never this process, its ancestors, or a member of its own process group; never a whole
  group; never a pid <= 1 (each process is signalled by pid, and only while that pid still
  has the start time it had when found: :class:`.procfs.Proc`, against pid reuse).

They get SIGTERM, then SIGKILL after ``grace``; what they started meanwhile is looked for
again. The record then says what happened: ``orphaned`` (its process had started) with
the pids the reaper ended and whether any survived — or that none was left, the usual case
since the session's supervisor ends the session itself when its owner dies; ``lost`` when
the owner died before the process was recorded, or when the record is untrusted, saying why
nothing was signalled. The delivery state is ``DELIVERY_UNKNOWN``: nobody saw the answer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import time
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

import anyio

from review_loop.agents.models import DeliveryState
from review_loop.agents.outcomes import SESSION_FILE as SESSION_FILE
from review_loop.agents.outcomes import SessionRecord, SessionStatus
from review_loop.orchestrator.handoff import committed, unfinished
from review_loop.orchestrator.handoff.files import atomic_write_json, read_bytes, utc_now
from review_loop.orchestrator.process import procfs, subreaper
from review_loop.orchestrator.process.run import MARKER_ENV

MARKER_PATTERN = re.compile(r"[0-9a-f]{32}")
"""What ``process.run_process`` writes: ``process.new_marker()``, 32 lowercase hex digits."""
START_TOLERANCE_S = 0.01
ROUNDS = 3
"""Look-again rounds: a process may start another while it is being ended."""
KILL_WAIT_S = 2.0
POLL_S = 0.05
UNFINISHED = ("starting", "running")
"""A record in either status has not been finished by its owner."""
QUICK_ENTRIES = 64
"""More entries than this (many sessions at once, or a repository that planted them) are
read in a worker thread, not in the event loop's."""


@dataclasses.dataclass(slots=True)
class _Case:
    """One record of a dead owner, and what the reaper found and did."""

    path: Path
    record: SessionRecord
    untrusted: str | None = None
    leader: procfs.Proc | None = None
    ended: list[int] = dataclasses.field(default_factory=list)
    survivors: list[int] = dataclasses.field(default_factory=list)


def _read_record(path: Path) -> SessionRecord | None:
    """The record at ``path`` as the model reads it; ``None`` if unreadable or foreign."""
    try:
        return SessionRecord.read(json.loads(read_bytes(path)))  # the model's reading
    except (OSError, ValueError, RecursionError):  # a link (not followed); nested too deep
        return None


def _indexed(
    repo: Path, tracked: frozenset[str] = frozenset()
) -> tuple[list[tuple[Path, SessionRecord, unfinished.Entry]], list[unfinished.Entry]]:
    """The unfinished records the index names (see :mod:`.unfinished`), and its stale
    entries: those whose record is finished, or missing with its owner gone. One whose
    owner still runs is kept (its record may not be written yet).

    An entry or a record git tracks (``tracked``) is the repository's: neither is read,
    listed as stale or returned.
    """
    runtime = repo / ".review-handoff" / "runtime"
    index = f"{committed.HANDOFF}/{unfinished.INDEX_DIR}/"
    found: list[tuple[Path, SessionRecord, unfinished.Entry]] = []
    stale: list[unfinished.Entry] = []
    for entry in unfinished.entries(repo):
        if tracked and index + entry.name in tracked:
            continue
        path = runtime / entry.first / entry.second / SESSION_FILE
        if tracked and committed.relative(repo, path) in tracked:
            stale.append(entry)  # the entry is ours (not tracked); the record is not
            continue
        record = _read_record(path)
        if record is None:
            if entry.owner_start is None or not _running_since(entry.owner_pid, entry.owner_start):
                stale.append(entry)
        elif record.status not in UNFINISHED:
            stale.append(entry)
        else:
            found.append((path, record, entry))
    return found, stale


def indexed_records(
    repo: Path, tracked: frozenset[str] = frozenset()
) -> list[tuple[Path, SessionRecord, unfinished.Entry]]:
    """The unfinished records the index names; its stale entries are dropped on the way
    (see :func:`_indexed`; nothing git tracks is read or removed)."""
    found, stale = _indexed(repo, tracked)
    for entry in stale:
        unfinished.drop(repo, entry)
    return found


def find_records(
    repo: Path, tracked: frozenset[str] = frozenset()
) -> list[tuple[Path, SessionRecord]]:
    """Every readable ``reviewer-session.json`` under ``.review-handoff/runtime/*/*/`` that
    git does not track (``tracked``: a committed record is never read as ours)."""
    runtime = repo / ".review-handoff" / "runtime"
    found: list[tuple[Path, SessionRecord]] = []
    # Two listings and a name lookup per folder: a tracked record costs no system call
    # (3,000 committed ones made this scan 150 ms with a glob, which stats each folder).
    for first in _folders(runtime):
        for second in _folders(runtime / first):
            name = f"{committed.HANDOFF}/runtime/{first}/{second}/{SESSION_FILE}"
            if name in tracked:
                continue
            path = runtime / first / second / SESSION_FILE
            record = _read_record(path)
            if record is not None:  # unreadable or foreign: skipped, as the original tool
                found.append((path, record))
    return found


def _folders(directory: Path) -> list[str]:
    """The names of the real directories in ``directory`` (a link is not followed)."""
    try:
        with os.scandir(directory) as listing:
            return [e.name for e in listing if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _running_since(pid: int, started: float) -> procfs.Proc | None:
    """The process ``pid`` if it runs (not a zombie) and was started at ``started``."""
    proc = procfs.Proc.of(pid)
    if proc is None or not proc.alive():
        return None
    return proc if abs(proc.create_time() - started) < START_TOLERANCE_S else None


def _owner_alive(record: SessionRecord) -> bool:
    if record.ownerStart is None:
        return False  # cannot be proven alive; the record is judged untrusted below
    return _running_since(record.ownerPid, record.ownerStart) is not None


def _protected() -> tuple[set[int], int]:
    """This process and its ancestors, and this process's group: never signalled."""
    me = os.getpid()
    return {me, *procfs.parents(me)}, os.getpgrp()


def _malformed(record: SessionRecord, protected: set[int], own_group: int) -> str | None:
    """Why the record cannot name a session review-loop started, or ``None``."""
    if record.ownerStart is None:
        return "ownerStart is missing"
    if record.pid is None or record.pid <= 1:
        return f"pid {record.pid} is not a session process"
    if record.pgid is None or record.pgid <= 1:
        return f"pgid {record.pgid} is not a session's process group"
    if record.pgid != record.pid:
        return f"pgid {record.pgid} is not the session's own group (pid {record.pid})"
    if record.procStart is None:
        return "procStart is missing"
    if record.marker is None or not MARKER_PATTERN.fullmatch(record.marker):
        return "marker is missing or not 32 hex digits"
    if record.pid in protected or record.pgid == own_group:
        return f"pid {record.pid} is this review-loop process, an ancestor, or in its group"
    return None


def _environ_marker(proc: procfs.Proc) -> str | None:
    """The marker in ``proc``'s own environment (read while its pid has its start time)."""
    environ = proc.environ()
    return None if environ is None else environ.get(MARKER_ENV)


def _judge(case: _Case, protected: set[int], own_group: int) -> None:
    """Set ``case.untrusted`` or ``case.leader`` (``None``: the leader is gone)."""
    record = case.record
    case.untrusted = _malformed(record, protected, own_group)
    if case.untrusted is not None:
        return
    assert record.pid is not None and record.procStart is not None  # _malformed checked
    leader = _running_since(record.pid, record.procStart)
    if leader is None:
        return  # gone (or its pid reused by a process of another start time)
    if _environ_marker(leader) != record.marker:
        case.untrusted = (
            f"pid {record.pid} runs but its environment does not carry the record's marker: "
            "not a process review-loop started"
        )
        return
    case.leader = leader


def _marker_scan(
    markers: set[str], protected: set[int], own_group: int
) -> dict[str, dict[int, procfs.Proc]]:
    """Every live process carrying one of ``markers`` in its own environment (one pass)."""
    found: dict[str, dict[int, procfs.Proc]] = {m: {} for m in markers}
    if not markers:
        return found
    for pid in procfs.pids():
        proc = None if pid in protected else procfs.Proc.of(pid)
        if proc is None or not proc.alive():
            continue
        marker = _environ_marker(proc)
        if marker in found and _outside(pid, own_group):
            found[marker][pid] = proc
    return found


def _outside(pid: int, own_group: int) -> bool:
    try:
        return os.getpgid(pid) != own_group
    except OSError:
        return False


def _leader_family(
    leader: procfs.Proc, protected: set[int], own_group: int
) -> dict[int, procfs.Proc]:
    """A proven leader, its descendants (also those adopted by the supervisor), its group.

    Descendants are read two ways, as before: the leader's ``children`` files and every
    process's parent pid; each is pinned only if it did not start before the leader.
    """
    found: dict[int, procfs.Proc] = {leader.pid: leader}
    pids = set(subreaper.descendants(leader.pid))
    pids.update(procfs.descendants_by_scan(leader.pid))
    for pid in procfs.pids():
        with suppress(OSError):
            if os.getpgid(pid) == leader.pid:
                pids.add(pid)
    for pid in pids - protected:
        if subreaper.running(pid) and _outside(pid, own_group):
            proc = leader.pin_later(pid)
            if proc is not None:
                found[pid] = proc
    return found


def _session_processes(case: _Case, protected: set[int], own_group: int) -> dict[int, procfs.Proc]:
    assert case.record.marker is not None
    found = dict(_marker_scan({case.record.marker}, protected, own_group)[case.record.marker])
    if case.leader is not None and case.leader.is_running():
        found.update(_leader_family(case.leader, protected, own_group))
    return found


def _live(procs: Iterable[procfs.Proc]) -> list[procfs.Proc]:
    return [proc for proc in procs if proc.alive()]


def _send(procs: Iterable[procfs.Proc], sig: int) -> list[int]:
    """Signal each by pid (refused for a pid reused since it was found); the pids reached."""
    return [proc.pid for proc in procs if proc.pid > 1 and proc.send_signal(sig)]


def _wait_gone(procs: list[procfs.Proc], seconds: float) -> list[procfs.Proc]:
    deadline = time.monotonic() + seconds
    alive = _live(procs)
    while alive and time.monotonic() < deadline:
        time.sleep(POLL_S)
        alive = _live(alive)
    return alive


def _end(case: _Case, grace: float, protected: set[int], own_group: int) -> None:
    """SIGTERM, grace, SIGKILL every proven process of the session; look again; record."""
    ended: set[int] = set()
    last: list[procfs.Proc] = []
    for _ in range(ROUNDS):
        procs = _live(_session_processes(case, protected, own_group).values())
        if not procs:
            break
        ended.update(_send(procs, signal.SIGTERM))
        stubborn = _wait_gone(procs, grace)
        ended.update(_send(stubborn, signal.SIGKILL))
        last = _wait_gone(stubborn, KILL_WAIT_S)
    survivors = _live(last) + [
        p for p in _live(_session_processes(case, protected, own_group).values()) if p not in last
    ]
    case.survivors = sorted(p.pid for p in survivors)
    case.ended = sorted(ended - set(case.survivors))


def _outcome(case: _Case) -> tuple[SessionStatus, str]:
    """The record's new ``status`` and a ``reason`` that says exactly what happened."""
    if case.untrusted is not None:
        return "lost", f"untrusted record ({case.untrusted}); nothing was signalled"
    if case.record.pid is None:
        return "lost", "owner died before the session's process was recorded; nothing to end"
    if not case.ended and not case.survivors:
        # The supervisor ends its session itself when the owner dies; this is the usual case.
        return "orphaned", (
            "owner died before recording a result; no process of the session was left "
            "running (none carried its marker), so the reaper signalled nothing"
        )
    pids = ", ".join(str(pid) for pid in case.ended) or "none"
    reason = (
        f"owner died; the reaper ended {len(case.ended)} process(es) of the session: pids {pids}"
    )
    if case.survivors:
        left = ", ".join(str(pid) for pid in case.survivors)
        return "orphaned", f"{reason}; {len(case.survivors)} could not be ended: pids {left}"
    return "orphaned", f"{reason}; none survived"


def _candidates(
    repo: Path, tracked: frozenset[str]
) -> tuple[list[tuple[Path, SessionRecord, unfinished.Entry | None]], bool]:
    """The records to look at, and whether they come from a full scan.

    The index's when it is trusted (a full scan was made in this boot), else every record;
    never one git tracks.
    """
    if unfinished.trusted(repo):
        return list(indexed_records(repo, tracked)), False
    return [(path, record, None) for path, record in find_records(repo, tracked)], True


def nothing_to_reap(repo: Path) -> bool:
    """Whether the reaper has nothing to do: the index is trusted, names no record of a
    dead owner still to heal, and has no stale entry to drop.

    The usual case, cheap enough for the event loop's thread (a stamp, a listing, the few
    unfinished records): a dispatcher then starts no worker thread for :func:`reap_sync`,
    which alone asks git what it tracks, reads every record, or signals and waits. Nothing
    is removed here: whether an entry is the repository's is known only to
    :func:`reap_sync`.
    """
    if not unfinished.trusted(repo) or len(list(unfinished.entries(repo))) > QUICK_ENTRIES:
        return False
    found, stale = _indexed(repo)
    return not stale and not any(
        record.status in UNFINISHED and not _owner_alive(record) for _, record, _ in found
    )


def reap_sync(repo: Path, grace: float) -> list[SessionRecord]:
    """Mark (and, where proven, end) the sessions of ``repo`` whose owner died.

    Reads the records the index names (:mod:`.unfinished`); when it is not trusted, every
    record, adopting into the index the unfinished ones whose owner still runs, and then
    stamps the index as complete for this boot. A record or index file git tracks is the
    repository's (:mod:`.committed`): never read as a session, rewritten or removed, and an
    index holding one is never stamped (its entries are not all ours to drop). When git
    cannot say what it tracks, nothing is touched.
    """
    if _nothing_on_disk(repo):
        # Git need not be asked what it tracks: there is nothing to read. The stamp is
        # then a new file, never a tracked one rewritten (see _nothing_on_disk).
        if not unfinished.trusted(repo):
            unfinished.mark_scanned(repo)
        return []
    tracked = committed.handoff_paths(repo)
    if tracked is None:
        return []
    records, full_scan = _candidates(repo, tracked)
    index = f"{committed.HANDOFF}/{unfinished.INDEX_DIR}/"
    complete = not any(path.startswith(index) for path in tracked)
    reaped: list[SessionRecord] = []
    protected: set[int] = set()
    own_group = 0
    for path, record, entry in records:
        if record.status not in UNFINISHED:
            continue
        if _owner_alive(record):
            if full_scan:  # a process of another version: its record joins the index
                added = unfinished.add(repo, path.parent, record.ownerPid, record.ownerStart)
                complete = complete and added
            continue
        if not protected:
            protected, own_group = _protected()
        updated, written = _reap_one(path, record, grace, protected, own_group)
        if written:
            unfinished.remove(repo, path.parent, record.ownerPid, record.ownerStart)
            if entry is not None:
                unfinished.drop(repo, entry)
        else:
            complete = False  # it still reads running: the next reaper must see it again
        reaped.append(updated)
    if full_scan and complete:
        unfinished.mark_scanned(repo)
    return reaped


def _nothing_on_disk(repo: Path) -> bool:
    """No index entry and, unless the index is trusted, no session record on disk: the
    first command in a fresh checkout then runs no git of its own for the reaper (one git
    per consult)."""
    if any(True for _ in unfinished.entries(repo)):
        return False
    stamp = repo / committed.HANDOFF / unfinished.INDEX_DIR / unfinished.STAMP
    if unfinished.trusted(repo):
        return True
    if os.path.lexists(stamp):
        return False  # a stale stamp: scanned with git, as it may be the repository's
    runtime = repo / ".review-handoff" / "runtime"
    return not any(
        os.path.lexists(runtime / first / second / SESSION_FILE)
        for first in _folders(runtime)
        for second in _folders(runtime / first)
    )


def _reap_one(
    path: Path, record: SessionRecord, grace: float, protected: set[int], own_group: int
) -> tuple[SessionRecord, bool]:
    """End (where proven) one session whose owner died; its record as rewritten, and
    whether the rewrite reached the disk."""
    case = _Case(path, record)
    if record.pid is not None or record.pgid is not None or record.marker is not None:
        _judge(case, protected, own_group)
        if case.untrusted is None:
            _end(case, grace, protected, own_group)
    elif record.ownerStart is None:
        case.untrusted = "ownerStart is missing"
    status, reason = _outcome(case)
    updated = dataclasses.replace(
        record,
        status=status,
        state=DeliveryState.DELIVERY_UNKNOWN,
        reason=reason,
        updated=utc_now(),
        finishedAt=utc_now(),
    )
    try:
        atomic_write_json(path, updated.document())
    except OSError:  # a link or a full disk: the processes are ended anyway
        return updated, False
    return updated, True


async def reap_sessions(repo: Path, *, grace: float) -> list[SessionRecord]:
    """Async wrapper of :func:`reap_sync` (runs in a worker thread)."""
    return await anyio.to_thread.run_sync(reap_sync, repo, grace)
