"""Contract tests: a person's help (``-h``/``--help`` per command, ``--version``), the agents'
JSON ``help`` unchanged, and ``-h`` as a flag's value staying a value (finding F10).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import COMMANDS, load_command, new_parser
from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.cli.manual import PAGES
from tests.fakes import FakeCLIs
from tests.test_cli import git_repo, run_cli


def run_text(*argv: str) -> tuple[int, str]:
    out: list[str] = []
    code = cli_run(list(argv), stdout=out.append)
    assert len(out) == 1
    return code, out[0]


def declared_options(name: str) -> set[str]:
    """Every option string the command's parser declares (sub-parsers included)."""
    parser = new_parser(f"review-loop {name}")
    load_command(name).configure(parser)
    found: set[str] = set()
    parsers = [parser]
    while parsers:
        current = parsers.pop()
        for action in current._actions:
            found.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    return found


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "help"])
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_contract_every_command_has_human_help_naming_every_flag(name: str, flag: str) -> None:
    code, text = run_text(name, flag)
    assert code == 0
    assert text.startswith("Usage:\n")
    for line in load_command(name).USAGE:
        assert line in text
    assert "Options:" in text and "Examples:" in text
    for option in declared_options(name):
        assert option in text, f"{name} --help does not describe {option}"
    assert not text.lstrip().startswith("{")  # a person's text, not the JSON document


def test_contract_pages_describe_every_option_the_parsers_declare() -> None:
    for name in COMMANDS:
        described = " ".join(f.spelling + " " + f.meaning for f in PAGES[name].flags)
        for option in declared_options(name):
            assert option in described, f"{name}: {option} has no description"


@pytest.mark.parametrize("argv", [[], ["-h"], ["--help"]])
def test_contract_bare_and_top_level_help_is_an_overview(argv: list[str]) -> None:
    code, text = run_text(*argv)
    assert code == 0
    for name in COMMANDS:
        assert f"\n  {name} " in text
    assert "review-loop COMMAND --help" in text


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_contract_version(flag: str) -> None:
    code, text = run_text(flag)
    assert code == 0
    assert text == f"review-loop {version('review-loop')}"


def test_contract_help_command_stays_the_agents_json_document() -> None:
    for argv in (["help"], ["help", "consult"], ["help", "--help"]):
        code, text = run_text(*argv)
        assert code == 0
        document = json.loads(text)
        assert document["ok"] is True
        assert document["commands"] == list(COMMANDS)
        assert {"usage", "defaults", "exitCodes", "mode"} <= set(document)


def test_contract_version_and_help_through_the_console_entry_point(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "review_loop", "consult", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert ran.returncode == 0 and ran.stderr == ""
    assert "--question-file Q" in ran.stdout and "(default:" in ran.stdout


# -- F10: -h as a flag's value ------------------------------------------------------------


def test_contract_dash_h_as_a_flag_value_is_not_help() -> None:
    # Before the fix any -h meant help (exit 0, nobody asked). Now --question's value is
    # "-h" and the command is validated as usual: the unknown peer is refused.
    code, text = run_text("consult", "--question", "-h", "--peer", "nosuch")
    assert code == 1
    assert "--peer: unknown product or peer-command 'nosuch'" in json.loads(text)["error"]
    code, text = run_text("fix-completion", "--body", "--help", "--packet", "/nonexistent/p")
    assert code == 1
    assert "Usage:" not in text and json.loads(text)["ok"] is False


def test_collaboration_consult_asks_the_question_dash_h(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    code, doc, stderr = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "-h", fakes=fakes
    )
    assert code == 0, stderr
    assert doc["ok"] is True
    assert "--- question framing ---\n-h" in fakes.calls()[0]["stdin"]


def test_contract_prefs_alias_keeps_dash_h_as_the_commands_argument() -> None:
    code, text = run_text("prefs", "alias", "codex9", "codex", "/bin/true", "-h")
    assert code == 0
    document: dict[str, Any] = json.loads(text)
    assert document["prefs"]["peerCommands"]["codex9"]["command"] == ["/bin/true", "-h"]


def test_contract_help_after_double_dash_is_not_help() -> None:
    code, text = run_text("consult", "--peer", "nosuch", "--question", "x", "--", "-h")
    assert code == 1
    assert "Usage:" not in text
