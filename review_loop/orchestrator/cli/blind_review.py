"""``review-loop blind-review``: a fresh read-only review of the final evidence only.

Findings are classified Fix / Backlog / Reject and tied to the evidence id reviewed; the
same evidence is never reviewed twice, and a run gets at most two blind reviews.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = [
    "review-loop blind-review [--repo DIR] [--base REF] [--paths a,b] [--reviewer claude] "
    "[--run NAME] [--timeout SECONDS] [--continue]",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare blind-review's options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--paths", "--path", dest="paths", default=None)
    parser.add_argument("--reviewer", "--blind-reviewer", "--peer", "--executor", dest="reviewer")
    parser.add_argument("--run")
    parser.add_argument("--timeout")
    parser.add_argument("--continue", dest="cont", action="store_true")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate, then review."""
    from review_loop.agents.converge import BLIND_REVIEWER_PRODUCT
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import load_user_prefs, positive_seconds, repo_from
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.dispatcher import resolve_peer
    from review_loop.orchestrator.handoff.git import ensure_layout, rev_parse
    from review_loop.orchestrator.workflows.converge_gates import run_blind_review
    from review_loop.orchestrator.workflows.converge_store import check_run, default_run

    if not args.base.strip():
        raise InputError("--base", "is empty", "a commit, branch or tag (default HEAD)")
    repo = repo_from(args)
    rev_parse(repo, args.base)
    prefs = load_user_prefs()
    reviewer = args.reviewer or BLIND_REVIEWER_PRODUCT
    if resolve_peer(reviewer, prefs, field="--reviewer").product != BLIND_REVIEWER_PRODUCT:
        raise InputError(
            "--reviewer",
            f"{reviewer!r} is not a {BLIND_REVIEWER_PRODUCT} session; no product stands in",
            f"{BLIND_REVIEWER_PRODUCT} or a peer-command alias of it",
        )
    timeout_ms = positive_seconds(args.timeout, "--timeout") if args.timeout else None
    run = check_run(args.run) if args.run else default_run(repo)
    ensure_layout(repo)

    async def main(stop: Stop) -> Mapping[str, Any]:
        async with stop.open_dispatcher(repo=repo, prefs=prefs) as dispatcher:
            return await run_blind_review(
                dispatcher,
                run=run,
                reviewer=reviewer,
                base=args.base,
                paths_filter=args.paths,
                timeout_ms=timeout_ms,
                continue_budget=args.cont,
            )

    return run_cancellable(main)
