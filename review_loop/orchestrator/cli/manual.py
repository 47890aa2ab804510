"""Human help: ``review-loop -h``, ``review-loop COMMAND --help`` and ``--version``.

``review-loop help`` stays the JSON document agents read (:mod:`.help`); this module is the
text a person reads: for each command its synopsis (the command module's ``USAGE``), what
it does, every flag with its meaning and default, and examples. A contract test checks that
every option a command's parser declares is described here, so a new flag without a
description fails the build.

Whether ``-h``/``--help`` asks for help is decided token by token (:func:`help_requested`):
as the value of a flag that takes one (``consult --question -h``) it is that value, never a
request for help (adversary finding F10).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

# The help words live with the entry (:mod:`review_loop.orchestrator.cli`), which imports
# this module only when a command line holds one of them (or is empty).
from review_loop.agents.constants import DEFAULT_ROUNDS
from review_loop.orchestrator.cli.flags import HELP_FLAGS


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag or positional argument: how it is written, what it means, its default."""

    spelling: str
    meaning: str
    default: str = "none"


@dataclass(frozen=True, slots=True)
class Page:
    """The human help of one command."""

    summary: str
    flags: tuple[Flag, ...]
    examples: tuple[str, ...]
    notes: str = ""


_REPO = Flag(
    "--repo DIR",
    "the git checkout to work on (aliases -C, --repo-root); --cwd D, the original's option: "
    "the checkout that contains D",
    "the git top level of the cwd",
)
_TIMEOUT = Flag(
    "--timeout SECONDS",
    "deadline per reviewer call, 1 to 86400 seconds; a reviewer still running is then "
    "stopped (SIGTERM, then SIGKILL after the grace period)",
    "prefs timeoutMs (20 minutes), or REVIEW_LOOP_TIMEOUT_MS",
)
_PEER = Flag(
    "--reviewer P",
    "a reviewer: a product (codex, claude, gemini, grok, opencode, qwen; simulated: an "
    "offline stand-in) "
    "or a prefs alias; "
    "repeatable or comma-separated (aliases --peer, --executor)",
    "the prefs order, without the host",
)
_PEER_COMMAND = Flag(
    "--peer-command NAME",
    "run the peer through this prefs alias or executable on PATH instead of the product's "
    "own command (see 'review-loop prefs alias')",
)
_HOST = Flag(
    "--host H",
    "the product you (the coding host) are. consult leaves it out of the peers it chooses "
    "only when skipHost is true (prefs skipHost, or --skip-host; by default false, so a "
    "fresh session of your own product may be asked); run, converge and preflight never "
    "choose it, and no --fallback may name it",
)
_FALLBACK = Flag(
    "--fallback F|auto",
    "when a peer times out or could not be asked (not installed, not logged in), ask F "
    "instead, with a full deadline of its own; F may not be the host's or a peer's product. "
    "'auto' takes the first installed product of the prefs order that neither the host nor "
    "a standard peer uses; repeatable",
    "no fallback",
)
_RUN_NAME = Flag(
    "--run NAME",
    "the name of the convergence run to create or continue",
    "the current branch's run (named by the branch slug)",
)
_BASE = Flag("--base REF", "the commit the changes are compared with", "HEAD")
_PATHS = Flag("--paths a,b", "limit the diff to these paths (alias --path)", "every changed path")
_PACKET_MEANING = (
    "the review packet: the file 'run' printed as packetPath "
    "(.review-handoff/active/<branch>/<name>.md), or its packetId (alias --packet-path)"
)
_PACKET = Flag(
    "--packet PATH", _PACKET_MEANING, "with --continue, the scope's latest active packet"
)
_PACKET_REQUIRED = Flag("--packet PATH", f"required: {_PACKET_MEANING}")
_CONSULT_PEER = Flag(
    _PEER.spelling,
    _PEER.meaning,
    "none: name one, or give --host H for the first two of the prefs order (without the "
    "host when skipHost is true: --skip-host, or prefs skipHost)",
)

