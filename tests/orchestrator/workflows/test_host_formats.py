"""Contract tests: every format a host must write is in the command's ``--help``, and a
refusal names the field and what is accepted (seed 004 Phase 1 and Phase 2).

- ``converge --help`` gives the host position's headings (the ones the record reads);
  a position without them is named in the result, not silently "not stated";
- ``ledger --help`` gives the skill report's fields and each gate's result tokens, from
  the model that checks a report; a goal-gate report whose ``result`` is the seed's
  Decision phrase is refused naming ``result`` and ``CONTINUE | HUMAN_GATE``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.agents.converge import (
    GOAL_GATE_TOKENS,
    HOST_POSITION_SECTIONS,
    missing_host_sections,
    skill_report_format,
)
from review_loop.orchestrator import cli
from tests.orchestrator.workflows.test_converge import HOST, repo
from tests.orchestrator.workflows.test_skill_gates import gate, skills, write_report

__all__ = ["repo", "skills"]


def help_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.run([*argv, "--help"]) == 0
    return capsys.readouterr().out


def test_converge_help_gives_the_host_positions_headings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_text(capsys, "converge")
    for title, what, _ in HOST_POSITION_SECTIONS:
        assert f"## {title}" in text and what in text
    assert "Position: AGREE | DISAGREE" in text


def test_a_position_without_the_records_headings_names_them() -> None:
    assert missing_host_sections(HOST) == []
    lines = "Ownership: app.py owns it.\nVerification: pytest -q\n\nPosition: AGREE\n"
    assert missing_host_sections(lines) == ["## Scope", "## Ownership", "## Verification"]
    assert missing_host_sections("# Task scope\nx\n### ownership and deps\ny\n") == [
        "## Verification"
    ]


def test_ledger_help_gives_the_skill_report_and_the_result_tokens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_text(capsys, "ledger")
    for line in skill_report_format():
        assert line in text
    assert ".review-handoff/gate-reports/goal-gate/<evidence digest>.json" in text
    assert f"goal-gate accepts only {' | '.join(sorted(GOAL_GATE_TOKENS))}" in text
    assert "verification: PASS" in text and "blind-review: CLEAN" in text


def test_a_goal_gate_report_with_the_decision_phrase_is_refused_naming_result(
    repo: Path, skills: Path
) -> None:
    write_report(repo, skills / "goal-gate" / "SKILL.md", "PROCEED", skill="goal-gate")
    code, doc = gate(repo, "goal-gate")
    assert code == 2 and doc["status"] == "GATE_UNPROVEN"
    [considered] = doc["considered"]
    assert "result: 'PROCEED' is not a goal-gate result" in considered
    assert "accepted: CONTINUE | HUMAN_GATE" in considered


def test_a_report_with_several_bad_fields_names_each(repo: Path, skills: Path) -> None:
    write_report(
        repo,
        skills / "goal-gate" / "SKILL.md",
        "Proceed to Phase 3",
        skill="goal-gate",
        skillSha256="abc",
    )
    code, doc = gate(repo, "goal-gate")
    assert code == 2
    [considered] = doc["considered"]
    assert "result: String should match pattern" in considered
    assert "skillSha256: String should match pattern" in considered
    assert "accepted: the sha256 (64 lowercase hex)" in considered
