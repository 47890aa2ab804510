"""Small file primitives: nothing half-written, and nothing written through a link.

Every path these functions take is split in two. Up to its first component named
``.review-handoff`` (or up to ``anchor`` when a caller passes one), the path is opened as
the operating system resolves it: the repository root is the caller's choice. From that
component down, every directory is opened relative to the handle of its parent with
``O_NOFOLLOW | O_DIRECTORY``, missing ones are made with ``mkdir(dir_fd=…)``, and the file
itself is opened with ``O_NOFOLLOW`` (and ``O_EXCL`` for temporary files) relative to its
directory's handle. A symbolic link anywhere in that part — committed in the repository or
planted beside it — is refused with :class:`HandoffPathError`, which names the path and the
link; a ``..`` component is refused the same way. So no write (or believed read) under
``.review-handoff/`` can land outside the repository. See ``docs/handoff-writes.md``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from review_loop.agents.errors import InputError, StateError

HANDOFF_DIR = ".review-handoff"
"""The component from which every path is walked without following links."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NAME_ACCEPTED = "a name without '/', '..' or NUL that does not start with '.'"


class HandoffPathError(StateError, OSError):
    """A path under ``.review-handoff/`` passes through a symbolic link (or ``..``).

    Both a :class:`StateError` (the CLI prints it as a clean error, exit 1) and an
    ``OSError`` with ``errno`` ``ELOOP`` (code that treats an unwritable file as a failed
    write treats this one so too, and writes nothing).

    Attributes:
        path: the path that was to be opened.
        component: the offending component (the link itself), as a path.
        target: where the link points, when it is one.
    """

    def __init__(self, path: Path, component: Path, target: str | None) -> None:
        self.path = path
        self.component = component
        self.target = target
        if target is None:
            message = f"{path}: '..' ({component}) is not allowed under {HANDOFF_DIR}/"
        else:
            message = (
                f"{path}: {component} is a symbolic link (to {target}); review-loop never "
                f"reads or writes through a link under {HANDOFF_DIR}/ (remove the link and "
                "run again)"
            )
        StateError.__init__(self, "HANDOFF_LINK_REFUSED", message)
        self.errno = errno.ELOOP
        self.strerror = message
        self.filename = str(path)

    def __str__(self) -> str:
        return str(self.args[0])


def check_name(field: str, value: str, accepted: str = _NAME_ACCEPTED) -> str:
    """Refuse a name from the command line that would become a path component.

    Returns ``value`` when it is one plain component: not empty, no ``/``, no NUL, no
    ``..``, not starting with ``.``.

    Raises:
        InputError: names ``field``, the value and what is accepted.
    """
    if not value or "/" in value or "\0" in value or ".." in value or value.startswith("."):
        raise InputError(field, f"{value!r} cannot be part of a file name", accepted)
    return value


# -- the walk -----------------------------------------------------------------------------


def _split(path: Path, anchor: Path | None, whole: bool) -> tuple[Path, tuple[str, ...]]:
    """The prefix opened normally, and the components walked without following links.

    A path with neither an anchor nor a ``.review-handoff`` component (a temp dir, the
    state home) is opened as usual; only its final file is opened without following.
    """
    if anchor is not None:
        return anchor, path.relative_to(anchor).parts
    parts = path.parts
    if HANDOFF_DIR in parts:
        index = parts.index(HANDOFF_DIR)
        return Path(*parts[:index]) if index else Path("."), parts[index:]
    return (path, ()) if whole else (path.parent, (path.name,))


