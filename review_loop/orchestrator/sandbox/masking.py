"""Hiding a repository's CLI configuration from a reviewer that runs in the repository.

Some CLIs load their project configuration (settings with hooks and MCP servers, dotenv
files read into their own environment) from the working directory, and offer no switch to
stop it in a headless run (``docs/reviewer-lockdown.md`` says which and how it was
measured). Their adapters name those paths (``Invocation.hidden_paths``); the reviewer
then runs in the private mount namespace every reviewer runs in
(:mod:`~review_loop.orchestrator.sandbox.reviewer`), in which each of them that exists is covered:
a directory by an empty read-only tmpfs, a file by ``/dev/null``. The repository itself is
untouched and the CLI still runs in it, so its sessions stay keyed by the repository's
path. In a throw-away copy they are deleted from the copy instead.

Where no mount namespace can be made and the user allowed unprotected runs, the run goes
ahead only when none of the paths exists; otherwise it is refused before anything is
spawned (``NOT_SUBMITTED``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from review_loop.agents.models import Invocation
from review_loop.orchestrator.sandbox.wrapper import ISOLATION_FAILED_EXIT, MARKER


def checked_paths(cwd: Path, hidden: Sequence[str]) -> list[Path]:
    """``hidden`` as paths under ``cwd``; refuse one that is absolute or climbs out.

    Raises:
        ValueError: an adapter named a path outside the working directory (a bug).
    """
    paths = []
    for name in hidden:
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise ValueError(f"hidden path {name!r} is not a path inside the working directory")
        paths.append(cwd / relative)
    return paths


def present(paths: Sequence[Path]) -> list[Path]:
    """Those of ``paths`` that exist (a dangling link counts: it could be made to resolve)."""
    return [path for path in paths if os.path.lexists(path)]


def mask_failed(returncode: int | None, stderr: bytes) -> bool:
    """Whether a run ended because a path could not be hidden (the CLI never started)."""
    return returncode == ISOLATION_FAILED_EXIT and MARKER.encode() in stderr


def unmasked_or_refused(invocation: Invocation) -> Invocation | str:
    """Where nothing can be hidden (and the user allowed unprotected runs): ``invocation``
    as it is when none of its ``hidden_paths`` exists, else why it must not run."""
    found = present(checked_paths(invocation.cwd, invocation.hidden_paths))
    if not found:
        return invocation
    names = ", ".join(str(path.relative_to(invocation.cwd)) for path in found)
    return (
        f"the repository holds CLI configuration this reviewer would load and run ({names}) "
        "and no private mount namespace can be made here to hide it (unshare --mount failed)"
    )


def remove_from_copy(copy: Path, hidden: Sequence[str]) -> None:
    """Delete ``hidden`` from a throw-away copy of the repository (links themselves only)."""
    for path in present(checked_paths(copy, hidden)):
        if path.is_dir() and not path.is_symlink():
            import shutil  # here, not at import (as tempfile above)

            shutil.rmtree(path)
        else:
            path.unlink()
