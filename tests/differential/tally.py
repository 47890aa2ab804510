"""The differential tier's figures: every recorded step, classified (run by hand).

    python -m tests.differential.tally

Plays every scenario of the tier through review-loop's entry point, as the tests do, and
puts each recorded step in one class:

- **identical**: the same exit code and, after normalising, the same stdout document (for
  spx also the same stderr lines);
- **harmless**: not identical, but nothing a client of the original trips on: keys
  review-loop adds, prose in other words, the argument parser's own usage text, the OS's or
  git's words after spx's headline (what the comparators of the tests allow);
- **deliberate**: a documented deliberate difference (``docs/compatibility.md``), checked
  against review-loop's documented answer;
- **breaks**: anything else (the tests fail on each).

Prints one table row per tool and the total. The originals are not needed.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from review_loop.orchestrator import cli
from tests.differential import rl_surface, spx_scenarios, spx_surface
from tests.differential import scenarios as old_rl
from tests.differential import test_rl_surface as rl_test
from tests.differential import test_spx_drop_in as spx_test
from tests.differential.compare import differences
from tests.differential.record_surface import SPX_GOLDEN


def _rl_invoke(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    os.environ.pop("REVIEW_LOOP_TIMEOUT_MS", None)
    os.environ.update(env)
    os.chdir(cwd)
    out: list[str] = []
    with redirect_stderr(io.StringIO()):
        code = cli.run(argv, stdout=out.append)
    return code, out[0]


def _spx_invoke(argv: list[str], stdin: str | None) -> tuple[int, str, str]:
    sys.stdin = io.StringIO(stdin or "")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.run(argv)
    return code, out.getvalue(), err.getvalue()


def _rl_class(theirs: dict[str, Any], mine: dict[str, Any]) -> str:
    if mine.get("deliberate"):
        return "deliberate"
    if rl_test.step_differences("", theirs, mine):
        return "breaks"
    same = mine["exit"] == theirs["exit"] and mine["stdout"] == theirs["stdout"]
    return "identical" if same else "harmless"


def rl_surface_tally() -> Counter[str]:
    """The classes of the Node review-loop's surface steps."""
    counts: Counter[str] = Counter()
    for scenario in rl_surface.SCENARIOS:
        theirs = json.loads((rl_surface.GOLDEN_DIR / f"{scenario.name}.json").read_text())
        with tempfile.TemporaryDirectory() as work:
            ours = rl_surface.play(scenario, _rl_invoke, Path(work))
        for original, mine in zip(theirs["steps"], ours, strict=True):
            counts[_rl_class(original, mine)] += 1
    return counts


def rl_main_paths_tally() -> Counter[str]:
    """The classes of the first Node review-loop scenarios (``scenarios.py``)."""
    counts: Counter[str] = Counter()
    for scenario in old_rl.SCENARIOS:
        theirs = json.loads((old_rl.GOLDEN / "rl" / f"{scenario.name}.json").read_text())
        with tempfile.TemporaryDirectory() as work:
            steps = tuple(
                rl_surface.Step(step.argv + step.ours_extra, deliberate=step.why)
                if not step.compare
                else rl_surface.Step(step.argv + step.ours_extra)
                for step in scenario.steps
            )
            played = rl_surface.Scenario(scenario.name, steps, scenario.script)
            ours = rl_surface.play(played, _rl_invoke, Path(work))
        for original, mine in zip(theirs["steps"], ours, strict=True):
            if mine["deliberate"]:
                counts["deliberate"] += 1
                continue
            found = [
                d
                for d in differences(original["stdout"], mine["stdout"])
                if d.split(":")[0] not in rl_test.OURS_DIFFER
            ]
            if found or mine["exit"] != original["exit"]:
                counts["breaks"] += 1
            else:
                same = mine["stdout"] == original["stdout"]
                counts["identical" if same else "harmless"] += 1
    return counts


def _spx_class(name: str, original: dict[str, Any], mine: dict[str, Any]) -> str:
    if original["deviation"]:
        return "deliberate"
    if spx_test.step_differences(name, [original], [mine]):
        return "breaks"
    keys = ("exit", "stdout", "stderr")
    return "identical" if all(original[k] == mine[k] for k in keys) else "harmless"


def spx_tally() -> Counter[str]:
    """The classes of every spx step (the first scenarios and the surface)."""
    counts: Counter[str] = Counter()
    recorded = json.loads((old_rl.GOLDEN / "spx" / "recorded.json").read_text())["scenarios"]
    plays = [(name, steps, None) for name, steps in recorded.items()]
    for name in spx_surface.SCENARIOS:
        steps = json.loads((SPX_GOLDEN / f"{name}.json").read_text())["steps"]
        plays.append((name, steps, spx_surface.SCENARIOS))
    for name, theirs, table in plays:
        with tempfile.TemporaryDirectory() as work:
            ours = spx_scenarios.play(name, _spx_invoke, Path(work) / "run", table)
        for original, mine in zip(theirs, ours, strict=True):
            counts[_spx_class(name, original, mine)] += 1
    return counts


def main() -> int:
    """Print the table: scenarios, steps, identical, harmless, deliberate, breaks."""
    rows = {
        "Node review-loop (scenarios.py)": (len(old_rl.SCENARIOS), rl_main_paths_tally()),
        "Node review-loop (rl_surface.py)": (len(rl_surface.SCENARIOS), rl_surface_tally()),
        "spx verification run (both files)": (
            len(spx_scenarios.SCENARIOS) + len(spx_surface.SCENARIOS),
            spx_tally(),
        ),
    }
    classes = ("identical", "harmless", "deliberate", "breaks")
    print("| tool | scenarios | steps | " + " | ".join(classes) + " |")
    print("|---|---:|---:|" + "---:|" * len(classes))
    total: Counter[str] = Counter()
    scenarios = 0
    for label, (count, tally) in rows.items():
        total.update(tally)
        scenarios += count
        cells = " | ".join(str(tally[c]) for c in classes)
        print(f"| {label} | {count} | {sum(tally.values())} | {cells} |")
    cells = " | ".join(str(total[c]) for c in classes)
    print(f"| **total** | {scenarios} | {sum(total.values())} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
