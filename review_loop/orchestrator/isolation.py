"""Running a CLI that has no read-only mode without letting it write to the repository.

Two layers (DESIGN.md: such a CLI "must never write to the user's tree"):

1. a throw-away copy of the repository is its working directory, so what it writes by
   relative path lands in the copy, which is deleted afterwards;
2. it runs in a private mount namespace in which the repository (and a git common dir
   outside it) are bind-mounted read-only, so a write by absolute path fails with EROFS.

The namespace is made by ``unshare`` and ``mount`` from util-linux; the paths and the
command reach ``sh`` as arguments, never as shell text. When no mount namespace can be
made here, the request is refused before anything is spawned (``NOT_SUBMITTED``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import anyio

from review_loop.agents.models import Invocation

ISOLATION_FAILED_EXIT = 97
MARKER = "review-loop-isolate:"
_SCRIPT = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || '
    f'{{ echo "{MARKER} cannot make $1 read-only" >&2; exit {ISOLATION_FAILED_EXIT}; }}; '
    'shift; n=$((n-1)); done; exec "$@"'
)

_available: bool | None = None


def _unshare() -> list[str]:
    if os.geteuid() == 0:
        return ["unshare", "--mount", "--propagation", "private"]
    # Without root, a user namespace grants the mount namespace its own CAP_SYS_ADMIN.
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def read_only_argv(paths: Sequence[Path], argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run with every path in ``paths`` mounted read-only in a private namespace."""
    return (
        *_unshare(),
        "sh",
        "-c",
        _SCRIPT,
        "review-loop-isolate",
        str(len(paths)),
        *(str(p) for p in paths),
        *argv,
    )


async def namespace_available() -> bool:
    """Whether a read-only mount namespace can be made here (checked once per process)."""
    global _available
    if _available is None:
        from review_loop.orchestrator.process import run_process

        with tempfile.TemporaryDirectory(prefix="review-loop-isolate-check-") as tmp:
            probe = Path(tmp) / "probe"
            argv = read_only_argv(
                [Path(tmp)],
                ["sh", "-c", 'echo x > "$1" 2>/dev/null && exit 1; exit 0', "sh", str(probe)],
            )
            done = await run_process(Invocation(argv=argv, cwd=Path(tmp)), deadline=10, grace=1)
            _available = done.returncode == 0 and not probe.exists()
    return _available


def isolation_failed(returncode: int | None, stderr: bytes) -> bool:
    """Whether a run ended because the namespace could not be made (nothing was started)."""
    return returncode == ISOLATION_FAILED_EXIT and MARKER.encode() in stderr


async def protected_paths(repo: Path) -> list[Path]:
    """The repository, and its git common dir when that lies outside it (worktrees)."""
    from review_loop.orchestrator.git import common_dir

    paths = [repo]
    common = await anyio.to_thread.run_sync(common_dir, repo)
    if not common.is_relative_to(repo):
        paths.append(common)
    return paths
