"""End-to-end tests: seed 000 (verify-diff) walked by a host agent, literally.

Explicit-args mode: the host passes the Finding's three fields (and its scenarios), the
executor (a fake codex) judges the diff, suggests an edit, and on the next pass returns no
edits: Step 5's schema, one fresh session per iteration. A deleted target with a non-empty
diff is judged, not ``missing target`` (N-3). Auto-derive mode with no framing fields: one
group per changed skill, the aggregate schema. Each command is the console script in a
process of its own, the fakes first on PATH.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.walkthrough import Host
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_verify_diff import make_repo as committed_repo

CALC = "def average(xs):\n    return sum(xs) / len(xs) + 1\n"
FIXED = "def average(xs):\n    if not xs:\n        return 0\n    return sum(xs) / len(xs)\n"
STEP5_KEYS = {
    "status",
    "iterations_used",
    "objective_met",
    "applied_edits_count",
    "unresolved_gaps",
    "reverted_paths",
    "reason",
}


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def reply(
    objective: str, gaps: list[str], edits: list[dict[str, str]], **extra: Any
) -> dict[str, Any]:
    body = {
        "objective_met": objective,
        "remaining_gaps": gaps,
        "regressions": [],
        "suggested_edits": edits,
        "confidence": "high",
        **extra,
    }
    return {"mode": "ok", "text": f"I ran the scenario.\n\n```json\n{json.dumps(body)}\n```\n"}


def test_explicit_args_mode_converges_on_the_executors_own_no_edit_pass(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = committed_repo(tmp_path / "repo", {"src/calc.py": CALC, "README.md": "r\n"})
    (repo / "src" / "calc.py").write_text(FIXED.replace("return 0", "return None"))
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps({"scenarios": [{
        "kind": "median", "title": "empty list", "description": "average([]) is asked.",
        "checklist": ["[critical] average([]) returns 0", "average([2, 4]) is 3",
                      "no ZeroDivisionError"],
    }]}))  # fmt: skip
    fakes.script(
        codex=[
            reply("partial", ["empty list gives None"], [{
                "old_string": "return None", "new_string": "return 0", "rationale": "the seed"}]),
            reply("yes", [], []),
        ]
    )  # fmt: skip
    host = Host(fakes, repo)
    done = host.ok(
        "review-loop", "verify-diff", "--repo", str(repo),
        "--description", "average() adds one to every mean and raises on an empty list",
        "--fix-direction", "remove the stray + 1 and return 0 for an empty list",
        "--target", "src/calc.py", "--executor", "codex", "--max-iterations", "3",
        "--scenarios-file", str(scenarios),
    )  # fmt: skip
    document = done.json()
    assert set(document) == STEP5_KEYS, document
    assert (document["status"], document["objective_met"], document["applied_edits_count"]) == (
        "converged",
        "yes",
        1,
    )
    assert (repo / "src" / "calc.py").read_text() == FIXED
    calls = fakes.calls()
    assert [c["product"] for c in calls] == ["codex", "codex"]  # a fresh session per pass
    assert "[verify-diff] iteration 1 (1/3): pending" in done.err


def test_a_deleted_target_is_judged(tmp_path: Path, fakes: FakeCLIs) -> None:
    repo = committed_repo(tmp_path / "repo", {"README.md": "# Read me\n", "a.txt": "a\n"})
    (repo / "README.md").unlink()
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps({"scenarios": [{
        "kind": "median", "title": "gone", "description": "The readme is removed.",
        "checklist": ["[critical] no readme", "nothing else changed", "the diff is a deletion"],
    }]}))  # fmt: skip
    fakes.script(codex=[reply("yes", [], [])])
    done = Host(fakes, repo).ok(
        "review-loop", "verify-diff", "--repo", str(repo), "--description", "the readme is stale",
        "--fix-direction", "delete it", "--target", "README.md", "--executor", "codex",
        "--scenarios-file", str(scenarios),
    )  # fmt: skip
    assert done.json()["status"] == "converged"
    assert "-# Read me" in fakes.calls()[0]["stdin"]


def test_auto_derive_mode_groups_each_changed_skill(tmp_path: Path, fakes: FakeCLIs) -> None:
    skill = "---\nname: alpha\ndescription: Do alpha\n---\n# Alpha\n\nDo one thing.\n"
    repo = committed_repo(tmp_path / "repo", {"skills/alpha/SKILL.md": skill, "README.md": "r\n"})
    (repo / "skills" / "alpha" / "SKILL.md").write_text(
        skill.replace("one thing", "one thing well")
    )
    fakes.script(codex=[reply("yes", [], [], inferred_intent="Alpha does one thing well.")])
    document = Host(fakes, repo).ok(
        "review-loop", "verify-diff", "--repo", str(repo), "--executor", "codex",
        "--max-iterations", "2",
    ).json()  # fmt: skip
    assert document["mode"] == "auto-derive" and document["status"] == "converged", document
    alpha = document["per_skill"]["alpha"]
    assert (alpha["status"], alpha["inferred_intent"]) == (
        "converged",
        "Alpha does one thing well.",
    )