PAGES: dict[str, Page] = {
    "consult": Page(
        "Ask one or more peers a question, read-only and in parallel; print their advisory "
        "answers. Nothing in the repository is changed.",
        (
            _REPO,
            _CONSULT_PEER,
            _FALLBACK,
            Flag(
                "--question-file Q", "read the question from this UTF-8 file (alias --questionFile)"
            ),
            Flag("--question T", "the question itself (give this or --question-file)"),
            _PEER_COMMAND,
            _HOST,
            Flag(
                "--skip-host [true|false]",
                "with --host and no --reviewer: pick the peers from the prefs order, leaving out "
                "the host",
                "prefs skipHost",
            ),
            _TIMEOUT,
            Flag(
                "--resume SESSION_ID",
                "continue this peer session (as printed in sessionId); needs exactly one "
                "--reviewer",
                "a new session",
            ),
        ),
        (
            "review-loop consult --repo . --reviewer codex "
            "--question 'Is the fix in calc.py right?'",
            "review-loop consult --reviewer codex,claude --question-file q.md --timeout 600",
            "review-loop consult --reviewer simulated --question 'Try me without any API key'",
        ),
    ),
    "sessions": Page(
        "List reviewer sessions of this repository (review-loop's records and each CLI's own "
        "store), newest first, with copy-ready resume commands. resume and resumeInShell "
        "are the bare commands (as the original tool printed them): they resume the "
        "reviewer WITHOUT the read-only flags it ran with, so it could write. Prefer "
        "resumeReadOnly / resumeReadOnlyInShell, which keep them; when a CLI has no "
        "read-only mode, resumeReadOnly.unavailable says so instead of giving a command.",
        (_REPO, Flag("--product P", "only this product's sessions", "every product")),
        ("review-loop sessions", "review-loop sessions --repo . --product claude"),
    ),
    "prefs": Page(
        "Show or change your preferences ($REVIEW_LOOP_HOME/prefs.toml).",
        (
            Flag(
                "ACTION",
                "show | set KEY VALUE | alias NAME PRODUCT COMMAND [ARG ...] | unalias NAME | "
                "reset (reset also repairs a prefs.toml that cannot be read)",
                "show",
            ),
            Flag("VALUES", "the action's arguments (see the synopsis)"),
        ),
        (
            "review-loop prefs",
            "review-loop prefs set order claude,codex,grok",
            "review-loop prefs alias codex2 codex /opt/codex/bin/codex",
            "review-loop prefs reset",
        ),
    ),
    "evidence": Page(
        "Print the evidence of the current changes (base commit, covered paths, digest); "
        "runs no reviewer.",
        (_REPO, _BASE, _PATHS),
        ("review-loop evidence --repo .", "review-loop evidence --base main --paths src/"),
    ),
    "verify-diff": Page(
        "A fresh executor judges whether the staged-free working-tree diff fixes what it says "
        "it fixes; prints the verdict JSON.",
        (
            _REPO,
            Flag("--description D", "what the diff is meant to fix"),
            Flag(
                "--fix-direction F",
                "how it is meant to fix it (alias --suggested-fix-direction)",
            ),
            Flag("--target PATH", "the file the fix is about (alias --target-file)"),
            Flag("--base REF", "the commit the diff is taken against (alias --base-ref)", "HEAD"),
            Flag("--max-iterations N", "how many executor rounds at most", "1"),
            Flag(
                "--reviewer P",
                "the product that judges (aliases --executor, --peer)",
                "the first product in prefs order",
            ),
            Flag("--scenarios-file S", "extra scenarios to check, one file"),
            _TIMEOUT,
        ),
        (
            "review-loop verify-diff --repo .    (auto-derive the framing from the diff)",
            "review-loop verify-diff --description 'off by one' --fix-direction 'use <=' "
            "--target calc.py --reviewer simulated",
        ),
        "Give all three of --description, --fix-direction and --target, or none of them.",
    ),
    "run": Page(
        "One review round of the auto-loop: a headless read-only reviewer reviews the "
        "changes and writes a packet with its verdict.",
        (
            _REPO,
            Flag(
                "--reviewer P",
                "the reviewing product (aliases --peer, --executor, --product-reviewer)",
                "the first product of the prefs order that is not the host (claude when --host "
                "is not given): codex under the default order",
            ),
            _HOST,
            Flag(
                "--completion review|pass",
                "what PASS_WITH_CONCERNS does: review waits for the user (close, or another "
                "run --continue), as the original; pass has the concerns fixed and re-reviewed",
                "review",
            ),
            Flag("--until-pass", "the same as --completion pass"),
            Flag("--base REF", "the commit the changes are compared with", "HEAD"),
            Flag("--rounds N|+N", "the round budget (or N more rounds)", str(DEFAULT_ROUNDS)),
            Flag("--continue [true|false]", "continue the current packet (alias --cont)"),
            Flag("--scope SLUG", "the scope name (alias --scope-slug)", "auto-loop"),
            _PACKET,
            Flag("--paths a,b", "limit the review to these paths; repeatable (alias --path)"),
            Flag("--intake [true|false]", "an intake round (reviews before any fix)", "false"),
            _TIMEOUT,
            Flag("--no-sandbox", "refused: the reviewer always runs read-only"),
            Flag("--disable-sandbox", "refused: the reviewer always runs read-only"),
            Flag("--sandbox", "refused: the reviewer always runs read-only"),
        ),
        (
            "review-loop run --repo . --reviewer codex",
            "review-loop run --reviewer simulated --timeout 60    (offline, no key)",
            "review-loop run --continue",
        ),
    ),
    "fix-completion": Page(
        "Record the fixer's answer to a review packet (what was fixed, what was not).",
        (
            _REPO,
            _PACKET_REQUIRED,
            Flag("--body-file F", "read the answer from this file (alias --bodyFile)"),
            Flag("--body TEXT", "the answer itself (give this or --body-file)"),
        ),
        ('review-loop fix-completion --packet "$(jq -r .packetPath run.json)" --body-file fix.md',),
    ),
    "close": Page(
        "Close a review packet without a passing verdict.",
        (_REPO, _PACKET_REQUIRED, Flag("--reason accept-concerns", "why it is closed")),
        ('review-loop close --packet "$(jq -r .packetPath run.json)" --reason accept-concerns',),
    ),
    "preflight": Page(
        "Check before a convergence run that both peers and the blind reviewer answer.",
        (
            _REPO,
            _PEER,
            _PEER_COMMAND,
            _HOST,
            Flag("--blind-reviewer P", "the blind reviewer (claude or an alias of it)", "claude"),
            _RUN_NAME,
            _TIMEOUT,
            Flag(
                "--skill-dir DIR",
                "one more directory to look for the host's skills in; repeatable (absolute or ~)",
                "prefs skillDirs, then the host's own skill directories",
            ),
            Flag(
                "--require-skill NAME",
                "a skill the run needs; preflight reports whether it is present; repeatable",
            ),
            Flag(
                "--no-git-writes",
                "writes to .git/ are forbidden: stop before anything is written (HUMAN_GATE)",
            ),
        ),
        ("review-loop preflight --repo . --host claude",),
    ),
    "converge": Page(
        "Three-party convergence on a plan: both peers give positions, then each sees the "
        "host's and the other's position (two rounds at most).",
        (
            _REPO,
            Flag("--plan FILE", "the plan to converge on"),
            Flag(
                "--host-position FILE",
                "your (the host's) position on the plan; without it only round A runs and "
                "is kept, so you write it while the peers answer",
                "round A only",
            ),
            _HOST,
            _PEER,
            _PEER_COMMAND,
            _FALLBACK,
            _RUN_NAME,
            _TIMEOUT,
            Flag(
                "--blind-reviewer P",
                "the blind reviewer (claude or an alias of it), proven alongside round A "
                "when no preflight is recorded",
                "claude",
            ),
            Flag(
                "--skill-dir DIR",
                "one more directory to look for the host's skills in, when no preflight is "
                "recorded (round A then stands in for it); repeatable",
                "prefs skillDirs, then the host's own skill directories",
            ),
            Flag("--require-skill NAME", "a skill this run needs (e.g. grill-with-docs)"),
        ),
        (
            "review-loop converge --plan plan.md --host-position mine.md --host claude",
            "review-loop converge --plan plan.md --host-position mine.md "
            "--reviewer codex --reviewer gemini",
        ),
    ),
    "blind-review": Page(
        "A reviewer who has seen no discussion reviews the changes.",
        (
            _REPO,
            _BASE,
            _PATHS,
            Flag(
                "--reviewer P",
                "the blind reviewer (aliases --blind-reviewer, --peer, --executor)",
                "claude",
            ),
            _RUN_NAME,
            _TIMEOUT,
            Flag(
                "--continue",
                "after the budget of two blind reviews is spent: continue this run from the "
                "incomplete evidence with a new budget",
            ),
        ),
        ("review-loop blind-review --repo . --base main",),
    ),
    "ledger": Page(
        "Read or update the run's ledger of findings, gates and metadata.",
        (
            _REPO,
            Flag("ACTION", "show | set | gate | meta | result", "show"),
            _RUN_NAME,
            Flag("--id ID", "the finding to set"),
            Flag("--status S", "VERIFIED_DONE, PENDING, OBSOLETE, EXCLUDED or HUMAN_DECISION"),
            Flag("--title T", "the finding's title"),
            Flag("--evidence E", "the evidence for the status"),
            Flag("--gate G", "verification, agentic-review, architecture-hardening or goal-gate"),
            Flag(
                "--result TOKEN",
                "the gate's result token (self-reported); without it, agentic-review, "
                "architecture-hardening and goal-gate take it from their proof",
            ),
            Flag("--session S", "the session that produced the gate result"),
            Flag("--detail D", "free text for the gate", "empty"),
            Flag("--base REF", "the commit the gate's evidence is taken against", "HEAD"),
            _PATHS,
            Flag("--task T", "meta: the task"),
            Flag(
                "--goal G", "meta: completed, active-checkpoint, not-created or deferred-conflict"
            ),
            Flag("--implemented T", "meta: what was implemented"),
            Flag("--lessons T", "meta: lessons learned"),
        ),
        ("review-loop ledger show", "review-loop ledger set --id F1 --status VERIFIED_DONE"),
    ),
    "lessons": Page(
        "The task-completion loop's cross-task lessons: list them (Phase 0), write one "
        "(cue, lesson and evidence, or nothing) at the end.",
        (
            Flag("ACTION", "list | write", "list"),
            Flag("--slug S", "write: the entry's name (<slug>.md)"),
            Flag("--cue C", "write: the shape of situation it applies to"),
            Flag("--lesson L", "write: the approach or pitfall learned"),
            Flag("--evidence E", "write: the evidence id, gate or blind review proving it"),
            _REPO,
            Flag("--run NAME", "write: record it in this run's ledger (one per run)", "none"),
        ),
        (
            "review-loop lessons",
            "review-loop lessons write --slug rereview-after-fix --cue '...' --lesson '...' "
            "--evidence '...' --run task",
        ),
        "The directory is ${AGENT_LESSONS_DIR:-~/.local/state/agent-lessons}/"
        "task-completion-loop/, never the repository.",
    ),
    "verification": Page(
        "The verification run journal (spx's contract: one compact JSON line on stdout, "
        "errors on stderr).",
        (
            Flag(
                "--repo ROOT",
                "run as if started in ROOT (aliases -C, --directory)",
                "the git top level of the cwd",
            ),
            Flag(
                "REST",
                "run VERB [options]: start, input, scope add, finding add, finish, status, render",
            ),
            Flag("--verification-type T", "audit, review or test"),
            Flag("--scope-type S", "changeset or file"),
            Flag("--scope SCOPE", "<base>..<head> or a file"),
            Flag("--run TOKEN", "the run token printed by 'start' (every verb but start)"),
            Flag("--input stdin|FILE", "start: the run's input"),
            Flag("--payload stdin|FILE", "scope add / finding add: the evidence"),
            Flag(
                "--idempotency-key KEY",
                "scope add / finding add: a retry with the same key is a no-op",
            ),
            Flag("--terminal-status STATUS", "finish: the final status"),
            Flag("--terminal-metadata stdin|FILE", "finish: metadata to record"),
        ),
        (
            "git diff | review-loop verification run start --verification-type review "
            "--scope-type changeset --scope main..HEAD --input stdin",
        ),
    ),
    "scope": Page(
        "Resolve an audit scope selector to a base..head identity.",
        (
            Flag("resolve SELECTOR", "HEAD, a branch, or base...head"),
            Flag("--repo DIR", "the checkout (alias -C)", "the git top level of the cwd"),
            Flag("--audit-input FILE", "the audit input to materialise"),
            Flag("--scratch-dir DIR", "where to materialise it"),
            Flag("--output FILE", "where to write the result"),
            Flag("--reconcile-run TOKEN", "reconcile with this verification run"),
            Flag("--scope-identity ID", "the <base>..<head> to reconcile with"),
        ),
        ("review-loop scope resolve HEAD --repo .",),
    ),
    "audit": Page(
        "The audit-implementation workflow: concern agents review a scope; findings are filed.",
        (
            Flag("SELECTOR", "HEAD, a branch, base...head or worktree:selector"),
            Flag(
                "--repo DIR",
                "the checkout; the positional DIR, the original's form, is the same (aliases "
                "-C, --repo-root)",
                "the git top level of the cwd",
            ),
            Flag(
                "--concerns FILE",
                "the concern agents' configuration, beside the user's",
                "the concerns configured in $REVIEW_LOOP_HOME/audit-concerns.json and "
                "$REVIEW_LOOP_AUDIT_CONCERNS; a selected concern none configures is missing-skill",
            ),
            Flag(
                "--driver FILE|self",
                "the run-driver identity (six producer fields); self: review-loop's own",
                "none: the audit is BLOCKED not-started",
            ),
            Flag(
                "--deterministic-verification FILE",
                'established deterministic-verification facts {"head": <commit>, ...}',
                "unestablished",
            ),
            _TIMEOUT,
        ),
        ("review-loop audit HEAD . --driver self",),
    ),
    "shim": Page(
        "Write DIR/spx, a launcher that runs review-loop, so skills that call "
        "'spx verification run ...' work unchanged. Opt-in: never over an existing file, "
        "never in front of another spx on PATH unless --allow-shadow; remove it with rm.",
        (
            Flag("NAME", "the launcher to write: spx"),
            Flag("--dir DIR", "an existing directory to write it into"),
            Flag("--allow-shadow", "write it even where it would come before another spx on PATH"),
        ),
        ("review-loop shim spx --dir ~/.local/bin",),
    ),
    "mcp": Page(
        "Serve the commands as MCP tools on stdio for a coding host (consult, run, preflight, "
        "converge as jobs polled with job_wait; sessions, evidence, fix_completion, close). "
        "Register it once with your host; see docs/mcp.md.",
        (
            Flag(
                "(no options)",
                "stdin and stdout carry the protocol; every tool names its repo; progress "
                "and the closing document go to stderr",
            ),
        ),
        ("claude mcp add -s user review-loop -- review-loop mcp",),
    ),
    "doctor": Page(
        "Check which reviewers can be asked here, and why not. Per product: the executable "
        "on PATH, its version, its login (as the CLI itself tells it, without a model call), "
        "and whether "
        "this version's --help still lists every flag that keeps it read-only and locked "
        "down (a consult refuses a product that lacks one, NOT_SUBMITTED naming the flag); "
        "then whether the repository-code lockdown can be set up on this machine and where "
        "the loop's skills were found. Runs no model. Exit 0 when at least one reviewer "
        "(not the offline stand-in) is usable, 2 when none is; a table on stderr when "
        "stderr or stdout is a terminal.",
        (
            Flag(
                "--repo DIR",
                "the checkout whose own skill locations count (aliases -C, --repo-root); "
                "--cwd D: the checkout that contains D",
                "the git top level of the cwd; outside a checkout, the cwd",
            ),
        ),
        ("review-loop doctor", "review-loop doctor | jq '.products[] | {name, usable, why}'"),
    ),
    "demo": Page(
        "Try the whole review loop offline: no key, no reviewer CLI, a throw-away "
        "repository. There (one commit, one change), the simulated reviewer answers a "
        "consult, then scripted answers take run BLOCKED -> fix-completion -> run --continue "
        "PASS_WITH_CONCERNS -> close, and verify-diff judges the fix. Each command is shown "
        "on stderr as typed, with what came of it; stdout gets one JSON document holding "
        "every step's document. Exit 0 when every step gave what the loop promises, 2 when "
        "one did not (failedStep). The directory (and the state of every step, "
        "REVIEW_LOOP_HOME inside it) is removed on every exit, Ctrl-C and SIGTERM included.",
        (
            Flag(
                "--keep",
                "keep the throw-away directory (its path is printed on stderr) to try the "
                "printed resume commands afterwards",
                "removed",
            ),
        ),
        ("review-loop demo", "review-loop demo | jq '.steps[] | {step, status}'"),
    ),
    "help": Page(
        "Print the JSON document agents read: every synopsis, defaults and exit codes.",
        (),
        ("review-loop help | jq .usage",),
    ),
}

