"""The isolation wrapper: runs first inside a fresh private mount namespace, then execs the CLI.

Run by :mod:`review_loop.orchestrator.sandbox.isolation` as
``unshare --mount --propagation private [--user --map-root-user]
<python> -I -S wrapper.py [options] -- <argv...>``. Options:

``--writable PATH`` (repeatable) — whole-filesystem mode, for a CLI that has no read-only
    mode of its own: each PATH is bind-mounted onto itself (a mount of its own, writable),
    then EVERY other mount reachable by path is remounted read-only (``mount -o
    remount,bind,ro``, one per mount point from ``/proc/self/mountinfo``), the result is
    checked in ``/proc/self/mountinfo`` again, and every capability is dropped (bounding set,
    ambient, effective, permitted, inheritable; ``no_new_privs``) so that the CLI, root in this
    namespace, cannot remount anything writable, ``setns`` out, ``mknod`` a disk, or reach a
    privileged process through ``/proc/<pid>/root``. Device nodes (``/dev/null``, ``/dev/tty``)
    stay usable on a read-only mount: the read-only flag stops writes to files, not devices.
``--read-only PATH`` (repeatable) — path mode, for a read-only CLI that is isolated only so
    that it cannot see earlier records, or that writes into the repository on its own: each
    PATH is bind-mounted onto itself read-only, first (the covers below then lie on top).
``--hide PATH`` (repeatable, with either mode or alone) — each PATH that exists is covered
    before any other mount is made read-only: a directory by an empty read-only tmpfs,
    anything else by a bind of ``/dev/null``. A hidden directory that holds a ``--keep``
    path, a ``--writable`` or ``--read-only`` path or the working directory is not covered
    whole: each entry of it is hidden except the one on the way to what is kept, and so on
    down. So that the CLI
    cannot take a cover off: with ``--writable`` every capability is dropped (below);
    otherwise the CLI runs in a user namespace of its own, made after the covers
    (:func:`enter_own_user_namespace`), in which every cover is a locked mount.
``--keep PATH`` (repeatable) — a path that no cover may hide (the CLI's own files).
``--root-file PATH`` (repeatable) — a file the CLI trusts only where the file and every
    directory above it are owned by root and writable by no one else (gemini's system
    settings): a copy is placed at :func:`root_file_path` in a root directory of this
    namespace's own (:func:`own_root`), after every other mount, so that ``/`` itself is
    owned by this namespace's root even where the real one appears as the overflow uid.

Any step that fails prints one ``review-loop-isolate: ...`` line on stderr and exits
:data:`ISOLATION_FAILED_EXIT` before the CLI is started: never run half-isolated.

Paths and the command arrive as arguments, never as shell text. The wrapper runs with
``-I -S`` from its own file: it imports only the standard library, and nothing from the
working directory (the throw-away copy of an untrusted repository) can shadow a module.
"""

from __future__ import annotations

import os
import sys

# No import of collections.abc, typing or subprocess at the top: every reviewer's start
# pays for this module's imports, a few milliseconds each (scripts/bench_sandbox.py).

ISOLATION_FAILED_EXIT = 97
MARKER = "review-loop-isolate:"
MAX_PASSES = 3
"""A mount can appear while we work (an automount); the walk is repeated until stable."""
SKIPPED_TYPES = frozenset({"autofs"})
"""Trigger points, not writable file systems: touching one would start an automount."""

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_OPTIONS = ("--writable", "--read-only", "--hide", "--keep", "--root-file")
ROOT_FILES_DIR = "/.review-loop"
"""Where :func:`own_root` places the ``--root-file`` copies (a name the real ``/`` lacks)."""
_MS_REC = 16384


class IsolationError(Exception):
    """A step of the setup failed; the CLI must not start."""


