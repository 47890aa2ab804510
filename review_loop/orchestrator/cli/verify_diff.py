"""``review-loop verify-diff``: a fresh executor judges a git diff; the seed's JSON verdict.

Explicit-args mode needs ``--description``, ``--fix-direction`` and ``--target``; with none
of the three it runs auto-derive mode; with one or two it answers ``incomplete args``. The
document is the seed's schema exactly (it has no ``ok`` key, so a verdict exits 0); bad
input and staged changes exit 1 with ``{"ok": false, "error": ...}``. Iteration rows and
liveness lines go to stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = [
    "review-loop verify-diff [--repo DIR] --description D --fix-direction F --target PATH "
    "[--base REF] [--max-iterations N] [--reviewer P] [--scenarios-file S] [--timeout SECONDS]",
    "review-loop verify-diff [--repo DIR] [--base REF] [--max-iterations N] [--reviewer P] "
    "[--timeout SECONDS]   (auto-derive: no framing fields)",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare verify-diff's options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--description")
    parser.add_argument("--fix-direction", "--suggested-fix-direction", dest="fix_direction")
    parser.add_argument("--target", "--target-file", dest="target")
    parser.add_argument("--base", "--base-ref", dest="base", default="HEAD")
    parser.add_argument("--max-iterations", dest="max_iterations", default="1")
    parser.add_argument("--executor", "--reviewer", "--peer", dest="executor")
    parser.add_argument("--scenarios-file", dest="scenarios_file")
    parser.add_argument("--timeout")


def _max_iterations(value: str) -> int:
    from review_loop.agents.errors import InputError

    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1:
        raise InputError("--max-iterations", f"{value!r} is not a positive integer", "1 or more")
    return number


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate everything first (nothing is written on bad input), then run."""
    import json

    from review_loop.agents import verify_diff as vd
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import (
        load_user_prefs,
        positive_seconds,
        repo_from,
    )
    from review_loop.orchestrator.cli.named_files import read_named_text
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.dispatcher import resolve_peer
    from review_loop.orchestrator.handoff.git import rev_parse
    from review_loop.orchestrator.workflows.verify_diff import VerifyDiffPlan, run_verify_diff

    max_iterations = _max_iterations(args.max_iterations)
    timeout_ms = positive_seconds(args.timeout, "--timeout") if args.timeout else None
    mode = vd.select_mode(args.description, args.fix_direction, args.target)
    if mode == "incomplete":
        return vd.early_result("incomplete args").to_json()
    scenarios: tuple[vd.Scenario, ...] | None = None
    if args.scenarios_file is not None:
        if mode != "explicit-args":
            raise InputError(
                "--scenarios-file",
                "scenarios are for explicit-args mode only",
                "--description, --fix-direction and --target with it",
            )
        text = read_named_text(args.scenarios_file, "--scenarios-file", args.repo)
        try:
            scenarios = vd.parse_scenarios(json.loads(text))
        except ValueError as error:  # JSON syntax, or a broken Step 2 rule
            raise InputError(
                "--scenarios-file",
                str(error),
                'JSON {"scenarios": [{"kind": "median", "title": T, "description": D, '
                '"checklist": ["[critical] ...", "...", "..."]}]} with 1-2 scenarios '
                "(median first), 3-7 items each, at least one [critical]",
            ) from None
    repo = repo_from(args)
    prefs = load_user_prefs()
    executor = args.executor or prefs.order[0]
    resolve_peer(executor, prefs, field="--executor")
    rev_parse(repo, args.base, field="--base")
    plan = VerifyDiffPlan(
        description=args.description,
        fix_direction=args.fix_direction,
        target=args.target,
        base=args.base,
        max_iterations=max_iterations,
        executor=executor,
        scenarios=scenarios,
        timeout_ms=timeout_ms,
    )

    async def main(stop: Stop) -> Mapping[str, Any]:
        async with stop.open_dispatcher(repo=repo, prefs=prefs) as dispatcher:
            return await run_verify_diff(dispatcher, plan)

    return run_cancellable(main)
