"""``review-loop sessions``: every resumable session of the repository, newest first."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop sessions [--repo DIR] [--product P]"]
OUTPUT = "json"
IGNORES_UNKNOWN = True  # as the original: a word it does not know is ignored (and said)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--product", nargs="?", const=None)  # bare: every product (original)


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """List sessions; read-only.

    An unknown ``--product`` is a usage error (exit 1) naming the accepted products, as an
    unknown ``--peer`` is for consult (the original listed none and exited 0:
    docs/compatibility.md).
    """
    from review_loop.adapters import get_adapter
    from review_loop.orchestrator.cli.common import repo_from
    from review_loop.orchestrator.sessions.listing import NOTE, list_sessions, session_document

    if args.product is not None:
        get_adapter(args.product, field="--product")  # UnknownProductError: exit 1
    repo = repo_from(args)
    sessions = [session_document(item) for item in list_sessions(repo, args.product)]
    return {
        "ok": True,
        "repoRoot": str(repo),
        "count": len(sessions),
        "sessions": sessions,
        "note": NOTE,
    }
