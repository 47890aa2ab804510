"""``review-loop verification run ...``: the ``spx verification run`` contract on our journal.

One compact JSON line on stdout on success; the error (or the payload rejection block) on
stderr with exit 1; appended events streamed as CloudEvents lines on stderr. Beyond spx:
``finish`` succeeds once its terminal event is durable and reports a seal marker it could
not write as a warning line on stderr; ``status`` adds ``quarantined`` (tails moved aside)
and ``ignoredTail`` (a tail a read-only run could not move) only when there are any
(docs/journal.md).

Start-up matters here (agents call this once per recorded unit), so only the parser of the
verb being run is built.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
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

VERBS = ("start", "input", "scope", "finding", "finish", "status", "render")
EXTRA: dict[str, tuple[str, ...]] = {
    "start": ("--input",),
    "scope": ("--payload", "--idempotency-key"),
    "finding": ("--payload", "--idempotency-key"),
    "finish": ("--terminal-status",),
}


def configure(parser: argparse.ArgumentParser) -> None:
    """``verification [-C root] run <verb> ...``; the verb's own options are parsed later."""
    parser.add_argument("-C", "--directory", "--repo", dest="root", default=None)
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def parse_verb(rest: Sequence[str], root: str | None) -> argparse.Namespace:
    """Parse ``run <verb> [add] <options>`` with a parser for that verb only.

    Raises:
        UsageError: an unknown verb or a missing/unknown option.
    """
    from review_loop.orchestrator.cli import UsageError, new_parser

    words = list(rest)
    if not words or words[0] != "run":
        raise UsageError(
            "review-loop verification: expected 'run' (review-loop verification run …)"
        )
    verb = words[1] if len(words) > 1 else ""
    if verb not in VERBS:
        from review_loop.orchestrator.cli.usage import closest

        raise UsageError(
            f"review-loop verification run: unknown verb {verb!r} (accepted: {', '.join(VERBS)})",
            closest(verb, VERBS),
        )
    options = words[2:]
    name = f"review-loop verification run {verb}"
    if verb in ("scope", "finding"):
        if not options or options[0] != "add":
            raise UsageError(f"{name}: expected 'add'")
        options, name = options[1:], f"{name} add"
    parser = new_parser(name)
    parser.add_argument("-C", "--directory", "--repo", dest="root", default=root)
    parser.add_argument("--verification-type", required=True)
    parser.add_argument("--scope-type", required=True)
    parser.add_argument("--scope", required=True)
    if verb != "start":
        parser.add_argument("--run", required=True)
    for option in EXTRA.get(verb, ()):
        parser.add_argument(option, required=True)
    if verb == "finish":
        parser.add_argument("--terminal-metadata", default=None)
    args = parser.parse_args(options)
    args.verb = verb
    return args


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Run one verb against the run journal."""
    from review_loop.orchestrator.cli.common import refuse_empty_paths
    from review_loop.orchestrator.journal import runs

    args = parse_verb(args.rest, args.root)
    refuse_empty_paths(args)  # the verb's own -C
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
