"""The index of unfinished session records: what the start-up reaper reads, not every record.

Every dispatcher opens with the reaper, which used to read every ``reviewer-session.json``
under ``.review-handoff/runtime/*/*/`` to find the few still ``starting``/``running``:
O(records ever made) on every command (about 75 us each here; a repository keeps one per
consult). The index makes it O(unfinished):

- ``.review-handoff/unfinished/<entry>``: an empty file per record a dispatcher wrote as
  ``starting``/``running`` and has not finished yet. It is made *before* the record's first
  write and removed *after* the finished record was written, so an unfinished record
  written by this code always has one. Its name says which record and which process owns
  it: ``<ownerPid>-<ownerStart>-<level-1 dir>%2F<level-2 dir>`` (``%`` and ``/`` escaped),
  so an entry holds no data (made on a full disk too) and is never opened. It is a hard
  link to ``.entry``, an empty file made once: a new name, not a new inode (making an
  inode took 0.1-0.8 ms on this machine's disk, a link about 10 us); where no link can be
  made, an empty file of its own.
- ``.review-handoff/unfinished/.<entry>``: while the session runs, an empty file made
  ahead to become its finished record (renamed over it: :func:`make_ahead`), so that no
  inode is made between the CLI's exit and the answer. Removed with the entry (also when
  the reaper drops the entry of a dead owner), so a crash leaves nothing behind for long.
- ``.review-handoff/unfinished/.scanned``: the boot id of the last *full* scan. The index
  is trusted only when it holds this boot's id. Otherwise (a repository from before the
  index, an index deleted, a reboot after which a non-fsynced entry may be lost) the reaper
  reads every record as before, adopts into the index the unfinished ones whose owner
  still runs (a process of another version), and writes the stamp.

When an entry cannot be made (a name too long, an unwritable index), the stamp is removed
first, so the next reaper scans everything; only when that fails too is the record
refused (``RecordingError``: no record, no launch).

Why it is safe in a hostile repository: the index is read like the records, through the
no-follow walk (:mod:`.files`), and grants nothing a record could not. A planted entry only
makes the reaper read the record it names (``runtime/<a>/<b>/``, which a full scan reads
anyway), judged by the same rules: nothing is signalled on a record's word, only processes
proven by the marker in their own environment. A planted stamp or a deleted entry only
makes the reaper skip a record, which the repository could do as well by deleting or
rewriting the record itself; a session's processes are ended by its supervisor when its
owner dies, whatever the reaper finds. See ``docs/performance.md``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from review_loop.orchestrator.handoff.files import (
    HANDOFF_DIR,
    atomic_write_bytes,
    list_names,
    make_file,
    make_name,
    read_bytes,
    unlink,
)

INDEX_DIR = "unfinished"
STAMP = ".scanned"
LINKED = ".entry"
"""An empty file every entry is a hard link to: a name, not a new inode per record."""
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
SEPARATOR = "%2F"
NAME_MAX = 255


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry: the record it names (``runtime/<first>/<second>/``) and its owner."""

    name: str
    first: str
    second: str
    owner_pid: int
    owner_start: float | None


def index_dir(repo: Path) -> Path:
    """``<repo>/.review-handoff/unfinished``."""
    return repo / HANDOFF_DIR / INDEX_DIR


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace("/", SEPARATOR)


def _unescape(text: str) -> str:
    return text.replace(SEPARATOR, "/").replace("%25", "%")


def _plain(part: str) -> bool:
    return part not in ("", ".", "..") and "/" not in part and "\0" not in part


def record_parts(repo: Path, record_dir: Path) -> tuple[str, str] | None:
    """``(a, b)`` when ``record_dir`` is ``<repo>/.review-handoff/runtime/<a>/<b>``: the
    records the reaper looks after. Any other directory needs no entry."""
    try:
        parts = record_dir.relative_to(repo / HANDOFF_DIR / "runtime").parts
    except ValueError:
        return None
    if len(parts) != 2 or not all(_plain(part) for part in parts):
        return None
    return parts[0], parts[1]


def entry_name(parts: tuple[str, str], owner_pid: int, owner_start: float | None) -> str:
    """The entry's file name (see the module docstring)."""
    start = "x" if owner_start is None else repr(owner_start)
    return f"{owner_pid}-{start}-{_escape(parts[0])}{SEPARATOR}{_escape(parts[1])}"


