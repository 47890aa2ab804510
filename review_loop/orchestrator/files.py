"""Small file primitives: nothing half-written."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory and a rename.

    ``durable=False`` skips the fsync: the file is still never half-written, and it
    survives a crash of this process, only not a crash of the machine.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with _suppress_os():
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, document: Any, *, durable: bool = True) -> None:
    """Write ``document`` as pretty JSON atomically (see :func:`atomic_write_bytes`)."""
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def append_line(path: Path, document: Any) -> None:
    """Append one JSON line and fsync it (O_APPEND keeps concurrent lines whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def utc_now() -> str:
    """Current UTC time, ISO-8601 with milliseconds and ``Z`` (as JavaScript prints it)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_stamp(iso: str) -> str:
    """An ISO time usable in a file name: ``:`` and ``.`` become ``-`` (as the original)."""
    return iso.replace(":", "-").replace(".", "-")


class _suppress_os:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]
