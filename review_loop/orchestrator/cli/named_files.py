"""A file named on the command line that lies inside the reviewed repository.

A question, a plan, a host position, a fix-completion body or a scenarios file is the
caller's choice, so a path outside the repository is read as the caller named it
(:func:`~review_loop.orchestrator.cli.common.read_text_file`). A path inside the reviewed
repository is another matter: the repository can commit ``notes/plan.md`` as a link to
``~/.aws/credentials`` or ``/proc/self/environ``, and a host that names the file it sees
there would send the link's target to the reviewers. So inside the repository the file is
read as every other file of the tree is (:mod:`review_loop.orchestrator.handoff.tree_files`):
through no link, never under ``.git``, a regular file, bounded. The caller who means a
file a link there points to names that file's real path instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from review_loop.agents.errors import InputError, ReviewLoopError

_ACCEPTED = (
    "a regular UTF-8 file of the repository reached through no link, or the real path of a "
    "file outside the repository"
)


def _reviewed(repo_text: str | None) -> tuple[Path, Path] | None:
    """The top level ``--repo`` names and its common dir (one git process), or ``None``
    when it names none (the command then reports that in its usual place, after this)."""
    from review_loop.orchestrator.handoff.git import locate

    try:
        checkout = locate(repo_text)
    except (ReviewLoopError, OSError):
        return None
    return checkout.root, checkout.common_dir


def read_named_text(path_text: str, field: str, repo_text: str | None) -> str:
    """The UTF-8 text of the file ``field`` names; inside the repository ``--repo`` names
    (``repo_text``; ``None``: the current directory's), read through no link.

    Raises:
        InputError: naming ``field``: missing, unreadable, not UTF-8, or (inside the
            repository) refused by the tree's read contract, with why.
    """
    from review_loop.orchestrator.cli.common import read_text_file, utf8_text
    from review_loop.orchestrator.handoff.tree_files import (
        TreeFileRefusedError,
        git_identities,
        read_tree_file,
        relative_path,
    )

    reviewed = _reviewed(repo_text)
    if reviewed is None:
        return read_text_file(path_text, field)
    root, common_dir = reviewed
    try:
        relative = relative_path(root, Path(os.path.abspath(path_text)))
    except TreeFileRefusedError:  # outside the repository: the caller's own file
        return read_text_file(path_text, field)
    try:
        data = read_tree_file(root, relative, protected=git_identities([common_dir]))
    except TreeFileRefusedError as refused:
        raise InputError(field, f"{path_text!r}: {refused.reason}", _ACCEPTED) from None
    except FileNotFoundError:
        raise InputError(
            field, f"no such file: {path_text!r}", "a readable UTF-8 text file"
        ) from None
    except OSError as error:
        raise InputError(field, f"cannot read {path_text!r}: {error.strerror}") from None
    return utf8_text(data, path_text, field)
