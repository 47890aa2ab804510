"""``review-loop verification run ...``: the ``spx verification run`` contract on our journal.

One compact JSON line on stdout on success; the error (or the payload rejection block) on
stderr with exit 1; appended events streamed as CloudEvents lines on stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = [
    "review-loop verification run start [-C <root>] --verification-type audit|review|test "
    "--scope-type changeset|file --scope <base>..<head>|<file> --input stdin|<file>",
    "review-loop verification run input [-C <root>] --verification-type <t> --scope-type <s> "
    "--scope <scope> --run <token>",
    "review-loop verification run scope add [-C <root>] --verification-type <t> "
    "--scope-type <s> --scope <scope> --run <token> --payload stdin|<file> "
    "--idempotency-key <key>",
    "review-loop verification run finding add [-C <root>] --verification-type <t> "
    "--scope-type <s> --scope <scope> --run <token> --payload stdin|<file> "
    "--idempotency-key <key>",
    "review-loop verification run finish [-C <root>] --verification-type <t> --scope-type <s> "
    "--scope <scope> --run <token> --terminal-status <status> "
    "[--terminal-metadata stdin|<file>]",
    "review-loop verification run status|render [-C <root>] --verification-type <t> "
    "--scope-type <s> --scope <scope> --run <token>",
]
OUTPUT = "line"


def _leaf(
    verbs: Any, name: str, *, run: bool = True, extra: tuple[str, ...] = ()
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = verbs.add_parser(name, add_help=False, allow_abbrev=False)
    parser.add_argument("-C", dest="root", default=argparse.SUPPRESS)
    parser.add_argument("--verification-type", required=True)
    parser.add_argument("--scope-type", required=True)
    parser.add_argument("--scope", required=True)
    if run:
        parser.add_argument("--run", required=True)
    for option in extra:
        parser.add_argument(option, required=True)
    return parser


def configure(parser: argparse.ArgumentParser) -> None:
    """``verification run <verb>``; ``-C`` is accepted before ``run`` or on the verb."""
    parser.add_argument("-C", dest="root", default=None)
    groups = parser.add_subparsers(dest="group", required=True)
    run = groups.add_parser("run", add_help=False, allow_abbrev=False)
    run.add_argument("-C", dest="root", default=argparse.SUPPRESS)
    verbs = run.add_subparsers(dest="verb", required=True)
    _leaf(verbs, "start", run=False, extra=("--input",))
    _leaf(verbs, "input")
    for resource in ("scope", "finding"):
        holder = verbs.add_parser(resource, add_help=False, allow_abbrev=False)
        holder.add_argument("-C", dest="root", default=argparse.SUPPRESS)
        actions = holder.add_subparsers(dest="action", required=True)
        _leaf(actions, "add", extra=("--payload", "--idempotency-key"))
    finish = _leaf(verbs, "finish", extra=("--terminal-status",))
    finish.add_argument("--terminal-metadata", default=None)
    _leaf(verbs, "status")
    _leaf(verbs, "render")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Run one verb against the run journal."""
    from review_loop.orchestrator.journal import runs

    cwd = runs.resolve_cwd(args.root)
    if args.verb == "start":
        return runs.start(cwd, args.verification_type, args.scope_type, args.scope, args.input)
    run = runs.address(cwd, args.verification_type, args.scope_type, args.scope, args.run)
    if args.verb == "input":
        return runs.read_input(run)
    if args.verb in ("scope", "finding"):
        return runs.add_evidence(run, args.verb, args.idempotency_key, args.payload)
    if args.verb == "finish":
        return runs.finish(run, args.terminal_status, args.terminal_metadata)
    if args.verb == "status":
        return runs.status(run)
    return runs.render(run)
