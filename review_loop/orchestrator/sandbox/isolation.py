"""Running a CLI in a throw-away copy of the repository, inside a read-only mount namespace.

Two levels (``docs/reviewer-lockdown.md``):

- **whole file system** (:func:`sandbox_argv`), for a CLI that has no read-only mode of its
  own (docs/design.md: it gets "no write access anywhere but [its] own scratch space"): every
  mount is read-only except one scratch directory, which holds the throw-away copy of the
  repository (its working directory), a scratch HOME holding only the files its adapter
  names (:attr:`Invocation.home_files`) and a scratch TMPDIR; it runs without capabilities.
- **paths** (:func:`read_only_argv`), for a read-only CLI isolated only so that it cannot
  see earlier records (the blind review): the repository, and a git common dir outside it,
  are read-only; the copy is its working directory.

Both run :mod:`~review_loop.orchestrator.sandbox.wrapper` under ``unshare``; the paths and
the command reach it as arguments, never as shell text. When any mount cannot be made
read-only the wrapper exits with :data:`ISOLATION_FAILED_EXIT` and a :data:`MARKER` line
before the CLI starts, and the request is ``NOT_SUBMITTED``. Where no such namespace can be
made at all (:func:`namespace_available`), the request is refused before anything is spawned.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from review_loop.agents.models import Invocation
from review_loop.orchestrator.process import procfs
from review_loop.orchestrator.process.capture import OUTPUT_PREFIX
from review_loop.orchestrator.sandbox.reviewer import WRAPPER, protected_paths, wrapped_argv
from review_loop.orchestrator.sandbox.wrapper import ISOLATION_FAILED_EXIT, MARKER

if TYPE_CHECKING:
    from review_loop.orchestrator.process.run import Supervisors

__all__ = [
    "ISOLATION_FAILED_EXIT",
    "MARKER",
    "WRAPPER",
    "Scratch",
    "isolation_failed",
    "make_scratch",
    "namespace_available",
    "orphaned_scratch",
    "protected_paths",
    "read_only_argv",
    "remove_orphaned_scratch",
    "sandbox_argv",
    "scratch_prefix",
]

SKIPPED_IN_COPY = (".review-handoff",)
"""Never copied: earlier review records, which a blind reviewer must not see."""

_available: bool | None = None


def sandbox_argv(
    writable: Sequence[Path], argv: Sequence[str], hide: Sequence[str] = ()
) -> tuple[str, ...]:
    """``argv`` with every mount read-only except ``writable``, and no capabilities.

    ``hide``: the wrapper's ``--hide``/``--keep`` options (:func:`sandbox.hide_options`).
    """
    return wrapped_argv([*hide, *(w for p in writable for w in ("--writable", str(p)))], argv)


def read_only_argv(
    paths: Sequence[Path], argv: Sequence[str], hide: Sequence[str] = ()
) -> tuple[str, ...]:
    """``argv`` run with every path in ``paths`` mounted read-only in a private namespace
    (and ``hide``, as for :func:`sandbox_argv`)."""
    return wrapped_argv([*hide, *(w for p in paths for w in ("--read-only", str(p)))], argv)


_PROBE = (
    # The scratch dir takes a write, a directory outside it refuses one, no capability is left.
    'echo ok > "$1" && { ! (echo x > "$2") 2>/dev/null; } && '
    'grep -Eq "^CapEff:[[:space:]]*0+$" /proc/self/status && '
    'grep -Eq "^CapBnd:[[:space:]]*0+$" /proc/self/status'
)


async def namespace_available(supervisors: Supervisors | None = None) -> bool:
    """Whether the whole-file-system isolation works here (checked once per process).

    The probe runs the real setup (:func:`sandbox_argv`) around a shell that must be able
    to write into its scratch directory, must fail to write next to it, and must hold no
    capability. ``supervisors``: it runs on the warm spare, and a new spare is started for
    the session at once (as :func:`.reviewer.unavailable`).
    """
    global _available
    if _available is None:
        from review_loop.orchestrator.process.run import run_process

        with tempfile.TemporaryDirectory(prefix="review-loop-isolate-check-") as tmp:
            writable, outside = Path(tmp) / "scratch", Path(tmp) / "outside"
            writable.mkdir()
            outside.mkdir()
            ok, bad = writable / "probe", outside / "probe"
            argv = sandbox_argv([writable], ["sh", "-c", _PROBE, "sh", str(ok), str(bad)])
            done = await run_process(
                Invocation(argv=argv, cwd=writable),
                deadline=20,
                grace=1,
                supervisors=supervisors,
                on_started=supervisors.replace if supervisors is not None else None,
            )
            _available = done.returncode == 0 and ok.exists() and not bad.exists()
    return _available


def isolation_failed(returncode: int | None, stderr: bytes) -> bool:
    """Whether a run ended because the namespace could not be made (nothing was started)."""
    return returncode == ISOLATION_FAILED_EXIT and MARKER.encode() in stderr


@dataclass(frozen=True, slots=True, kw_only=True)
class Scratch:
    """The one writable directory of an isolated run, and what it holds.

    Attributes:
        root: the scratch directory (the only writable mount in whole-file-system mode).
        copy: the throw-away copy of the repository, the CLI's working directory.
        home: the scratch HOME (and XDG directories) for the CLI's own files.
        tmp: the scratch TMPDIR.
    """

    root: Path
    copy: Path
    home: Path
    tmp: Path

    def env(self) -> dict[str, str]:
        """The variables that send the CLI's own writes into the scratch directory."""
        return {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "TMPDIR": str(self.tmp),
            "TMP": str(self.tmp),
            "TEMP": str(self.tmp),
        }


