"""The reviewed repository's own files, read and written as git sees them: through no link.

Everything review-loop reads from the reviewed tree to build a prompt, a digest or a
record (a skill, a ``--target``, a concern's prompt file, a registry), and every edit a
workflow applies to it, goes through this module. Its contract:

- **No link, anywhere on the path.** The repository root is opened as the OS resolves it
  (it is the user's choice); from there every directory is opened relative to its parent's
  handle with ``O_NOFOLLOW | O_DIRECTORY`` and the file itself with ``O_NOFOLLOW``. A link
  is refused whether it leads out of the repository or stays inside it. This is git's own
  model, not a restriction of it: git never lists a path beyond a symbolic link, and a
  committed link's "content" is its target text, which the diff already shows. Following
  in-tree links safely would need a resolve-then-check that races with the tree and would
  still reach ``.git/config`` (a link inside the repository); refusing every link needs
  neither.
- **Never git's own files.** A path with a component named ``.git`` (any case) is refused,
  and a write into a directory that *is* the git dir or the common dir (checked by device
  and inode on the way) is refused too.
- **Regular files only, nothing opened that is not one.** The name is checked with
  ``fstatat(AT_SYMLINK_NOFOLLOW)`` before it is opened (opening a device or a FIFO can
  block or act), and the descriptor is checked with ``fstat`` after it (same file, still a
  regular file). A file on ``/proc`` or ``/sys`` (which claim to be regular files) is
  refused by its device.
- **Bounded.** At most ``limit`` bytes are read (:data:`MAX_TREE_FILE_BYTES` by default);
  a larger file is refused, never cut.
- **Named, never dropped.** A refusal is a :class:`TreeFileRefusedError` carrying the path and
  the reason; callers put ``{"path", "reason"}`` in their result (``verify-diff``'s
  ``skipped_files`` and ``refused_edits``). A missing file is ``FileNotFoundError``.

Hard links are not refused on reads: git cannot commit one, and whoever can plant one in
the working tree can already copy the file's content there. Writes replace the name by a
rename, so a hard link's other names are never written. See ``docs/handoff-writes.md``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

from review_loop.agents.errors import ReviewLoopError
from review_loop.orchestrator.handoff.files import replace_by_temp, write_all

MAX_TREE_FILE_BYTES = 4 << 20
"""The default bound on one file read from the tree (4 MiB: far above any skill or prompt
file, far below what would make a prompt useless)."""

GIT_NAME = ".git"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_PSEUDO_ROOTS = ("/proc", "/sys")
_KINDS = (
    (stat.S_ISDIR, "a directory", "directory"),
    (stat.S_ISFIFO, "a FIFO", "special"),
    (stat.S_ISCHR, "a character device", "special"),
    (stat.S_ISBLK, "a block device", "special"),
    (stat.S_ISSOCK, "a socket", "special"),
)


class TreeFileRefusedError(ReviewLoopError, OSError):
    """A file of the reviewed tree that review-loop will not read or write, and why.

    An ``OSError`` (``errno`` ``EPERM``) so code that treats an unreadable file as one to
    skip treats this one so too; callers that report skipped files use :meth:`to_json`.

    Attributes:
        path: the path as the caller named it (relative to the repository root).
        reason: why, in words a user can act on.
        kind: one word for callers that branch on it: ``link``, ``name``, ``outside``,
            ``git``, ``directory``, ``special`` (FIFO, device, socket), ``pseudo``
            (``/proc``, ``/sys``), ``too-large`` or ``replaced``.
    """

    def __init__(self, path: str, reason: str, kind: str) -> None:
        super().__init__(errno.EPERM, reason, path)
        self.path = path
        self.reason = reason
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        """``{"path": ..., "reason": ...}``, as results list it."""
        return {"path": self.path, "reason": self.reason}


def components(relative: str) -> list[str]:
    """The components of ``relative`` (``/``-separated, inside the repository).

    Raises:
        TreeFileRefusedError: empty, absolute, a ``.``/``..``/empty component, a NUL, or a
            component named ``.git``.
    """
    parts = relative.split("/")
    if not relative or relative.startswith("/") or "\0" in relative:
        raise TreeFileRefusedError(relative, "not a path inside the repository", "name")
    if any(part in ("", ".", "..") for part in parts):
        raise TreeFileRefusedError(relative, "a path with an empty, '.' or '..' component", "name")
    if any(part.casefold() == GIT_NAME for part in parts):
        reason = "inside .git/ (git's own files are never read or written)"
        raise TreeFileRefusedError(relative, reason, "git")
    return parts


def relative_path(repo: Path, path: Path) -> str:
    """``path`` (absolute, or relative to ``repo``) as a ``/``-separated path inside it.

    Normalised as text, never resolved: a ``..`` that climbs out is refused, and the walk
    that follows opens no link, so text and file system agree.

    Raises:
        TreeFileRefusedError: ``path`` lies outside ``repo``.
    """
    full = Path(os.path.normpath(path if path.is_absolute() else repo / path))
    for root in dict.fromkeys((Path(os.path.normpath(repo)), Path(os.path.realpath(repo)))):
        with suppress(ValueError):
            relative = full.relative_to(root).as_posix()
            if relative != ".":
                return relative
    raise TreeFileRefusedError(str(path), "outside the repository", "outside")


def _link_reason(dir_fd: int, name: str, shown: str) -> str | None:
    """Why ``name`` in ``dir_fd`` is refused as a link, or ``None`` when it is none."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        return None
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        target = "?"
    return (
        f"{shown} is a symbolic link (to {target}); review-loop reads and writes no link "
        "in the reviewed repository"
    )


