"""The branch identity and its slug (``docs/origins.md`` §3.3), without pydantic.

Plain functions kept apart from :mod:`review_loop.agents.review` (which re-exports them),
so that a command that only needs the slug — ``ledger show`` names its run by it — does
not import the review models (``docs/performance.md``).
"""

from __future__ import annotations

import hashlib
import re

_READABLE_MAX = 48


def branch_identity(branch: str | None, head_sha: str) -> str:
    """The branch name, or ``detached:<full sha>`` for a detached HEAD."""
    return branch if branch else f"detached:{head_sha}"


def branch_slug(identity: str) -> str:
    """``readable--sha256(identity)[:12]`` (v2 slug).

    ``readable`` is the identity lowercased, ``/`` and ``\\`` and every other character
    outside ``[a-z0-9._-]`` turned into ``-``, leading/trailing ``-``/``.`` trimmed, cut to
    48 characters, ``branch`` when empty; a detached HEAD reads ``detached-<sha12>``.
    """
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:12]
    if identity.startswith("detached:"):
        readable = f"detached-{identity.removeprefix('detached:')[:12]}"
    else:
        readable = identity.lower().replace("/", "-").replace("\\", "-")
        readable = re.sub(r"[^a-z0-9._-]", "-", readable).strip("-.")[:_READABLE_MAX]
        readable = readable or "branch"
    return f"{readable}--{digest}"
