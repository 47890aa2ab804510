"""``review-loop ledger``: the task ledger file, gate results, and the completion result.

- ``show``: the ledger.
- ``set --id ID --status S [--title T] [--evidence E]``: add or change an item
  (``VERIFIED_DONE``, ``OBSOLETE`` and ``EXCLUDED`` need ``--evidence``).
- ``gate --gate G --result TOKEN [--session S] [--detail D] [--base REF] [--paths a,b]``:
  record a gate result against the evidence computed now, stored as ``self-reported``.
  ``gate --gate agentic-review [--base REF] [--paths a,b]`` takes no token: its result
  comes from an authenticated archived review packet whose evidence equals the current
  evidence (a typed ``--result`` is ignored and reported); with none, nothing is written
  and ``ok`` is false (exit 2, ``status: GATE_UNPROVEN``). ``gate --gate
  architecture-hardening|goal-gate`` without ``--result`` takes its result from the host
  skill's report under ``.review-handoff/gate-reports/<skill>/`` (proven, or
  ``GATE_UNPROVEN``); with ``--result`` it is ``self-reported``.
- ``meta [--task T] [--goal G] [--implemented T] [--lessons T]``.
- ``result [--base REF] [--paths a,b]``: recompute the evidence, derive the result, write
  and return the "Task Completion Result" block; stale gate results are named. ``ok`` is
  false (exit 2) when the result is ``UNVERIFIED`` or ``MISSING_DEPENDENCIES``.

The file is ``.review-handoff/runtime/converge/<run>/ledger.json`` (``--run`` defaults to
the branch slug, as ``preflight``, ``converge`` and ``blind-review`` do).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ACTIONS = ("show", "set", "gate", "meta", "result")
USAGE = [
    "review-loop ledger show [--repo DIR] [--run NAME]",
    "review-loop ledger set --id ID --status VERIFIED_DONE|PENDING|OBSOLETE|EXCLUDED|"
    "HUMAN_DECISION [--title T] [--evidence E] [--run NAME]",
    "review-loop ledger gate --gate verification|architecture-hardening|goal-gate "
    "--result TOKEN [--session S] [--detail D] [--base REF] [--paths a,b] [--run NAME]",
    "review-loop ledger gate --gate agentic-review|architecture-hardening|goal-gate "
    "[--base REF] [--paths a,b] [--run NAME]",
    "review-loop ledger meta [--task T] [--goal completed|active-checkpoint|not-created|"
    "deferred-conflict] [--implemented T] [--lessons T] [--run NAME]",
    "review-loop ledger result [--base REF] [--paths a,b] [--run NAME]",
]
OUTPUT = "json"
PROVABLE_GATES = ("agentic-review", "architecture-hardening", "goal-gate")


def help_details(words: Sequence[str]) -> str:
    """The skill report a host writes for ``gate --gate architecture-hardening|goal-gate``,
    and each gate's accepted result tokens, from the models that check them."""
    from review_loop.agents.converge import (
        GATE_PASS,
        GATE_SKILLS,
        GOAL_GATE_TOKENS,
        Gate,
        skill_report_format,
    )

    lines = [
        "A skill gate's report (proves the gate; a typed --result is self-reported):",
        *(
            f"  .review-handoff/gate-reports/{skill}/<evidence digest>.json  (--gate {gate.value})"
            for gate, skill in GATE_SKILLS.items()
        ),
        "  one JSON object with the fields:",
        *(f"    {line}" for line in skill_report_format()),
        "Result tokens that pass each gate:",
        *(f"  {gate.value}: {' | '.join(sorted(GATE_PASS[gate]))}" for gate in Gate),
        f"goal-gate accepts only {' | '.join(sorted(GOAL_GATE_TOKENS))} (typed or in its report).",
    ]
    return "\n".join(lines)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the action and its options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("action", nargs="?", default="show")
    parser.add_argument("--run")
    parser.add_argument("--id", dest="item_id")
    parser.add_argument("--status")
    parser.add_argument("--title")
    parser.add_argument("--evidence")
    parser.add_argument("--gate")
    parser.add_argument("--result")
    parser.add_argument("--session")
    parser.add_argument("--detail", default="")
    parser.add_argument("--base")
    parser.add_argument("--paths", "--path", dest="paths", default=None)
    parser.add_argument("--task")
    parser.add_argument("--goal")
    parser.add_argument("--implemented")
    parser.add_argument("--lessons")


def _required(value: str | None, field: str, accepted: str) -> str:
    from review_loop.agents.errors import InputError

    if value is None or not value.strip():
        raise InputError(field, "is required for this action", accepted)
    return value


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Dispatch the action."""
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import repo_from
    from review_loop.orchestrator.workflows.converge_store import check_run, default_run

    if args.action not in ACTIONS:
        raise InputError("action", f"unknown ledger action {args.action!r}", " | ".join(ACTIONS))
    repo = repo_from(args)
    run = check_run(args.run) if args.run else default_run(repo)
    if args.action == "show":
        # read-only: a signed ledger is shown without pydantic; anything unusual goes to
        # the model (workflows/ledger_view.py, docs/performance.md)
        from review_loop.orchestrator.workflows.ledger_view import ledger_show

        return ledger_show(repo, run)
    return _change(args, repo, run)


def _change(args: argparse.Namespace, repo: Path, run: str) -> Mapping[str, Any]:
    """The actions that write the ledger: always through the models."""
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import load_user_prefs
    from review_loop.orchestrator.handoff.git import rev_parse
    from review_loop.orchestrator.workflows import converge_gates as gates

    if args.base is not None:
        rev_parse(repo, args.base)
    if args.action == "set":
        return gates.ledger_set_item(
            repo,
            run,
            item_id=_required(args.item_id, "--id", "an item id such as T1"),
            status=_required(args.status, "--status", "a ledger status"),
            title=args.title,
            evidence=args.evidence,
        )
    if args.action == "gate":
        gate = _required(args.gate, "--gate", "a gate name")
        return gates.ledger_gate(
            repo,
            run,
            gate=gate,
            # agentic-review is proven by a review packet, the skill gates by their
            # skill's report (a typed token is self-reported); verification needs one
            result=args.result
            if gate in PROVABLE_GATES
            else _required(args.result, "--result", "the gate's result token"),
            base=args.base or "HEAD",
            base_given=args.base is not None,
            paths_filter=args.paths,
            session=args.session,
            detail=args.detail,
            # the skill gates' reports name the installed skill: prefs skillDirs find it
            skill_dirs=load_user_prefs().skillDirs if gate in PROVABLE_GATES[1:] else (),
        )
    if args.action == "meta":
        changes = {
            key: value
            for key, value in (
                ("task", args.task),
                ("goal", args.goal),
                ("implemented", args.implemented),
                ("lessons", args.lessons),
            )
            if value is not None
        }
        if not changes:
            raise InputError("meta", "nothing to set", "--task, --goal, --implemented, --lessons")
        return gates.ledger_meta(repo, run, changes)
    return gates.ledger_result(
        repo, run, base=args.base, paths_filter=args.paths, skill_dirs=load_user_prefs().skillDirs
    )
