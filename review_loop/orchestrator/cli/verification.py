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
    "review-loop verification run start [--repo <root>] --verification-type audit|review|test "
    "--scope-type changeset|file --scope <base>..<head>|<file> --input stdin|<file>",
    "review-loop verification run input [--repo <root>] --verification-type <t> --scope-type <s> "
    "--scope <scope> --run <token>",
    "review-loop verification run scope add [--repo <root>] --verification-type <t> "
    "--scope-type <s> --scope <scope> --run <token> --payload stdin|<file> "
    "--idempotency-key <key>",
    "review-loop verification run finding add [--repo <root>] --verification-type <t> "
    "--scope-type <s> --scope <scope> --run <token> --payload stdin|<file> "
    "--idempotency-key <key>",
    "review-loop verification run finish [--repo <root>] --verification-type <t> --scope-type <s> "
    "--scope <scope> --run <token> --terminal-status <status> "
    "[--terminal-metadata stdin|<file>]",
    "review-loop verification run status|render [--repo <root>] --verification-type <t> "
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
    args, extra = parser.parse_known_args(_values_attached(parser, options))
    # As spx (commander): a stray positional word is ignored; an unknown option is refused.
    if any(word.startswith("-") for word in extra):
        raise UsageError(f"{name}: unrecognized arguments: {' '.join(extra)}")
    args.verb = verb
    return args


def help_details(words: Sequence[str]) -> str:
    """The payload fields of the verb ``words`` name (every verb when none is named), with
    the accepted values, generated from the tables the journal checks payloads against."""
    from review_loop.agents import run_payloads
    from review_loop.agents import verification as v

    verb = words[1] if len(words) > 1 and words[0] == "run" else None
    types = [t for t in v.VERIFICATION_TYPES if f"--verification-type={t}" in words]
    if "--verification-type" in words:
        index = words.index("--verification-type") + 1
        types += [t for t in v.VERIFICATION_TYPES if index < len(words) and words[index] == t]
    types = types or list(v.VERIFICATION_TYPES)
    lines = []
    for kind in ("scope", "finding", "terminal-metadata"):
        if verb is not None and verb != ("finish" if kind == "terminal-metadata" else kind):
            continue
        verb_name = "finish --terminal-metadata" if kind == "terminal-metadata" else f"{kind} add"
        for kind_type in types:
            if (kind_type, kind) in run_payloads.TABLES:
                lines.append(f"{verb_name} payload, --verification-type {kind_type}:")
                lines += [f"  {line}" for line in run_payloads.describe(kind_type, kind)]
    if verb in (None, "finish"):
        lines.append("finish --terminal-status, per --verification-type:")
        lines += [f"  {t}: {' | '.join(v.TERMINAL_BY_TYPE[t])}" for t in types]
    if verb in (None, "start"):
        lines += [
            "start: --verification-type " + " | ".join(v.VERIFICATION_TYPES),
            "  --scope-type changeset (--scope <base>..<head>) | file (--scope <path>)",
        ]
    if verb in (None, "scope", "finding"):
        lines.append(
            "--idempotency-key: any non-empty string (the audit workflow uses the unitId for "
            "a unit, <unitId>:<rule> for a finding); a repeat of a key answers the first record"
        )
    lines.append(
        "A refused payload names spx's first problem, then every problem of its fields "
        "(field: what is wrong; accepted). Unknown fields are dropped."
    )
    return "\n".join(lines)


def _values_attached(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """``--opt VALUE`` as ``--opt=VALUE`` for every long option that takes a value: as in
    spx (commander), the word after such an option is its value even when it starts with
    ``-`` (an idempotency key ``-k``), where argparse would read it as an option."""
    takes_value = {
        spelling
        for action in parser._actions
        if action.nargs is None
        for spelling in action.option_strings
        if spelling.startswith("--")
    }
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in takes_value and index + 1 < len(words):
            out.append(f"{word}={words[index + 1]}")
            index += 2
            continue
        out.append(word)
        index += 1
    return out


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
