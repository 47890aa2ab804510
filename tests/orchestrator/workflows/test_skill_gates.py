"""Skill gates (T61, T51): a host skill's report proves ``architecture-hardening`` and
``goal-gate``; a typed token stays ``self-reported``.

Contract tests through the real ``ledger`` command (in process, real git): the report must be
the installed skill's (same ``SKILL.md`` sha256, outside the repository), cover the evidence
recomputed now, be untracked and reached without a link; anything else is ``GATE_UNPROVEN``
and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import git
from tests.orchestrator.workflows.test_converge import repo, rl

__all__ = ["repo"]
HARDENING = "architecture-hardening-loop"


@pytest.fixture
def skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user skill directory with both skills installed (``$REVIEW_LOOP_SKILL_DIRS``)."""
    root = tmp_path / "user-skills"
    for name in (HARDENING, "goal-gate"):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\n---\n")
    monkeypatch.setenv("REVIEW_LOOP_SKILL_DIRS", str(root))
    return root


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def evidence(repo: Path) -> dict[str, Any]:
    code, doc = rl(repo, "evidence")
    assert code == 0, doc
    return dict(doc["evidence"])


def write_report(
    repo: Path, skill_md: Path, result: str, *, skill: str = HARDENING, **extra: Any
) -> Path:
    """What the skill writes at its end: its result on the evidence now.

    The loop has already started (its ledger exists, so ``.review-handoff/`` is excluded
    from git and the report itself is no part of the evidence).
    """
    assert rl(repo, "ledger", "meta", "--task", "t", "--run", "task")[0] == 0
    now = evidence(repo)
    path = repo / ".review-handoff" / "gate-reports" / skill / f"{now['digest']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    report = {"skill": skill, "result": result, "evidence": now, "skillSha256": sha(skill_md)}
    path.write_text(json.dumps({**report, **extra}))
    return path