def parse(name: str) -> Entry | None:
    """The entry a file name stands for, or ``None`` when it is not one (never trusted)."""
    pid_text, _, rest = name.partition("-")
    start_text, _, path = rest.partition("-")
    # ASCII digits only: str.isdigit also accepts '²', which int() refuses (a planted
    # entry so named stopped every reaper with a ValueError).
    if not (pid_text.isascii() and pid_text.isdigit()) or not path:
        return None
    try:
        start = None if start_text == "x" else float(start_text)
    except ValueError:
        return None
    first, separator, second = path.partition(SEPARATOR)
    if not separator or SEPARATOR in second:
        return None
    first, second = _unescape(first), _unescape(second)
    if not (_plain(first) and _plain(second)):
        return None
    return Entry(name, first, second, int(pid_text), start)


def boot_id() -> str | None:
    """This boot's id (Linux), or ``None``: then the index is never trusted."""
    try:
        return BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def trusted(repo: Path) -> bool:
    """Whether a full scan was made in this boot (the stamp holds this boot's id)."""
    current = boot_id()
    if current is None:
        return False
    try:
        return read_bytes(index_dir(repo) / STAMP).decode("ascii", "replace") == current
    except OSError:
        return False


def mark_scanned(repo: Path) -> None:
    """Record that every unfinished record of ``repo`` has an entry (after a full scan).

    Only where records can be (``.review-handoff/runtime/`` exists): a dispatcher creates
    nothing but its records, and a repository without them has nothing to index yet.
    """
    current = boot_id()
    if current is not None and (repo / HANDOFF_DIR / "runtime").is_dir():
        with suppress(OSError):  # no stamp: the next reaper scans everything again
            atomic_write_bytes(index_dir(repo) / STAMP, current.encode(), durable=False)


def add(repo: Path, record_dir: Path, owner_pid: int, owner_start: float | None) -> bool:
    """Make the entry of the record in ``record_dir`` (before its first unfinished write).

    Returns ``True`` when the entry exists (or the record needs none), ``False`` when it
    could not be made and the stamp was removed instead.

    Raises:
        OSError: the entry could not be made, and the stamp, still readable, could not be
            removed: the record must not be written (a reaper would not look for it).
    """
    parts = record_parts(repo, record_dir)
    if parts is None:
        return True
    name = entry_name(parts, owner_pid, owner_start)
    path = index_dir(repo) / name
    try:
        if len(name.encode()) > NAME_MAX:
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), str(path))
        make_name(path, LINKED)
    except OSError as error:
        with suppress(OSError):
            unlink(index_dir(repo) / STAMP, missing_ok=True)  # the next reaper scans all
        if trusted(repo):  # the stamp is still there: nothing would find the record
            raise error from None
        return False
    return True


def made_path(
    repo: Path, record_dir: Path, owner_pid: int, owner_start: float | None
) -> Path | None:
    """Where :func:`make_ahead` makes the record's next file: ``.<entry>`` in the index
    (``None`` for a record without an entry). Not an entry: :func:`parse` refuses it."""
    parts = record_parts(repo, record_dir)
    if parts is None:
        return None
    name = "." + entry_name(parts, owner_pid, owner_start)
    return index_dir(repo) / name if len(name.encode()) <= NAME_MAX else None


def make_ahead(
    repo: Path, record_dir: Path, owner_pid: int, owner_start: float | None
) -> Path | None:
    """Make the empty file that is to become the record's next version, while the session
    runs (see :func:`.files.atomic_write_bytes`, ``made``); ``None`` when it cannot be."""
    path = made_path(repo, record_dir, owner_pid, owner_start)
    if path is None:
        return None
    try:
        make_file(path)
    except OSError:
        return None
    return path


def remove(repo: Path, record_dir: Path, owner_pid: int, owner_start: float | None) -> None:
    """Remove the entry of a record that is finished (a stale one costs a reaper one read),
    and what was made ahead for it and not used."""
    parts = record_parts(repo, record_dir)
    if parts is None:
        return
    name = entry_name(parts, owner_pid, owner_start)
    if len(name.encode()) <= NAME_MAX:
        _unlink_both(repo, name)


def _unlink_both(repo: Path, name: str) -> None:
    """Remove the file made ahead beside entry ``name`` (``.<name>``), if any, then the
    entry: never the other way round, as an end between the two would leave the made file
    with no entry to find it by (an entry left alone costs the next reaper one read)."""
    for each in ("." + name, name):
        if len(each.encode()) <= NAME_MAX:
            with suppress(OSError):
                unlink(index_dir(repo) / each, missing_ok=True)


def entries(repo: Path) -> Iterator[Entry]:
    """The index's entries (names that are not entries are ignored)."""
    try:
        names = list_names(index_dir(repo))
    except OSError:
        return
    for name in names:
        entry = parse(name)
        if entry is not None:
            yield entry


def drop(repo: Path, entry: Entry) -> None:
    """Remove ``entry`` (its record is finished, or gone with its owner) and what was made
    ahead for its record (left by an owner that died during the session)."""
    _unlink_both(repo, entry.name)
