"""The ``review-loop`` command line: argument parsing and JSON output, no logic of its own.

Contract (as the original ``review-loop``):

- one JSON document on stdout per command (pretty, 2-space indent); progress on stderr;
- exit 0 on success, 2 when the result says ``ok: false``, 1 for usage errors and crashes,
  with ``{"ok": false, "error": "..."}`` on stdout;
- commands whose contract is ``spx``'s (``verification run``) print one compact JSON line
  and put errors on stderr, exit 1;
- TERM, HUP and INT to a command that runs reviewers (:data:`REVIEWER_COMMANDS`) are
  cancellation: every reviewer is ended, records say ``interrupted``, one JSON document
  (``ok: false``, ``"signal"``, ``"interrupted"``) is printed, exit 128 + the signal
  (:mod:`.stops`, ``docs/process-ownership.md``). Other commands keep the default
  actions, except that Ctrl-C prints no traceback (exit 130).

Start-up is part of the product: each command lives in its own module, imported only when
that command runs, so ``sessions`` never pays for the dispatcher.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from review_loop.agents.errors import ReviewLoopError
from review_loop.orchestrator.cli.flags import HELP_FLAGS, VERSION_FLAGS

if TYPE_CHECKING:
    import re

# command name -> module under review_loop.orchestrator.cli. Order is the help order.
COMMANDS: dict[str, str] = {
    "consult": "consult",
    "sessions": "sessions",
    "prefs": "prefs",
    "evidence": "evidence",
    "verify-diff": "verify_diff",
    "run": "review_run",
    "fix-completion": "fix_completion",
    "close": "close",
    "preflight": "preflight",
    "converge": "converge",
    "blind-review": "blind_review",
    "ledger": "ledger",
    "lessons": "lessons",
    "verification": "verification",
    "scope": "scope",
    "audit": "audit",
    "shim": "shim",
    "mcp": "mcp",
    "doctor": "doctor",
    "demo": "demo",
    "help": "help",
}
# Commands that run reviewers: a signal cancels them instead of killing them (see .stops),
# and they exit 128 + the signal. ``mcp`` runs them through its jobs.
REVIEWER_COMMANDS = frozenset(
    {
        "consult",
        "run",
        "verify-diff",
        "converge",
        "blind-review",
        "preflight",
        "audit",
        "mcp",
        "doctor",
        "demo",
    }
)


class CommandModule(Protocol):
    """What a command module provides."""

    USAGE: Sequence[str]
    OUTPUT: str  # "json" (pretty document) or "line" (spx-style one compact line)

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def execute(self, args: argparse.Namespace) -> Mapping[str, Any]: ...


class UsageError(ReviewLoopError):
    """A command line the parser refused.

    Attributes:
        suggestions: the known names nearest to what was refused (flags, choices).
    """

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = list(suggestions)


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter at a fixed width: argparse never prints help here (``help`` is a
    command), and asking the terminal's width imports ``shutil`` in every command."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=80)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting 2."""

    def error(self, message: str) -> NoReturn:
        from review_loop.orchestrator.cli.usage import parser_suggestions

        raise UsageError(f"{self.prog}: {message}", parser_suggestions(self, message))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or f"{self.prog}: exit {status}")


def new_parser(prog: str) -> argparse.ArgumentParser:
    """A parser for one command: raises on errors, no ``-h`` (``help`` is a command)."""
    return _Parser(prog=prog, add_help=False, allow_abbrev=False, formatter_class=_Formatter)


def load_command(name: str) -> CommandModule:
    """Import the module of command ``name``."""
    module: Any = importlib.import_module(f"review_loop.orchestrator.cli.{COMMANDS[name]}")
    return module  # type: ignore[no-any-return]


def _dump(document: Mapping[str, Any], output: str) -> str:
    if output == "line":
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    from review_loop.orchestrator.handoff.json_text import pretty  # json.dumps(indent=2), faster

    return pretty(document)


def _print(text: str) -> None:
    """Write a document to stdout; if the stream cannot encode it, as ASCII JSON escapes.

    A string read from a hostile file can hold a lone surrogate (JSON's ``"\\ud800"``),
    which no stream encodes, and a stream may not be UTF-8 (``PYTHONIOENCODING=ascii``).
    ``print`` then writes nothing (it encodes the whole text first), and the text is
    written again with every non-ASCII character escaped as ``json.dumps`` with
    ``ensure_ascii`` escapes it: a document's characters all lie inside its strings.
    """
    try:
        print(text, flush=True)
    except UnicodeEncodeError:
        import re

        print(re.sub(r"[^\x00-\x7f]", _escaped, text), flush=True)


def _escaped(found: re.Match[str]) -> str:
    """One character as its JSON escape: ``\\uXXXX``, a surrogate pair past U+FFFF."""
    code = ord(found[0])
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


