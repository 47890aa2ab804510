"""Collaboration tests: what docs/journal.md says of keys is what the journal does.

The idempotency key is the client's choice (as in spx), so the same finding sent under a
second key must not be counted twice: an audit finding's ``<unitId>:<rule>`` is recorded
once, and a second key for it is refused naming the rule. A refused payload lists every
problem of its fields after spx's block, and the verb's ``--help`` names them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.orchestrator.journal.payloads import finding, finding_key, unit
from tests.test_cli_verification import Repo, add, locator, repo, run_cli, started

__all__ = ["repo", "run_cli", "started"]  # fixtures shared with test_cli_verification


def test_a_finding_under_a_second_key_is_not_recorded_twice(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    scope = unit("src/a.py")
    assert add(run_cli, repo, token, "scope", scope["unitId"], scope, tmp_path).code == 0
    wrong = finding(scope, rule="wrong-mean")
    first = add(run_cli, repo, token, "finding", "python:code:src/a.py:other", wrong, tmp_path)
    assert first.code == 0, first.err
    again = add(run_cli, repo, token, "finding", finding_key(wrong), wrong, tmp_path)
    assert again.code == 1 and again.out == ""
    assert "a finding's unitId and rule are not already recorded in the run" in again.err
    status = run_cli("status", *locator(repo, token))
    assert json.loads(status.out)["findingCount"] == 1
    other_rule = finding(scope, rule="missing-docstring")
    assert add(run_cli, repo, token, "finding", "k3", other_rule, tmp_path).code == 0


def test_a_refused_payload_lists_every_problem_with_what_is_accepted(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    payload = {"unitId": "u", "subject": "src/a.py", "auditClass": "implementation"}
    refused = add(run_cli, repo, token, "scope", "u", payload, tmp_path)
    assert refused.code == 1
    assert 'reason             payload field "auditKind" is missing or malformed' in refused.err
    problems = refused.err.split("(field: what is wrong; accepted):\n")[1].splitlines()
    assert [line.split(":")[0].strip() for line in problems[:-1]] == [
        "auditKind",
        "coverageRequirement",
        "coverageStatus",
        "priorContext",
        "expectedProducer",
        "recordedByRunDriver",
    ]
    assert "accepted: one of required | optional" in problems[1]
    assert problems[-1] == "  every field: review-loop verification run scope add --help"
