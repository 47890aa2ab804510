"""Collaboration tests: what a person reads while reviewers run and when one fails.

A line when each reviewer starts (the first liveness line), answers, times out, falls back
or never starts; no liveness line and no retry for a program that is not installed or a
STOP file; the STOP file named; the deadline the user set. Fake CLIs through the real
process layer, on asyncio and trio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.prefs import PeerCommand
from tests.fakes import FakeCLIs
from tests.orchestrator.test_dispatcher import consult_then_stop, prefs, repo, request

pytestmark = pytest.mark.anyio
__all__ = ["repo"]  # a fixture, imported for pytest (fakes: tests/conftest.py)


async def test_answer_line_follows_the_start_line(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "text": "fine"}])
    lines: list[str] = []
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lines.append) as d:
        delivery = await d.consult(request(repo))
    assert delivery.ok
    assert lines[0].startswith("[review-loop] reviewer=claude status=active elapsed=00:00")
    assert lines[-1] == "[review-loop] reviewer=claude status=answered elapsed=00:00"


async def test_timeout_line_and_the_deadline_the_user_set(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "stubborn"}])
    lines: list[str] = []
    async with open_dispatcher(repo=repo, prefs=prefs(graceMs=500), progress=lines.append) as d:
        delivery = await d.consult(request(repo, timeout_ms=1000))
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    assert delivery.reason == "timeout"
    # Not "timeout after 1530ms": the grace spent ending the tree is not the deadline.
    assert delivery.detail.startswith("timeout after 1000ms (+ grace;")
    assert any(line.startswith("[review-loop] reviewer=claude status=timeout") for line in lines)


async def test_fallback_line(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "hang"}], codex=[{"mode": "ok", "text": "from codex"}])
    lines: list[str] = []
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lines.append) as d:
        delivery = await d.consult(request(repo, timeout_ms=1000, fallback=("codex",)))
    assert delivery.ok and delivery.product == "codex"
    assert "[review-loop] reviewer=claude status=fallback to=codex why=timeout" in lines
    assert lines[-1] == "[review-loop] reviewer=codex status=answered elapsed=00:00"


async def test_missing_executable_is_tried_once_and_never_reported_active(
    repo: Path, fakes: FakeCLIs
) -> None:
    p = prefs(peerCommands={"codex002": PeerCommand(product="codex", command=("nope-codex",))})
    lines: list[str] = []
    async with open_dispatcher(repo=repo, prefs=p, progress=lines.append) as d:
        delivery = await d.consult(request(repo, "codex002"))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert len(delivery.attempts) == 1  # a missing program is still missing a moment later
    assert not any("status=active" in line for line in lines)
    assert lines == [
        "[review-loop] reviewer=codex002 status=not-started why='executable not found: nope-codex'"
    ]


async def test_stop_file_is_named_and_not_retried(repo: Path, fakes: FakeCLIs) -> None:
    stop = repo / ".review-handoff" / "STOP"
    stop.parent.mkdir(parents=True)
    stop.write_text("")
    lines: list[str] = []
    async with open_dispatcher(repo=repo, prefs=prefs(), progress=lines.append) as d:
        delivery = await d.consult(request(repo))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert len(delivery.attempts) == 1
    assert f"rm '{stop}'" in delivery.detail  # the path, quoted for a shell (it has a space)
    assert fakes.calls() == []


async def test_a_stop_during_the_run_is_named_in_the_consult_hint(
    repo: Path, fakes: FakeCLIs
) -> None:
    from review_loop.orchestrator.workflows.consult import consult_result

    fakes.script(claude=[{"mode": "hang"}])
    stop = repo / ".review-handoff" / "STOP"
    stop.parent.mkdir(parents=True)
    delivery = await consult_then_stop(repo, fakes, request(repo), stop)
    assert delivery.reason == "STOP interrupt"
    document = consult_result(delivery, None)
    assert str(stop) in document["hint"] and "remove it" in document["hint"]
