"""Collaboration tests: the blind-review budget and the ledger agree with the snapshots
actually reviewed (seed 004 Phase 4 and Terminal state, T67).

A blind-review Fix is often resolved by going back to a snapshot that already had a CLEAN
review (removing debug code). The review of that snapshot is reused (no new round), and
the ledger's blind-review gate becomes that review, so the run is not left ``UNVERIFIED``
for good by the Fix of a snapshot that no longer exists.

Fake reviewer CLIs through the real dispatcher and process layer; the real ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import CLEAN_REVIEW, FIX_REVIEW, fakes, repo, rl

__all__ = ["fakes", "repo"]  # fixtures shared with test_converge

CLEAN = {"mode": "ok", "text": CLEAN_REVIEW}
FIX = {"mode": "ok", "text": FIX_REVIEW}


def blind(repo: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    return rl(repo, "blind-review", "--run", "task", *extra)


def blind_reasons(repo: Path) -> list[str]:
    _, result = rl(repo, "ledger", "result", "--run", "task")
    return [r for r in result["reasons"] if "blind" in r]


def write(repo: Path, body: str) -> None:
    (repo / "app.py").write_text(f"def f(x):\n    {body}\n")


def test_returning_to_a_clean_snapshot_after_a_spent_budget_completes_the_blind_gate(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(claude=[CLEAN, FIX])
    write(repo, "return x")
    code, first = blind(repo)
    assert code == 0 and first["verdict"] == "CLEAN", first
    write(repo, "print('debug'); return x")  # an unreviewed edit, then its review: Fix
    code, second = blind(repo)
    assert code == 0 and second["verdict"] == "FIX", second
    write(repo, "print('more debug'); return x")
    code, spent = blind(repo)
    assert code == 2 and spent["status"] == "budget_exhausted"
    assert any("budget used" in r for r in blind_reasons(repo))

    write(repo, "return x")  # the minimal fix: back to the reviewed snapshot
    code, reused = blind(repo, "--continue")
    assert code == 0 and (reused["verdict"], reused["reused"], reused["round"]) == (
        "CLEAN",
        True,
        1,
    )
    assert blind_reasons(repo) == []  # neither stale nor budget-used
    _, shown = rl(repo, "ledger", "show", "--run", "task")
    latest = [g for g in shown["ledger"]["gates"] if g["gate"] == "blind-review"][-1]
    assert (latest["result"], latest["proof"]["round"]) == ("CLEAN", 1)
    assert len([c for c in fakes.calls() if c["product"] == "claude"]) == 2  # no new round


def test_returning_to_a_fixed_snapshot_is_that_fix_again(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[FIX, CLEAN])
    write(repo, "return 1")
    assert blind(repo)[1]["verdict"] == "FIX"
    write(repo, "return 2")
    assert blind(repo)[1]["verdict"] == "CLEAN"
    write(repo, "return 1")  # back to the snapshot whose review asked for a Fix
    code, again = blind(repo)
    assert code == 0 and (again["verdict"], again["reused"]) == ("FIX", True)
    reasons = blind_reasons(repo)
    assert reasons == ["blind-review: FIX"], reasons
