"""Directory handles for the journal: files opened relative to their directory, never via links.

Everything under a repository's ``.review-handoff/`` may have been committed or planted by
whoever controls the repository, so a symbolic link there could send the journal's writes
(or reads) anywhere. A :class:`Directory` is reached one component at a time from a
trusted *anchor* (the repository root, which the user chose) with
``O_DIRECTORY | O_NOFOLLOW``, and every file in it is opened relative to that descriptor
with ``O_NOFOLLOW``. A link anywhere below the anchor — a directory or the file itself — is
refused with :class:`UnsafePathError`: nothing is created, written or read through it.
Renames replace a link itself, never its target.

Without an anchor the directory's own path is taken as the caller gave it (a test's temp
directory, an embedding program's own store); files in it are still opened no-follow.

Why a walk of its own beside :mod:`review_loop.orchestrator.handoff.files`, which walks per
path: a journal command holds one directory handle across its lock, log, cache, marker and
side files, and its refusals are the journal's own (``JOURNAL_UNSAFE_PATH``, a component that
is not a directory refused like a link, nothing made above the anchor). The write by
temporary file and rename is the handoff one (``handoff.files.replace_by_temp``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import Final

from review_loop.agents.errors import StateError
from review_loop.orchestrator.handoff.files import replace_by_temp, write_all

NOFOLLOW: Final = os.O_NOFOLLOW | os.O_CLOEXEC
DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_LINKED: Final = (errno.ELOOP, errno.ENOTDIR)


class UnsafePathError(StateError):
    """A journal path goes through a symbolic link (or a non-directory) below its anchor."""

    def __init__(self, path: Path, detail: str = "is a symbolic link or not a directory") -> None:
        self.path = path
        super().__init__(
            "JOURNAL_UNSAFE_PATH",
            f"{path} {detail}; the journal never follows a link under its store "
            "(remove it; review-loop recreates what it needs)",
        )


class Directory:
    """An open directory; files inside it are opened by name, never through a link.

    Use as a context manager (the descriptor is closed on exit).
    """

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def open(cls, path: Path, *, anchor: Path | None = None, create: bool = False) -> Directory:
        """Open ``path``, walking no-follow from ``anchor`` when one is given.

        Args:
            path: the directory.
            anchor: a trusted ancestor of ``path``; each component below it must be a real
                directory (not a link).
            create: make missing directories (``0o755``) on the way.

        Raises:
            UnsafePathError: a component below the anchor is a link or not a directory, or
                ``path`` is not below the anchor.
            FileNotFoundError: a component is missing and ``create`` is false.
        """
        if anchor is None:
            if create:
                path.mkdir(parents=True, exist_ok=True)
            return cls(os.open(path, DIRECTORY), path)
        try:
            parts = path.relative_to(anchor).parts
        except ValueError:
            raise UnsafePathError(path, f"is not inside {anchor}") from None
        fd = os.open(anchor, DIRECTORY)
        try:
            for index, name in enumerate(parts):
                where = anchor.joinpath(*parts[: index + 1])
                child = _step(fd, name, where, create=create)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    def __enter__(self) -> Directory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def open_file(self, name: str, flags: int, mode: int = 0o644) -> int:
        """``open(name)`` inside this directory, never through a link.

        Raises:
            UnsafePathError: ``name`` is a symbolic link.
            OSError: anything else ``open`` reports (``FileNotFoundError``, ``EACCES``...).
        """
        try:
            return os.open(name, flags | NOFOLLOW, mode, dir_fd=self.fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UnsafePathError(self.path / name, "is a symbolic link") from None
            error.filename = str(self.path / name)
            raise

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry's own metadata (a link is not followed), or None when absent."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def is_file(self, name: str) -> bool:
        """Whether ``name`` is a regular file (a link to one is not)."""
        info = self.lstat(name)
        return info is not None and stat.S_ISREG(info.st_mode)

    def read(self, name: str) -> bytes:
        """The whole content of ``name``."""
        fd = self.open_file(name, os.O_RDONLY)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write_atomic(self, name: str, data: bytes, *, durable: bool = True) -> None:
        """Write ``name`` by exclusive temp file and rename (a link at ``name`` is replaced)."""
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = self.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)

        def fill(fd: int) -> None:
            write_all(fd, data)
            if durable:
                os.fsync(fd)

        replace_by_temp(self.fd, name, tmp, fd, fill)
        if durable:
            self.sync()

    def create_exclusive(self, name: str, data: bytes) -> None:
        """Create ``name`` (it must not exist), write ``data`` durably, and sync the entry."""
        fd = self.open_file(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=self.fd)
            raise
        os.close(fd)
        self.sync()

    def unlink(self, name: str) -> None:
        """Remove ``name`` (a link is removed, not its target); absent is fine."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def names(self) -> list[str]:
        """The directory's entries."""
        return os.listdir(self.fd)

    def sync(self) -> None:
        """Make the directory's entries (created, renamed, removed files) durable."""
        os.fsync(self.fd)


def _step(parent: int, name: str, where: Path, *, create: bool) -> int:
    if name in ("", ".", ".."):
        raise UnsafePathError(where, "is not a plain directory name")
    for _attempt in range(2):
        try:
            return os.open(name, DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise FileNotFoundError(
                    errno.ENOENT, os.strerror(errno.ENOENT), str(where)
                ) from None
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.mkdir(name, 0o755, dir_fd=parent)
        except OSError as error:
            if error.errno in _LINKED:
                raise UnsafePathError(where) from None
            error.filename = str(where)
            raise
    raise UnsafePathError(where, "keeps disappearing while it is being opened")
