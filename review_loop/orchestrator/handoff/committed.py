"""What git tracks under ``.review-handoff/``: the repository's files, never review-loop's.

review-loop never commits its state (``.review-handoff/`` is in ``.git/info/exclude``), so a
file there that git tracks came with the repository: a pull request, a clone, a checkout.
It is read as the untrusted input it is, and never rewritten, removed or adopted as
review-loop's own — the user's ``git commit -a`` would otherwise commit review-loop's
rewrite. The reaper asks here once per run (:func:`handoff_paths`): one ``git ls-files``,
whatever the number of files, with the repository's fsmonitor and hooks switched off.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from review_loop.agents.errors import ReviewLoopError
from review_loop.orchestrator.handoff.git import git

HANDOFF: Final = ".review-handoff"
_HARDENED: Final = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null")


def handoff_paths(repo: Path) -> frozenset[str] | None:
    """The repository-relative paths git tracks under ``.review-handoff/`` (``os.fsdecode``
    form, ``/``-separated); ``None`` when git cannot say (then nothing there is ours to
    rewrite: the caller leaves every file alone)."""
    try:
        listed = git(repo, *_HARDENED, "ls-files", "-z", "--", HANDOFF, check=False)
    except (OSError, ReviewLoopError):  # no git to ask
        return None
    if listed.returncode != 0:
        return None
    return frozenset(os.fsdecode(name) for name in listed.stdout.split(b"\0") if name)


def relative(repo: Path, path: Path) -> str:
    """``path`` as git names it: relative to ``repo``, ``/``-separated."""
    return path.relative_to(repo).as_posix()
