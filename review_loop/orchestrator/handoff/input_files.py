"""Files a caller names as input, read with a size limit.

Every file review-loop reads because a caller named it — ``--question-file``,
``--body-file``, ``--scenarios-file``, ``--plan``, ``--host-position``, ``--driver``,
``--deterministic-verification``, ``--concerns`` and the prompt files it names,
``--audit-input``, the journal's ``--input`` and ``--payload`` (a file or stdin) — is read
through here: at most :data:`MAX_INPUT_BYTES` + 1 bytes, so an endless source
(``/dev/zero``, a FIFO whose writer never stops, ``/proc/...``) ends the read at the limit
instead of filling memory until the kernel kills the process. A source past the limit is
refused with :class:`InputTooLargeError`, which names the source and the limit.

:class:`InputTooLargeError` is an :class:`OSError` (``EFBIG``): every caller already turns a
file it cannot read into its own error ("cannot read ...", the journal's
``INPUT_READ_FAILED``), and that error now says why. ``docs/cli.md`` states the limit.
"""

from __future__ import annotations

import errno
import io
from pathlib import Path
from typing import Any

from review_loop.agents.errors import ReviewLoopError

MAX_INPUT_BYTES = 16 * 1024 * 1024
"""The size limit of one input file: 16 MiB, far above any reviewer's context window."""


def limit_text(limit: int = MAX_INPUT_BYTES) -> str:
    """The limit in words: ``16 MiB (16777216 bytes)``."""
    mib = limit / (1024 * 1024)
    return f"{mib:g} MiB ({limit} bytes)"


class InputTooLargeError(ReviewLoopError, OSError):
    """A source holds more than the limit (only the limit + 1 bytes were read).

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, source: str, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than the input limit of {limit_text(limit)}", source)
        self.limit = limit


def read_bytes(path: str | Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file at ``path``, at most ``limit`` of them.

    Raises:
        InputTooLargeError: the file holds more than ``limit`` bytes.
        OSError: it cannot be opened or read (``FileNotFoundError``, ``IsADirectoryError``...).
    """
    with open(path, "rb") as handle:
        return _bounded(handle, limit, str(path))


def read_text(path: str | Path, limit: int = MAX_INPUT_BYTES, encoding: str = "utf-8") -> str:
    """The text of the file at ``path`` as ``Path.read_text(encoding)`` reads it (universal
    newlines), from at most ``limit`` bytes.

    Raises:
        InputTooLargeError: the file holds more than ``limit`` bytes.
        OSError: it cannot be opened or read.
        UnicodeDecodeError: it is not text in ``encoding``.
    """
    return _decoded(read_bytes(path, limit), encoding, "strict")


def read_stream_text(stream: Any, name: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The text of a text stream (``sys.stdin``), decoded as the stream decodes it, from at
    most ``limit`` bytes of its binary buffer (a stream without one: ``limit``
    characters).

    Raises:
        InputTooLargeError: the stream holds more than ``limit``.
    """
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        text: str = stream.read(limit + 1)
        if len(text) > limit:
            raise InputTooLargeError(name, limit)
        return text
    data = _bounded(buffer, limit, name)
    return _decoded(data, stream.encoding or "utf-8", stream.errors or "strict")


def _bounded(handle: Any, limit: int, name: str) -> bytes:
    data: bytes = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(name, limit)
    return data


def _decoded(data: bytes, encoding: str, errors: str) -> str:
    """``data`` as a text file in ``encoding`` reads it: universal newlines included."""
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors=errors).read()