def _refuse_if_link(dir_fd: int, name: str, path: Path, shown: Path) -> None:
    """Raise :class:`HandoffPathError` when ``name`` (in ``dir_fd``) is a symbolic link."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        raise HandoffPathError(path, shown, target)


def _reraise(error: OSError, shown: Path) -> OSError:
    """The same error, naming the whole path instead of one component."""
    return type(error)(error.errno, os.strerror(error.errno or 0), str(shown))


def _open_dir(dir_fd: int, name: str, path: Path, shown: Path, *, create: bool) -> int:
    """Open directory ``name`` in ``dir_fd`` without following a link; make it if asked."""
    if name == "..":
        raise HandoffPathError(path, shown, None)
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError as error:
            if not create:
                raise _reraise(error, shown) from None
        except OSError as error:
            if error.errno in (errno.ENOTDIR, errno.ELOOP):
                _refuse_if_link(dir_fd, name, path, shown)
            raise _reraise(error, shown) from None
        with suppress(FileExistsError):  # another process made it meanwhile: open it
            os.mkdir(name, 0o777, dir_fd=dir_fd)
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


@contextmanager
def _walk(
    path: Path, *, create: bool, anchor: Path | None = None, whole: bool = False
) -> Iterator[tuple[int, str]]:
    """Yield ``(handle of the parent directory, final name)`` of ``path``, walked safely.

    ``whole=True`` walks ``path`` itself as a directory too (the name yielded is ``"."``).
    ``create`` makes missing directories (the prefix as usual, the rest with ``dir_fd``).
    """
    prefix, parts = _split(path, anchor, whole)
    if not whole and not parts:
        raise IsADirectoryError(errno.EISDIR, "not a file", str(path))
    directories, last = (parts, ".") if whole else (parts[:-1], parts[-1])
    if last == "..":
        raise HandoffPathError(path, path, None)
    fd = _open_prefix(prefix, create=create)
    try:
        shown = prefix
        for name in directories:
            shown = shown / name
            child = _open_dir(fd, name, path, shown, create=create)
            os.close(fd)
            fd = child
        yield fd, last
    finally:
        os.close(fd)


def _open_prefix(prefix: Path, *, create: bool) -> int:
    """Open the trusted prefix as the OS resolves it; made first only when it is missing.

    Opened before any ``mkdir``: the prefix (a repository root) nearly always exists, and
    a ``mkdir -p`` on every write cost two system calls each time.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        return os.open(prefix, flags)
    except FileNotFoundError:
        if not create:
            raise
    prefix.mkdir(parents=True, exist_ok=True)
    return os.open(prefix, flags)


def _guarded(path: Path, anchor: Path | None = None) -> bool:
    """Whether ``path`` is walked without following links (see the module docstring)."""
    return anchor is not None or HANDOFF_DIR in path.parts


def _open_in(
    dir_fd: int, name: str, path: Path, flags: int, mode: int, *, guarded: bool = True
) -> int:
    """Open the final component without following a link (refused with the link named).

    An unguarded path (outside ``.review-handoff/``) follows a final link as before.
    """
    nofollow = os.O_NOFOLLOW if guarded else 0
    try:
        return os.open(name, flags | nofollow | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR):
            _refuse_if_link(dir_fd, name, path, path)
        raise _reraise(error, path) from None


# -- primitives ---------------------------------------------------------------------------


def open_fd(path: Path, flags: int, mode: int = 0o644, *, anchor: Path | None = None) -> int:
    """``os.open(path, flags | O_NOFOLLOW)`` after the no-follow walk; the caller closes it.

    With ``O_CREAT`` in ``flags`` missing directories are made on the way.

    Raises:
        HandoffPathError: a component under ``.review-handoff/`` is a symbolic link.
        OSError: as ``os.open`` (``FileNotFoundError``, ``FileExistsError`` …), naming
            ``path``.
    """
    with _walk(path, create=bool(flags & os.O_CREAT), anchor=anchor) as (dir_fd, name):
        return _open_in(dir_fd, name, path, flags, mode, guarded=_guarded(path, anchor))


def read_bytes(path: Path, *, anchor: Path | None = None) -> bytes:
    """The whole file, read without following a link under ``.review-handoff/``.

    Opened non-blocking and read only when it is a regular file: a planted FIFO or device
    named like a state file is refused (``OSError`` naming the path), never waited on.
    """
    fd = open_fd(path, os.O_RDONLY | os.O_NONBLOCK, anchor=anchor)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return handle.read()


