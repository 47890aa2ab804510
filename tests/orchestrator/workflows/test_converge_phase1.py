"""Phase 1 wiring of seed 004 (collaboration tests, fake peer CLIs through the real layers).

- T36: the host writes its position while the peers answer round A: ``converge`` without
  ``--host-position`` runs round A only and keeps it; the next call runs round B.
- T12: round A's first successful round trip serves as the peers' preflight evidence: a
  run with no ``preflight`` is not ``UNVERIFIED`` for want of one; a missing skill still
  stops before any peer is asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.skills import SKILL_DIRS_ENV
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import fakes, files, position, repo, rl

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
    assert [c["product"] for c in fakes.calls()] in (["codex", "grok"], ["grok", "codex"])
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert "no three-party convergence recorded" in result["reasons"]  # not converged yet

    code, doc = rl(
        repo, "converge", "--plan", str(plan), "--host-position", str(host),
        "--host", "claude", "--run", "task",
    )  # fmt: skip
    assert code == 0, doc
    assert (doc["status"], doc["rounds"], doc["asked"], doc["reused"]) == ("converged", 1, 2, 2)
    assert len(fakes.calls()) == 4  # round A was not asked again


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
    assert len(fakes.calls()) == 4  # no separate preflight round trip


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
