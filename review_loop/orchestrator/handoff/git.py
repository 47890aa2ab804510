"""Repository facts from git: the root, the common dir, revisions, the exclude entry.

Synchronous on purpose: each call is one short git process. Async callers use
``anyio.to_thread.run_sync``. Every git here runs locked down (:mod:`.git_lockdown`):
nothing the repository's own configuration names runs, with a small environment.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from review_loop.agents.errors import InputError, NotAGitRepositoryError
from review_loop.orchestrator.handoff import git_lockdown
from review_loop.orchestrator.handoff.files import append_bytes, make_dirs, read_bytes

EXCLUDE_ENTRY = "/.review-handoff/"


def _no_git() -> InputError:
    return InputError("git", "the git executable is not on PATH", "an installed git")


def _run(
    repo: Path, args: Sequence[str | bytes], env: dict[str, str], input_bytes: bytes | None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            git_lockdown.argv(repo, args),
            input=input_bytes,
            stdin=None if input_bytes is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
            env=env,
        )
    except FileNotFoundError:
        raise _no_git() from None


def locked_environment(repo: Path, *, transport: bool = False) -> dict[str, str]:
    """The environment for git commands that may run a filter driver (or, ``transport``,
    reach a remote) in ``repo``: the programs the repository's own configuration names for
    them are reset (one ``git config`` read, see :mod:`.git_lockdown`).

    Raises:
        subprocess.CalledProcessError: git could not read the configuration.
    """
    query = _run(repo, git_lockdown.DRIVER_QUERY, git_lockdown.environment(), None)
    if query.returncode not in (0, 1):  # 1: no such key
        raise subprocess.CalledProcessError(
            query.returncode, query.args, query.stdout, query.stderr
        )
    overrides = git_lockdown.driver_overrides(query.stdout)
    return git_lockdown.environment(overrides, transport=transport)


def git(
    repo: Path, *args: str, check: bool = True, input_bytes: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C repo args...`` locked down and capture its output as bytes.

    A command that may convert work tree content first reads the filter drivers
    (:func:`locked_environment`); when that read fails, its failure is returned (or raised
    with ``check``) in place of the command's, which never runs.
    """
    if git_lockdown.needs_driver_overrides(args):
        try:
            env = locked_environment(repo, transport=git_lockdown.is_transport(args))
        except subprocess.CalledProcessError as failed:
            if check:
                raise
            return subprocess.CompletedProcess(
                failed.cmd, failed.returncode, failed.stdout, failed.stderr
            )
    else:
        env = git_lockdown.environment()
    result = _run(repo, args, env, input_bytes)
    if check:
        result.check_returncode()
    return result


class Checkout(NamedTuple):
    """A work tree as git located it: its top level and its ``$GIT_COMMON_DIR``.

    Made by :func:`locate` only, so holding one means git has just answered for it; the
    command line passes it on (to ``ensure_layout`` and ``open_dispatcher``) instead of
    asking git the same questions again. (A NamedTuple: ``ledger`` runs git without
    importing ``dataclasses``.)
    """

    root: Path
    common_dir: Path


def _start(path: str | Path | None) -> Path:
    start = Path(path) if path is not None else Path.cwd()
    if not start.is_dir():
        raise NotAGitRepositoryError(str(start), "no such directory")
    return start


def _absolute(base: Path, out: str) -> Path:
    path = Path(out)
    return path if path.is_absolute() else (base / path).resolve()


def locate(path: str | Path | None) -> Checkout:
    """The work tree containing ``path`` (default: the current directory): its top level
    and common dir from one ``git rev-parse --show-toplevel --git-common-dir``.

    A top level whose name holds a newline makes the two answers ambiguous: then each is
    asked on its own, as :func:`repo_root` and :func:`common_dir` do.

    Raises:
        NotAGitRepositoryError: ``path`` does not exist or is not inside a work tree.
        InputError: git is not on PATH.
    """
    start = _start(path)
    result = git(start, *_LOCATE, check=False)
    if result.returncode != 0:
        raise NotAGitRepositoryError(str(start), result.stderr.decode("utf-8", "replace"))
    lines = result.stdout.decode("utf-8").removesuffix("\n").split("\n")
    if len(lines) != 2 or not lines[0] or not lines[1]:
        root = repo_root(start)
        return Checkout(root, common_dir(root))
    return Checkout(Path(lines[0]), _absolute(start, lines[1]))


_LOCATE = ("rev-parse", "--show-toplevel", "--git-common-dir")


def repo_root(path: str | Path | None) -> Path:
    """The top level of the work tree containing ``path`` (default: the current directory).

    Raises:
        NotAGitRepositoryError: ``path`` does not exist or is not inside a work tree.
    """
    start = _start(path)
    result = git(start, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        raise NotAGitRepositoryError(str(start), result.stderr.decode("utf-8", "replace"))
    return Path(result.stdout.decode("utf-8").rstrip("\n"))


def common_dir(repo: Path) -> Path:
    """``$GIT_COMMON_DIR``: shared by every worktree of the repository."""
    out = git(repo, "rev-parse", "--git-common-dir").stdout.decode("utf-8").rstrip("\n")
    return _absolute(repo, out)


def rev_parse(repo: Path, ref: str, *, field: str = "--base") -> str:
    """The full sha of ``ref``.

    Raises:
        InputError: ``ref`` does not name a commit (names ``field``).
    """
    if ref.startswith("-"):
        raise InputError(field, f"{ref!r} is not a revision", "a commit, branch or tag")
    result = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if result.returncode != 0:
        raise InputError(field, f"{ref!r} does not name a commit", "a commit, branch or tag")
    return result.stdout.decode("ascii").strip()


def current_branch(repo: Path) -> str | None:
    """The checked-out branch name, or ``None`` for a detached HEAD."""
    result = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return result.stdout.decode("utf-8").strip() or None if result.returncode == 0 else None


def ensure_excluded(repo: Path, git_dir: Path | None = None) -> bool:
    """Add ``/.review-handoff/`` to ``$GIT_COMMON_DIR/info/exclude`` once; True if added.

    Idempotent: nothing is written when the file already has the entry (or a line starting
    with ``.review-handoff/``), as the original tool does. ``git_dir``: the common dir when
    :func:`locate` has already given it.
    """
    if git_dir is None:
        git_dir = common_dir(repo)  # info/ and exclude are opened without following a link
    exclude = git_dir / "info" / "exclude"
    try:
        existing = read_bytes(exclude, anchor=git_dir).decode("utf-8")
    except FileNotFoundError:
        existing = ""
    for line in existing.splitlines():
        stripped = line.strip()
        if stripped == EXCLUDE_ENTRY or stripped.startswith(".review-handoff/"):
            return False
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    append_bytes(exclude, f"{prefix}{EXCLUDE_ENTRY}\n".encode(), anchor=git_dir)
    return True


def ensure_layout(repo: Path | Checkout) -> Path:
    """Create ``.review-handoff/`` (and its runtime dirs) and the exclude entry.

    ``repo``: the top level, or a :class:`Checkout` (its common dir is not asked again).
    """
    if isinstance(repo, Checkout):
        root, git_dir = repo.root, repo.common_dir
    else:
        root, git_dir = repo, None
    base = root / ".review-handoff"
    make_dirs(base / "runtime" / "consults")  # refuses a link on the way
    ensure_excluded(root, git_dir)
    return base