def _link(dir_fd: int, name: str, relative: str) -> TreeFileRefusedError:
    """The refusal of the link ``name`` (the file itself) in ``dir_fd``."""
    return TreeFileRefusedError(relative, _link_reason(dir_fd, name, relative) or "a link", "link")


@cache
def _pseudo_devices() -> frozenset[int]:
    found = set()
    for root in _PSEUDO_ROOTS:
        with suppress(OSError):
            found.add(os.stat(root).st_dev)
    return frozenset(found)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


@contextmanager
def _parent(
    repo: Path, relative: str, parts: list[str], protected: frozenset[tuple[int, int]]
) -> Iterator[int]:
    """The handle of the directory holding ``parts[-1]``, walked from ``repo`` without
    following a link; each directory on the way is checked against ``protected``."""
    fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, name in enumerate(parts[:-1]):
            shown = "/".join(parts[: index + 1])
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                reason = _link_reason(fd, name, shown)
                if reason is not None:
                    raise TreeFileRefusedError(relative, reason, "link") from None
                if error.errno == errno.ENOTDIR:  # a file where a directory would be
                    raise FileNotFoundError(errno.ENOENT, "no such file", relative) from None
                raise type(error)(error.errno, error.strerror, relative) from None
            os.close(fd)
            fd = child
            if _identity(os.fstat(fd)) in protected:
                raise TreeFileRefusedError(relative, f"{shown} is the git directory", "git")
        yield fd
    finally:
        os.close(fd)


def _refuse_kind(relative: str, info: os.stat_result, limit: int | None) -> None:
    """Raise unless ``info`` is a regular file of a real file system (within ``limit``)."""
    mode = info.st_mode
    for test, shown, kind in _KINDS:
        if test(mode):
            raise TreeFileRefusedError(relative, f"not a regular file ({shown})", kind)
    if not stat.S_ISREG(mode):
        raise TreeFileRefusedError(relative, "not a regular file", "special")
    if info.st_dev in _pseudo_devices():
        raise TreeFileRefusedError(relative, "a file of /proc or /sys, never read", "pseudo")
    if limit is not None and info.st_size > limit:
        raise _too_large(relative, limit, f" ({info.st_size})")


def _too_large(relative: str, limit: int, size: str = "") -> TreeFileRefusedError:
    reason = f"larger than {limit} bytes{size}; review-loop reads no file of the tree so big"
    return TreeFileRefusedError(relative, reason, "too-large")


def _lstat_in(dir_fd: int, name: str, relative: str) -> os.stat_result:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", relative) from None


