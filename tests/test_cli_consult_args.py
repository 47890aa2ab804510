"""Contract tests: what ``consult``'s command line reads as, and what it refuses (argparse)."""

from __future__ import annotations

from typing import Any

import pytest

from review_loop.orchestrator.cli import UsageError, _parsed, new_parser
from review_loop.orchestrator.cli import consult as command


def reading(words: list[str]) -> dict[str, Any]:
    parser = new_parser("review-loop consult")
    command.configure(parser)
    return vars(parser.parse_args(words))


def test_contract_what_consult_is_given() -> None:
    read = reading(
        ["--peer", "codex", "--reviewer=claude", "--question", "Ship it?", "--fallback", "auto"]
    )
    assert read == {
        "repo": None,
        "cwd": None,
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


def test_contract_every_spelling_of_consult_s_options() -> None:
    parser = new_parser("review-loop consult")
    command.configure(parser)
    dests = {s: a.dest for a in parser._actions for s in a.option_strings}
    assert dests == {
        "--repo": "repo",
        "--repo-root": "repo",
        "--cwd": "cwd",
        "-C": "repo",
        "--peer": "peers",
        "--reviewer": "peers",
        "--executor": "peers",
        "--fallback": "fallback",
        "--question-file": "question_file",
        "--questionFile": "question_file",
        "--question": "question",
        "--peer-command": "peer_command",
        "--host": "host",
        "--timeout": "timeout",
        "--resume": "resume",
        "--skip-host": "skip_host",
    }


def test_contract_skip_host_alone_is_true_and_a_repeated_option_keeps_the_last() -> None:
    assert reading(["--skip-host"])["skip_host"] == "true"
    assert reading(["--skip-host", "false"])["skip_host"] == "false"
    assert reading(["--question", "a", "--question", "b"])["question"] == "b"


def test_contract_a_refused_command_line_names_the_word() -> None:
    with pytest.raises(UsageError) as caught:
        _parsed(command, "consult", ["--peer"])
    assert str(caught.value) == (
        "review-loop consult: argument --peer/--reviewer/--executor: expected one argument"
    )


@pytest.mark.parametrize(
    "words",
    [["--ques", "q"], ["x"], ["--peers", "codex"], ["-v", "--x=1"]],  # no abbreviations
)
def test_contract_a_word_the_original_ignores_is_ignored_and_listed(words: list[str]) -> None:
    """As the original's parser: an unknown flag (and its value), a stray word are ignored,
    never read as another option; the document lists them (``ignoredArguments``)."""
    namespace = _parsed(command, "consult", ["--peer", "codex", *words])
    assert namespace.peers == ["codex"] and namespace.question is None
    assert namespace.ignored_arguments == words
