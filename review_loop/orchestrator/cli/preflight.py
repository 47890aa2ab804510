"""``review-loop preflight``: prove Peer A, Peer B and the blind reviewer are really usable.

A real round trip and a resumable session (listed by ``sessions``) for each, before any
work starts; otherwise the seed's ``MISSING_DEPENDENCIES`` block (``ok: false``, exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports the prefs models only when it runs
    from review_loop.prefs import Prefs

USAGE = [
    "review-loop preflight [--repo DIR] [--host H] [--reviewer P [--reviewer P2]] "
    "[--peer-command NAME] "
    "[--blind-reviewer claude] [--run NAME] [--timeout SECONDS] [--no-git-writes] "
    "[--skill-dir DIR ...] [--require-skill grill-with-docs ...]",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare preflight's options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument(
        "--peer", "--reviewer", "--executor", dest="peers", action="append", default=[]
    )
    parser.add_argument("--peer-command", dest="peer_command")
    parser.add_argument("--host")
    parser.add_argument("--blind-reviewer", dest="blind_reviewer")
    parser.add_argument("--run")
    parser.add_argument("--timeout")
    parser.add_argument("--no-git-writes", dest="no_git_writes", action="store_true")
    parser.add_argument("--skill-dir", dest="skill_dirs", action="append", default=[])
    parser.add_argument("--require-skill", dest="require_skills", action="append", default=[])


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate, then run the three round trips in parallel."""
    import shutil

    from review_loop.orchestrator.cli.common import load_user_prefs, positive_seconds, repo_from
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.dispatcher import resolve_peer
    from review_loop.orchestrator.handoff.git import ensure_layout
    from review_loop.orchestrator.workflows.converge import plan_peers
    from review_loop.orchestrator.workflows.converge_gates import Role, run_preflight
    from review_loop.orchestrator.workflows.converge_store import check_run, default_run
    from review_loop.orchestrator.workflows.skills import resolve_skills

    repo = repo_from(args)
    prefs = load_user_prefs()
    skill_dirs = skill_dirs_from(args.skill_dirs, prefs.skillDirs)
    named = [p.strip() for value in args.peers for p in value.split(",") if p.strip()]
    prefs, peers = plan_peers(prefs, named, args.host, args.peer_command, shutil.which)
    blind = checked_blind_reviewer(args.blind_reviewer, prefs)
    timeout_ms = positive_seconds(args.timeout, "--timeout") if args.timeout else None
    run = check_run(args.run) if args.run else default_run(repo)
    roles = [Role(f"Peer {side}", peer) for side, peer in zip("AB", peers, strict=False)]
    roles.append(Role("Blind reviewer", blind))
    unavailable = [
        f"Peer {side}: no product left in the prefs order {list(prefs.order)} after removing "
        f"the host{' ' + repr(args.host) if args.host else ''} and the other peer"
        for side in "AB"[len(peers) :]
    ]
    if args.no_git_writes:
        # The exclude entry lives in $GIT_COMMON_DIR/info/exclude: with .git/** writes
        # forbidden the loop stops before any source change (seed: HUMAN_GATE).
        return {
            "ok": True,
            "status": "HUMAN_GATE",
            "result": "HUMAN_GATE",
            "run": run,
            "message": "the loop writes /.review-handoff/ to $GIT_COMMON_DIR/info/exclude; "
            "with .git/** writes forbidden it stops here, before any source change. "
            "Nothing was written and no peer was asked.",
        }
    ensure_layout(repo)
    # Presence only (the repository's skill directories are untrusted: nothing there runs).
    skills = resolve_skills(
        repo,
        host=resolve_peer(args.host, prefs, field="--host").product if args.host else None,
        extra_dirs=skill_dirs,
        optional=conditional_skills(repo, run, args.require_skills),
    )

    async def main(stop: Stop) -> Mapping[str, Any]:
        async with stop.open_dispatcher(repo=repo, prefs=prefs) as dispatcher:
            return await run_preflight(
                dispatcher,
                run=run,
                roles=roles,
                unavailable=unavailable,
                timeout_ms=timeout_ms,
                skills=skills,
            )

    return run_cancellable(main)


def checked_blind_reviewer(value: str | None, prefs: Prefs) -> str:
    """``--blind-reviewer`` (default ``claude``): a Claude session, or an alias of one.

    Raises:
        InputError: a name of another product (no product stands in for the blind review).
    """
    from review_loop.agents.converge import BLIND_REVIEWER_PRODUCT
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.dispatcher import resolve_peer

    blind = value or BLIND_REVIEWER_PRODUCT
    if resolve_peer(blind, prefs, field="--blind-reviewer").product != BLIND_REVIEWER_PRODUCT:
        raise InputError(
            "--blind-reviewer",
            f"{blind!r} is not a {BLIND_REVIEWER_PRODUCT} session; no product stands in",
            f"{BLIND_REVIEWER_PRODUCT} or a peer-command alias of it",
        )
    return blind


def conditional_skills(repo: Path, run: str, named: list[str]) -> list[str]:
    """The conditional skills this round needs: those named (``--require-skill``), and
    ``grill-with-docs`` when the run's ledger holds a ``HUMAN_DECISION`` (seed 004: "or
    preflight finds product/domain decisions still owned by the user")."""
    from review_loop.agents.converge import GRILL_SKILL, LedgerStatus
    from review_loop.orchestrator.workflows.converge_store import RunPaths, load_ledger

    wanted = [name.strip() for name in named if name.strip()]
    if GRILL_SKILL not in wanted and load_ledger(RunPaths(repo, run)).by_status(
        LedgerStatus.HUMAN_DECISION
    ):
        wanted.append(GRILL_SKILL)
    return wanted


def skill_dirs_from(flags: list[str], saved: tuple[str, ...]) -> list[str]:
    """``--skill-dir`` values (absolute, or ``~``), then prefs ``skillDirs`` (also converge's)."""
    from review_loop.agents.errors import InputError

    for value in flags:
        if not (value.startswith(("/", "~/")) or value == "~"):
            raise InputError(
                "--skill-dir", f"{value!r} is not an absolute directory", "/path or ~/path"
            )
    return [*flags, *saved]
