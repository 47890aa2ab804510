"""Contract tests: ``consult``'s plain reading of its command line is argparse's, or nothing.

``consult`` reads a plain command line (``--option value`` pairs) without argparse
(``review_loop/orchestrator/cli/plain_args.py``). Whatever the plain reader accepts,
argparse must accept with the same values; whatever argparse refuses, the plain reader must
leave to it (so argparse words the error). Held here over every short command line built
from consult's own options and the words that trip a parser, and over thousands of random
longer ones.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from typing import Any

import pytest

from review_loop.orchestrator.cli import UsageError, new_parser
from review_loop.orchestrator.cli import consult as command

NAMES = [s for option in command.OPTIONS for s in option.strings]
OPTION_WORDS = [
    *NAMES,
    "--skip-host",
    "--peers",  # unknown
    "--ques",  # an abbreviation: argparse runs with allow_abbrev=False
    "--question-fil",
    "-C",
    "-h",
    "--",
]
VALUES = [
    "codex",
    "claude,grok",
    "auto",
    "true",
    "/tmp/q.md",
    "a b",
    "a=b",
    "é",
    "",
    "-",
    "-x",
    "-1",
    "--",
    "--peer",
    "x -y",
    "=",
]


def argparse_reading(words: list[str]) -> dict[str, Any] | None:
    parser = new_parser("review-loop consult")
    command.configure(parser)
    try:
        return vars(parser.parse_args(words))
    except UsageError:
        return None


def check(words: list[str]) -> bool:
    """Hold the two readings together for ``words``; True when the plain one accepted."""
    plain = command.parse_plain(words)
    expected = argparse_reading(words)
    if plain is None:
        return False
    assert expected is not None, f"plain accepts what argparse refuses: {words}"
    assert vars(plain) == expected, words
    return True


def tokens() -> list[list[str]]:
    """Every option word with every value, in both forms, and every bare word."""
    found = [[word] for word in OPTION_WORDS + VALUES]
    for name, value in itertools.product(OPTION_WORDS, VALUES):
        found.append([name, value])
        found.append([f"{name}={value}"])
    return found


def test_contract_the_plain_reading_is_argparse_s_for_every_short_command_line() -> None:
    accepted = sum(check(token) for token in tokens())
    pairs = tokens()
    for first, second in itertools.product(pairs[::7], pairs[::5]):
        accepted += check([*first, *second])
    assert accepted > 500  # the plain path is really taken, not always left to argparse


def test_contract_the_plain_reading_is_argparse_s_for_random_command_lines() -> None:
    chooser = random.Random(14)
    pool = tokens()
    plain_ones = [t for t in pool if command.parse_plain(t) is not None]
    accepted = 0
    for _ in range(4000):
        words: list[str] = []
        for _ in range(chooser.randint(1, 7)):
            # mostly plain pairs, so that long command lines the plain path reads are common
            words += chooser.choice(plain_ones if chooser.random() < 0.8 else pool)
        accepted += check(words)
    assert accepted > 800


def test_contract_what_consult_is_given_plainly() -> None:
    read = command.parse_plain(
        ["--peer", "codex", "--reviewer=claude", "--question", "Ship it?", "--fallback", "auto"]
    )
    assert read is not None
    assert vars(read) == {
        "repo": None,
        "peers": ["codex", "claude"],
        "fallback": ["auto"],
        "question_file": None,
        "question": "Ship it?",
        "peer_command": None,
        "host": None,
        "timeout": None,
        "resume": None,
        "skip_host": None,
    }
    for left in (["--skip-host"], ["--question", "a", "--question", "b"], ["--peer"], ["x"]):
        assert command.parse_plain(left) is None, left


def test_contract_argparse_and_the_plain_reader_know_the_same_options() -> None:
    parser = new_parser("review-loop consult")
    command.configure(parser)
    actions = {s: a for a in parser._actions for s in a.option_strings}
    assert set(actions) == {*NAMES, "--skip-host"}
    for option in command.OPTIONS:
        for name in option.strings:
            assert actions[name].dest == option.dest
            assert (actions[name].default == []) is option.repeated


@pytest.mark.parametrize(
    ("words", "imported"),
    [
        (["--peer", "codex", "--question", "?"], False),
        (["--peer", "codex", "--question", "?", "--skip-host", "false"], True),
    ],
)
def test_process_a_plain_consult_line_imports_no_argparse(words: list[str], imported: bool) -> None:
    # the command line only: reading it is all this process does (no repository, no reviewer)
    probe = (
        "import sys\n"
        "from review_loop.orchestrator.cli import _parsed, load_command\n"
        f"_parsed(load_command('consult'), 'consult', {words!r})\n"
        "print('argparse' in sys.modules, 'gettext' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(imported), str(imported)]
