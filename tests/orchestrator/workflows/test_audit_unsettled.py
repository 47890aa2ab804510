"""Collaboration tests: no audit approves a selected path nobody inspected (seed 002, A65).

A concern that answers ``completed`` must settle every path its selection names (audited,
not applicable or unsupported). One that passes a path over in silence is asked again in
the same session ("drive the concern to a final result"); still silent, the run is BLOCKED
naming the required unit, never approved with the path turned into an accounting record
"left to another auditor" (the shape of the seed's Failure 16).

Concern agents are fake CLIs through the real dispatcher and process layer; the run is the
real journal. Async tests run on asyncio and trio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.agents import verification_audit as va
from review_loop.orchestrator.journal import runs
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_audit import audit, concerns_file, remote, reply, subjects
from tests.orchestrator.workflows.test_scope import Remote

__all__ = ["remote"]  # a pytest fixture shared with test_audit (fakes: tests/conftest.py)

pytestmark = pytest.mark.anyio

CODE, TESTS = "python:audit-python-code", "python:audit-python-tests"


async def test_a_silent_concern_is_asked_again_for_the_paths_it_passed_over(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(codex=[reply(audited=[]), reply(audited=["tests/test_a.py"])])
    document = await audit(remote, concerns_file(tmp_path, {TESTS: "codex"}))
    assert document["ok"] is True, document
    calls = fakes.calls()
    assert len(calls) == 2
    assert "did not settle every path" in calls[1]["stdin"]
    assert "- tests/test_a.py" in calls[1]["stdin"]
    assert ("scope", "tests/test_a.py", "audited") in subjects(document)


async def test_a_concern_silent_twice_blocks_instead_of_approving(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(codex=[reply(audited=[])])  # the last step repeats: silent again
    document = await audit(remote, concerns_file(tmp_path, {TESTS: "codex"}))
    assert document["ok"] is False and document["status"] == "BLOCKED", document
    assert "implementation:python:tests:tests/test_a.py" in document["stderr"]
    assert "no final result for the required unit" in document["stderr"]
    assert f"dispatch {TESTS} to codex" in document["command"]
    scope = f"{remote.base}..{remote.head}"
    run = runs.address(remote.work, "audit", "changeset", scope, document["runToken"])
    assert runs.status(run)["sealed"] is False  # never finished approved


async def test_a_path_settled_as_not_applicable_needs_no_second_ask(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(claude=[reply(audited=[], notApplicable=["a.py"])])
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}))
    assert document["ok"] is True, document
    assert len(fakes.calls()) == 1
    assert ("scope", "a.py", "not-applicable") in subjects(document)


def test_unsettled_paths_are_the_selection_minus_every_answered_list() -> None:
    concern = va.Concern("python", "code", "python", "audit-python-code", ("a.py", "b.py", "c.py"))
    answered = va.ConcernResult("completed", audited=("a.py",), unsupported=("c.py",))
    assert va.unsettled_paths(concern, answered) == ("b.py",)
    assert va.unsettled_paths(concern, va.ConcernResult("not_applicable")) == ()
    assert va.unsettled_paths(concern, va.ConcernResult("failed", failure="x")) == ()
