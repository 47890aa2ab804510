"""The durable log of one journal stream: append-only CloudEvents lines, one file.

Synchronous on purpose: each call is a few system calls under a file lock. The async
single writer (:mod:`.writer`) runs :meth:`RunLog.commit` in a worker thread, and a
one-shot CLI process calls it directly; both go through the same lock and the same code.

Guarantees, and how (docs/journal.md has the whole contract):

- **Order and contiguity across processes.** Every commit takes an exclusive
  ``fcntl.flock`` on ``<log>.lock``, reads the stream's state, assigns ``seq = last + 1``
  to each accepted mutation in turn, and only then releases the lock. Nobody is refused
  for a consumed sequence number: the number is chosen under the lock, never guessed.
- **One durable write per batch.** The accepted events of a batch are encoded as complete
  lines, written with ``pwrite`` at the end of the log in one call, and ``fdatasync``-ed
  before :meth:`RunLog.commit` returns. Nothing is acknowledged before that; a failed write
  (no space, I/O error) is truncated away and reported, so no torn bytes stay behind.
- **The log heals.** The log is read as its *valid prefix* — complete lines, each the next
  event of the stream — and a *tail* after it. A tail holding no complete event (a write
  torn by a crash, or garbage appended by hand) was never acknowledged; the first process
  that can write moves it, under the exclusive lock, into ``<log>.corrupt-<n>`` (created
  exclusively, fsynced) and truncates the log back to the prefix. A tail holding a
  complete, conforming event after a bad line is corruption *in the middle*: it might be
  an acknowledged event, so nothing is moved and every command fails closed
  (``JOURNAL_CORRUPT``).
- **Idempotency.** A mutation may carry a key; the key index (per event type) is part of
  the state read under the lock, so a repeat — also from another process racing the
  same key — gets the original sequence and changes nothing.
- **Sealing.** An event of one of the schema's sealing types *is* the seal. After it,
  every other mutation is refused with :class:`JournalSealedError`; a second sealing
  mutation gets the first one's sequence and changes nothing. ``<log>.sealed`` is only a
  cache for other tools: it is never read as a fact, and failing to write it (a read-only
  directory) is reported in :attr:`RunLog.seal_marker_error`, not raised.
- **Constant cost per command.** Beside the log sits ``<log>.state``, a snapshot of the
  state (sequence, key index, and a caller-defined fold of the events) at a byte offset.
  Loading reads the snapshot and folds only the lines after its offset, so a command costs
  the same after 5,000 events as after 5. The snapshot is a cache that a repository could
  forge: it carries a MAC (``state_auth``, purpose ``journal-snapshot``) and a digest of
  the log bytes just before its offset, and is believed only when both check out;
  otherwise the state is rebuilt from the log (never an error).
- **No links.** The log's directory is opened no-follow from an anchor (:mod:`.dirs`); the
  log, its lock, snapshot, marker and side files are opened relative to it, never through
  a link.
- **Read-only runs read.** Readers take a shared lock on a read-only descriptor; where
  the lock cannot be opened or created at all (an archived, read-only run), they read
  without it (see :meth:`RunLog._shared`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from review_loop.agents.errors import StateError
from review_loop.orchestrator.journal.dirs import Directory, UnsafePathError

SPECVERSION: Final = "1.0"
ATTRIBUTES: Final = ("id", "source", "type", "specversion", "time", "streamid", "seq", "runid")
SNAPSHOT_VERSION: Final = 2
SNAPSHOT_PURPOSE: Final = "journal-snapshot"
SNAPSHOT_ANCHOR_BYTES: Final = 4096
SIDE_FILE_INFIX: Final = ".corrupt-"
SIDE_FILE_LIMIT: Final = 10_000
# open() failures that mean "this run is read-only here", not "something is wrong".
READ_ONLY_ERRNOS: Final = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


class JournalError(StateError):
    """Base of the journal's own refusals."""


