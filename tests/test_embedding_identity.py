"""Contract and collaboration tests: a request's outcome is found by the request itself.

``Dispatcher.outcome_of(request)`` answers for that very object, never for another request
that is equal to it, shares its ``record_dir``, or was given the ``id()`` of a request that
was garbage-collected; it reads and writes nothing. ``open_dispatcher(repo=...)`` alone
loads the user's prefs. Each progress line names its request. The simulated reviewer
answers (no key); a hanging fake CLI stands for a reviewer still running.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import anyio
import pytest

from review_loop import (
    DeliveryState,
    PeerRequest,
    ProgressLine,
    open_dispatcher,
)
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.test_cli import git_repo

pytestmark = pytest.mark.anyio


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


def _batch(label: str) -> list[PeerRequest]:
    return [
        PeerRequest(peer="simulated", prompt=f"{label} for codex"),
        PeerRequest(peer="simulated", prompt=f"{label} for gemini"),
    ]


async def test_collaboration_the_documented_cancellation_pattern_never_reports_another_batch(
    repo: Path,
) -> None:
    """docs/process-ownership.md's pattern, run twice in one dispatcher: batch 1 answered
    and dropped by the caller, batch 2 cancelled before anything launched. Each batch 2
    request is reported as cancelled, never as answered with batch 1's text (the lookup
    by ``id()`` did that once a new request took a collected one's id)."""
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        first = _batch("batch 1")
        answered = await d.fan_out(first)
        assert all(delivery.ok for delivery in answered)
        old_ids = {id(request) for request in first}
        del first, answered
        gc.collect()
        # New requests, the ones that took a collected request's id first (CPython reuses
        # freed memory): the case the id() lookup got wrong. Any ids: the same assertions.
        made = [_batch("batch 2") for _ in range(200)]
        second = sorted(made, key=lambda b: -len(old_ids & {id(r) for r in b}))[0]
        del made
        with anyio.move_on_after(0):
            await d.fan_out(second)
        for request in second:
            delivery = d.outcome_of(request)
            assert delivery.interrupted, delivery
            assert delivery.state is DeliveryState.NOT_SUBMITTED, delivery
            assert delivery.reply is None, delivery


async def test_contract_a_request_never_asked_is_not_answered_by_one_with_its_record_dir(
    repo: Path, tmp_path: Path
) -> None:
    """Two requests with the same absolute ``record_dir`` (allowed: the caller owns it):
    the one never asked is not given the other's answer (the record path is not the key)."""
    record_dir = tmp_path / "records" / "review"
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        asked = PeerRequest(peer="simulated", prompt="asked", record_dir=record_dir)
        delivered = await d.consult(asked)
        never = PeerRequest(peer="codex", prompt="never asked", record_dir=record_dir)
        assert d.outcome_of(asked) is delivered
        unasked = d.outcome_of(never)
    assert delivered.ok
    assert unasked.reply is None and unasked.interrupted, unasked
    assert unasked.state is DeliveryState.NOT_SUBMITTED
    assert (unasked.peer, unasked.product) == ("codex", "codex")
    assert unasked.detail == "never asked of this dispatcher"


async def test_contract_equal_requests_are_distinct_requests(repo: Path) -> None:
    """PeerRequest compares by value; its outcome is found by identity."""
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        asked = PeerRequest(peer="simulated", prompt="same")
        twin = PeerRequest(peer="simulated", prompt="same")
        assert asked == twin and asked is not twin
        delivered = await d.consult(asked)
        assert d.outcome_of(asked) is delivered
        assert d.outcome_of(twin).detail == "never asked of this dispatcher"
        again = await d.consult(twin)
        assert d.outcome_of(twin) is again and d.outcome_of(asked) is delivered


async def test_collaboration_a_running_request_is_reported_running_and_left_alone(
    repo: Path, tmp_path: Path, fakes: FakeCLIs
) -> None:
    """Asked while its reviewer still runs: ``DELIVERY_UNKNOWN``/``running``, and its record
    stays ``running`` (the lookup once finished it ``interrupted`` under the live session)."""
    fakes.script(claude=[{"mode": "hang"}])
    record_dir = tmp_path / "records" / "running"
    request = PeerRequest(peer="claude", prompt="slow", record_dir=record_dir, timeout_ms=60_000)
    prefs = Prefs.validate({"graceMs": 300})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
        async with anyio.create_task_group() as group:
            group.start_soon(d.consult, request)
            record = record_dir / "reviewer-session.json"
            with anyio.fail_after(60):
                while not fakes.calls():
                    await anyio.sleep(0.05)
            seen = d.outcome_of(request)
            status = json.loads(record.read_text())["status"]
            group.cancel_scope.cancel()
        ended = d.outcome_of(request)
    assert (seen.state, seen.reason, seen.interrupted) == (
        DeliveryState.DELIVERY_UNKNOWN,
        "running",
        False,
    )
    assert status == "running"
    assert ended.interrupted and ended.state is DeliveryState.DELIVERY_UNKNOWN
    assert json.loads(record.read_text())["status"] == "interrupted"


async def test_contract_open_dispatcher_with_repo_alone_loads_the_users_prefs(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "state"
    home.mkdir()
    (home / "prefs.toml").write_text("graceMs = 1234\n")
    monkeypatch.setenv("REVIEW_LOOP_HOME", str(home))
    async with open_dispatcher(repo=repo) as d:
        assert d.prefs.graceMs == 1234
        delivery = await d.consult(PeerRequest(peer="simulated", prompt="defaults?"))
    assert delivery.ok


async def test_contract_each_progress_line_names_its_request(repo: Path) -> None:
    """Two requests to the same reviewer at once: lines of the same text, each naming the
    caller's own request object and its record directory."""
    lines: list[ProgressLine] = []
    one = PeerRequest(peer="simulated", prompt="one")
    two = PeerRequest(peer="simulated", prompt="two")
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lines.append) as d:
        first, second = await d.fan_out([one, two])
    answered = [line for line in lines if line.status == "answered"]
    assert sorted(id(line.request) for line in answered) == sorted([id(one), id(two)])
    for line in lines:
        assert isinstance(line, str) and line.startswith("[review-loop] reviewer=simulated")
        assert line.peer == "simulated"
        assert line.request is one or line.request is two
        delivery = first if line.request is one else second
        assert line.record_dir == Path(delivery.recordPath or "").parent
