"""Collaboration tests: the audit result says whether it is reusable gate evidence (A73).

Seed 002: "A committed audit is reusable only when the applicable deterministic
verification is established as passing for that subject; an advisory audit never supplies
reusable gate evidence", and "every gate-eligible run addresses an exact committed head
with no live-file additions and established passing deterministic evidence". The result
carries ``gateEligible`` and ``gateEligibility`` (why), derived from ``advisory`` and the
retained ``deterministicVerification``; passing is never inferred. The result's shape is
kept in a golden file (``REVIEW_LOOP_UPDATE_GOLDEN=1`` rewrites it).

Concern agents are fake CLIs through the real dispatcher and process layer; the run is the
real journal. Async tests run on asyncio and trio.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents import verification_audit as va
from review_loop.orchestrator.workflows.audit import AuditRequest, run_audit
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_audit import (
    DRIVER,
    PATHS,
    PREFS,
    concerns_file,
    remote,
    reply,
)
from tests.orchestrator.workflows.test_scope import Remote

__all__ = ["remote"]  # a pytest fixture shared with test_audit (fakes: tests/conftest.py)

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parents[2] / "golden" / "audit" / "gate_eligibility.json"


async def audited(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path, selector: str, facts: Any
) -> dict[str, Any]:
    fakes.script(claude=[reply(audited=PATHS)])
    request = AuditRequest(
        selector=selector,
        directory=str(remote.work),
        concerns_file=concerns_file(tmp_path, {"*": "claude"}),
        driver=DRIVER,
        deterministic=facts,
    )
    document = await run_audit(request, prefs=PREFS)
    assert document["ok"] is True, document
    return document


def shape(document: dict[str, Any], head: str) -> dict[str, Any]:
    """The result's gate verdict, the head id replaced by ``<head>``."""
    return {
        "gateEligible": document["gateEligible"],
        "gateEligibility": document["gateEligibility"].replace(head, "<head>"),
    }


async def test_gate_eligibility_follows_advisory_and_the_deterministic_facts(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    head = remote.head
    cases = {
        "committed, passing": ("HEAD", {"head": head, "passing": True}),
        "committed, failing": ("HEAD", {"head": head, "passing": False}),
        "committed, facts without passing": ("HEAD", {"head": head, "checks": []}),
        "committed, facts for another head": ("HEAD", {"head": remote.base, "passing": True}),
        "committed, no facts": ("HEAD", None),
        "advisory, passing": ("worktree:HEAD", {"head": head, "passing": True}),
    }
    seen: dict[str, Any] = {}
    keys = set()
    for name, (selector, facts) in cases.items():
        document = await audited(remote, fakes, tmp_path, selector, facts)
        assert document["terminalStatus"] == "approved"  # eligibility is not the verdict
        seen[name] = shape(document, head)
        keys.add(tuple(sorted(document)))
    assert [name for name, s in seen.items() if s["gateEligible"]] == ["committed, passing"]
    [result_keys] = keys  # every result has the same fields
    text = json.dumps({"resultKeys": result_keys, "cases": seen}, indent=2, sort_keys=True)
    text += "\n"
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_gate_eligibility_never_infers_passing() -> None:
    head = "a" * 40
    established = {"status": "established", "head": head}
    assert va.gate_eligibility(False, head, {**established, "passing": True})[0] is True
    assert va.gate_eligibility(False, head, {**established, "passing": "yes"})[0] is False
    assert va.gate_eligibility(False, head, established)[0] is False
    assert va.gate_eligibility(False, head, "unestablished")[0] is False
    advisory = va.gate_eligibility(True, head, {**established, "passing": True})
    assert advisory[0] is False and "advisory" in advisory[1]


def test_passing_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match='"passing" must be true or false'):
        va.check_deterministic({"head": "a" * 40, "passing": "yes"})
