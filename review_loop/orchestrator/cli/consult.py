"""``review-loop consult``: ask one or more peers, read-only; advisory answers as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from review_loop.orchestrator.handoff.git import Checkout
    from review_loop.orchestrator.workflows.consult import ConsultPlan
    from review_loop.prefs.model import Prefs

USAGE = [
    "review-loop consult [--repo DIR] --reviewer P [--reviewer P2 ...] [--fallback F|auto] "
    "(--question-file Q | --question T) [--peer-command NAME] [--host H --skip-host] "
    "[--timeout SECONDS] [--resume SESSION_ID]",
]
OUTPUT = "json"
IGNORES_UNKNOWN = True  # as the original: a word it does not know is ignored (and said)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare consult's options."""
    parser.add_argument("--repo", "--repo-root", "-C", dest="repo")
    parser.add_argument("--cwd", dest="cwd")  # the original's: the repository containing it
    parser.add_argument(
        "--peer", "--reviewer", "--executor", dest="peers", action="append", default=[]
    )
    parser.add_argument("--fallback", dest="fallback", action="append", default=[])
    parser.add_argument("--question-file", "--questionFile", dest="question_file")
    parser.add_argument("--question", dest="question")
    parser.add_argument("--peer-command", dest="peer_command")
    parser.add_argument("--host", dest="host")
    parser.add_argument("--timeout", dest="timeout")
    parser.add_argument("--resume", dest="resume")
    # true/false, or alone for true: a value that may be missing is argparse's to read
    parser.add_argument("--skip-host", dest="skip_host", nargs="?", const="true", default=None)


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Validate everything first (nothing is written on bad input), then consult."""
    from review_loop.orchestrator.handoff.git import ensure_layout

    checkout, prefs, plan = _checked(args)
    ensure_layout(checkout)
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.workflows.consult import run_consult

    async def main(stop: Stop) -> Mapping[str, Any]:
        async with stop.open_dispatcher(repo=checkout, prefs=prefs) as dispatcher:
            return await run_consult(dispatcher, plan, interrupted=stop.keep)

    document = run_cancellable(main)
    _keep_round_trips(checkout.root, document)
    return document


def _keep_round_trips(repo: Path, document: Mapping[str, Any]) -> None:
    """Each answered peer with a session: the seed's preflight recipe is consult, then
    sessions; the ledger's result finds these (``converge_gates.preflight_from_consults``)."""
    import sys

    from review_loop.agents.errors import ReviewLoopError
    from review_loop.orchestrator.workflows.converge_store import record_round_trip

    for result in document.get("results", [document]):
        if result.get("ok") and result.get("sessionId") and result.get("product"):
            try:
                record_round_trip(repo, str(result["product"]), str(result["sessionId"]))
            except (OSError, ReviewLoopError) as error:  # the answer is printed all the same
                sys.stderr.write(
                    f"[review-loop] consult: the round trip was not kept as preflight "
                    f"evidence ({error})\n"
                )
                return


def _checked(args: argparse.Namespace) -> tuple[Checkout, Prefs, ConsultPlan]:
    """The checkout, the prefs and the plan, or the first error in the order of the checks."""
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import (
        checked_resume_id,
        load_user_prefs,
        parse_bool,
        positive_seconds,
    )
    from review_loop.orchestrator.cli.named_files import read_named_text
    from review_loop.orchestrator.dispatcher import peer_name, resolve_peer
    from review_loop.orchestrator.handoff.git import locate
    from review_loop.orchestrator.workflows.consult import (
        ConsultPlan,
        resolve_fallbacks,
        select_peers,
        with_peer_command,
    )

    if args.question_file is not None:  # wins over --question, as in the original
        question = read_named_text(args.question_file, "--question-file", args.repo)
    elif args.question is not None:
        question = args.question
    else:
        raise InputError(
            "--question-file", "no question given", "--question-file Q or --question T"
        )
    if not question.strip():
        raise InputError(
            "--question-file" if args.question_file is not None else "--question",
            "the question is empty",
            "non-blank text",
        )
    # one git process: the top level and the common dir (--repo wins over --cwd, as the original)
    checkout = locate(args.repo if args.repo is not None else args.cwd)
    prefs = load_user_prefs()
    skip_host = parse_bool(args.skip_host, "--skip-host")
    if args.host is not None:
        resolve_peer(args.host, prefs, field="--host")
    peers = [
        peer_name(p.strip(), prefs) for value in args.peers for p in value.split(",") if p.strip()
    ]
    peers = select_peers(prefs, peers, args.host, skip_host)
    if len(set(peers)) != len(peers):
        raise InputError("--peer", f"the same peer is named twice: {peers}", "distinct peers")
    if args.peer_command is not None:
        import shutil  # here: only a launcher named on the command line is looked up

        prefs, peers = with_peer_command(prefs, peers, args.peer_command, shutil.which)
    resolved = [resolve_peer(p, prefs) for p in peers]
    skipping = prefs.skipHost if skip_host is None else skip_host
    if skipping and args.host is not None and any(r.product == args.host for r in resolved):
        raise InputError("--peer", f"the host product {args.host!r} cannot be its own peer")
    if args.resume is not None and len(resolved) != 1:
        raise InputError("--resume", "resumes one peer's session", "exactly one --peer")
    plan = ConsultPlan(
        peers=tuple(peers),
        question=question,
        fallback=resolve_fallbacks(prefs, args.fallback, host=args.host, peers=peers),
        host=args.host,
        timeout_ms=positive_seconds(args.timeout, "--timeout") if args.timeout else None,
        resume_session_id=checked_resume_id(args.resume),
    )
    return checkout, prefs, plan
