"""Collaboration tests: an embedding program cancels a two-peer consult, on asyncio and trio.

Rows: {cancellation from asyncio, cancellation from trio} × {hang, grandchild,
SIGTERM-ignoring, setsid escaper holding the pipe, detached helper after a normal answer}.
The program runs :func:`run_consult` on :func:`open_dispatcher` and cancels its scope
once both reviewers run. Checks: the cancellation propagates (the consult never
returns), every record is finished (``interrupted``; none left ``running``), the
``interrupted`` callback receives the document of what had ended (an answer that arrived
is kept), and no process of the run survives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.agents.records import SessionRecord
from review_loop.orchestrator.dispatcher import (
    SESSION_FILE,
    Dispatcher,
    PeerRequest,
    open_dispatcher,
)
from review_loop.orchestrator.files import utc_now
from review_loop.orchestrator.git import ensure_layout
from review_loop.orchestrator.workflows.consult import ConsultPlan, run_consult
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.faults.harness import (
    GRACE_MS,
    MODES,
    PEER_A,
    PEER_B,
    WAIT_S,
    Mode,
    Scanner,
    describe_row,
    record_of,
    row_is_set_up,
    script_row,
    unfinished,
)

pytestmark = pytest.mark.anyio


async def _wait_set_up(fakes: FakeCLIs, repo: Path, scanner: Scanner, mode: Mode) -> None:
    with anyio.move_on_after(WAIT_S):
        while not await anyio.to_thread.run_sync(row_is_set_up, fakes, repo, scanner, mode):
            await anyio.sleep(0.05)
        return
    raise AssertionError(
        f"the {mode.name} row was not set up: {describe_row(fakes, repo, scanner)}"
    )


@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
async def test_collaboration_embedding_program_cancels_a_two_peer_consult(
    mode: Mode,
    repo: Path,
    fakes: FakeCLIs,
    scanner: Scanner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    script_row(fakes, mode)
    prefs = Prefs.validate({"graceMs": GRACE_MS, "timeoutMs": 120_000, "livenessMs": 600_000})
    plan = ConsultPlan(peers=(PEER_A, PEER_B), question="Is the change right?")
    ensure_layout(repo)
    kept: list[dict[str, Any]] = []
    returned = False

    async def consult(dispatcher: Dispatcher) -> None:
        nonlocal returned
        await run_consult(dispatcher, plan, interrupted=kept.append)
        returned = True

    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(consult, dispatcher)
                await _wait_set_up(fakes, repo, scanner, mode)
                scope.cancel()  # the program's own cancellation (asyncio or trio)
    assert scope.cancelled_caught and not returned

    assert unfinished(repo) == []
    b_record = record_of(repo, PEER_B)
    assert b_record is not None and b_record["status"] == "interrupted"
    [document] = kept
    assert document["ok"] is False and document["status"] == "interrupted"
    assert PEER_B in document["interrupted"]
    by_peer = {result["peer"]: result for result in document["results"]}
    assert by_peer[PEER_B]["code"] == "interrupted"
    # B was launched: what it was asked may have arrived, so it is DELIVERY_UNKNOWN (never a
    # proven NOT_SUBMITTED) and its interrupted attempt is kept
    assert by_peer[PEER_B]["delivery"] == "DELIVERY_UNKNOWN"
    b_delivery = next(d for d in dispatcher.outcomes if d.peer == PEER_B)
    assert b_delivery.interrupted and b_delivery.state.value == "DELIVERY_UNKNOWN"
    assert [a.reason for a in b_delivery.attempts][-1:] == ["interrupted"]
    if mode.a_answers:
        assert by_peer[PEER_A]["text"] == f"answer from {PEER_A}"
        a_record = record_of(repo, PEER_A)
        assert a_record is not None and a_record["status"] == "finished"
    else:
        assert document["interrupted"] == [PEER_A, PEER_B]
    survivors = scanner.survivors()
    assert survivors == [], [" ".join(p.cmdline()) for p in survivors]


async def test_collaboration_a_record_left_starting_before_the_launch_is_finished(
    repo: Path, fakes: FakeCLIs, scanner: Scanner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancellation between an attempt's first record write and its launch (a namespace
    or a throw-away copy being prepared) must not leave ``starting`` behind. The record
    such an attempt leaves is planted, then the request is cancelled before it launches."""
    for key, value in fakes.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    prefs = Prefs.validate({"graceMs": GRACE_MS})
    request = PeerRequest(peer="grok", prompt="q", record_dir=repo / "runtime-test" / "grok")
    request.record_dir.mkdir(parents=True)
    planted = SessionRecord(
        product="grok",
        updated=utc_now(),
        cwd=str(repo),
        peer="grok",
        command=["grok"],
        ownerPid=os.getpid(),
        startedAt=utc_now(),
    )
    path = request.record_dir / SESSION_FILE
    path.write_text(planted.model_dump_json())

    async def consult_cancelled() -> tuple[Dispatcher, anyio.CancelScope]:
        """The request, cancelled at its first checkpoint (the probe)."""
        async with open_dispatcher(
            repo=repo, prefs=prefs, progress=lambda _: None, reap=False
        ) as dispatcher:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await dispatcher.consult(request)
        return dispatcher, scope

    dispatcher, scope = await consult_cancelled()
    assert scope.cancelled_caught
    record = json.loads(path.read_text())
    assert record["status"] == "interrupted" and record["state"] == "NOT_SUBMITTED"
    [delivery] = dispatcher.outcomes
    assert delivery.interrupted and delivery.state.value == "NOT_SUBMITTED"
    assert [a.reason for a in delivery.attempts] == ["interrupted"]
    events = (request.record_dir / "events.jsonl").read_text().splitlines()
    assert json.loads(events[-1])["reason"] == "interrupted"
    # a record of another owner (or already final) is never touched
    other = planted.model_copy(update={"ownerPid": os.getppid()})
    path.write_text(other.model_dump_json())
    await consult_cancelled()
    assert json.loads(path.read_text())["status"] == "starting"
