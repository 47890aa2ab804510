"""``review-loop converge``: three-party convergence; writes and returns the record.

Phase 1 A (both peers in parallel, new sessions; without ``--host-position`` only A, so the
host writes its position meanwhile), then B (each peer's own session resumed
with the host's and the other peer's positions), at most two rounds. Re-running continues
the same run: answered calls are never asked again. ``ok: false`` (exit 2) when a position
is missing (``UNVERIFIED``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

USAGE = [
    "review-loop converge [--repo DIR] --plan FILE [--host-position FILE] [--host H] "
    "[--reviewer P [--reviewer P2]] [--peer-command NAME] [--fallback F|auto] [--run NAME] "
    "[--timeout SECONDS] [--blind-reviewer claude] [--skill-dir DIR ...] "
    "[--require-skill NAME ...]",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare converge's options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--plan")
    parser.add_argument("--host-position", dest="host_position")
    parser.add_argument("--host")
    parser.add_argument(
        "--peer", "--reviewer", "--executor", dest="peers", action="append", default=[]
    )
    parser.add_argument("--peer-command", dest="peer_command")
    parser.add_argument("--fallback", action="append", default=[])
    parser.add_argument("--run")
    parser.add_argument("--timeout")
    parser.add_argument("--blind-reviewer", dest="blind_reviewer")
    parser.add_argument("--skill-dir", dest="skill_dirs", action="append", default=[])
    parser.add_argument("--require-skill", dest="require_skills", action="append", default=[])


def _text(value: str | None, field: str, repo: str | None) -> str:
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.named_files import read_named_text

    if value is None:
        raise InputError(field, "is required", f"{field} FILE")
    text = read_named_text(value, field, repo)  # inside the repository: through no link
    if not text.strip():
        raise InputError(field, f"{value!r} is empty", "a non-blank UTF-8 text file")
    return text


def help_details(words: Sequence[str]) -> str:
    """The host position's format (``--host-position FILE``), from the sections the record
    reads (``agents.converge.HOST_POSITION_SECTIONS``)."""
    from review_loop.agents.converge import host_position_format

    lines = [
        "The host position (--host-position FILE): Markdown headings, each with its text:",
        *(f"  {line}" for line in host_position_format()),
        "A missing heading the record reads is named in the result (host.missingSections) and",
        "the record says it is not stated. Exclusions: in ## Scope, a line 'Exclusions: ...'",
        "(or 'Out of scope: ...', or lines under a '### Exclusions' sub-heading); the record",
        "lists them as the host's, after the ledger's EXCLUDED items. The host's words never",
        "exclude a plan item: only the user or valid documentation does (review-loop ledger",
        "set --status EXCLUDED); a PENDING item the host names stays PENDING, and the record",
        "says so.",
    ]
    return "\n".join(lines)


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate everything first (nothing is written on bad input), then converge."""
    import shutil

    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import load_user_prefs, positive_seconds, repo_from
    from review_loop.orchestrator.cli.preflight import (
        checked_blind_reviewer,
        conditional_skills,
        skill_dirs_from,
    )
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.dispatcher import resolve_peer
    from review_loop.orchestrator.handoff.git import ensure_layout
    from review_loop.orchestrator.workflows.consult import resolve_fallbacks
    from review_loop.orchestrator.workflows.converge import (
        ConvergeInputs,
        plan_peers,
        run_converge,
    )
    from review_loop.orchestrator.workflows.converge_store import check_run, default_run
    from review_loop.orchestrator.workflows.skills import resolve_skills

    plan = _text(args.plan, "--plan", args.repo)
    # Without --host-position only round A runs: the host writes its position meanwhile.
    host_position = None
    if args.host_position is not None:
        host_position = _text(args.host_position, "--host-position", args.repo)
    repo = repo_from(args)
    prefs = load_user_prefs()
    skill_dirs = skill_dirs_from(args.skill_dirs, prefs.skillDirs)
    named = [p.strip() for value in args.peers for p in value.split(",") if p.strip()]
    prefs, peers = plan_peers(prefs, named, args.host, args.peer_command, shutil.which)
    if len(peers) != 2:
        raise InputError(
            "--peer",
            f"only {peers} available after removing the host; three-way convergence needs "
            "two peers (run `review-loop preflight` for the MISSING_DEPENDENCIES report)",
            "two products other than the host",
        )
    run = check_run(args.run) if args.run else default_run(repo)
    blind = checked_blind_reviewer(args.blind_reviewer, prefs)
    inputs = ConvergeInputs(
        run=run,
        plan=plan,
        host_position=host_position,
        host=args.host,
        peers=(peers[0], peers[1]),
        fallback=resolve_fallbacks(prefs, args.fallback, host=args.host, peers=peers),
        timeout_ms=positive_seconds(args.timeout, "--timeout") if args.timeout else None,
        blind_reviewer=blind,
        # Used only when no preflight is recorded: round A then stands in for it (seed).
        skills=tuple(
            resolve_skills(
                repo,
                host=resolve_peer(args.host, prefs, field="--host").product if args.host else None,
                extra_dirs=skill_dirs,
                optional=conditional_skills(repo, run, args.require_skills),
            )
        ),
    )
    ensure_layout(repo)

    async def main(stop: Stop) -> Mapping[str, Any]:
        async with stop.open_dispatcher(repo=repo, prefs=prefs) as dispatcher:
            return await run_converge(dispatcher, inputs)

    return run_cancellable(main)