class JournalMissingError(JournalError):
    """The stream's log does not exist (never opened, or a wrong token)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__("JOURNAL_MISSING", f"no journal at {path}")


class JournalSealedError(JournalError):
    """The stream is sealed; it accepts nothing more."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__("JOURNAL_SEALED", f"{path.name} is sealed and accepts no more events")


class JournalCorruptError(JournalError):
    """The log cannot be healed without risking an acknowledged event; fail closed."""

    def __init__(self, path: Path, offset: int, detail: str) -> None:
        super().__init__("JOURNAL_CORRUPT", f"{path} at byte {offset}: {detail}")


class Schema(NamedTuple):
    """How a stream folds its events into the view its mutations decide against.

    Attributes:
        name: identifies the fold; a snapshot written under another name is rebuilt.
        new_view: the view of an empty stream (JSON-serializable).
        fold: updates a view in place with one event.
        sealing_types: event types that seal the stream; it accepts nothing after one.
    """

    name: str
    new_view: Callable[[], dict[str, Any]]
    fold: Callable[[dict[str, Any], Mapping[str, Any]], None]
    sealing_types: frozenset[str] = frozenset()


def _no_fold(view: dict[str, Any], event: Mapping[str, Any]) -> None:
    return None


PLAIN: Final = Schema("plain/1", dict, _no_fold)


class Mutation(NamedTuple):
    """One event a producer wants appended. Immutable; the writer decides its fate.

    Attributes:
        type: the CloudEvents ``type``.
        id: the CloudEvents ``id``.
        key: idempotency key within ``type``; a repeat returns the original sequence.
        data: the event's ``data`` (ignored when ``decide`` is given).
        decide: called under the lock with the stream's current view (including every
            earlier mutation of the same batch); returns the ``data`` to record, or raises
            to refuse this mutation alone. It must not mutate the view.
        source: the CloudEvents ``source``.
        attempt: the journal's ``attempt`` extension.
        time: the event time; the writer stamps it when ``None``.
    """

    type: str
    id: str
    key: str | None = None
    data: Any = None
    decide: Callable[[Mapping[str, Any]], Any] | None = None
    source: str = "/review-loop/journal"
    attempt: int = 1
    time: str | None = None


class Appended(NamedTuple):
    """The mutation is durable as ``event``."""

    event: dict[str, Any]

    @property
    def sequence(self) -> int:
        """The event's ``seq``."""
        return int(self.event["seq"])


class Existing(NamedTuple):
    """The key (or the seal) was already recorded at ``sequence``; nothing changed."""

    sequence: int


class Refused(NamedTuple):
    """The mutation was refused (sealed stream, or ``decide`` raised); nothing changed."""

    error: Exception


Outcome = Appended | Existing | Refused


class Tail(NamedTuple):
    """Bytes after the log's valid prefix that hold no complete event.

    Attributes:
        offset: where the valid prefix ends (the tail starts).
        size: the tail's length in bytes.
        garbage: it holds at least one complete line (not only a torn write).
    """

    offset: int
    size: int
    garbage: bool


class StreamState:
    """What the log holds up to ``offset``: the last sequence, the key index, the view.

    ``tail`` is set when a reader saw a tail it could not move aside (a read-only run): the
    state describes the valid prefix and the tail is ignored.
    """

    __slots__ = ("ino", "keys", "offset", "sealed_seq", "seq", "snapshot_seq", "tail", "view")

    def __init__(
        self,
        *,
        offset: int = 0,
        seq: int = 0,
        keys: dict[str, dict[str, int]] | None = None,
        sealed_seq: int | None = None,
        view: dict[str, Any] | None = None,
        ino: int = 0,
        snapshot_seq: int = 0,
    ) -> None:
        self.offset = offset
        self.seq = seq
        self.keys: dict[str, dict[str, int]] = {} if keys is None else keys
        self.sealed_seq = sealed_seq
        self.view: dict[str, Any] = {} if view is None else view
        self.ino = ino
        self.snapshot_seq = snapshot_seq
        self.tail: Tail | None = None

    def lookup(self, event_type: str, key: str) -> int | None:
        """The sequence recorded for ``key`` within ``event_type``, if any."""
        return self.keys.get(event_type, {}).get(key)


