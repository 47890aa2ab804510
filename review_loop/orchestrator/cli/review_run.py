"""``review-loop run``: one review round on a packet (review → fix → re-review)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = [
    "review-loop run [--repo DIR] [--reviewer P] [--host H] "
    "[--completion review|pass] [--base REF] [--rounds N|+N] [--continue] [--scope SLUG] "
    "[--packet PATH] [--paths a,b] [--intake] [--timeout SECONDS]",
]
OUTPUT = "json"
IGNORES_UNKNOWN = True  # as the original: a word it does not know is ignored (and said)
_SANDBOX_OFF = ("--no-sandbox", "--disable-sandbox", "--sandbox")


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare run's options (the original's names and aliases)."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--reviewer", "--product-reviewer", "--peer", "--executor", dest="reviewer")
    parser.add_argument("--host")
    parser.add_argument("--completion")
    parser.add_argument("--until-pass", dest="until_pass", action="store_true")
    parser.add_argument("--base")
    parser.add_argument("--rounds")
    parser.add_argument("--continue", "--cont", dest="cont", nargs="?", const="true")
    parser.add_argument("--scope", "--scope-slug", dest="scope", default="auto-loop")
    parser.add_argument("--packet", "--packet-path", dest="packet")
    parser.add_argument("--paths", "--path", dest="paths", action="append", default=[])
    parser.add_argument("--intake", nargs="?", const="true")
    parser.add_argument("--timeout")
    for flag in _SANDBOX_OFF:
        parser.add_argument(
            flag,
            dest=f"sandbox_{flag.strip('-').replace('-', '_')}",
            nargs="?",
            const="true",
            default=None,
        )


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate every option (nothing is written on bad input), then run one round."""
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import (
        load_user_prefs,
        parse_bool,
        positive_seconds,
        repo_from,
    )
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.dispatcher import peer_name, resolve_peer
    from review_loop.orchestrator.workflows.review_run import RunPlan, run_review, validate_plan

    for name, value in vars(args).items():
        # As the original: --no-sandbox / --disable-sandbox unless =false, --sandbox off. Any
        # other value changes nothing (the sandbox is always on), so it is not refused.
        refused = value == "off" if name == "sandbox_sandbox" else value not in (None, "", "false")
        if name.startswith("sandbox_") and refused:
            raise InputError(
                "--" + name.removeprefix("sandbox_").replace("_", "-"),
                "the reviewer always runs read-only; the sandbox cannot be turned off",
            )
    completion = args.completion
    if args.until_pass:
        if completion not in (None, "pass"):
            raise InputError("--until-pass", f"conflicts with --completion {completion}")
        completion = "pass"
    intake = parse_bool(args.intake, "--intake") or False
    cont = parse_bool(args.cont, "--continue") or False
    paths = [p.strip() for value in args.paths for p in value.split(",") if p.strip()] or None
    prefs = load_user_prefs()
    if args.reviewer is not None:
        args.reviewer = peer_name(args.reviewer, prefs)  # CLAUDE is claude, as the original
        resolve_peer(args.reviewer, prefs, field="--reviewer")
    # The default reviewer is the first of the prefs order without the host (claude unnamed).
    host = resolve_peer(args.host, prefs, field="--host").product if args.host else None
    plan = RunPlan(
        reviewer=args.reviewer,
        host=host,
        completion=completion,
        base=args.base,
        rounds=args.rounds,
        cont=cont,
        scope=args.scope,
        packet=args.packet,
        paths=paths,
        intake=intake,
        timeout_ms=positive_seconds(args.timeout, "--timeout") if args.timeout else None,
    )
    validate_plan(plan)
    repo = repo_from(args)

    async def main(stop: Stop) -> Mapping[str, Any]:
        async with stop.open_dispatcher(repo=repo, prefs=prefs) as dispatcher:
            return await run_review(dispatcher, plan)

    return run_cancellable(main)
