"""Hiding a repository's CLI configuration from a reviewer that runs in the repository.

Some CLIs load their project configuration (settings with hooks and MCP servers, dotenv
files read into their own environment) from the working directory, and offer no switch to
stop it in a headless run (``docs/reviewer-lockdown.md`` says which and how it was
measured). Their adapters name those paths (``Invocation.hidden_paths``); the reviewer
then runs in a private mount namespace in which each of them that exists is covered: a
directory by an empty read-only tmpfs, a file by ``/dev/null``. The repository itself is
untouched and the CLI still runs in it, so its sessions stay keyed by the repository's
path.

Where no mount namespace can be made, the run goes ahead unmasked only when none of the
paths exists; otherwise it is refused before anything is spawned (``NOT_SUBMITTED``).
Paths and the command reach ``sh`` as arguments, never as shell text.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from review_loop.agents.models import Invocation

MASK_FAILED_EXIT = 96
MARKER = "review-loop-mask:"
_SCRIPT = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    # mount follows a symbolic link, so a linked directory or file is covered where it
    # points, which is what the CLI would read; a dangling link shows the CLI nothing.
    'if [ -d "$1" ]; then mount -t tmpfs -o ro,size=4k,mode=0555 review-loop-masked "$1" '
    f'|| {{ echo "{MARKER} cannot hide $1" >&2; exit {MASK_FAILED_EXIT}; }}; '
    'elif [ -e "$1" ]; then mount --bind /dev/null "$1" '
    f'|| {{ echo "{MARKER} cannot hide $1" >&2; exit {MASK_FAILED_EXIT}; }}; '
    'fi; shift; n=$((n-1)); done; exec "$@"'
)

_available: bool | None = None


def _unshare() -> list[str]:
    if os.geteuid() == 0:
        return ["unshare", "--mount", "--propagation", "private"]
    # Without root, a user namespace grants the mount namespace its own CAP_SYS_ADMIN.
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


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


def masked_argv(paths: Sequence[Path], argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run in a private mount namespace with each existing path of ``paths`` hidden."""
    return (
        *_unshare(),
        "sh",
        "-c",
        _SCRIPT,
        "review-loop-mask",
        str(len(paths)),
        *(str(path) for path in paths),
        *argv,
    )


def mask_failed(returncode: int | None, stderr: bytes) -> bool:
    """Whether a run ended because a path could not be hidden (the CLI never started)."""
    return returncode == MASK_FAILED_EXIT and MARKER.encode() in stderr


async def masking_available() -> bool:
    """Whether paths can be hidden here (checked once per process, by hiding one)."""
    global _available
    if _available is None:
        import tempfile  # here, not at import: consult imports this module, a probe is rare

        from review_loop.orchestrator.process import run_process

        with tempfile.TemporaryDirectory(prefix="review-loop-mask-check-") as tmp:
            hidden = Path(tmp) / "hidden"
            hidden.mkdir()
            (hidden / "secret").write_text("x")
            argv = masked_argv(
                [hidden], ["sh", "-c", '! [ -e "$1" ]', "sh", str(hidden / "secret")]
            )
            done = await run_process(Invocation(argv=argv, cwd=Path(tmp)), deadline=10, grace=1)
            _available = done.returncode == 0
    return _available


async def hidden_invocation(invocation: Invocation) -> Invocation | str:
    """``invocation`` with its ``hidden_paths`` covered, or why it cannot run (a refusal).

    ``argv[0]`` must already be an absolute path (the wrapper becomes ``argv[0]``).
    """
    paths = checked_paths(invocation.cwd, invocation.hidden_paths)
    if await masking_available():
        return dataclasses.replace(invocation, argv=masked_argv(paths, invocation.argv))
    found = present(paths)
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
