"""Differential (contract) tests: ``review-loop verification run`` is a drop-in for spx's.

``golden/spx/recorded.json`` holds the REAL spx's outputs: recorded by
``python -m tests.differential.record_spx <spx/bin/spx.js>`` from outcomeeng/spx 0.6.25 @
5af72b12bb11 built from source, under node 20, each scenario of
:mod:`tests.differential.spx_scenarios` in a fresh repository, normalised for paths, run
tokens, times, digests, the run store directory and the program name. These tests run the
same command lines, in spx's argument order, through review-loop's CLI entry point and
compare, step by step: the exit code; every stdout document (every key spx prints, with the
same JSON type and the same value — review-loop may add keys); the streamed CloudEvent lines
on stderr the same way; and the error text on stderr line for line. Three marks in the golden
file relax this, each a documented deviation (docs/compatibility.md): ``usageError`` (the
argument parser's own text: exit code and stdout are still compared), ``headlineOnly`` (git's
or the OS's detail after spx's headline: the headline is compared) and ``deviation``
(review-loop refuses outside a git work tree: its refusal is checked instead). spx is not
needed to run them.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator import cli
from tests.differential.scenarios import GOLDEN
from tests.differential.spx_scenarios import SCENARIOS, Invoke, play

RECORDED: dict[str, Any] = json.loads((GOLDEN / "spx" / "recorded.json").read_text())


def _kind(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def differences(original: Any, ours: Any, where: str = "$") -> list[str]:
    """Every way ``ours`` breaks a client of spx's ``original`` (keys may be added)."""
    if _kind(original) != _kind(ours):
        return [f"{where}: {_kind(ours)} {ours!r} where spx has {_kind(original)} {original!r}"]
    if isinstance(original, dict):
        found: list[str] = []
        if ".data" in where:  # an event's data is the journal record: unknown fields dropped
            found += [f"{where}.{name}: added to the journal" for name in ours.keys() - original]
        for name, value in original.items():
            found += (
                differences(value, ours[name], f"{where}.{name}")
                if name in ours
                else [f"{where}.{name}: missing"]
            )
        return found
    if isinstance(original, list):
        if len(original) != len(ours):
            return [f"{where}: {len(ours)} items where spx has {len(original)}: {ours!r}"]
        return [
            d
            for i, pair in enumerate(zip(original, ours, strict=True))
            for d in differences(*pair, f"{where}[{i}]")
        ]
    return [] if original == ours else [f"{where}: {ours!r} where spx has {original!r}"]


def _stderr(lines: list[str], failed: bool) -> list[Any]:
    """On success the CloudEvent lines (as JSON); on failure the error text, line for line."""
    return lines if failed else [json.loads(line) for line in lines if line.startswith("{")]


def _headline(lines: list[Any]) -> list[Any]:
    """The first line up to the second ``: `` (``<program> verification run <what>: <step>``)."""
    return [": ".join(str(lines[0]).split(": ")[:2])] if lines else []


@pytest.fixture
def review_loop(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """Run a whole spx-style argv through review-loop's CLI entry point."""

    def invoke(argv: list[str], stdin: str | None) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin or ""))
        capsys.readouterr()
        code = cli.run(argv)
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_contract_golden_is_the_real_spx() -> None:
    assert RECORDED["spx"] == "0.6.25" and "5af72b12bb11" in RECORDED["original"]
    assert set(RECORDED["scenarios"]) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_contract_same_command_lines_as_spx(
    review_loop: Invoke, tmp_path: Path, scenario: str
) -> None:
    theirs = RECORDED["scenarios"][scenario]
    ours = play(scenario, review_loop, tmp_path / "run")
    assert step_differences(scenario, theirs, ours) == []


def step_differences(
    scenario: str, theirs: list[dict[str, Any]], ours: list[dict[str, Any]]
) -> list[str]:
    """Every way review-loop's played steps ``ours`` break a client of spx's ``theirs``."""
    assert [step["name"] for step in ours] == [step["name"] for step in theirs]
    found: list[str] = []
    for original, mine in zip(theirs, ours, strict=True):
        name = f"{scenario}/{original['name']}"
        if original["deviation"]:  # deliberate (docs/compatibility.md): review-loop refuses
            if (mine["exit"], mine["stdout"]) != (1, []) or "git checkout" not in mine["stderr"][0]:
                found.append(f"{name}: not the documented refusal: {mine}")
            continue
        if mine["argv"] != original["argv"]:
            found.append(f"{name}: argv {mine['argv']} where spx ran {original['argv']}")
        if mine["exit"] != original["exit"]:
            found.append(f"{name}: exit {mine['exit']} where spx exits {original['exit']}")
        found += [f"{name} stdout {d}" for d in differences(original["stdout"], mine["stdout"])]
        if original["usageError"]:  # a documented deviation: argparse's texts, not commander's
            continue
        failed = original["exit"] != 0
        theirs_err, mine_err = _stderr(original["stderr"], failed), _stderr(mine["stderr"], failed)
        if original["headlineOnly"]:  # git's or the OS's detail follows spx's headline
            theirs_err, mine_err = _headline(theirs_err), _headline(mine_err)
        elif failed and mine_err[: len(theirs_err)] == theirs_err:
            # review-loop may add lines after spx's error text, as keys to its documents
            # (every problem of a refused payload: docs/compatibility.md)
            mine_err = mine_err[: len(theirs_err)]
        stderr = differences(theirs_err, mine_err)
        found += [f"{name} stderr {d}" for d in stderr]
    return found
