"""Collaboration tests of the phase 1 wiring of seed 004 (fake peer CLIs, the real layers).

- T36: the host writes its position while the peers answer round A: ``converge`` without
  ``--host-position`` runs round A only and keeps it; the next call runs round B.
- T12: round A's first successful round trip serves as the peers' preflight evidence: a
  run with no ``preflight`` is not ``UNVERIFIED`` for want of one; a missing skill still
  stops before any peer is asked.
- T67/T63 (Phase 4 budget): after two blind reviews with an in-scope Fix the result is
  ``UNVERIFIED``; a later ``blind-review --continue`` continues the same run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.converge import preflight_prompt
from review_loop.orchestrator.workflows.skills import SKILL_DIRS_ENV
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import (
    CLEAN_REVIEW,
    FIX_REVIEW,
    fakes,
    files,
    position,
    repo,
    rl,
)

__all__ = ["fakes", "files", "repo"]  # fixtures shared with test_converge
PEERS_AGREE = [position("position")]


def round_a_only(repo: Path, plan: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    return rl(repo, "converge", "--plan", str(plan), "--host", "claude", "--run", "task", *extra)


def test_round_a_runs_before_the_host_position_and_is_kept(
    repo: Path, files: tuple[Path, Path], fakes: FakeCLIs
) -> None:
    fakes.script(any_=PEERS_AGREE)
    plan, host = files
    code, doc = round_a_only(repo, plan)
    assert code == 0, doc
    assert (doc["status"], doc["asked"], doc["rounds"]) == ("awaiting_host_position", 2, 0)
    # the two positions, and the blind-review Claude's preflight alongside them
    assert sorted(c["product"] for c in fakes.calls()) == ["claude", "codex", "grok"]
    [check] = [c for c in fakes.calls() if c["product"] == "claude"]
    assert check["stdin"] == preflight_prompt()
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert "no three-party convergence recorded" in result["reasons"]  # not converged yet

    code, doc = rl(
        repo, "converge", "--plan", str(plan), "--host-position", str(host),
        "--host", "claude", "--run", "task",
    )  # fmt: skip
    assert code == 0, doc
    assert (doc["status"], doc["rounds"], doc["asked"], doc["reused"]) == ("converged", 1, 2, 2)
    assert len(fakes.calls()) == 5  # round A (and the blind reviewer's check) not asked again


def test_round_a_serves_as_the_preflight_evidence(
    repo: Path, files: tuple[Path, Path], fakes: FakeCLIs
) -> None:
    fakes.script(any_=PEERS_AGREE)
    plan, host = files
    code, doc = rl(
        repo, "converge", "--plan", str(plan), "--host-position", str(host),
        "--host", "claude", "--run", "task",
    )  # fmt: skip
    assert code == 0, doc
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert "no preflight recorded" not in result["reasons"]
    assert not [r for r in result["reasons"] if "preflight" in r]
    # no separate preflight round trip of the peers: their round A serves; the blind-review
    # Claude, which round A never asks, gets its own preflight prompt (asked alongside A)
    calls = fakes.calls()
    assert len(calls) == 5
    assert [c["product"] for c in calls if c["stdin"] == preflight_prompt()] == ["claude"]


def test_without_preflight_a_missing_skill_stops_before_any_peer(
    repo: Path,
    files: tuple[Path, Path],
    fakes: FakeCLIs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SKILL_DIRS_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    plan, _ = files
    code, doc = round_a_only(repo, plan)
    assert code == 2 and doc["status"] == "MISSING_DEPENDENCIES"
    assert "skill goal-gate" in doc["block"] and doc["asked"] == 0
    assert fakes.calls() == []


# -- T67 / T63: the blind-review budget resumes --------------------------------------------------


def blind(repo: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    return rl(repo, "blind-review", "--run", "task", *extra)


def test_spent_blind_review_budget_is_unverified_then_continues_on_the_same_run(
    repo: Path, fakes: FakeCLIs
) -> None:
    fix = {"mode": "ok", "text": FIX_REVIEW}
    fakes.script(claude=[fix, fix, {"mode": "ok", "text": CLEAN_REVIEW}])
    for body in ("return 1", "return 2"):  # two rounds, each with an in-scope Fix
        (repo / "app.py").write_text(f"def f(x):\n    {body}\n")
        code, doc = blind(repo)
        assert code == 0 and doc["verdict"] == "FIX", doc
    (repo / "app.py").write_text("def f(x):\n    return 3\n")
    code, spent = blind(repo)
    assert code == 2 and (spent["status"], spent["result"]) == ("budget_exhausted", "UNVERIFIED")
    assert "--continue" in spent["message"]
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert any("blind review budget used" in r for r in result["reasons"])

    # later: the same run continues from the incomplete evidence, no new run or ledger
    code, resumed_doc = blind(repo, "--continue")
    assert code == 0 and resumed_doc["verdict"] == "CLEAN" and resumed_doc["round"] == 3
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert not any("blind review budget" in r for r in result["reasons"])
    assert len([c for c in fakes.calls() if c["product"] == "claude"]) == 3


def test_continue_does_not_widen_a_budget_that_is_not_spent(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "text": FIX_REVIEW}] * 3)
    for body in ("return 1", "return 2"):
        (repo / "app.py").write_text(f"def f(x):\n    {body}\n")
        code, doc = blind(repo, "--continue")  # nothing spent yet: an ordinary review
        assert code == 0 and doc["verdict"] == "FIX", doc
    (repo / "app.py").write_text("def f(x):\n    return 3\n")
    code, spent = blind(repo)
    assert spent["status"] == "budget_exhausted"  # the first two still counted as one budget