def _error_text(error: BaseException) -> str:
    text = str(error)
    return text if text else type(error).__name__


def _leading_directory(args: list[str]) -> list[str]:
    """``-C <root>`` / ``--directory <root>`` before the command, as spx's global option.

    ``spx -C <root> verification run ...`` is the seed skills' literal order; the option
    moves behind the command name, where the command parses it.
    """
    if args[:1] in (["-C"], ["--directory"]) and len(args) >= 3:
        return [args[2], "-C", args[1], *args[3:]]
    for prefix in ("--directory=", "-C"):
        if args and args[0].startswith(prefix) and len(args[0]) > len(prefix) and len(args) >= 2:
            return [args[1], "-C", args[0][len(prefix) :], *args[2:]]
    return args


def run(argv: Sequence[str], *, stdout: Callable[[str], None] | None = None) -> int:
    """Run one command line; returns the exit code. ``stdout`` receives the document."""
    write = stdout or _print
    args = _leading_directory(list(argv))
    if not args or args[0] in HELP_FLAGS:
        from review_loop.orchestrator.cli import manual

        write(manual.overview(list(COMMANDS)))
        return 0
    if args[0] in VERSION_FLAGS:
        from review_loop.orchestrator.cli import manual

        write(manual.version_text())
        return 0
    name = args[0]
    if name not in COMMANDS:
        write(
            _dump(
                {
                    "ok": False,
                    "error": f"Unknown command: {name}. Try: {' | '.join(COMMANDS)}",
                },
                "json",
            )
        )
        from review_loop.orchestrator.cli import usage

        usage.say(usage.unknown_command_line(name, [*COMMANDS, *HELP_FLAGS, *VERSION_FLAGS]))
        return 1
    module = load_command(name)
    if name == "help":  # the agents' JSON document, whatever follows it
        args = ["help"]
    elif any(word in HELP_FLAGS for word in args[1:]):  # else nothing to rewrite: no manual
        from review_loop.orchestrator.cli import manual

        parser = new_parser(f"review-loop {name}")
        module.configure(parser)
        wants_help, words = manual.help_requested(parser, args[1:])
        if wants_help:  # a person's help for one command (-h as a flag's value is a value)
            text = manual.command_help(name, module.USAGE)
            details = getattr(module, "help_details", None)  # formats the command reads
            write(f"{text}\n\n{details(args[1:])}" if details is not None else text)
            return 0
        args = [name, *words]
    if name not in REVIEWER_COMMANDS:
        return _execute(module, name, args, write)
    from review_loop.orchestrator.cli import stops

    stop = stops.install()
    try:
        code = _execute(module, name, args, write)
    finally:
        stops.uninstall(stop)
    return stop.exit_code or code


def _execute(
    module: CommandModule, name: str, args: list[str], write: Callable[[str], None]
) -> int:
    output = getattr(module, "OUTPUT", "json")
    try:
        namespace = _parsed(module, name, args[1:])
        if name in REVIEWER_COMMANDS:
            _check_simulated_replies()
        document = module.execute(namespace)
    except KeyboardInterrupt:
        raise
    except Exception as error:  # the one place exceptions become exit codes
        from review_loop.agents.errors import FormatError
        from review_loop.orchestrator.std_streams import UNPRINTED_EXIT, OutputLostError

        if isinstance(error, OutputLostError):
            write(_dump({"ok": False, "error": _error_text(error)}, output))
            return UNPRINTED_EXIT

        if output == "line":
            from review_loop.orchestrator.cli.usage import did_you_mean, error_suggestions

            near = did_you_mean(error_suggestions(error)) if isinstance(error, UsageError) else ""
            print(_error_text(error) + near, file=sys.stderr, flush=True)
            return 1
        document = {"ok": False, "error": _error_text(error)}
        # errorType only for a crash: an exception that is not ours, or a FormatError (a
        # reader's refusal that its workflow should have turned into its own answer).
        if not isinstance(error, ReviewLoopError) or isinstance(error, FormatError):
            document["errorType"] = type(error).__name__
        hint = getattr(error, "hint", None)
        if isinstance(hint, str):  # what a person can do (a held lock: who, how to clear)
            document["hint"] = hint
        write(_dump(document, output))
        from review_loop.orchestrator.cli import usage  # a person reads stderr, not the JSON

        usage.say(
            usage.error_line(
                name,
                document["error"],
                suggestions=usage.error_suggestions(error),
                usage=isinstance(error, UsageError),
            )
        )
        return 1
    ignored = getattr(namespace, "ignored_arguments", None)
    if ignored:  # said, so that a typo is seen; the original ignores them silently
        document = {**document, "ignoredArguments": ignored}
    write(_dump(document, output))
    return 2 if document.get("ok") is False else 0


