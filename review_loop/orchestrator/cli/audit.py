"""``review-loop audit``: the audit-implementation workflow, driven by the tool.

One JSON document on stdout: the rendered run projection with its token and run file, the
concerns dispatched and the ``filed`` findings; or ``{"ok": false, "status": "BLOCKED",
...}`` with every field of the seed's BLOCKED diagnostic (exit 2). Progress on stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

USAGE = [
    "review-loop audit <HEAD|branch|base...head|worktree:selector> [--repo DIR | DIR] "
    "--driver FILE|self [--concerns FILE] [--deterministic-verification FILE] "
    "[--timeout SECONDS]",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """The selector, the checkout directory, and where the concern agents are configured."""
    parser.add_argument("selector")
    parser.add_argument("directory", nargs="?", default=None)
    parser.add_argument("--repo", "--repo-root", "-C", dest="repo", default=None)
    parser.add_argument("--concerns", default=None)
    parser.add_argument("--driver", default=None)
    parser.add_argument("--deterministic-verification", dest="deterministic", default=None)
    parser.add_argument("--timeout", default=None)


def help_details(words: Sequence[str]) -> str:
    """The files ``audit`` reads and the result fields a consumer decides on."""
    from review_loop.agents import verification_audit as va

    del words
    return "\n".join(
        [
            "--driver FILE: a JSON object with the six run-driver producer fields:",
            f"  {', '.join(va.DRIVER_FIELDS)} (each a non-empty string)",
            "--deterministic-verification FILE: the facts already established for the head:",
            '  {"head": "<full commit id>", "passing": true|false, ...facts}; facts for',
            "  another head are recorded as unestablished; passing is never inferred",
            "Result fields (besides the run token, run file and projection):",
            "  terminalStatus: approved | rejected (from the recorded evidence)",
            "  gateEligible: true only for a committed audit whose deterministic verification",
            '    is established for its head with "passing": true; an advisory (worktree:)',
            "    audit is never eligible; gateEligibility says why (seed 002)",
            "  deterministicVerification: unestablished | {status: established, ...facts}",
            "Each concern answers for every path of its selection and gives, per audited path,",
            "a read receipt (line count, last non-blank line); a partial read is re-issued",
            "once, then the path is not inspected and the audit is BLOCKED.",
        ]
    )


def _directory(positional: str | None, repo: str | None) -> str | None:
    """The checkout: the positional ``DIR`` (the seed's form) or ``--repo`` (every other
    command's), not two different ones."""
    from review_loop.agents.errors import InputError

    if positional is not None and repo is not None and positional != repo:
        raise InputError(
            "--repo",
            f"{repo!r} given with a different positional DIR {positional!r}",
            "one of them (DIR or --repo DIR)",
        )
    return positional if positional is not None else repo


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate the options, then run the workflow on the dispatcher and the journal."""
    import json
    import sys

    from review_loop.agents import verification_audit as va
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import (
        load_user_prefs,
        positive_seconds,
    )
    from review_loop.orchestrator.cli.named_files import read_named_text
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.workflows.audit import AuditRequest, run_audit

    args.directory = _directory(args.directory, args.repo)
    driver = None
    driver_problem = None
    if args.driver == "self":  # review-loop drives the run: its identity, named explicitly
        driver = dict(va.DEFAULT_DRIVER)
    elif args.driver is not None:
        text = read_named_text(args.driver, "--driver", args.directory)
        try:
            driver = va.check_driver(json.loads(text), args.driver)
        except ValueError as error:
            # A missing identity field is the seed's BLOCKED (runToken: not-started), not a
            # usage error: the audit says so in its own diagnostic.
            driver_problem = (
                str(error)
                if isinstance(error, va.ConcernConfigError)
                else f"{args.driver}: not JSON ({error})"
            )
    deterministic = None
    if args.deterministic is not None:
        facts = read_named_text(args.deterministic, "--deterministic-verification", args.directory)
        try:
            deterministic = va.check_deterministic(json.loads(facts))
        except ValueError as error:
            raise InputError(
                "--deterministic-verification",
                f"{args.deterministic}: {error}",
                'a JSON object {"head": "<full commit id>", "passing": true|false, '
                "...the established facts}",
            ) from None
    timeout_ms = positive_seconds(args.timeout, "--timeout") if args.timeout else None
    request = AuditRequest(
        selector=args.selector,
        directory=args.directory,
        concerns_file=args.concerns,
        driver=driver,
        driver_problem=driver_problem,
        timeout_ms=timeout_ms,
        deterministic=deterministic,
    )
    prefs = load_user_prefs()

    def progress(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    async def main(stop: Stop) -> Mapping[str, Any]:
        return await run_audit(
            request, prefs=prefs, progress=progress, open_dispatcher=stop.open_dispatcher
        )

    return run_cancellable(main)