_FOOTER = """\
Output: one JSON document on stdout; progress on stderr. Exit codes: 0 success,
2 the result says ok:false, 1 usage error or crash.
No API key? --reviewer simulated (or --peer, --executor) answers consult, run and verify-diff
offline (review-loop's own stand-in reviewer; its answers say they are simulated);
review-loop demo runs the whole review loop with it. review-loop doctor: your reviewers.
State: REVIEW_LOOP_HOME (default $XDG_CONFIG_HOME/review-loop)."""


def _page(name: str) -> Page:
    """The command's page; a command without one still gets its synopsis (the contract test
    ``tests/test_cli_help.py`` fails until it has a page)."""
    return PAGES.get(name) or Page("(no description yet)", (), (f"review-loop {name} ...",))


def version() -> str:
    """The installed distribution's version (the package's own, read from its metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("review-loop")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def version_text() -> str:
    """``review-loop --version``."""
    return f"review-loop {version()}"


def _wrap(text: str, indent: int, hang: int = 0) -> str:
    import textwrap

    return textwrap.fill(
        text, width=92, initial_indent=" " * indent, subsequent_indent=" " * (indent + hang)
    )


def overview(commands: Sequence[str]) -> str:
    """``review-loop``, ``review-loop -h``: every command with its one-line summary."""
    width = max(len(name) for name in commands)
    lines = [
        f"review-loop {version()}: put work in front of independent AI reviewer CLIs, "
        "read-only, in parallel.",
        "",
        "Usage: review-loop COMMAND [OPTIONS]    review-loop COMMAND --help    "
        "review-loop --version",
        "",
        "Commands:",
    ]
    for name in commands:
        first = _page(name).summary.split(". ")[0].rstrip(".")
        lines.append(_wrap(f"{name.ljust(width)}  {first}", 2, hang=width + 4))
    lines += ["", "'review-loop help' prints the same as JSON for agents.", _FOOTER]
    return "\n".join(lines)


def command_help(name: str, usage: Sequence[str]) -> str:
    """``review-loop NAME --help``: synopsis, description, flags with defaults, examples."""
    page = _page(name)
    lines = ["Usage:"]
    lines += [f"  {line}" for line in usage]
    lines += ["", _wrap(page.summary, 0)]
    if page.notes:
        lines += ["", _wrap(page.notes, 0)]
    if page.flags:
        lines += ["", "Options:"]
        for flag in page.flags:
            lines.append(f"  {flag.spelling}")
            meaning = flag.meaning
            if flag.default != "none":
                meaning += f" (default: {flag.default})"
            lines.append(_wrap(meaning, 6))
        lines.append("  -h, --help")
        lines.append("      show this help")
    lines += ["", "Examples:"]
    lines += [f"  {example}" for example in page.examples]
    lines += ["", _FOOTER]
    return "\n".join(lines)


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings of ``parser`` that take exactly one value as the next token."""
    taking: set[str] = set()
    for action in parser._actions:
        if action.option_strings and action.nargs is None:
            taking.update(action.option_strings)
    return taking