def read_each(directory: Path, relative: Sequence[str]) -> Iterator[tuple[str, bytes | None]]:
    """``read_bytes(directory / r)`` for each ``r`` of ``relative``, for scans that skip failures.

    The walk to ``directory`` is done once, and each first-level directory is opened once
    (``sessions`` reads thousands of records in a few branch directories): every component
    below ``directory`` is still opened without following a link, and only a regular file
    is read, non-blocking. Yields ``(r, content)``, or ``(r, None)`` for a path that cannot
    be read (missing, a link, not a regular file, a component ``..``, or ``directory``
    itself unreachable).
    """
    with ExitStack() as stack:
        try:
            top, _ = stack.enter_context(_walk(directory, create=False, whole=True))
        except OSError:
            yield from ((rel, None) for rel in relative)
            return
        first: dict[str, int] = {}  # a few branch directories: kept open for the whole scan
        stack.callback(_close_all, first)
        for rel in relative:
            yield rel, _read_below(top, rel, first)


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        os.close(fd)


def _read_below(top: int, rel: str, first: dict[str, int]) -> bytes | None:
    """One file below ``top`` as :func:`read_each` reads it; ``first`` caches level one."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    *directories, name = parts
    opened: list[int] = []
    try:
        fd = top
        for index, part in enumerate(directories):
            if index == 0 and part in first:
                fd = first[part]
                continue
            fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            if index == 0:
                first[part] = fd
            else:
                opened.append(fd)
        return _read_regular(fd, name)
    except OSError:
        return None
    finally:
        for fd in opened:
            os.close(fd)


def _read_regular(dir_fd: int, name: str) -> bytes | None:
    """File ``name`` of ``dir_fd``, opened without following a link and non-blocking; its
    whole content when it is a regular file, else ``None`` (so is any error)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = os.read(fd, info.st_size + 1)
        if len(data) == info.st_size:  # the usual case: the whole file, in one call
            return data
        # it grew meanwhile, or the read was short (at most 0x7ffff000 bytes per call; a
        # network or FUSE file system): to the end, as read() does
        chunks = [data]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_found(directory: Path, levels: int, name: str) -> Iterator[tuple[str, bytes]]:
    """Each regular file ``<d1>/…/<d{levels}>/<name>`` below ``directory``, with its content.

    What ``directory.glob("*/…/*/" + name)`` lists and :func:`read_each` then reads, minus
    what it cannot read, in the same order (each directory in ``os.scandir`` order), for
    scans that skip failures (``sessions``). No stat per path: each directory below
    ``directory`` is opened once without following a link and listed through its handle,
    and the file is opened with ``O_NOFOLLOW``, non-blocking, and read only when it is a
    regular file. A link at any level, a FIFO, a file where a directory belongs, a
    directory that vanished meanwhile, or ``directory`` itself unreachable (the no-follow
    walk to it) yields nothing for that path.
    """
    with ExitStack() as stack:
        try:
            top, _ = stack.enter_context(_walk(directory, create=False, whole=True))
        except OSError:
            return
        yield from _found_below(top, "", levels, name)


