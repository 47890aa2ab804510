"""Differential (contract) tests: the original Node ``review-loop``'s whole surface, drop-in.

``golden/rl_surface/*.json`` hold the original's REAL outputs on every scenario of
:mod:`tests.differential.rl_surface`: recorded by ``python -m
tests.differential.record_surface --rl <review-loop.mjs>`` from Adonis0123/adonis-skills @
e2acfae790e9 under node 20, each scenario in a fresh repository with the fake reviewer CLIs.
These tests play the same steps through review-loop's real entry point (the same fakes
through the real process layer) and compare each step (:func:`step_differences`): the exit
code; every key the original printed, with the same JSON type, and the same value where a
client branches on it (:mod:`tests.differential.compare`); and the original's words where a
client may match them (:data:`KEPT_WORDS`: the retired-command migration hint, the
timeout's duration, the ``non-zero exit N:`` prefix). A step marked ``deliberate`` is a
documented deliberate difference (docs/compatibility.md): review-loop's documented answer is
checked instead (:data:`DELIBERATE`). The original is not needed to run them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import run as cli_run
from tests.differential import rl_surface as rs
from tests.differential.compare import differences

# The original's words a client may match on: each found in an original's document must be
# found, the same, in review-loop's.
KEPT_WORDS = (
    re.compile(
        r'command "[\w-]+" removed in auto-loop v2 \(T8\)\. '
        r"Use: review-loop run \| fix-completion \| close \| consult"
    ),
    re.compile(r"timeout after [0-9.e+]+ms"),
    re.compile(r"non-zero exit \d+:"),
)
# Keys whose values are review-loop's own by design (docs/compatibility.md).
OURS_DIFFER = {"$.skillScriptsDir", "$.defaults.reviewer"}


def _text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False)


def _is(status: str, code: int) -> Callable[[int, Any], bool]:
    return lambda exit, doc: exit == code and isinstance(doc, dict) and doc.get("status") == status


def _ok(exit: int, doc: Any) -> bool:
    return exit == 0 and isinstance(doc, dict) and doc.get("ok") is True


def _plain_text(exit: int, doc: Any) -> bool:
    return exit == 0 and isinstance(doc, dict) and "<text>" in doc


def _not_a_checkout(exit: int, doc: Any) -> bool:
    return exit == 1 and "not inside a git checkout" in str(doc.get("error"))


# What review-loop answers instead, per documented deliberate difference.
DELIBERATE: dict[str, Callable[[int, Any], bool]] = {
    rs.GEMINI: lambda exit, doc: exit in (0, 2) and isinstance(doc, dict) and "ok" in doc,
    rs.TWO_PEERS: _ok,
    rs.PERSON_HELP: _plain_text,
    rs.VERSION: _plain_text,
    rs.GARBAGE: _is("DELIVERY_UNKNOWN", 2),
    rs.ARCHIVED: _is("already_archived", 0),
    rs.NOT_A_CHECKOUT: _not_a_checkout,
    rs.NOT_SUBMITTED: lambda exit, doc: (
        _is("DELIVERY_UNKNOWN", 2)(exit, doc) and "2 attempts" in str(doc.get("message"))
    ),
    rs.RESUME_NOT_FOUND: _is("archived", 0),
    rs.UNKNOWN_PRODUCT: lambda exit, doc: exit == 1 and "unknown product" in str(doc.get("error")),
}


@pytest.fixture
def review_loop(monkeypatch: pytest.MonkeyPatch) -> rs.Invoke:
    """Run one argv through review-loop's CLI entry point, in ``cwd`` with ``env``."""
    set_by_steps: set[str] = set()

    def invoke(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
        for name in set_by_steps - set(env):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        set_by_steps.update(env)
        monkeypatch.chdir(cwd)
        out: list[str] = []
        code = cli_run(argv, stdout=out.append)
        assert len(out) == 1, out
        return code, out[0]

    return invoke


def _golden(name: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = json.loads((rs.GOLDEN_DIR / f"{name}.json").read_text())["steps"]
    return steps


def step_differences(name: str, theirs: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """Every way review-loop's outcome ``mine`` breaks a client of the original's ``theirs``."""
    where = f"{name} {theirs['argv']} {theirs['env'] or ''}"
    if mine["deliberate"]:  # the scenario's mark (the golden keeps the one recorded with it)
        if not DELIBERATE[mine["deliberate"]](mine["exit"], mine["stdout"]):
            return [f"{where}: not the documented answer: {mine['exit']} {mine['stdout']}"]
        return []
    found = []
    if mine["exit"] != theirs["exit"]:
        found.append(f"{where}: exit {mine['exit']} where the original exits {theirs['exit']}")
    found += [
        f"{where}: {d}"
        for d in differences(theirs["stdout"], mine["stdout"])
        if d.split(":")[0] not in OURS_DIFFER
    ]
    for words in KEPT_WORDS:
        said = words.search(_text(theirs["stdout"]))
        if said and _said_as(said[0], words) not in _text(mine["stdout"]):
            found.append(f"{where}: the original's words {said[0]!r} are missing")
    return found


def _said_as(words: str, pattern: re.Pattern[str]) -> str:
    """The original's words as review-loop says them: a fractional deadline is rounded up
    to the whole millisecond (``timeout after 1500.5ms`` is ``timeout after 1501ms``)."""
    if pattern is not KEPT_WORDS[1]:
        return words
    return f"timeout after {math.ceil(float(words[len('timeout after ') : -2]))}ms"


@pytest.mark.parametrize("scenario", rs.SCENARIOS, ids=[s.name for s in rs.SCENARIOS])
def test_contract_the_originals_surface(
    review_loop: rs.Invoke, tmp_path: Path, scenario: rs.Scenario
) -> None:
    theirs = _golden(scenario.name)
    ours = rs.play(scenario, review_loop, tmp_path)
    assert [step["argv"] for step in ours] == [step["argv"] for step in theirs]
    found = [
        d
        for original, mine in zip(theirs, ours, strict=True)
        for d in step_differences(scenario.name, original, mine)
    ]
    assert not found, "\n".join(found)


def test_contract_every_scenario_is_recorded() -> None:
    recorded = sorted(path.stem for path in rs.GOLDEN_DIR.glob("*.json"))
    assert recorded == sorted(s.name for s in rs.SCENARIOS)
    for path in rs.GOLDEN_DIR.glob("*.json"):
        assert "e2acfae790e9" in json.loads(path.read_text())["original"]


def test_contract_the_help_states_the_real_completion_default() -> None:
    """PASS_WITH_CONCERNS waits for the user by default (as the original): said so in the
    usage line, the person's ``run --help`` and the ``help`` document."""
    from review_loop.orchestrator.cli import load_command

    assert "[--completion review|pass]" in load_command("run").USAGE[0]
    out: list[str] = []
    assert cli_run(["run", "--help"], stdout=out.append) == 0
    words = " ".join(out[0].split())
    assert "--completion review|pass what PASS_WITH_CONCERNS does: review waits" in words
    assert "re-reviewed (default: review) --until-pass" in words
    out.clear()
    assert cli_run(["help"], stdout=out.append) == 0
    assert json.loads(out[0])["defaults"]["completion"].startswith("review ")
