"""Contract tests: the help pages as a person reads them, and the one name in every synopsis.

Each ``review-loop COMMAND --help`` is compared with ``tests/golden/help/COMMAND.txt`` (set
``REVIEW_LOOP_UPDATE_GOLDEN=1`` to rewrite them), so a changed synopsis, flag or default is
a reviewed change of the golden file. Every synopsis writes the repository as ``--repo`` and
the reviewer as ``--reviewer`` first (issue: one name for one thing); the originals'
spellings stay accepted (``tests/test_cli_one_name.py``) and are listed as aliases on the
page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from review_loop.orchestrator.cli import COMMANDS, load_command
from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.cli.manual import PAGES

GOLDEN = Path(__file__).parent / "golden" / "help"
PAGED = [name for name in COMMANDS if name != "help"]  # help --help is the JSON document


def _help(name: str) -> str:
    out: list[str] = []
    assert cli_run([name, "--help"], stdout=out.append) == 0
    return out[0] + "\n"


@pytest.mark.parametrize("name", PAGED)
def test_contract_help_page_matches_its_golden_file(name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    text = _help(name)
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"no golden help for {name}: run with REVIEW_LOOP_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


def test_contract_every_golden_file_is_a_command() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(PAGED)


@pytest.mark.parametrize("name", PAGED)
def test_contract_synopsis_shows_the_one_name_first(name: str) -> None:
    for line in load_command(name).USAGE:
        # the reviewer is --reviewer; --peer and --executor are its aliases
        assert not re.search(r"--(peer|executor) P\b", line), line
        # the repository is --repo; -C, --directory and the positional DIR are aliases
        assert not re.search(r"\[-C\b|--directory\b|\[DIR\b", line), line
    options = [flag.spelling for flag in PAGES[name].flags]
    assert not [o for o in options if o.startswith(("--peer P", "--executor P", "-C ", "DIR"))]


@pytest.mark.parametrize(
    ("name", "one", "aliases"),
    [
        ("consult", "--reviewer P", ("--peer", "--executor")),
        ("verify-diff", "--reviewer P", ("--executor", "--peer")),
        ("preflight", "--reviewer P", ("--peer", "--executor")),
        ("converge", "--reviewer P", ("--peer", "--executor")),
        ("run", "--reviewer P", ("--peer", "--executor")),
        ("blind-review", "--reviewer P", ("--peer", "--executor")),
        ("verification", "--repo ROOT", ("-C", "--directory")),
        ("audit", "--repo DIR", ("-C", "--repo-root", "positional DIR")),
        ("scope", "--repo DIR", ("-C",)),
        ("consult", "--repo DIR", ("-C", "--repo-root")),
    ],
)
def test_contract_the_page_lists_the_aliases_of_the_one_name(
    name: str, one: str, aliases: tuple[str, ...]
) -> None:
    flag = next(f for f in PAGES[name].flags if f.spelling == one)
    assert all(alias in flag.meaning for alias in aliases), flag.meaning