def utc_timestamp(now: float | None = None) -> str:
    """Now, ISO-8601 UTC with milliseconds and ``Z`` (JavaScript's ``toISOString``)."""
    moment = time.time() if now is None else now
    whole = int(moment)
    millis = int((moment - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def encode_event(event: Mapping[str, Any]) -> bytes:
    """One compact JSON line."""
    return (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def conforms(value: Any) -> bool:
    """The journal's CloudEvents shape: the closed attribute set, typed, ``data`` optional."""
    if not isinstance(value, dict):
        return False
    if any(name not in ATTRIBUTES and name not in ("attempt", "data") for name in value):
        return False
    for name in ATTRIBUTES:
        if name not in value:
            return False
    if "attempt" not in value or value.get("specversion") != SPECVERSION:
        return False
    for name in ("id", "source", "type", "time", "streamid", "runid"):
        if not isinstance(value[name], str):
            return False
    return all(
        isinstance(value[name], int) and not isinstance(value[name], bool)
        for name in ("seq", "attempt")
    )


def _event(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    return value if conforms(value) else None


def fsync_directory(path: Path) -> None:
    """Make a directory entry (a created or renamed file) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` by temp file and rename; nothing half-written is visible."""
    with Directory.open(path.parent) as directory:
        directory.write_atomic(path.name, data, durable=durable)


def _anchor_digest(fd: int, offset: int) -> str:
    # The bytes just before a snapshot's offset: binds the snapshot to this log's content.
    # Imported here: only the cache needs it, and loading OpenSSL costs ~2 ms of start-up.
    import hashlib

    size = min(offset, SNAPSHOT_ANCHOR_BYTES)
    return hashlib.sha256(os.pread(fd, size, offset - size) if size else b"").hexdigest()


class RunLog:
    """One stream's log file, its lock, its snapshot, its seal marker and its side files.

    Args:
        path: the log file (``.../run-<token>.jsonl``). It must exist before
            :meth:`commit`; :meth:`create` makes it.
        stream_id: the ``streamid``/``runid`` every event carries (default: the file name).
        schema: the fold that :class:`Mutation` ``decide`` functions read.
        snapshot_every: rewrite the snapshot once this many events follow it...
        snapshot_interval: ...and at least this many seconds have passed since this object
            last wrote it (a long-lived writer sets it, so a growing snapshot is not
            rewritten per batch; :meth:`checkpoint` writes the last one).
        anchor: a trusted ancestor of ``path`` (the repository root); every directory
            below it is opened no-follow (:class:`~.dirs.Directory`).
    """

    def __init__(
        self,
        path: Path,
        *,
        stream_id: str | None = None,
        schema: Schema = PLAIN,
        snapshot_every: int = 64,
        snapshot_interval: float = 0.0,
        anchor: Path | None = None,
    ) -> None:
        self.path = path
        self.stream_id = stream_id or path.name
        self.schema = schema
        self.snapshot_every = snapshot_every
        self.snapshot_interval = snapshot_interval
        self.anchor = anchor
        self._snapshot_at = float("-inf")
        self.lock_path = path.with_name(path.name + ".lock")
        self.snapshot_path = path.with_name(path.name + ".state")
        self.sealed_path = path.with_name(path.name + ".sealed")
        self.seal_marker_error: BaseException | None = None
        self._cache: StreamState | None = None

    # -- the directory, creation and locking -------------------------------------------------

    def directory(self, *, create: bool = False) -> Directory:
        """The log's directory, opened no-follow from the anchor (close it, or use ``with``).

        Raises:
            UnsafePathError: a directory on the way is a link.
            FileNotFoundError: it does not exist (and ``create`` is false).
        """
        return Directory.open(self.path.parent, anchor=self.anchor, create=create)

    @contextlib.contextmanager
    def _existing_directory(self) -> Iterator[Directory]:
        try:
            directory = self.directory()
        except FileNotFoundError:
            raise JournalMissingError(self.path) from None
        with directory:
            yield directory

    def create(self) -> None:
        """Create the empty log exclusively and durably (and its directories, no-follow).

        Raises:
            FileExistsError: a log (or anything else) already exists at this path.
        """
        with self.directory(create=True) as directory:
            directory.create_exclusive(self.path.name, b"")

    def exists(self) -> bool:
        """Whether the log exists (a link in its place counts: opening it is refused)."""
        try:
            with self.directory() as directory:
                return directory.lstat(self.path.name) is not None
        except FileNotFoundError:
            return False

    @contextlib.contextmanager
    def _shared(self, directory: Directory) -> Iterator[None]:
        try:
            fd: int | None = directory.open_file(self.lock_path.name, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        except OSError as error:
            if error.errno not in READ_ONLY_ERRNOS:
                raise
            fd = -1
        if fd is None:
            try:
                fd = directory.open_file(self.lock_path.name, os.O_RDWR | os.O_CREAT)
            except OSError as error:
                if error.errno not in READ_ONLY_ERRNOS:
                    raise
                fd = -1
        if fd < 0:
            # Lock-free read: the lock can be neither opened nor created (an archived,
            # read-only run). That is safe: the log is append-only and a reader stops at
            # the last complete line, and nobody can be appending meanwhile, because every
            # writer must first open (or create) this same lock, which just failed.
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # flock works on a read-only descriptor
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    @contextlib.contextmanager
    def _exclusive(self, directory: Directory) -> Iterator[None]:
        try:
            fd = directory.open_file(self.lock_path.name, os.O_RDWR | os.O_CREAT)
        except OSError as error:
            # An existing lock we may not write (a read-only directory or file, while the
            # log itself is writable): flock needs no write access, so lock it read-only.
            if error.errno not in READ_ONLY_ERRNOS:
                raise
            fd = directory.open_file(self.lock_path.name, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _open(self, directory: Directory, flags: int) -> int:
        try:
            return directory.open_file(self.path.name, flags)
        except FileNotFoundError:
            raise JournalMissingError(self.path) from None

    # -- reading -----------------------------------------------------------------------------

    def read_events(self) -> list[dict[str, Any]]:
        """Every complete, conforming event, oldest first (a torn tail is ignored).

        A raw reader: it heals nothing and skips lines that are not events. The commands
        call :meth:`state` first, which heals a tail and refuses corruption in the middle.
        """
        with self._existing_directory() as directory, self._shared(directory):
            fd = self._open(directory, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                data = os.pread(fd, size, 0) if size else b""
            finally:
                os.close(fd)
        end = data.rfind(b"\n")
        return [
            event for line in data[: end + 1].splitlines() if (event := _event(line)) is not None
        ]

    def state(self) -> StreamState:
        """The stream's current state; a tail after the last event is moved aside first.

        Read under a shared lock. When that read finds a tail, the exclusive lock is taken
        and the tail moved aside (:meth:`_heal`); where that is impossible (a read-only
        run, a full disk) the state of the valid prefix is returned with ``tail`` set.

        The result is also kept as this object's cache, so a :meth:`commit` right after it
        does not read the snapshot again when nobody appended in between; that commit
        updates the same object in place.

        Raises:
            JournalCorruptError: a complete event follows a line that is not the next one.
        """
        with self._existing_directory() as directory:
            with self._shared(directory):
                fd = self._open(directory, os.O_RDONLY)
                try:
                    state = self._load(directory, fd, heal=False)
                finally:
                    os.close(fd)
            if state.tail is not None:
                with contextlib.suppress(OSError, JournalCorruptError):
                    state = self._heal(directory)
        self._cache = state
        return state

    def _heal(self, directory: Directory) -> StreamState:
        with self._exclusive(directory):
            fd = self._open(directory, os.O_RDWR)
            try:
                return self._load(directory, fd, heal=True)
            finally:
                os.close(fd)

    def quarantined(self) -> list[dict[str, Any]]:
        """The side files this log's tails were moved into: ``{path, bytes, at}``, oldest first."""
        prefix = self.path.name + SIDE_FILE_INFIX
        found = []
        with self._existing_directory() as directory:
            for name in directory.names():
                number = name.removeprefix(prefix)
                if number == name or not number.isdigit():
                    continue
                info = directory.lstat(name)
                if info is not None:
                    found.append((int(number), name, info))
        return [
            {
                "path": str(self.path.with_name(name)),
                "bytes": info.st_size,
                "at": utc_timestamp(info.st_mtime),
            }
            for _, name, info in sorted(found)
        ]

    def _load(self, directory: Directory, fd: int, *, heal: bool) -> StreamState:
        stat = os.fstat(fd)
        cached = self._cache
        if cached is not None and cached.ino == stat.st_ino and cached.offset == stat.st_size:
            return cached  # nobody appended since our own last commit
        state = self._read_snapshot(directory, fd, stat)
        tail: Tail | None = None
        if state is not None:
            try:
                tail = self._fold(fd, state, stat.st_size)
            except JournalCorruptError:
                state = None  # judge the log by itself, from its first byte
        if state is None:
            state = StreamState(view=self.schema.new_view(), ino=stat.st_ino)
            tail = self._fold(fd, state, stat.st_size)
        if tail is not None:
            if heal:
                self._move_aside(directory, fd, tail)
            else:
                state.tail = tail
        return state

    def _fold(self, fd: int, state: StreamState, size: int) -> Tail | None:
        """Fold the valid events after ``state.offset``; describe the tail after them."""
        if size <= state.offset:
            return None
        data = os.pread(fd, size - state.offset, state.offset)
        position = 0
        while (stop := data.find(b"\n", position)) >= 0:
            event = _event(data[position:stop])
            if event is None or event["seq"] != state.seq + 1:
                break
            self._apply(state, event)
            position = stop + 1
        state.offset += position
        if position == len(data):
            return None
        rest = data[position:]
        complete = rest[: rest.rfind(b"\n") + 1]
        line_start = 0
        while (stop := complete.find(b"\n", line_start)) >= 0:
            if _event(complete[line_start:stop]) is not None:
                raise JournalCorruptError(
                    self.path,
                    state.offset,
                    "not the next event of this stream, and an event follows it at byte "
                    f"{state.offset + line_start} (it may have been acknowledged, so nothing "
                    "is moved aside; repair the log by hand)",
                )
            line_start = stop + 1
        return Tail(state.offset, len(rest), bool(complete))

    def _move_aside(self, directory: Directory, fd: int, tail: Tail) -> None:
        """Copy the tail into a new side file, durably, then truncate the log back to it."""
        data = os.pread(fd, tail.size, tail.offset)
        try:
            self._write_side_file(directory, data)
        except OSError as error:
            if tail.garbage:
                # Complete lines are never dropped without a copy: refuse instead.
                raise JournalCorruptError(
                    self.path,
                    tail.offset,
                    f"{tail.size} bytes after the last event could not be moved aside "
                    f"({error.strerror or error})",
                ) from None
            # Only a torn write: its batch was never acknowledged (answers follow the
            # fdatasync of whole lines), so dropping it loses nothing anyone was told of.
        os.ftruncate(fd, tail.offset)
        os.fdatasync(fd)

    def _write_side_file(self, directory: Directory, data: bytes) -> str:
        for number in range(1, SIDE_FILE_LIMIT + 1):
            name = f"{self.path.name}{SIDE_FILE_INFIX}{number}"
            try:
                directory.create_exclusive(name, data)
            except FileExistsError:
                continue  # never overwrite an earlier side file
            return name
        raise OSError(errno.EEXIST, f"{SIDE_FILE_LIMIT} side files already exist")

    def _apply(self, state: StreamState, event: dict[str, Any]) -> None:
        state.seq = event["seq"]
        data = event.get("data")
        key = data.get("idempotencyKey") if isinstance(data, dict) else None
        if isinstance(key, str):
            state.keys.setdefault(event["type"], {}).setdefault(key, event["seq"])
        self.schema.fold(state.view, event)
        if state.sealed_seq is None and event["type"] in self.schema.sealing_types:
            state.sealed_seq = event["seq"]

    # -- the snapshot (an authenticated cache) -----------------------------------------------

    def _read_snapshot(
        self, directory: Directory, fd: int, stat: os.stat_result
    ) -> StreamState | None:
        """The snapshot, if this user's review-loop wrote it for this log as it is now."""
        try:
            raw = directory.read(self.snapshot_path.name)
            # Imported only when there is a cache to check (a young run has none).
            from review_loop.orchestrator.handoff import state_auth

            header, _, body = raw.partition(b"\n")
            claimed = json.loads(header)
            if claimed.get("v") != SNAPSHOT_VERSION or not state_auth.verify_bytes(
                SNAPSHOT_PURPOSE, body, claimed.get("mac")
            ):
                return None
            doc = json.loads(body)
            offset = doc["offset"]
            if (
                doc.get("schema") != self.schema.name
                or doc.get("stream") != self.stream_id
                or doc.get("ino") != stat.st_ino
                or not isinstance(offset, int)
                or not 0 <= offset <= stat.st_size
                or doc.get("anchor") != _anchor_digest(fd, offset)
            ):
                return None
            return StreamState(
                offset=offset,
                seq=int(doc["seq"]),
                keys=doc["keys"],
                sealed_seq=doc["sealedSeq"],
                view=doc["view"],
                ino=stat.st_ino,
                snapshot_seq=int(doc["seq"]),
            )
        except (
            OSError,
            ValueError,
            RecursionError,
            KeyError,
            TypeError,
            AttributeError,
            StateError,
        ):
            # Absent, a link, unreadable, forged (or nested too deep), stale, or no usable
            # secret: rebuild.
            return None

    def _write_snapshot(self, directory: Directory, fd: int, state: StreamState) -> None:
        from review_loop.orchestrator.handoff import state_auth

        doc = {
            "schema": self.schema.name,
            "stream": self.stream_id,
            "ino": state.ino,
            "offset": state.offset,
            "anchor": _anchor_digest(fd, state.offset),
            "seq": state.seq,
            "sealedSeq": state.sealed_seq,
            "keys": state.keys,
            "view": state.view,
        }
        try:
            body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            header = {"v": SNAPSHOT_VERSION, "mac": state_auth.mac_bytes(SNAPSHOT_PURPOSE, body)}
            # A cache: no fsync. A lost or stale snapshot is detected and rebuilt.
            directory.write_atomic(
                self.snapshot_path.name,
                json.dumps(header).encode("utf-8") + b"\n" + body,
                durable=False,
            )
            state.snapshot_seq = state.seq
            self._snapshot_at = time.monotonic()
        except (OSError, StateError):
            pass

    # -- writing -----------------------------------------------------------------------------

    def commit(self, mutations: Sequence[Mutation]) -> list[Outcome]:
        """Decide, append and fsync a batch; one outcome per mutation, in order.

        A tail after the last event is moved aside first (see the module docstring).

        Raises:
            JournalMissingError: the log does not exist.
            JournalCorruptError: an event follows a bad line (corruption in the middle), or
                a garbage tail could not be moved aside.
            UnsafePathError: the log, its lock or a directory on the way is a link, or the
                log has other hard links.
            OSError: the write or fsync failed; nothing of this batch was acknowledged.
        """
        with self._existing_directory() as directory, self._exclusive(directory):
            fd = self._open(directory, os.O_RDWR)
            try:
                if os.fstat(fd).st_nlink > 1:
                    raise UnsafePathError(self.path, "has other hard links")
                state = self._load(directory, fd, heal=True)
                outcomes, sealed = self._append(fd, state, mutations)
                if (
                    state.seq - state.snapshot_seq >= self.snapshot_every
                    and time.monotonic() - self._snapshot_at >= self.snapshot_interval
                ):
                    self._write_snapshot(directory, fd, state)
            finally:
                os.close(fd)
        if sealed:
            self.ensure_seal_marker()
        return outcomes

    def _append(
        self, fd: int, state: StreamState, mutations: Sequence[Mutation]
    ) -> tuple[list[Outcome], bool]:
        start = state.offset
        outcomes: list[Outcome] = []
        lines: list[bytes] = []
        sealed = False
        try:
            for mutation in mutations:
                outcome = self._decide(state, mutation)
                if isinstance(outcome, Appended):
                    lines.append(encode_event(outcome.event))
                    sealed = sealed or mutation.type in self.schema.sealing_types
                outcomes.append(outcome)
            if lines:
                payload = b"".join(lines)
                view = memoryview(payload)
                position = start
                while view:
                    written = os.pwrite(fd, view, position)
                    view, position = view[written:], position + written
                os.fdatasync(fd)
                state.offset = start + len(payload)
        except BaseException:
            self._cache = None  # the in-memory state ran ahead of the disk
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
        self._cache = state
        return outcomes, sealed

    def _decide(self, state: StreamState, mutation: Mutation) -> Outcome:
        if state.sealed_seq is not None:
            if mutation.type in self.schema.sealing_types:
                return Existing(state.sealed_seq)
            return Refused(JournalSealedError(self.path))
        if mutation.key is not None:
            existing = state.lookup(mutation.type, mutation.key)
            if existing is not None:
                return Existing(existing)
        data = mutation.data
        if mutation.decide is not None:
            try:
                data = mutation.decide(state.view)
            except Exception as error:  # the mutation's own refusal, reported to its producer
                return Refused(error)
        if mutation.key is not None:
            if data is not None and not isinstance(data, dict):
                return Refused(TypeError("a keyed mutation records an object as its data"))
            data = {"idempotencyKey": mutation.key, **(data or {})}
        event: dict[str, Any] = {
            "id": mutation.id,
            "source": mutation.source,
            "type": mutation.type,
            "specversion": SPECVERSION,
            "time": mutation.time or utc_timestamp(),
            "streamid": self.stream_id,
            "seq": state.seq + 1,
            "runid": self.stream_id,
            "attempt": mutation.attempt,
        }
        if data is not None:
            event["data"] = data
        self._apply(state, event)
        return Appended(event)

    def checkpoint(self) -> None:
        """Write the snapshot now if events follow it (a writer calls this when it stops)."""
        with self._existing_directory() as directory, self._exclusive(directory):
            fd = self._open(directory, os.O_RDWR)
            try:
                state = self._load(directory, fd, heal=True)
                if state.seq > state.snapshot_seq:
                    self._write_snapshot(directory, fd, state)
            finally:
                os.close(fd)

    def ensure_seal_marker(self) -> bool:
        """Create the seal marker (a cache) if the stream is sealed and the marker is missing.

        Returns True when the marker exists afterwards. The terminal event is the seal; a
        marker that cannot be written (a read-only directory, a link in its place) changes
        nothing about the run. Its error is kept in :attr:`seal_marker_error`, not raised.
        """
        self.seal_marker_error = None
        name = self.sealed_path.name
        try:
            with self._existing_directory() as directory:
                if directory.is_file(name):
                    return True
                if self.state().sealed_seq is None:
                    return False
                os.close(directory.open_file(name, os.O_WRONLY | os.O_CREAT))
                directory.sync()
                return True
        except (OSError, UnsafePathError) as error:
            self.seal_marker_error = error
            return False
