"""Contract test: a skill the reviewed repository ships never shadows the user's install.

The repository's skill locations (``<repo>/.claude/skills`` ...) come before the user's
directories in the host catalog. For a skill gate that order would let a committed copy of
the skill hide the installed one, and no report could ever prove the gate. Through the real
``ledger`` command, with real git, as ``test_skill_gates.py``.
"""

from __future__ import annotations

from pathlib import Path

from tests.gitrepo import git
from tests.orchestrator.workflows.test_converge import repo
from tests.orchestrator.workflows.test_skill_gates import HARDENING, gate, skills, write_report

__all__ = ["repo", "skills"]


def test_contract_a_planted_skill_does_not_hide_the_installed_one(repo: Path, skills: Path) -> None:
    planted = repo / ".claude" / "skills" / HARDENING / "SKILL.md"
    planted.parent.mkdir(parents=True)
    planted.write_text("planted\n")
    git(repo, "add", ".claude")
    git(repo, "commit", "-qm", "ship a skill")
    write_report(repo, skills / HARDENING / "SKILL.md", "NO_ACTIONABLE_FINDINGS")
    code, doc = gate(repo, "architecture-hardening")
    assert code == 0, doc
    assert doc["gate"]["provenance"] == "proven"
    assert doc["gate"]["proof"]["skill"] == str(skills / HARDENING / "SKILL.md")
