"""A reviewer's output, captured with bounded memory and bounded disk, never in the repository.

The contract (``docs/process-ownership.md``, "Output"):

- The first ``head_cap`` bytes and the last ``tail_cap`` bytes of a stream stay in memory.
- A stream longer than the head is also written, from its first byte, to a spill file of
  this session in review-loop's temp directory (``tempfile.gettempdir()``), never beside
  the session's records in the reviewed repository. Its name starts with
  :func:`output_prefix` (this process's pid and start time), so a review-loop killed
  before it could remove the file leaves it to the next command's sweep
  (:func:`review_loop.orchestrator.sandbox.isolation.remove_orphaned_scratch`).
- The spill holds at most ``keep_cap`` bytes (:data:`OUTPUT_CAP`, 64 MiB, per stream of
  each session). A stream up to that size is read back whole at the end (:meth:`settle`)
  and handed whole to the adapter, so an answer of any size up to the cap is read.
- Past the cap the spill is removed at once (disk use never passes the cap) and the middle
  of the stream is dropped: the head and the tail stay, ``truncated`` is true and
  ``dropped`` counts the bytes lost. The adapter then decides from what was kept.
- A spill that cannot be made or written (``ENOSPC``, ``EDQUOT``, a link, any ``OSError``)
  is read back into memory and removed at once, freeing what it held; the stream is then
  kept whole in memory, up to the same cap, and ``spill_error`` names the errno. So a full
  disk costs memory, never the answer: at most the cap, which is what reading a whole
  spill back at the end costs anyway. A full disk never ends the session or the command.
- :meth:`close` removes the spill, whatever happened before: it never outlives its session.

Only this module's standard-library imports load with it; the temp directory and the
no-link file helper are imported when a stream first outgrows its head.
"""

from __future__ import annotations

import errno as errno_names
import os
from contextlib import suppress
from pathlib import Path

OUTPUT_CAP = 64 * 1024 * 1024
"""The most of one stream of one session kept whole (in memory and its spill together)."""
OUTPUT_PREFIX = "review-loop-output-"
SPILL_SUFFIX = ".spill"


def output_prefix() -> str:
    """The name prefix of this process's spill files: its pid and start time.

    The same shape as the isolation scratch directories' names, read by the same sweep,
    which removes a file only when the process it names no longer runs.
    """
    from review_loop.orchestrator.process import procfs

    started = procfs.start_time(os.getpid())
    if started is None:  # this process runs: only a /proc that cannot be read says otherwise
        raise OSError(errno_names.ENOENT, f"cannot read the start time of {os.getpid()}")
    return f"{OUTPUT_PREFIX}{os.getpid()}-{int(started * 100)}-"


