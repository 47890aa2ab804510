"""Configuration the reviewed repository carries (``.review-loop/``), read from the base.

(The ``spx/local/`` auditing overlays are read from the base as well, by
``orchestrator/workflows/governance.py``.)

A pull request must not be able to change the review that judges it. So the audit reads
the repository's own configuration — its artifact registry, its concern agents and the
prompt files they name — from the **base** commit of the audited changeset, never from
the head or the working tree, as CI systems read workflow files from the base branch. The
change under review can still change that configuration; the change takes effect once it
is merged, and meanwhile the result names each such file (:func:`changed`, ``used:
"base"``).

Reads go through git objects: ``git ls-tree`` names the entry's mode, ``git cat-file
blob`` gives its bytes. Nothing is looked up in the file system, so no symbolic link,
device or FIFO is followed; an entry that is a link, a submodule or a directory is
refused by name. ``cat-file`` runs no textconv or filter, and the calls carry
``core.fsmonitor`` and ``core.hooksPath`` switched off, so the repository's git
configuration runs nothing.

Whatever is read here is still the repository's: the merge rules that keep it from
removing or overriding the built-in and the user's configuration live with each kind of
file (``agents/scope_rules.add_repository_kinds``, ``workflows/audit``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from review_loop.agents.errors import ReviewLoopError
from review_loop.orchestrator.handoff.git import git

CONFIG_DIR: Final = ".review-loop"
MAX_BYTES: Final = 1 << 20  # a configuration file, not a data set
_REGULAR: Final = ("100644", "100755")
# Nothing the repository's git configuration names may run for these reads.
_HARDENED: Final = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null")
HARDENED: Final = _HARDENED  # git options that run nothing the repository configures


class RepoConfigError(ReviewLoopError):
    """A repository configuration file that cannot be used as it is at the base commit."""

    def __init__(self, path: str, base: str, reason: str) -> None:
        self.path, self.base, self.reason = path, base, reason
        super().__init__(f"{path} at base {base[:12]}: {reason}")


def config_path(name: str) -> str:
    """The repository-relative path of the configuration file ``name``."""
    return f"{CONFIG_DIR}/{name}"


def inside(relative_to: str, name: str) -> str | None:
    """``name`` (relative to the directory of ``relative_to``) as a normalized path inside
    the repository, or ``None`` when it is absolute or climbs out of it."""
    if name.startswith("/") or not name:
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(relative_to), name))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


def read_at(repo: Path, base: str, path: str) -> str | None:
    """The UTF-8 text of ``path`` in commit ``base``; ``None`` when there is no such entry.

    Raises:
        RepoConfigError: the entry is a link, a submodule or a directory, is larger than
            :data:`MAX_BYTES`, is not UTF-8, or git cannot read it.
    """
    listed = git(repo, *_HARDENED, "ls-tree", "-z", "--full-tree", base, "--", path, check=False)
    if listed.returncode != 0:
        detail = listed.stderr.decode("utf-8", "replace").strip()
        raise RepoConfigError(path, base, f"git ls-tree failed: {detail}")
    entry = listed.stdout.split(b"\0", 1)[0]
    if not entry:
        return None
    meta, _, _name = entry.partition(b"\t")
    mode, kind, oid = meta.decode("ascii", "replace").split(" ")
    if kind != "blob" or mode not in _REGULAR:
        what = {"120000": "a symbolic link", "160000": "a submodule"}.get(mode, f"a {kind}")
        raise RepoConfigError(path, base, f"is {what}; only a regular file is read")
    size = git(repo, *_HARDENED, "cat-file", "-s", oid, check=False)
    if size.returncode != 0 or int(size.stdout or b"0") > MAX_BYTES:
        raise RepoConfigError(path, base, f"is larger than {MAX_BYTES} bytes")
    blob = git(repo, *_HARDENED, "cat-file", "blob", oid, check=False)
    if blob.returncode != 0:
        raise RepoConfigError(path, base, blob.stderr.decode("utf-8", "replace").strip())
    try:
        return blob.stdout.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RepoConfigError(path, base, f"is not UTF-8 ({error})") from None


def changed(paths: Iterable[str], also: Iterable[str] = ()) -> list[dict[str, str]]:
    """One ``{"path", "used": "base"}`` per path of the changeset under ``.review-loop/``
    (or under one of the directories ``also`` names, ``/``-terminated): the change under
    review changes review configuration, and the base's was used."""
    prefixes = (CONFIG_DIR + "/", *also)
    seen = dict.fromkeys(p for p in paths if p.startswith(prefixes) or p == CONFIG_DIR)
    return [{"path": path, "used": "base"} for path in seen]