def _not_copied(directory: str, names: list[str]) -> set[str]:
    """:data:`SKIPPED_IN_COPY`, and what is neither a file, a directory nor a link: a FIFO
    or socket planted in the tree would make ``copytree`` fail, and with it the request."""
    skipped = set(SKIPPED_IN_COPY) & set(names)
    for name in names:
        mode = os.lstat(os.path.join(directory, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.add(name)
    return skipped


SCRATCH_PREFIX = "review-loop-isolated-"
DEMO_PREFIX = "review-loop-demo-"
"""``review-loop demo``'s throw-away directory (a repository and review-loop's state)."""


def scratch_prefix(kind: str = SCRATCH_PREFIX) -> str:
    """The name prefix of this process's scratch directories: its pid and start time.

    A review-loop killed with SIGKILL cannot remove its scratch directory (a copy of the
    repository and of the CLI's credential files, or the demo's whole directory); the name
    lets the next one tell that its owner is gone (:func:`remove_orphaned_scratch`).
    ``kind``: :data:`SCRATCH_PREFIX` or :data:`DEMO_PREFIX`.
    """
    started = procfs.start_time(os.getpid())
    if started is None:  # this process runs: only a /proc that cannot be read says otherwise
        raise OSError(f"cannot read the start time of this process ({os.getpid()})")
    return f"{kind}{os.getpid()}-{int(started * 100)}-"


def _owner_gone(name: str, prefix: str = SCRATCH_PREFIX) -> bool:
    try:
        pid, started = (int(word) for word in name[len(prefix) :].split("-")[:2])
    except ValueError:
        return False  # not named by scratch_prefix: not ours to judge
    proc = procfs.Proc.of(pid)  # None: gone, or unreadable (as psutil.Error before)
    if proc is None or not proc.alive():
        return True
    return abs(int(proc.create_time() * 100) - started) > 1


def orphaned_scratch(temp: Path | None = None) -> list[Path]:
    """This user's scratch directories whose review-loop is gone (see
    :func:`remove_orphaned_scratch`), and its spill files of reviewer output
    (:func:`~review_loop.orchestrator.process.capture.output_prefix`); found without removing
    anything.

    ``temp``: the directory to look in; by default every one :func:`temp_directories`
    names (where ``tempfile.mkdtemp`` put them).
    """
    if temp is not None:
        return _orphaned_in(Path(temp))
    return [entry for base in temp_directories() for entry in _orphaned_in(base)]


def _orphaned_in(base: Path) -> list[Path]:
    # a prefix test over one listing, not a glob: every dispatcher's start pays for this
    # sweep, and a glob compiles its pattern (~0.4 ms of a consult)
    try:
        with os.scandir(base) as listing:
            names = [item.name for item in listing if item.name.startswith(_SWEPT)]
    except OSError:
        return []
    found: list[Path] = []
    for name in names:
        entry = base / name
        try:
            info = entry.lstat()
        except OSError:
            continue
        # a scratch copy is a directory, a spill a regular file: never a link, always ours
        prefix = next(each for each in _SWEPT if name.startswith(each))
        kind = stat.S_ISREG if prefix == OUTPUT_PREFIX else stat.S_ISDIR
        if kind(info.st_mode) and info.st_uid == os.getuid() and _owner_gone(name, prefix):
            found.append(entry)
    return found


_SWEPT = (SCRATCH_PREFIX, DEMO_PREFIX, OUTPUT_PREFIX)


def temp_directories() -> list[Path]:
    """The directories the scratch sweep looks in: ``tempfile.gettempdir()``, where the
    scratch copies and the output spill files are made (an embedding program's
    ``tempfile.tempdir`` included)."""
    return [Path(tempfile.gettempdir())]


def remove_orphaned_scratch(temp: Path | None = None) -> list[Path]:
    """Remove this user's scratch directories and spill files whose review-loop is gone;
    returns them.

    Only real directories (never a link) owned by this user, named by
    :func:`scratch_prefix` (either kind) for a process that no longer runs, and regular
    files so named by ``capture.output_prefix``, are removed.
    """
    removed = orphaned_scratch(temp)
    if removed:  # a sweep that finds nothing (almost every consult's) imports no shutil
        import shutil

        for entry in removed:
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with suppress(OSError):
                    entry.unlink()
    return removed


def make_scratch(
    root: Path, repo: Path, *, source_home: Path, home_files: Sequence[str] = ()
) -> Scratch:
    """Fill ``root``: a copy of ``repo`` (without :func:`_not_copied`), a scratch HOME
    holding each of ``home_files`` that exists under ``source_home``, a scratch TMPDIR.

    Raises:
        ValueError: a home file that is absolute or climbs out of HOME (an adapter bug).
    """
    relatives = [PurePosixPath(name) for name in home_files]
    for name, relative in zip(home_files, relatives, strict=True):
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise ValueError(f"home file {name!r} is not a path inside HOME")
    import shutil  # here: only an isolated run copies anything

    scratch = Scratch(
        root=root, copy=root / "work" / repo.name, home=root / "home", tmp=root / "tmp"
    )
    shutil.copytree(repo, scratch.copy, symlinks=True, ignore=_not_copied)
    scratch.home.mkdir(mode=0o700)
    scratch.tmp.mkdir(mode=0o700)
    for relative in relatives:
        source = source_home / relative
        if source.is_file():
            target = scratch.home / relative
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            target.chmod(0o600)  # it may hold a key
    return scratch
