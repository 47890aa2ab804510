"""A reviewer's output, captured with bounded memory and bounded disk, never in the repository.

The contract (``docs/process-ownership.md``, "Output"):

- The first ``head_cap`` bytes and the last ``tail_cap`` bytes of a stream stay in memory.
- A stream longer than the head is also written, from its first byte, to a spill file of
  this session in review-loop's temp directory (``tempfile.gettempdir()``), never beside
  the session's records in the reviewed repository. Its name starts with
  :func:`output_prefix` (this process's pid and start time), so a review-loop killed
  before it could remove the file leaves it to the next command's sweep
  (:func:`review_loop.orchestrator.isolation.remove_orphaned_scratch`).
- The spill holds at most ``keep_cap`` bytes (:data:`OUTPUT_CAP`, 64 MiB, per stream of
  each session). A stream up to that size is read back whole at the end (:meth:`settle`)
  and handed whole to the adapter, so an answer of any size up to the cap is read.
- Past the cap the spill is removed at once (disk use never passes the cap) and the middle
  of the stream is dropped: the head and the tail stay, ``truncated`` is true and
  ``dropped`` counts the bytes lost. The adapter then decides from what was kept.
- A spill that cannot be written (``ENOSPC``, ``EDQUOT``, a link, any ``OSError``) is
  removed at once, freeing what it held; the capture goes on in memory as past the cap,
  and ``spill_error`` names the errno. A full disk never ends the session or the command.
- :meth:`close` removes the spill, whatever happened before: it never outlives its session.

Only this module's standard-library imports load with it; the temp directory and the
no-link file helper are imported when a stream first outgrows its head.
"""

from __future__ import annotations

import errno as errno_names
import os
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import IO

OUTPUT_CAP = 64 * 1024 * 1024
"""The most of one stream of one session kept whole (in memory and its spill together)."""
OUTPUT_PREFIX = "review-loop-output-"
SPILL_SUFFIX = ".spill"


def output_prefix() -> str:
    """The name prefix of this process's spill files: its pid and start time.

    The same shape as the isolation scratch directories' names, read by the same sweep,
    which removes a file only when the process it names no longer runs.
    """
    from review_loop.orchestrator import procfs

    started = procfs.start_time(os.getpid())
    if started is None:  # this process runs: only a /proc that cannot be read says otherwise
        raise OSError(errno_names.ENOENT, f"cannot read the start time of {os.getpid()}")
    return f"{OUTPUT_PREFIX}{os.getpid()}-{int(started * 100)}-"


class BoundedCapture:
    """The head and the tail of a stream in memory; all of it, up to a cap, in a spill.

    A plain slotted class, not a dataclass: ``@dataclass`` compiles its methods when the
    class is defined, on every reviewer command's start (``docs/consult-startup.md``).
    ``keep_cap`` of 0 (or at most the head) spills nothing: past its head and tail the
    stream's middle is dropped (stderr, whose whole is never needed).
    """

    __slots__ = (
        "_began",
        "_spill",
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
        """The errno name (``ENOSPC``) of a spill that could not be written."""
        self._began = False
        self._spill: IO[bytes] | None = None
        self._whole: bytes | None = None
        """The whole stream, read back from the spill by :meth:`settle`."""

    @property
    def spilling(self) -> bool:
        """Whether the spill still holds the whole stream so far."""
        return self._spill is not None

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
        if self._spill is not None and self.total > self.keep_cap:
            self._drop_spill()  # past the cap: no longer whole, so of no use
        if self._spill is not None:
            try:
                # Synchronous on purpose: one page-cache write of at most one read's bytes.
                self._spill.write(data)
            except OSError as error:
                self._failed(error)
        self.tail += data
        if len(self.tail) > self.tail_cap:
            del self.tail[: len(self.tail) - self.tail_cap]

    def _open_spill(self) -> None:
        from review_loop.orchestrator.files import make_temp_file  # no link followed

        directory = self.spill_dir
        try:
            if directory is None:
                import tempfile  # here, not at import: only output past its head spills

                directory = Path(tempfile.gettempdir())
            fd, name = make_temp_file(directory, output_prefix(), SPILL_SUFFIX)
        except OSError as error:
            self._failed(error)
            return
        self.spill_path = name
        self._spill = os.fdopen(fd, "w+b")  # read back through this descriptor, no name
        try:
            self._spill.write(self.head)
        except OSError as error:
            self._failed(error)

    def _failed(self, error: OSError) -> None:
        self.spill_error = errno_names.errorcode.get(error.errno or 0, "EIO")
        self._drop_spill()

    def _drop_spill(self) -> None:
        """Close and remove the spill now, freeing its space; the stream goes on in memory."""
        spill, self._spill = self._spill, None
        if spill is not None:
            with suppress(OSError):  # flushing onto a full disk fails: the file goes anyway
                spill.close()
        path, self.spill_path = self.spill_path, None
        if path is not None:
            with suppress(OSError):
                os.unlink(path)

    def settle(self) -> None:
        """Read the whole stream back from the spill, once it has ended (blocking: run it
        in a worker thread). A spill that cannot be read leaves the head and the tail."""
        spill = self._spill
        if spill is None or self._whole is not None:
            return
        try:
            spill.flush()
            spill.seek(0)
            whole = spill.read()
            spill.seek(0, os.SEEK_END)
        except OSError as error:
            self._failed(error)
            return
        if len(whole) == self.total:
            self._whole = whole
        else:  # not the stream any more (cannot happen unless someone else wrote it)
            self._drop_spill()

    def close(self) -> None:
        """Remove the spill (what :meth:`settle` read is kept). Never raises."""
        self._drop_spill()

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped: :meth:`value` is not the whole stream."""
        return self._whole is None and self.total > len(self.head) + len(self.tail)

    @property
    def dropped(self) -> int:
        """How many bytes of the stream :meth:`value` does not hold."""
        return self.total - len(self.head) - len(self.tail) if self.truncated else 0

    def value(self) -> bytes:
        """The whole stream if it was kept whole, else its head and its tail joined."""
        if self._whole is not None:
            return self._whole
        return bytes(self.head) + bytes(self.tail)
