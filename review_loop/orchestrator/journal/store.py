"""The durable log of one journal stream: append-only CloudEvents lines, one file.

Synchronous on purpose: each call is a few system calls under a file lock. The async
single writer (:mod:`.writer`) runs :meth:`RunLog.commit` in a worker thread, and a
one-shot CLI process calls it directly; both go through the same lock and the same code.

Guarantees, and how:

- **Order and contiguity across processes.** Every commit takes an exclusive
  ``fcntl.flock`` on ``<log>.lock``, reads the stream's state, assigns ``seq = last + 1``
  to each accepted mutation in turn, and only then releases the lock. Nobody is refused
  for a consumed sequence number: the number is chosen under the lock, never guessed.
- **One durable write per batch.** The accepted events of a batch are encoded as complete
  lines, written with ``pwrite`` at the end of the log in one call, and ``fdatasync``-ed
  before :meth:`RunLog.commit` returns. Nothing is acknowledged before that.
- **Crash at any moment.** A process killed mid-write leaves at most a tail without its
  final newline. Readers ignore bytes after the last newline; the next writer, under the
  lock, truncates them before appending. A complete line is only ever followed by
  complete lines, so every acknowledged event stays intact and no torn event is read.
- **Idempotency.** A mutation may carry a key; the key index (per event type) is part of
  the state read under the lock, so a repeat — also from another process racing the
  same key — gets the original sequence and changes nothing.
- **Sealing.** An event of one of the schema's sealing types seals the stream. After it,
  every other mutation is refused with :class:`JournalSealedError`; a second sealing
  mutation gets the first one's sequence and changes nothing.
- **Constant cost per command.** Beside the log sits ``<log>.state``, a snapshot of the
  state (sequence, key index, and a caller-defined fold of the events) at a byte offset.
  Loading reads the snapshot and folds only the lines after its offset, so a command costs
  the same after 5,000 events as after 5. The snapshot is a cache: written by rename, never
  trusted past a mismatch, rebuilt from the log when absent or unreadable.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from review_loop.agents.errors import StateError

SPECVERSION: Final = "1.0"
ATTRIBUTES: Final = ("id", "source", "type", "specversion", "time", "streamid", "seq", "runid")
SNAPSHOT_VERSION: Final = 1


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
    """A complete line in the middle of the log is not an event of this stream."""

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


class StreamState:
    """What the log holds up to ``offset``: the last sequence, the key index, the view."""

    __slots__ = ("ino", "keys", "offset", "sealed_seq", "seq", "snapshot_seq", "view")

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


def fsync_directory(path: Path) -> None:
    """Make a directory entry (a created or renamed file) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` by temp file and rename; nothing half-written is visible."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_directory(path.parent)


class RunLog:
    """One stream's log file, its lock, its snapshot and its seal marker.

    Args:
        path: the log file (``.../run-<token>.jsonl``). It must exist before
            :meth:`commit`; :meth:`create` makes it.
        stream_id: the ``streamid``/``runid`` every event carries (default: the file name).
        schema: the fold that :class:`Mutation` ``decide`` functions read.
        snapshot_every: rewrite the snapshot once this many events follow it...
        snapshot_interval: ...and at least this many seconds have passed since this object
            last wrote it (a long-lived writer sets it, so a growing snapshot is not
            rewritten per batch; :meth:`checkpoint` writes the last one).
    """

    def __init__(
        self,
        path: Path,
        *,
        stream_id: str | None = None,
        schema: Schema = PLAIN,
        snapshot_every: int = 64,
        snapshot_interval: float = 0.0,
    ) -> None:
        self.path = path
        self.stream_id = stream_id or path.name
        self.schema = schema
        self.snapshot_every = snapshot_every
        self.snapshot_interval = snapshot_interval
        self._snapshot_at = float("-inf")
        self.lock_path = path.with_name(path.name + ".lock")
        self.snapshot_path = path.with_name(path.name + ".state")
        self.sealed_path = path.with_name(path.name + ".sealed")
        self._cache: StreamState | None = None

    # -- creation and locking ----------------------------------------------------------------

    def create(self) -> None:
        """Create the empty log exclusively and durably.

        Raises:
            FileExistsError: a log already exists at this path.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_directory(self.path.parent)

    def exists(self) -> bool:
        """Whether the log file exists."""
        return self.path.is_file()

    @contextlib.contextmanager
    def _locked(self, mode: int) -> Iterator[None]:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            raise JournalMissingError(self.path) from None
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _open(self, flags: int) -> int:
        try:
            return os.open(self.path, flags)
        except FileNotFoundError:
            raise JournalMissingError(self.path) from None

    # -- reading -----------------------------------------------------------------------------

    def read_events(self) -> list[dict[str, Any]]:
        """Every complete, conforming event, oldest first (a torn tail is ignored)."""
        with self._locked(fcntl.LOCK_SH):
            fd = self._open(os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                data = os.pread(fd, size, 0) if size else b""
            finally:
                os.close(fd)
        events = []
        end = data.rfind(b"\n")
        for line in data[: end + 1].splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if conforms(event):
                events.append(event)
        return events

    def state(self) -> StreamState:
        """The stream's current state (read under a shared lock; nothing is repaired).

        The result is also kept as this object's cache, so a :meth:`commit` right after it
        does not read the snapshot again when nobody appended in between; that commit
        updates the same object in place.
        """
        with self._locked(fcntl.LOCK_SH):
            fd = self._open(os.O_RDONLY)
            try:
                state = self._load(fd, repair=False)
            finally:
                os.close(fd)
        self._cache = state
        return state

    def _read_snapshot(self, ino: int, size: int) -> StreamState | None:
        try:
            raw = self.snapshot_path.read_bytes()
            doc = json.loads(raw)
            if (
                doc.get("v") != SNAPSHOT_VERSION
                or doc.get("schema") != self.schema.name
                or doc.get("ino") != ino
                or not 0 <= doc["offset"] <= size
            ):
                return None
            return StreamState(
                offset=int(doc["offset"]),
                seq=int(doc["seq"]),
                keys=doc["keys"],
                sealed_seq=doc["sealedSeq"],
                view=doc["view"],
                ino=ino,
                snapshot_seq=int(doc["seq"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _load(self, fd: int, *, repair: bool) -> StreamState:
        stat = os.fstat(fd)
        cached = self._cache
        if cached is not None and cached.ino == stat.st_ino and cached.offset == stat.st_size:
            return cached  # nobody appended since our own last commit
        state = self._read_snapshot(stat.st_ino, stat.st_size)
        if state is not None:
            try:
                self._fold_tail(fd, state, stat.st_size, repair=repair)
                return state
            except JournalCorruptError:
                pass  # the snapshot does not describe this log; rebuild from the start
        state = StreamState(view=self.schema.new_view(), ino=stat.st_ino)
        self._fold_tail(fd, state, stat.st_size, repair=repair)
        return state

    def _fold_tail(self, fd: int, state: StreamState, size: int, *, repair: bool) -> None:
        if size <= state.offset:
            return
        data = os.pread(fd, size - state.offset, state.offset)
        end = data.rfind(b"\n")
        complete = data[: end + 1]
        position = 0
        while position < len(complete):
            stop = complete.index(b"\n", position)
            line = complete[position:stop]
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not conforms(event) or event["seq"] != state.seq + 1:
                raise JournalCorruptError(
                    self.path, state.offset + position, "not the next event of this stream"
                )
            self._apply(state, event)
            position = stop + 1
        state.offset += len(complete)
        if repair and end + 1 < len(data):
            # A torn tail: a writer died mid-write. Its bytes were never acknowledged.
            os.ftruncate(fd, state.offset)

    def _apply(self, state: StreamState, event: dict[str, Any]) -> None:
        state.seq = event["seq"]
        data = event.get("data")
        key = data.get("idempotencyKey") if isinstance(data, dict) else None
        if isinstance(key, str):
            state.keys.setdefault(event["type"], {}).setdefault(key, event["seq"])
        self.schema.fold(state.view, event)
        if state.sealed_seq is None and event["type"] in self.schema.sealing_types:
            state.sealed_seq = event["seq"]

    # -- writing -----------------------------------------------------------------------------

    def commit(self, mutations: Sequence[Mutation]) -> list[Outcome]:
        """Decide, append and fsync a batch; one outcome per mutation, in order.

        Raises:
            JournalMissingError: the log does not exist.
            JournalCorruptError: the log holds a line that is not the next event.
            OSError: the write or fsync failed; nothing of this batch was acknowledged.
        """
        with self._locked(fcntl.LOCK_EX):
            fd = self._open(os.O_RDWR)
            try:
                state = self._load(fd, repair=True)
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
                if (
                    state.seq - state.snapshot_seq >= self.snapshot_every
                    and time.monotonic() - self._snapshot_at >= self.snapshot_interval
                ):
                    self._write_snapshot(state)
            finally:
                os.close(fd)
        if sealed:
            self.ensure_seal_marker()
        return outcomes

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
        with self._locked(fcntl.LOCK_EX):
            fd = self._open(os.O_RDWR)
            try:
                state = self._load(fd, repair=True)
                if state.seq > state.snapshot_seq:
                    self._write_snapshot(state)
            finally:
                os.close(fd)

    def _write_snapshot(self, state: StreamState) -> None:
        doc = {
            "v": SNAPSHOT_VERSION,
            "schema": self.schema.name,
            "ino": state.ino,
            "offset": state.offset,
            "seq": state.seq,
            "sealedSeq": state.sealed_seq,
            "keys": state.keys,
            "view": state.view,
        }
        try:
            # A cache: no fsync. A lost or stale snapshot is detected and rebuilt.
            write_file_atomic(
                self.snapshot_path,
                json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
                durable=False,
            )
            state.snapshot_seq = state.seq
            self._snapshot_at = time.monotonic()
        except OSError:
            pass

    def ensure_seal_marker(self) -> bool:
        """Create the seal marker if the stream is sealed and the marker is missing.

        Returns True when the marker exists afterwards.
        """
        if self.sealed_path.exists():
            return True
        if self.state().sealed_seq is None:
            return False
        fd = os.open(self.sealed_path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.close(fd)
        fsync_directory(self.sealed_path.parent)
        return True
