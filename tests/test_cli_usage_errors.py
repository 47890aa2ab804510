"""Contract and process tests: an error that ends a command with exit 1 is also one line on
stderr, and a name that does not exist is answered with the closest ones that do.

Process tests run the real command with stdout and stderr apart, as in ``review-loop ... >
out.json 2> progress.log``: stdout is the same JSON document as before (a program's
contract), stderr is one line a person reads, with "did you mean" where a flag, command,
product or choice is near a known one. Contract tests: :mod:`review_loop.orchestrator.cli.usage`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.orchestrator.cli import new_parser
from review_loop.orchestrator.cli.usage import closest, did_you_mean, parser_suggestions
from tests.test_cli import git_repo


def _run(*argv: str, cwd: Path) -> tuple[int, dict[str, object], list[str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "REVIEW_LOOP_TIMEOUT_MS": "20000"},
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr.splitlines()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


def test_process_a_flag_typo_is_one_line_on_stderr_naming_the_near_flag(repo: Path) -> None:
    # consult ignores a word it does not know, as the original does (tests/differential);
    # a person still reads it on stderr, with the nearest flag.
    code, document, err = _run("consult", "--peer", "simulated", "--questoin", "hi", cwd=repo)
    assert code == 1
    assert document["ok"] is False and "no question given" in str(document["error"])
    assert err == [
        "review-loop consult: ignored --questoin hi (did you mean --question?), "
        "as the original review-loop ignores them",
        f"review-loop consult: {document['error']}",
    ]


def test_process_an_unknown_command_names_the_near_command(repo: Path) -> None:
    code, document, err = _run("consul", "--peer", "simulated", cwd=repo)
    assert code == 1 and document["ok"] is False
    assert str(document["error"]).startswith("Unknown command: consul. Try: consult | ")
    assert err == [
        "review-loop: unknown command 'consul' (did you mean consult?); "
        "review-loop --help lists the commands"
    ]


def test_process_a_lower_case_v_names_the_version_flag(repo: Path) -> None:
    code, _, err = _run("-v", cwd=repo)
    assert code == 1 and len(err) == 1 and "(did you mean -V?)" in err[0]


def test_process_the_version_flag_after_a_command_says_where_it_belongs(repo: Path) -> None:
    code, _, err = _run("consult", "--version", cwd=repo)
    assert code == 1 and len(err) == 2  # the ignored flag, then the missing question
    assert "(did you mean review-loop --version?)" in err[0]


def test_process_an_unknown_product_names_the_near_product(repo: Path) -> None:
    code, document, err = _run("consult", "--peer", "kodex", "--question", "hi", cwd=repo)
    assert code == 1 and "kodex" in str(document["error"])
    assert len(err) == 1 and err[0].startswith("review-loop consult: --peer: ")
    assert err[0].endswith("(did you mean codex?)")


def test_process_a_bad_choice_names_the_near_choice(repo: Path) -> None:
    code, _, err = _run("run", "--reviewer", "simulated", "--completion", "pas", cwd=repo)
    assert code == 1 and len(err) == 1 and err[0].endswith("(did you mean pass?)")


def test_process_any_exit_1_error_is_said_on_stderr_too(repo: Path) -> None:
    code, document, err = _run("consult", "--question", "hi", cwd=repo)
    assert code == 1
    assert err == [f"review-loop consult: {document['error']}"]


def test_process_a_success_prints_nothing_of_the_kind(repo: Path) -> None:
    code, document, err = _run("evidence", cwd=repo)
    assert code == 0 and document["ok"] is True and err == []


def test_contract_closest_keeps_only_the_nearest_names() -> None:
    options = ["--question", "--question-file", "--questionFile", "--peer"]
    assert closest("--questoin", options) == ["--question"]
    assert closest("CONSUL", ["consult", "sessions"]) == ["consult"]
    assert closest("--zzz", options) == []
    assert closest("--peer", options) == []  # the word itself is never its own suggestion


def test_contract_parser_suggestions_read_argparses_refusals() -> None:
    parser = new_parser("review-loop x")
    parser.add_argument("--timeout")
    parser.add_argument("mode", choices=["pass", "review"])
    assert parser_suggestions(parser, "unrecognized arguments: --timout=3 --version") == [
        "--timeout",
        "review-loop --version",
    ]
    refused = "argument mode: invalid choice: 'reveiw' (choose from 'pass', 'review')"
    assert parser_suggestions(parser, refused) == ["review"]
    assert parser_suggestions(parser, "the following arguments are required: mode") == []


def test_contract_did_you_mean_reads_as_a_sentence() -> None:
    assert did_you_mean([]) == ""
    assert did_you_mean(["a"]) == " (did you mean a?)"
    assert did_you_mean(["a", "b", "c"]) == " (did you mean a, b or c?)"


def test_process_verification_keeps_its_stderr_contract_and_names_the_near_verb(
    repo: Path,
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", "verification", "run", "statu"],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "review-loop verification run: unknown verb 'statu' (accepted: start, input, scope, "
        "finding, finish, status, render) (did you mean status?)"
    ]
