"""What a person reads when a command line fails: one line on stderr, with the closest names.

The JSON document on stdout is the contract for programs and stays as it is. A person who
sends it to a file (``> out.json 2> progress.log``) or a pipe still sees why the command
failed: every error that ends a command with exit 1 is also one line on stderr. A flag,
command or choice that does not exist is answered with the closest ones that do ("did you
mean"), found by :mod:`difflib`.

Imported only when a command fails: a command that succeeds never pays for it.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence

# argparse's own words (Python 3.11–3.13) for the refusals a near name can answer.
_UNRECOGNIZED = "unrecognized arguments: "
_INVALID_CHOICE = re.compile(r"^argument [^:]+: invalid choice: '(.*)' \(choose from (.*)\)$")
_CUTOFF = 0.6  # difflib's own default: below it, a name is not "near"
# Options of review-loop itself, not of a command: said so instead of a near command flag.
_GLOBAL = {"-V": "review-loop --version", "--version": "review-loop --version"}


def closest(word: str, names: Iterable[str]) -> list[str]:
    """The names nearest to ``word``: the nearest and any as near (within 0.1 of its
    similarity), at most three; case ignored, ``word`` itself never."""
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.lower(), name)
    lowered = word.lower()
    scored = []
    for lower, name in by_lower.items():
        ratio = difflib.SequenceMatcher(None, lowered, lower).ratio()
        if ratio >= _CUTOFF and name != word:
            scored.append((ratio, name))
    scored.sort(key=lambda item: -item[0])
    best = scored[0][0] if scored else 0.0
    return [name for ratio, name in scored[:3] if ratio >= best - 0.1]


def error_suggestions(error: BaseException) -> list[str]:
    """The nearest accepted names for the value ``error`` refused (a flag, a command, a
    product, a choice), when its message says what is accepted; else none."""
    from review_loop.agents.errors import InputError, UnknownProductError

    found: Sequence[str] = getattr(error, "suggestions", ())
    if found:
        return list(found)
    if isinstance(error, UnknownProductError):
        return closest(error.name, error.known)
    if isinstance(error, InputError) and error.accepted:
        value = re.search(r"'([^']*)'", error.problem)
        words = re.split(r"\s*\|\s*|,\s*|\s+or\s+", error.accepted)
        names = [word for word in words if re.fullmatch(r"-{0,2}[\w.-]+", word)]
        if value is not None and names:
            return closest(value.group(1), names)
    return []


def parser_suggestions(parser: argparse.ArgumentParser, message: str) -> list[str]:
    """The names the parser knows that are nearest to what ``message`` says it refused."""
    if message.startswith(_UNRECOGNIZED):
        options = list(parser._option_string_actions)
        found: list[str] = []
        for word in message.removeprefix(_UNRECOGNIZED).split():
            if word in _GLOBAL:
                found.append(_GLOBAL[word])
            elif word.startswith("-") and word != "--":
                found.extend(closest(word.split("=", 1)[0], options))
        return list(dict.fromkeys(found))
    choice = _INVALID_CHOICE.match(message)
    if choice is not None:
        offered = re.findall(r"'((?:[^'\\]|\\.)*)'", choice.group(2))
        return closest(choice.group(1), offered)
    return []


def ignored_line(command: str, parser: argparse.ArgumentParser, ignored: Sequence[str]) -> str:
    """The stderr line for words a command of the original ignores (a typo is still seen)."""
    words = " ".join(ignored)
    near = did_you_mean(parser_suggestions(parser, _UNRECOGNIZED + words))
    return f"review-loop {command}: ignored {words}{near}, as the original review-loop ignores them"


def did_you_mean(suggestions: Sequence[str]) -> str:
    """`` (did you mean A or B?)``, or nothing when there is nothing near."""
    if not suggestions:
        return ""
    if len(suggestions) == 1:
        return f" (did you mean {suggestions[0]}?)"
    return f" (did you mean {', '.join(suggestions[:-1])} or {suggestions[-1]}?)"


# Tools the seeds name that review-loop provides under another name (a literal host asks).
SEED_TOOLS = {
    "resolve_scope": "the audit seed's resolve_scope.py is `review-loop scope resolve` here "
    "(same flags, output and exit codes); `review-loop shim resolve_scope --dir DIR` writes "
    "DIR/scripts/resolve_scope.py for CLAUDE_SKILL_DIR=DIR",
}


def unknown_command_line(name: str, commands: Iterable[str]) -> str:
    """The stderr line for a command that does not exist (a seed's tool name: where it is)."""
    seed_tool = SEED_TOOLS.get(name.rsplit("/", 1)[-1].removesuffix(".py"))
    if seed_tool is not None:
        return f"review-loop: unknown command {name!r}: {seed_tool}"
    near = did_you_mean(closest(name, commands))
    return f"review-loop: unknown command {name!r}{near}; review-loop --help lists the commands"


def error_line(command: str, text: str, *, suggestions: Sequence[str], usage: bool) -> str:
    """The stderr line for an error that ended ``command`` with exit 1.

    ``text`` is the document's ``error`` (its first line only: one line on stderr; the
    whole text is in the document). A usage error points at the command's help.
    """
    lines = text.strip().splitlines() or [text]
    first = lines[0] + (" …" if len(lines) > 1 else "")
    prefix = f"review-loop {command}: "
    said = first if first.startswith(prefix) else prefix + first
    tail = f"; review-loop {command} --help shows its flags" if usage else ""
    return f"{said}{did_you_mean(suggestions)}{tail}"


def say(line: str) -> None:
    """Write ``line`` on stderr (a broken stderr loses it, never the command's result)."""
    from review_loop.orchestrator.std_streams import write_stderr

    if sys.stderr is not None:
        write_stderr(line)