def _check_simulated_replies() -> None:
    """A file of scripted simulated answers (``$REVIEW_LOOP_SIMULATED_REPLIES``) is checked
    before any reviewer runs: a bad one is this command's usage error, naming the item."""
    import os

    if os.environ.get("REVIEW_LOOP_SIMULATED_REPLIES"):
        from pathlib import Path

        from review_loop.simulated_replies import check_environment

        check_environment(os.environ, Path.cwd())


def _parsed(module: CommandModule, name: str, words: list[str]) -> Any:
    """The command's arguments, read by argparse.

    A command of the original Node ``review-loop`` (``IGNORES_UNKNOWN``) ignores, as the
    original's parser does, a word it does not know (an unknown ``--flag``, its value, a
    single-dash word, a stray positional): they are listed in ``ignoredArguments``.
    """
    parser = new_parser(f"review-loop {name}")
    module.configure(parser)
    if getattr(module, "IGNORES_UNKNOWN", False):
        namespace, ignored = parser.parse_known_args(words)
        namespace.ignored_arguments = ignored
        if ignored:  # a person sees a typo at once; programs read ignoredArguments
            from review_loop.orchestrator.cli import usage

            usage.say(usage.ignored_line(name, parser, ignored))
    else:
        namespace = parser.parse_args(words)
    from review_loop.orchestrator.cli.common import refuse_empty_paths

    refuse_empty_paths(namespace)  # --repo "" is not the current directory
    return namespace


def main() -> NoReturn:
    """The ``review-loop`` console script and ``python -m review_loop``.

    Closed or failing standard streams cost no record (:mod:`..std_streams`): a closed
    descriptor 0-2 is reopened on ``/dev/null`` first, stderr drops what it cannot take,
    and a document that could not be written to stdout (closed, full, reader gone) exits
    :data:`~..std_streams.UNPRINTED_EXIT` (120) with a line on stderr — unless a signal
    stopped the command (128 + the signal wins).
    """
    # Start-up allocates hundreds of thousands of objects (modules, classes, functions) that
    # live as long as the process: the collections they trigger find no garbage and cost
    # about 6-8 ms of every command (docs/performance.md). A reviewer command turns collection
    # back on once it runs (``stops.run_cancellable``); the others are short and end below.
    gc.disable()
    from review_loop.orchestrator import std_streams

    closed = std_streams.reopen_closed()
    stderr = sys.stderr
    sys.stderr = std_streams.GuardedStderr(stderr)
    document = _Document(stdout_closed=1 in closed)
    from review_loop.orchestrator.cli.live import terminal_status
    from review_loop.orchestrator.log import to_stderr

    to_stderr()  # the command prints its diagnostics; a library leaves that to its host
    try:
        with terminal_status() as finish_status:  # on a terminal: a live table on stderr
            document.before = finish_status  # finished before the document is written
            code = run(sys.argv[1:], stdout=document)
    except KeyboardInterrupt:
        # Ctrl-C to a command that runs no reviewer: its default stop, without a traceback.
        code = 128 + signal.SIGINT
    except BrokenPipeError as error:  # a command that wrote to stdout itself
        document.failed(error)
        code = std_streams.UNPRINTED_EXIT
    if document.failure is not None:
        print(
            f"review-loop: the JSON document was not written to stdout ({document.failure}); "
            "records are kept under .review-handoff/runtime/",
            file=sys.stderr,
            flush=True,
        )
        code = code if code >= 128 else std_streams.UNPRINTED_EXIT
    sys.stderr = stderr
    # The process ends here: what it built is freed with it. Frozen, the interpreter's last
    # garbage collections do not walk every module's objects first (about 6-8 ms of every
    # command's exit; docs/performance.md). atexit handlers and the flush of stdout still run.
    gc.freeze()
    sys.exit(code)


class _Document:
    """Where :func:`main` sends the command's document: stdout, and what became of it.

    Attributes:
        failure: why the document did not reach stdout (``None`` when it did).
    """

    def __init__(self, *, stdout_closed: bool) -> None:
        self.failure = "stdout was closed when review-loop started" if stdout_closed else None
        self.before: Callable[[], None] = lambda: None  # the live table's finish

    def __call__(self, text: str) -> None:
        self.before()  # the table's last frame above, never drawn over the document
        if self.failure is not None:
            return
        try:
            _print(text)
        except OSError as error:  # ENOSPC, EPIPE, EIO: the reader or the disk
            self.failed(error)

    def failed(self, error: OSError) -> None:
        """Note ``error`` and point stdout at ``/dev/null`` (what it buffers would fail
        again at exit)."""
        from review_loop.orchestrator.std_streams import silence

        self.failure = self.failure or (error.strerror or str(error) or type(error).__name__)
        silence(sys.stdout)