def gate(repo: Path, name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    return rl(repo, "ledger", "gate", "--gate", name, "--run", "task", *extra)


def gates_recorded(repo: Path) -> list[dict[str, Any]]:
    return list(rl(repo, "ledger", "show", "--run", "task")[1]["ledger"]["gates"])


def test_contract_hardening_report_proves_the_gate(repo: Path, skills: Path) -> None:
    report = write_report(repo, skills / HARDENING / "SKILL.md", "NO_ACTIONABLE_FINDINGS")
    code, doc = gate(repo, "architecture-hardening")
    assert code == 0, doc
    record = doc["gate"]
    assert (record["result"], record["provenance"]) == ("NO_ACTIONABLE_FINDINGS", "proven")
    proof = record["proof"]
    assert (proof["kind"], proof["ref"], proof["sha256"]) == (
        "skill-report",
        report.name,
        sha(report),
    )
    assert proof["skill"] == str(skills / HARDENING / "SKILL.md")
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert "architecture-hardening" in result["provenGates"]
    line = next(x for x in result["block"].splitlines() if x.startswith("- Gate provenance"))
    assert f"architecture-hardening (skill report {report.name}" in line


def test_contract_typed_hardening_result_stays_self_reported(repo: Path, skills: Path) -> None:
    code, doc = gate(repo, "architecture-hardening", "--result", "NO_ACTIONABLE_FINDINGS")
    assert code == 0 and doc["gate"]["provenance"] == "self-reported"
    result = rl(repo, "ledger", "result", "--run", "task")[1]
    assert "architecture-hardening" in result["selfReportedGates"]
    assert "self-reported: architecture-hardening" in result["block"]


def _refused(repo: Path, why: str) -> None:
    code, doc = gate(repo, "architecture-hardening")
    assert (code, doc["status"]) == (2, "GATE_UNPROVEN"), doc
    assert any(why in reason for reason in doc["considered"]), doc["considered"]
    assert gates_recorded(repo) == []  # a refused gate writes nothing


def test_contract_report_of_older_evidence_proves_nothing(repo: Path, skills: Path) -> None:
    write_report(repo, skills / HARDENING / "SKILL.md", "NO_ACTIONABLE_FINDINGS")
    (repo / "app.py").write_text("def f(x):\n    return 1\n")  # the tree moved on
    _refused(repo, "the tree is now")


def test_contract_report_of_another_skill_version_proves_nothing(repo: Path, skills: Path) -> None:
    write_report(repo, skills / HARDENING / "SKILL.md", "NO_ACTIONABLE_FINDINGS")
    (skills / HARDENING / "SKILL.md").write_text("---\nname: changed\n---\n")
    _refused(repo, "names skill sha256")


def test_contract_skill_shipped_by_the_repository_proves_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REVIEW_LOOP_SKILL_DIRS", str(tmp_path / "none"))
    planted = repo / ".claude" / "skills" / HARDENING / "SKILL.md"
    planted.parent.mkdir(parents=True)
    planted.write_text("planted\n")
    git(repo, "add", ".claude")
    git(repo, "commit", "-qm", "ship a skill")
    write_report(repo, planted, "NO_ACTIONABLE_FINDINGS")
    _refused(repo, "inside the reviewed repository")


def test_contract_tracked_or_linked_report_proves_nothing(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    report = write_report(repo, skills / HARDENING / "SKILL.md", "NO_ACTIONABLE_FINDINGS")
    outside = tmp_path / "outside.json"
    report.rename(outside)
    report.symlink_to(outside)  # a link is never followed: no candidate at all
    code, doc = gate(repo, "architecture-hardening")
    assert (code, doc["status"]) == (2, "GATE_UNPROVEN")
    assert gates_recorded(repo) == []
    report.unlink()
    outside.rename(report)
    git(repo, "add", "-f", str(report))
    git(repo, "commit", "-qm", "a committed report")
    _refused(repo, "tracked by git")


def test_contract_report_of_another_skill_proves_nothing(repo: Path, skills: Path) -> None:
    report = write_report(repo, skills / HARDENING / "SKILL.md", "NO_ACTIONABLE_FINDINGS")
    data = json.loads(report.read_text())
    report.write_text(json.dumps({**data, "skill": "goal-gate"}))
    _refused(repo, "not architecture-hardening-loop")


def test_contract_goal_gate_report_human_gate_stops_the_loop(repo: Path, skills: Path) -> None:
    write_report(
        repo,
        skills / "goal-gate" / "SKILL.md",
        "HUMAN_GATE",
        skill="goal-gate",
        decision="ask approval: the Goal's owner must confirm",
    )
    code, doc = gate(repo, "goal-gate")
    assert code == 0 and doc["gate"]["provenance"] == "proven", doc
    (repo / "app.py").write_text("def f(x):\n    return 2\n")  # Phase 3 changes the tree
    code, result = rl(repo, "ledger", "result", "--run", "task")
    assert result["result"] == "HUMAN_GATE"
    assert any(
        r.startswith("goal-gate returned HUMAN_GATE: ask approval") for r in result["reasons"]
    )
    assert "- Goal: not-created (goal-gate: HUMAN_GATE, proven)" in result["block"]
    assert "goal-gate" not in [g["gate"] for g in result["staleGates"]]  # decided before
    code, bad = gate(repo, "goal-gate", "--result", "MAYBE")
    assert code == 1 and "--result" in json.dumps(bad)


def test_process_ledger_gate_from_a_report_one_document_and_exit_codes(
    repo: Path, skills: Path
) -> None:
    """The real command in its own process: proven (exit 0), then refused (exit 2)."""

    def ledger_gate() -> tuple[int, dict[str, Any]]:
        argv = ["ledger", "gate", "--gate", "architecture-hardening", "--run", "task"]
        proc = subprocess.run(
            [sys.executable, "-m", "review_loop", *argv, "--repo", str(repo)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=120,
        )
        return proc.returncode, json.loads(proc.stdout)  # one JSON document

    write_report(repo, skills / HARDENING / "SKILL.md", "HUMAN_GATE")
    code, doc = ledger_gate()
    assert (code, doc["gate"]["provenance"], doc["gate"]["result"]) == (0, "proven", "HUMAN_GATE")
    result = rl(repo, "ledger", "result", "--run", "task")[1]
    assert result["result"] == "HUMAN_GATE"  # the skill's HUMAN_GATE passes through
    assert "architecture-hardening returned HUMAN_GATE" in result["reasons"]
    (repo / "app.py").write_text("def f(x):\n    return 3\n")
    code, doc = ledger_gate()
    assert (code, doc["ok"], doc["status"]) == (2, False, "GATE_UNPROVEN")
