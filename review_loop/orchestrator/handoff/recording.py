"""Writing records without losing what they record: failures become values, not crashes.

A reviewer's answer that has arrived is worth more than the file that was to record it.
The functions here write session records and event lines and, when the disk is full,
read-only or forbidden, return a :class:`~review_loop.agents.outcomes.RecordError` (the
path, the errno's name, the message) instead of raising, so the caller can still deliver
the answer and say exactly what was not recorded. See ``docs/handoff-writes.md``.

A session record that cannot be replaced atomically (no room for the temporary file) is
rewritten in place as compact JSON, which is shorter than the pretty JSON it replaces and
so needs no new block: a finished session is then never left reading ``running`` on a
full disk, only on one that refuses every write.
"""

from __future__ import annotations

import errno as errno_names
import json
import os
import stat
from pathlib import Path
from typing import Any

from review_loop.agents.errors import ReviewLoopError
from review_loop.agents.outcomes import RecordError
from review_loop.orchestrator.handoff.files import append_line, atomic_write_json, open_fd


def record_error(path: Path, error: OSError) -> RecordError:
    """The :class:`RecordError` for ``error`` while writing ``path``."""
    code = error.errno or 0
    name = errno_names.errorcode.get(code, str(code) if code else "EIO")
    reason = error.strerror or str(error) or type(error).__name__
    return RecordError(path=str(path), errno=name, message=f"cannot write {path}: {reason}")


class RecordingError(ReviewLoopError):
    """A record that must exist before a step can go on could not be written.

    Attributes:
        error: which path, which errno, and the message.
    """

    def __init__(self, error: RecordError) -> None:
        self.error = error
        super().__init__(f"RECORD_FAILED: {error.message} [{error.errno}]")


def write_record(
    path: Path, document: Any, *, durable: bool = True, made: Path | None = None
) -> RecordError | None:
    """Write a JSON record atomically; on failure, in place; return what failed, if anything.

    The in-place rewrite (``O_WRONLY`` without ``O_TRUNC``, then ``ftruncate``) is tried only
    when the atomic write failed and the file already exists; it needs no new block when
    the compact text is no longer than what the file held. ``made``: an empty file made
    ahead to serve as the temporary file (see
    :func:`~review_loop.orchestrator.handoff.files.atomic_write_bytes`).
    """
    try:
        atomic_write_json(path, document, durable=durable, made=made)
    except OSError as error:
        failure = record_error(path, error)
    else:
        return None
    if _rewrite_in_place(path, document):
        return None
    return failure


def _rewrite_in_place(path: Path, document: Any) -> bool:
    """Rewrite the record at ``path`` in place, if it is a regular file of one name.

    Checked on the opened descriptor (opened non-blocking: a planted FIFO is never waited
    on): a hard link planted as the record may be a file outside the repository, and
    writing in place would write into it.
    """
    data = (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    try:
        fd = open_fd(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return False  # not a file of ours alone: the failure stands
        if len(data) > info.st_size:
            return False  # would need new room: the old record is better than a torn one
        written = 0
        while written < len(data):
            written += os.pwrite(fd, data[written:], written)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def append_record(path: Path, document: Any) -> RecordError | None:
    """Append one JSON line (see :func:`~review_loop.orchestrator.handoff.files.append_line`)."""
    try:
        append_line(path, document)
    except OSError as error:
        return record_error(path, error)
    return None


def write_or_raise(path: Path, document: Any, *, durable: bool = True) -> None:
    """:func:`write_record`, raising :class:`RecordingError` when nothing could be written."""
    failure = write_record(path, document, durable=durable)
    if failure is not None:
        raise RecordingError(failure)