def _found_below(dir_fd: int, prefix: str, levels: int, name: str) -> Iterator[tuple[str, bytes]]:
    try:
        with os.scandir(dir_fd) as entries:
            # d_type, no stat; a link is not a directory here (and is refused below anyway)
            children = [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for child in children:
        try:
            child_fd = os.open(child, _DIR_FLAGS, dir_fd=dir_fd)  # a link swapped in: ELOOP
        except OSError:
            continue
        try:
            if levels > 1:
                yield from _found_below(child_fd, f"{prefix}{child}/", levels - 1, name)
            elif (data := _read_regular(child_fd, name)) is not None:
                yield f"{prefix}{child}/{name}", data
        finally:
            os.close(child_fd)


def list_names(directory: Path) -> list[str]:
    """The names in ``directory``, reached by the no-follow walk (``OSError`` if it cannot
    be: missing, a link on the way, not a directory)."""
    with _walk(directory, create=False, whole=True) as (fd, _), os.scandir(fd) as entries:
        return [entry.name for entry in entries]


def make_dirs(path: Path, *, anchor: Path | None = None) -> None:
    """``mkdir -p path``, never through a link under ``.review-handoff/``."""
    with _walk(path, create=True, anchor=anchor, whole=True):
        pass


def make_dir_exclusive(path: Path, mode: int = 0o777) -> None:
    """Make directory ``path`` (its parents as needed); ``FileExistsError`` if it exists."""
    with _walk(path, create=True) as (dir_fd, name):
        try:
            os.mkdir(name, mode, dir_fd=dir_fd)
        except OSError as error:
            raise _reraise(error, path) from None


def make_name(path: Path, like: str) -> None:
    """Make ``path`` exist as one more name (a hard link) of file ``like`` in its directory.

    For marker files that hold no data (the index of unfinished records): a new name costs
    a directory entry, while a new file costs an inode, which on some disks takes longer
    than an ``fsync`` (0.1-0.8 ms measured here, against about 10 us for a link). ``like``
    is made (empty, not following a link) when it is missing. A ``path`` that exists
    already is left as it is. Where a link cannot be made (a file system without hard
    links, ``like`` not a file this user may link to, too many links), ``path`` is created
    as an empty file instead.

    Raises:
        HandoffPathError: a directory on the way under ``.review-handoff/`` is a link.
        OSError: ``path`` could neither be linked nor created, naming ``path``.
    """
    # O_EXCL: a file is only ever made here, never opened (a FIFO swapped in would block)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NONBLOCK
    with _walk(path, create=True) as (dir_fd, name):
        for _ in range(2):
            try:
                os.link(like, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                return
            except FileNotFoundError:  # ``like`` is missing: make it, then link again
                with suppress(OSError):  # made meanwhile (FileExistsError): link to it
                    os.close(_open_in(dir_fd, like, path.parent / like, flags, 0o644))
                continue
            except OSError:
                break
            return
        with suppress(FileExistsError):  # made meanwhile: left as it is
            os.close(_open_in(dir_fd, name, path, flags, 0o644))


def make_temp_file(directory: Path, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new file ``directory/<prefix><random><suffix>`` (0600, ``O_EXCL``), open for writing."""
    with _walk(directory, create=True, whole=True) as (dir_fd, _):
        while True:
            # os.urandom, not secrets.token_hex (the same bytes): ``secrets`` costs every
            # command that reads state ~1.5 ms at import (docs/performance.md)
            name = f"{prefix}{os.urandom(6).hex()}{suffix}"
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
            with suppress(FileExistsError):
                return _open_in(dir_fd, name, directory / name, flags, 0o600), directory / name


def _fresh(info: os.stat_result) -> bool:
    """Whether ``info`` is an empty regular file of one name owned by this user: a file
    made ahead and not touched since (nothing planted, linked or used)."""
    mine = info.st_uid == os.geteuid()
    return mine and stat.S_ISREG(info.st_mode) and not info.st_size and info.st_nlink == 1


def _write_made(made: Path, data: bytes, path: Path, *, durable: bool) -> bool:
    """Fill ``made`` (an empty file made ahead) with ``data`` and rename it over ``path``;
    whether it was.

    Every check is made on the opened descriptor (non-blocking: a FIFO planted there is
    never waited on), and the name renamed over ``path`` is checked to be that descriptor's
    file afterwards: a file swapped in between is not left as the record. ``False`` when
    ``made`` cannot serve (missing, used, a link, planted, swapped) or cannot be written (a
    full disk): the caller then writes as usual (which replaces anything swapped in), and
    reports that write's errors. A link at ``path`` is refused (:class:`HandoffPathError`),
    as :func:`atomic_write_bytes` refuses it.
    """
    try:
        fd = open_fd(made, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not _fresh(os.fstat(fd)):
            return False
        _write_all(fd, data, path, sync=durable)
        return _rename_made(made, path, fd, durable=durable)
    except HandoffPathError as refused:
        if refused.path != path:  # a link on the made file's way, swapped in: not used
            return False
        raise
    except OSError:
        return False
    finally:
        os.close(fd)


def _rename_made(made: Path, path: Path, fd: int, *, durable: bool) -> bool:
    """Rename ``made`` over ``path``; whether the file now there is ``fd``'s (then its
    directory is fsynced when ``durable``)."""
    with (
        _walk(made, create=False) as (src_fd, src_name),
        _walk(path, create=True) as (dir_fd, name),
    ):
        if _guarded(path):
            _refuse_if_link(dir_fd, name, path, path)
        os.rename(src_name, name, src_dir_fd=src_fd, dst_dir_fd=dir_fd)
        ours, there = os.fstat(fd), os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if (ours.st_dev, ours.st_ino) != (there.st_dev, there.st_ino):
            return False  # swapped between the checks and the rename: written anew
        if durable:
            os.fsync(dir_fd)
    return True


def atomic_write_bytes(
    path: Path, data: bytes, *, durable: bool = True, made: Path | None = None
) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory and a rename.

    ``durable=False`` skips the fsyncs: the file is still never half-written, and it
    survives a crash of this process, only not a crash of the machine. A link at ``path``
    itself is refused too, though the rename would only replace it: a planted link is a
    sign to stop, not to paper over.

    ``made``: an empty file made ahead on the same file system (by a caller that had time
    to spare: making an inode is the costly part of a new file on some disks, 0.1-0.8 ms
    here, where a rename takes tens of microseconds). It is filled, fsynced and renamed
    over ``path`` instead of a new temp file, when it can be; otherwise the write is made
    as usual and ``made`` is left for its maker to remove.
    """
    if made is not None and _write_made(made, data, path, durable=durable):
        return
    with _walk(path, create=True) as (dir_fd, name):
        if _guarded(path):
            _refuse_if_link(dir_fd, name, path, path)
        tmp = f".{name}.{os.urandom(6).hex()}.tmp"
        fd = _open_in(dir_fd, tmp, path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        replace_by_temp(dir_fd, name, tmp, fd, lambda fd: _write_all(fd, data, path, sync=durable))
        if durable:
            os.fsync(dir_fd)


def atomic_write_json(
    path: Path, document: Any, *, durable: bool = True, made: Path | None = None
) -> None:
    """Write ``document`` as pretty JSON atomically (see :func:`atomic_write_bytes`).

    The text is ``json.dumps(document, ensure_ascii=False, indent=2)``, byte for byte,
    written by :func:`~.json_text.pretty` (Python's own encoder indents in pure Python:
    three times slower, and each consult writes its record three times).
    """
    from review_loop.orchestrator.handoff.json_text import pretty

    text = pretty(document) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable, made=made)


def append_bytes(path: Path, data: bytes, *, anchor: Path | None = None) -> None:
    """Append ``data`` with one ``O_APPEND`` write and fsync it; never through a link.

    Appended only to a regular file (opened non-blocking: a planted FIFO is refused, never
    waited on) and, under ``.review-handoff/``, only to one with no other name: a hard link
    planted there may be a file outside the repository.

    Raises:
        OSError: as :func:`open_fd`, or ``EINVAL``/``EMLINK`` naming ``path`` for a file
            that is not one to append to.
    """
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, anchor=anchor)
    try:
        _refuse_unless_own_file(fd, path, guarded=HANDOFF_DIR in path.parts)
        _write_all(fd, data, path, sync=True)
    finally:
        os.close(fd)


def append_line(path: Path, document: Any) -> None:
    """Append one JSON line and fsync it (O_APPEND keeps concurrent lines whole)."""
    line = (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    append_bytes(path, line)


def make_file(path: Path) -> None:
    """Make ``path`` exist (empty when new; an existing file is left as it is), never
    through a link: for a file a later write appends to, made while there is time.

    Opened non-blocking (a planted FIFO is never waited on: this runs in the event loop's
    thread) and written nothing; ``OSError`` (``EINVAL``) for what is not a regular file.
    """
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK)
    try:
        _refuse_unless_own_file(fd, path, guarded=False)
    finally:
        os.close(fd)


def _refuse_unless_own_file(fd: int, path: Path, *, guarded: bool) -> None:
    """Raise ``OSError`` naming ``path`` unless ``fd`` is a regular file and, when
    ``guarded``, one of a single name (a hard link may be a file outside the repository)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    if guarded and info.st_nlink != 1:
        raise OSError(errno.EMLINK, "a hard link (the file has other names)", str(path))


def rename(source: Path, target: Path) -> None:
    """``os.rename`` between two directories each reached by the no-follow walk."""
    with (
        _walk(source, create=False) as (src_fd, src_name),
        _walk(target, create=True) as (dst_fd, dst_name),
    ):
        if _guarded(target):
            _refuse_if_link(dst_fd, dst_name, target, target)
        try:
            os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        except OSError as error:
            raise _reraise(error, source) from None


def unlink(path: Path, *, missing_ok: bool = False) -> None:
    """Remove the file ``path`` (a link itself is removed, never what it points to)."""
    try:
        with _walk(path, create=False) as (dir_fd, name):
            try:
                os.unlink(name, dir_fd=dir_fd)
            except OSError as error:
                raise _reraise(error, path) from None
    except FileNotFoundError:
        if not missing_ok:
            raise


def remove_tree(path: Path) -> None:
    """``rmtree`` of ``path`` relative to its parent's handle; errors are ignored.

    ``shutil.rmtree`` with ``dir_fd`` never follows a link inside the tree; a link at
    ``path`` itself is left alone.
    """
    import shutil

    with suppress(FileNotFoundError, NotADirectoryError), _walk(path, create=False) as (fd, name):
        shutil.rmtree(name, ignore_errors=True, dir_fd=fd)


def refuse_link_at(path: Path) -> None:
    """Raise :class:`HandoffPathError` if ``path`` is reached through (or is) a link under
    ``.review-handoff/``; a missing path, or one outside it, passes."""
    try:
        with _walk(path, create=False) as (dir_fd, name):
            if _guarded(path):
                _refuse_if_link(dir_fd, name, path, path)
    except (FileNotFoundError, NotADirectoryError):
        return


def refuse_links(directory: Path) -> None:
    """Raise :class:`HandoffPathError` if ``directory`` or anything below it is a link.

    A pre-flight for commands that write several files into one directory: the link is
    named before the first write rather than at the one that meets it.
    """
    with _walk(directory, create=False, whole=True) as (fd, _):
        _scan(fd, directory)


def _scan(dir_fd: int, shown: Path) -> None:
    with os.scandir(dir_fd) as entries:
        found = [(entry.name, entry.is_symlink(), entry.is_dir()) for entry in entries]
    for name, is_link, is_dir in found:
        if is_link:
            _refuse_if_link(dir_fd, name, shown / name, shown / name)
        elif is_dir:
            try:
                child = _open_dir(dir_fd, name, shown / name, shown / name, create=False)
            except FileNotFoundError:
                continue  # removed meanwhile (another process releasing its lock)
            try:
                _scan(child, shown / name)
            finally:
                os.close(child)


def replace_by_temp(dir_fd: int, name: str, tmp: str, fd: int, fill: Callable[[int], None]) -> None:
    """Fill the new temporary file ``fd`` (named ``tmp`` in ``dir_fd``), close it and
    rename it over ``name``: nothing half-written, and a link at ``name`` is replaced,
    never written through. On any failure ``tmp`` is removed and ``name`` is untouched.
    The caller syncs the directory when the rename must survive a machine crash."""
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_all(fd: int, data: bytes) -> None:
    """``write`` until every byte is written."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_all(fd: int, data: bytes, path: Path, *, sync: bool) -> None:
    """Write all of ``data`` (then fsync when ``sync``); a failure names ``path``.

    ``os.write`` alone says only "[Errno 28] No space left on device", which leaves the
    user to guess which file of a full disk it was.
    """
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    except OSError as error:
        raise _reraise(error, path) from None


def utc_now() -> str:
    """Current UTC time, ISO-8601 with milliseconds and ``Z`` (as JavaScript prints it)."""
    return iso_utc(time.time_ns())


def iso_utc(ns: int) -> str:
    """``ns`` nanoseconds after the epoch as ``utc_now`` prints it: ``2026-12-01T05:30:00.123Z``.

    The milliseconds are truncated, as ``datetime.isoformat(timespec="milliseconds")`` does.
    """
    # Imported here: the journal's directory handles import this module for its file
    # primitives, and ``datetime`` would be most of what that costs a journal command.
    from datetime import UTC, datetime

    seconds, rest = divmod(ns, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_stamp(iso: str) -> str:
    """An ISO time usable in a file name: ``:`` and ``.`` become ``-`` (as the original)."""
    return iso.replace(":", "-").replace(".", "-")