def _has_remainder(parser: argparse.ArgumentParser) -> bool:
    return any(action.nargs == argparse.REMAINDER for action in parser._actions)


def help_requested(parser: argparse.ArgumentParser, words: Sequence[str]) -> tuple[bool, list[str]]:
    """Whether ``words`` (the arguments after the command) ask for help.

    ``-h``/``--help`` asks for help where it stands as an option of its own. It is a value,
    not a request, where it follows a flag that takes one (``--question -h``, and an
    unknown ``--flag``, whose arity nobody knows), after ``--``, or among the arguments of
    an aliased command (``prefs alias NAME PRODUCT COMMAND -h``). Such values are rewritten
    to the ``--flag=-h`` form so that argparse reads them as the value they are.

    Returns:
        ``(True, words)`` for help; otherwise ``(False, the words to parse)``.
    """
    takes_value = _value_options(parser)
    known = set(parser._option_string_actions)
    verbatim = _has_remainder(parser) and "alias" in words[:1]
    result: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--" or (verbatim and index >= 3):
            result.extend(words[index:])
            break
        unknown_flag = word.startswith("--") and "=" not in word and word not in known
        nxt = words[index + 1] if index + 1 < len(words) else None
        if nxt in HELP_FLAGS and (word in takes_value or unknown_flag):
            result.append(f"{word}={nxt}")
            index += 2
            continue
        if word in HELP_FLAGS:
            return True, list(words)
        result.append(word)
        index += 1
    return False, result