def read_tree_file(
    repo: Path,
    relative: str,
    *,
    limit: int = MAX_TREE_FILE_BYTES,
    protected: frozenset[tuple[int, int]] = frozenset(),
) -> bytes:
    """The bytes of ``repo/relative``, read through no link (see the module docstring).

    ``protected``: :func:`git_identities` of the git dirs, refused on the way as for writes.

    Raises:
        TreeFileRefusedError: a link on the way, a ``.git`` component, not a regular file, a
            pseudo file system, or more than ``limit`` bytes.
        FileNotFoundError: no such file (or a file where a directory would be).
        OSError: any other failure, naming ``relative``.
    """
    parts = components(relative)
    with _parent(repo, relative, parts, protected) as dir_fd:
        name = parts[-1]
        before = _lstat_in(dir_fd, name, relative)
        if stat.S_ISLNK(before.st_mode):
            raise _link(dir_fd, name, relative)
        _refuse_kind(relative, before, limit)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as error:
            reason = _link_reason(dir_fd, name, relative)  # swapped for a link meanwhile
            if reason is not None:
                raise TreeFileRefusedError(relative, reason, "link") from None
            raise type(error)(error.errno, error.strerror, relative) from None
        try:
            info = os.fstat(fd)
            if _identity(info) != _identity(before):
                raise TreeFileRefusedError(
                    relative, "replaced while it was being opened", "replaced"
                )
            _refuse_kind(relative, info, limit)
            return _read_bounded(fd, relative, limit)
        finally:
            os.close(fd)


def _read_bounded(fd: int, relative: str, limit: int) -> bytes:
    """Read to the end, refusing past ``limit`` (a file may grow after its ``fstat``)."""
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(relative, limit)
    return b"".join(chunks)


def read_repo_file(repo: Path, path: Path, *, limit: int = MAX_TREE_FILE_BYTES) -> bytes:
    """:func:`read_tree_file` for a path given absolute or relative to ``repo``.

    Raises:
        TreeFileRefusedError: ``path`` lies outside ``repo``, or as :func:`read_tree_file`.
    """
    return read_tree_file(repo, relative_path(repo, path), limit=limit)


def git_identities(directories: Iterable[Path]) -> frozenset[tuple[int, int]]:
    """Device and inode of each of ``directories`` that exists (the git dir, the common
    dir): :func:`write_tree_file` and :func:`read_tree_file` refuse any of them on the way."""
    found = set()
    for directory in directories:
        with suppress(OSError):
            found.add(_identity(os.stat(directory)))
    return frozenset(found)


def write_tree_file(
    repo: Path,
    relative: str,
    data: bytes,
    *,
    protected: frozenset[tuple[int, int]] = frozenset(),
) -> None:
    """Replace ``repo/relative`` with ``data`` atomically, through no link, keeping its mode.

    A temporary file is made (``O_EXCL``) in the directory's handle, filled, fsynced and
    renamed over the name: a hard link's other names keep their content. A missing file
    is created (mode 0644); ``protected`` holds :func:`git_identities` of the git dirs.

    Raises:
        TreeFileRefusedError: a link on the way or at the name, a ``.git`` component, a
            directory of ``protected`` on the way, or something not a regular file there.
        FileNotFoundError: a directory on the way is missing.
        OSError: the write failed (nothing was replaced).
    """
    parts = components(relative)
    with _parent(repo, relative, parts, protected) as dir_fd:
        name = parts[-1]
        mode = 0o644
        with suppress(FileNotFoundError):
            info = _lstat_in(dir_fd, name, relative)
            if stat.S_ISLNK(info.st_mode):
                raise _link(dir_fd, name, relative)
            _refuse_kind(relative, info, None)
            mode = info.st_mode & 0o7777
        tmp = f".{name}.{os.urandom(6).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)

        def fill(fd: int) -> None:
            write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)

        replace_by_temp(dir_fd, name, tmp, fd, fill)


def remove_tree_file(
    repo: Path, relative: str, *, protected: frozenset[tuple[int, int]] = frozenset()
) -> None:
    """Remove ``repo/relative`` (a regular file) through no link; missing is fine.

    Raises:
        TreeFileRefusedError: as :func:`write_tree_file`.
    """
    parts = components(relative)
    try:
        with _parent(repo, relative, parts, protected) as dir_fd:
            info = _lstat_in(dir_fd, parts[-1], relative)
            if stat.S_ISLNK(info.st_mode):
                raise _link(dir_fd, parts[-1], relative)
            _refuse_kind(relative, info, None)
            os.unlink(parts[-1], dir_fd=dir_fd)
    except FileNotFoundError:
        return


__all__ = [
    "MAX_TREE_FILE_BYTES",
    "TreeFileRefusedError",
    "components",
    "git_identities",
    "read_repo_file",
    "read_tree_file",
    "relative_path",
    "remove_tree_file",
    "write_tree_file",
]
