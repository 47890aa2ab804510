"""``review-loop sessions``: every resumable session of the repository, newest first."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop sessions --repo R [--product P]"]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--product")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """List sessions; read-only."""
    from review_loop.adapters import get_adapter
    from review_loop.agents.errors import UnknownProductError
    from review_loop.orchestrator.cli.common import repo_from
    from review_loop.orchestrator.sessions.listing import NOTE, list_sessions, session_document

    unknown: str | None = None
    if args.product is not None:
        try:
            get_adapter(args.product, field="--product")
        except UnknownProductError as error:
            # As the original: a product no session can have lists none (exit 0); the
            # warning says why.
            unknown = str(error)
    repo = repo_from(args)
    sessions = (
        [] if unknown else [session_document(item) for item in list_sessions(repo, args.product)]
    )
    document = {
        "ok": True,
        "repoRoot": str(repo),
        "count": len(sessions),
        "sessions": sessions,
        "note": NOTE,
    }
    if unknown:
        document["warning"] = unknown
    return document