class Mount:
    """One line of ``/proc/self/mountinfo`` (only read).

    A small class, not a dataclass or a ``NamedTuple``: this file runs as its own ``-I -S``
    process before every reviewer, where importing ``dataclasses`` or ``typing`` costs about
    20 ms each (``-X importtime``), a share of every reviewer call's start.
    """

    __slots__ = ("fstype", "id", "mount_point", "parent", "read_only")

    def __init__(
        self, *, id: int, parent: int, mount_point: str, read_only: bool, fstype: str
    ) -> None:
        self.id = id
        self.parent = parent
        self.mount_point = mount_point
        self.read_only = read_only
        self.fstype = fstype


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as ``\\ooo`` octal escapes."""
    out, i = [], 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of ``/proc/self/mountinfo`` text, in order."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        separator = fields.index("-")
        mounts.append(
            Mount(
                id=int(fields[0]),
                parent=int(fields[1]),
                mount_point=_unescape(fields[4]),
                read_only="ro" in fields[5].split(","),
                fstype=fields[separator + 1],
            )
        )
    return mounts


def reachable(mounts: list[Mount]) -> list[Mount]:
    """The mounts a path can lead to, as the kernel's path walk would find them.

    A mount is hidden when another is stacked on its mount point, when a sibling (same
    parent) sits on a directory above its mount point (the walk enters the sibling and
    never sees it), or when the place it sits on is hidden. Only the visible mounts can be
    remounted by path, or written by anyone.
    """
    by_id = {m.id: m for m in mounts}
    children: dict[int, list[Mount]] = {}
    for m in mounts:
        children.setdefault(m.parent, []).append(m)
    covered = {
        m.parent
        for m in mounts
        if m.parent in by_id and by_id[m.parent].mount_point == m.mount_point
    }

    def under(path: str, ancestor: str) -> bool:
        return path != ancestor and path.startswith(ancestor.rstrip("/") + "/")

    def place_reachable(mount: Mount, depth: int = 0) -> bool:
        """Whether the point ``mount`` sits on can be reached (whatever covers it)."""
        parent = by_id.get(mount.parent)
        if parent is None or parent.id == mount.id or depth > len(mounts):
            return True
        if parent.mount_point == mount.mount_point:  # stacked: the same place as its parent
            return place_reachable(parent, depth + 1)
        if any(under(mount.mount_point, s.mount_point) for s in children[parent.id]):
            return False
        return parent.id not in covered and place_reachable(parent, depth + 1)

    return [m for m in mounts if m.id not in covered and place_reachable(m)]


def _mounts() -> list[Mount]:
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
        return reachable(parse_mountinfo(handle.read()))


def _mount(*args: str) -> None:
    """Run util-linux ``mount`` (from PATH) with ``args``; raise with its message on failure."""
    import subprocess  # here: a reviewer that is only hidden from (no --writable) needs none

    try:
        done = subprocess.run(
            ["mount", *args], stdin=subprocess.DEVNULL, capture_output=True, check=False
        )
    except OSError as error:
        raise IsolationError(f"cannot run mount: {error}") from error
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise IsolationError(f"mount {' '.join(args)} failed: {said}")


def _inaccessible(path: str) -> bool:
    """Whether ``path`` cannot even be looked up here (another user's 0700 directory).

    What this namespace cannot reach, the CLI (with fewer rights still) cannot write.
    """
    try:
        os.stat(path)
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def make_read_only(path: str) -> None:
    """Bind ``path`` onto itself and make that mount read-only."""
    _mount("--bind", path, path)
    _mount("-o", "remount,bind,ro", path)


def read_only_except(writable: list[str]) -> None:
    """Every mount reachable by path read-only, except a writable bind of each of ``writable``."""
    for path in writable:
        _mount("--bind", path, path)
    inaccessible: set[int] = set()
    for _ in range(MAX_PASSES):
        mounts = _mounts()
        keep = {m.id for m in mounts if m.mount_point in writable}
        if missing := [p for p in writable if not any(m.mount_point == p for m in mounts)]:
            raise IsolationError(f"no writable mount at {missing[0]}")
        pending = [
            m
            for m in mounts
            if not (m.read_only or m.id in keep or m.id in inaccessible)
            and m.fstype not in SKIPPED_TYPES
        ]
        if not pending:
            if written := [m.mount_point for m in mounts if m.id in keep and m.read_only]:
                raise IsolationError(f"cannot make {written[0]} writable: it is read-only")
            return
        for mount in pending:
            try:
                _mount("-o", "remount,bind,ro", mount.mount_point)
            except IsolationError:
                if not _inaccessible(mount.mount_point):
                    raise
                inaccessible.add(mount.id)  # the CLI, with fewer rights, cannot reach it either
    raise IsolationError("mounts kept changing; cannot make the file system read-only")


def _syscall_mount(
    source: str | None,
    target: str,
    fstype: str | None,
    flags: int,
    data: str | None,
    doing: str = "hide",
) -> None:
    """mount(2) itself: one cover costs a system call, not a ``mount`` process."""
    import ctypes  # here: the orchestrator imports this module for its constants only

    libc = ctypes.CDLL(None, use_errno=True)
    encoded = [None if v is None else os.fsencode(v) for v in (source, target, fstype, data)]
    if libc.mount(encoded[0], encoded[1], encoded[2], ctypes.c_ulong(flags), encoded[3]) != 0:
        error = ctypes.get_errno()
        raise IsolationError(f"cannot {doing} {target}: {os.strerror(error)}")


def _cover(path: str) -> None:
    """Cover ``path`` (it exists): an empty read-only tmpfs, or ``/dev/null`` bound on it."""
    if os.path.isdir(path):
        flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        _syscall_mount("review-loop-hidden", path, "tmpfs", flags, "size=4k,mode=0555")
    else:
        _syscall_mount("/dev/null", path, None, _MS_BIND, None)
        _syscall_mount("/dev/null", path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY, None)


def _holds(directory: str, path: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def hide(paths: list[str], *, keep: list[str], through: list[str]) -> list[str]:
    """Cover each of ``paths`` that exists; returns the places covered.

    ``keep``: never hidden, nor anything inside them (the CLI's own files). ``through``:
    must stay reachable (the working directory, the writable and read-only paths): never
    covered, nor a directory above them, which is split into its entries instead. Paths
    are compared as the kernel reaches them (``realpath``: a mount follows a link).
    """
    kept = [os.path.realpath(k) for k in keep]
    reached = [*kept, *(os.path.realpath(t) for t in through)]
    covered: list[str] = []
    pending = [os.path.realpath(p) for p in paths if os.path.lexists(p)]
    while pending:
        path = pending.pop(0)
        if not os.path.exists(path) or path in covered or any(_holds(k, path) for k in kept):
            continue
        if any(_holds(path, r) for r in reached):
            if path in reached or not os.path.isdir(path):
                continue
            try:
                names = sorted(os.listdir(path))
            except OSError as error:
                raise IsolationError(f"cannot list {path} to hide it: {error}") from error
            pending.extend(os.path.realpath(os.path.join(path, name)) for name in names)
            continue
        _cover(path)
        covered.append(path)
    return covered


_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000


def root_file_path(source: str) -> str:
    """Where ``--root-file source`` is placed in the CLI's root (by its file name)."""
    return f"{ROOT_FILES_DIR}/{os.path.basename(source)}"


def own_root(sources: list[str]) -> None:
    """Make this process's root a tmpfs of this namespace's own, holding every entry of
    the old ``/`` (recursive binds: covers and read-only mounts come along, so every path
    the CLI sees is unchanged) and a read-only copy of each of ``sources`` at
    :func:`root_file_path`.

    WHY: a CLI that trusts a file only under directories owned by uid 0 (gemini's system
    settings) finds none without root, where the real ``/`` appears as the overflow uid.
    The tmpfs is stacked on ``/`` itself, so no directory is created outside: lookups
    from this process's root still start beneath it, and ``..`` from the root steps into
    the mount stacked there, which ``chroot`` then makes the root.
    """
    import stat

    copies = {}
    for source in sources:
        with open(source, "rb") as handle:
            copies[root_file_path(source)] = handle.read()
    if len(copies) != len(sources):
        raise IsolationError("two --root-file paths share a file name")
    entries = os.listdir("/")
    if os.path.basename(ROOT_FILES_DIR) in entries:
        raise IsolationError(f"{ROOT_FILES_DIR} exists: the root files have no place")
    cwd = os.getcwd()
    _syscall_mount("review-loop-root", "/", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755",
                   doing="stack a root on")  # fmt: skip
    stacked = "/.."
    if os.stat(stacked).st_dev == os.stat("/").st_dev or os.listdir(stacked):
        # never create anything in the real root: this kernel did not climb into the mount
        raise IsolationError("the tmpfs stacked on / cannot be reached by '..' here")
    for name in entries:
        old, new = f"/{name}", f"{stacked}/{name}"
        info = os.lstat(old)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(old), new)
            continue
        if stat.S_ISDIR(info.st_mode):
            os.mkdir(new)
        else:
            os.close(os.open(new, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        _syscall_mount(old, new, None, _MS_BIND | _MS_REC, None, doing="bind into the root")
    os.mkdir(stacked + ROOT_FILES_DIR, 0o755)
    os.chmod(stacked + ROOT_FILES_DIR, 0o755)  # whatever the umask
    for path, data in copies.items():
        descriptor = os.open(stacked + path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o444)
        with open(descriptor, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), 0o444)
    os.chdir(stacked)
    os.chroot(".")
    flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    _syscall_mount(None, "/", None, flags, None, doing="make read-only the root")
    os.chdir(cwd)
    missing = [path for path in copies if not os.path.isfile(path)]
    if missing or os.stat("/").st_uid != os.geteuid():
        raise IsolationError(f"the root of its own does not hold {missing or copies}")


def _map_id_of_self(kind: str) -> None:
    with open(f"/proc/self/{kind}_map", "w", encoding="ascii") as handle:
        handle.write("0 0 1\n")


def enter_own_user_namespace() -> None:
    """Move into a new user and mount namespace, this one's root mapped to itself.

    The mounts copied into a mount namespace owned by a less privileged user namespace are
    locked (``mount_namespaces(7)``): the CLI, root there with every capability *there*,
    can neither unmount a cover, nor bind the directory under it elsewhere, nor remount
    one writable; those capabilities reach nothing outside (``setns``, ``/proc/<pid>/root``
    of an outside process need them in the outer user namespace). Unlike dropped
    capabilities, this leaves what a CLI's own sandbox needs: bubblewrap maps
    uid 0 into a user namespace of its own, which takes ``CAP_SETFCAP`` in its parent.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        raise IsolationError(f"unshare(user, mount) failed: {os.strerror(ctypes.get_errno())}")
    _map_id_of_self("uid")
    # A gid map written from inside needs setgroups(2) off first (user_namespaces(7)).
    with open("/proc/self/setgroups", "w", encoding="ascii") as handle:
        handle.write("deny\n")
    _map_id_of_self("gid")


def drop_privileges() -> None:
    """No capability in any set, none to regain on exec (``no_new_privs``, empty bounding set)."""
    import ctypes  # here: the orchestrator imports this module for its constants only

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, what: str) -> None:
        if result != 0:
            raise IsolationError(f"{what} failed: {os.strerror(ctypes.get_errno())}")

    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
        last_cap = int(handle.read())
    for cap in range(last_cap + 1):
        check(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap}")
    check(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient caps")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()
    check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")


def main(args: list[str]) -> int:
    """Parse the options, set up the namespace, exec the command (returns only on failure)."""
    given: dict[str, list[str]] = {option: [] for option in _OPTIONS}
    rest = list(args)
    while rest and rest[0] != "--":
        option = rest.pop(0)
        if option not in given or not rest:
            return _fail(f"bad wrapper arguments near {option!r}")
        given[option].append(rest.pop(0))
    command = rest[1:]
    if not command:
        return _fail("no command to run")
    writable, read_only, hidden = given["--writable"], given["--read-only"], given["--hide"]
    try:
        if writable and read_only:
            raise IsolationError("--writable and --read-only do not mix")
        # The read-only binds before the covers: a bind is not recursive, so a cover made
        # inside a path first would be left beneath its read-only bind, out of force.
        for path in read_only:
            make_read_only(path)
        if hidden:
            # While every other mount is still writable: a cover is itself a mount.
            hide(hidden, keep=given["--keep"], through=[*writable, *read_only, os.getcwd()])
        if writable:
            read_only_except([os.path.realpath(p) for p in writable])
        if given["--root-file"]:  # last: its binds copy every cover and read-only mount
            own_root(given["--root-file"])
        if writable:
            drop_privileges()
        elif (
            hidden or read_only or given["--root-file"]
        ):  # locked mounts: no cover taken off, no bind made writable
            enter_own_user_namespace()
        # The working directory was looked up before the new mounts: look it up again, or
        # a writable copy would be reached through the (now read-only) mount beneath it.
        os.chdir(os.getcwd())
    except (IsolationError, OSError) as error:
        return _fail(str(error))
    try:
        os.execvp(command[0], command)
    except OSError as error:
        # Not an isolation failure: the CLI itself cannot start, as without the wrapper.
        sys.stderr.write(f"{command[0]}: {error.strerror}\n")
        return 127
    return 127  # pragma: no cover - execvp does not return


def _fail(message: str) -> int:
    sys.stderr.write(f"{MARKER} {message}\n")
    sys.stderr.flush()
    return ISOLATION_FAILED_EXIT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