class BoundedCapture:
    """The head and the tail of a stream in memory; all of it, up to a cap, in a spill.

    A plain class, not a dataclass: it is a buffer with state, not a value (four of its
    fourteen attributes are arguments, none is compared or printed).
    ``keep_cap`` of 0 (or at most the head) keeps nothing whole: past its head and tail
    the stream's middle is dropped (stderr, whose whole is never needed).
    """

    __slots__ = (
        "_began",
        "_fd",
        "_memory",
        "_spilled",
        "_whole",
        "head",
        "head_cap",
        "keep_cap",
        "spill_dir",
        "spill_error",
        "spill_path",
        "tail",
        "tail_cap",
        "total",
    )

    def __init__(
        self,
        head_cap: int,
        tail_cap: int,
        spill_dir: Path | None = None,
        keep_cap: int = OUTPUT_CAP,
    ) -> None:
        self.head_cap = head_cap
        self.tail_cap = tail_cap
        self.spill_dir = spill_dir
        """Where the spill is made; ``None``: review-loop's temp directory."""
        self.keep_cap = keep_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.spill_path: Path | None = None
        """The spill file while it exists (it holds the stream's first bytes, whole)."""
        self.spill_error: str | None = None
        """The errno name (``ENOSPC``) of a spill that could not be made or written."""
        self._began = False
        self._spilled = 0
        self._fd = -1
        """The spill's descriptor (written and read back directly: no buffer to lose)."""
        self._memory: bytearray | None = None
        """The whole stream so far, in memory, once its spill failed."""
        self._whole: bytes | None = None
        """The whole stream, as :meth:`settle` read it back."""

    def feed(self, data: bytes) -> None:
        """Add ``data``; never raises for the disk (see the module's contract)."""
        self.total += len(data)
        self._whole = None
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
            if not data:
                return
        if not self._began:  # the first byte past the head: the spill starts, head first
            self._began = True
            if self.keep_cap > self.head_cap:
                self._open_spill()
        if self.total > self.keep_cap:
            self._drop_whole()  # past the cap: what was kept whole is no longer of use
        elif self._memory is not None:
            self._memory += data
        elif self._fd >= 0:
            self._write(data)
        self.tail += data
        if len(self.tail) > self.tail_cap:
            del self.tail[: len(self.tail) - self.tail_cap]

    def _open_spill(self) -> None:
        try:
            from review_loop.orchestrator.handoff.files import make_temp_file  # no link followed

            directory = self.spill_dir
            if directory is None:
                import tempfile  # here, not at import: only output past its head spills

                directory = Path(tempfile.gettempdir())
            self._fd, self.spill_path = make_temp_file(directory, output_prefix(), SPILL_SUFFIX)
        except OSError as error:
            self._to_memory(error, bytes(self.head))  # nothing spilled: the head is all
            return
        self._write(bytes(self.head))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:  # synchronous on purpose: page-cache writes of one read's bytes
                written = os.write(self._fd, view)
                self._spilled += written
                view = view[written:]
        except OSError as error:
            self._to_memory(error, bytes(view))

    def _to_memory(self, error: OSError, unwritten: bytes) -> None:
        """The spill failed: read back what it holds, remove it, and keep the stream in
        memory from here, ``unwritten`` first (only its head and tail, if unreadable)."""
        self.spill_error = errno_names.errorcode.get(error.errno or 0, "EIO")
        held, spilled = b"", self._spilled
        if self._fd >= 0:
            with suppress(OSError):
                held = os.pread(self._fd, spilled, 0)
        self._remove_spill()
        if len(held) == spilled:
            self._memory = bytearray(held)
            self._memory += unwritten

    def _drop_whole(self) -> None:
        self._memory = None
        self._remove_spill()

    def _remove_spill(self) -> None:
        """Close and remove the spill now, freeing its space."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with suppress(OSError):
                os.close(fd)
        self._spilled = 0
        path, self.spill_path = self.spill_path, None
        if path is not None:
            with suppress(OSError):
                os.unlink(path)

    def settle(self) -> None:
        """Read the whole stream back from the spill, once it has ended (blocking: run it
        in a worker thread). A spill that cannot be read leaves the head and the tail."""
        if self._whole is not None:
            return
        if self._memory is not None:
            self._whole = bytes(self._memory)
            return
        if self._fd < 0:
            return
        try:
            whole = os.pread(self._fd, self.total, 0)
        except OSError:
            whole = b""
        if len(whole) == self.total:
            self._whole = whole
        else:  # unreadable: the head and the tail are what is left
            self._remove_spill()

    def close(self) -> None:
        """Remove the spill (what :meth:`settle` read is kept). Never raises."""
        self._remove_spill()

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped: :meth:`value` is not the whole stream."""
        return self._whole is None and self.total > len(self.head) + len(self.tail)

    @property
    def dropped(self) -> int:
        """How many bytes of the stream :meth:`value` does not hold."""
        return self.total - len(self.head) - len(self.tail) if self.truncated else 0

    def value(self) -> bytes:
        """The whole stream if it was kept whole (after :meth:`settle`), else its head and
        its tail joined (the whole stream, when they do not reach past each other)."""
        if self._whole is not None:
            return self._whole
        return bytes(self.head) + bytes(self.tail)
