"""Collaboration tests of the single writer (open_journal) on asyncio and trio.

Kind: async tests over real files; the writer's worker thread does real fsyncs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.orchestrator.journal.store import (
    Appended,
    Existing,
    Mutation,
    Refused,
    RunLog,
    Schema,
)
from review_loop.orchestrator.journal.writer import JournalClosedError, open_journal

pytestmark = pytest.mark.anyio


def count(view: dict[str, Any], event: Mapping[str, Any]) -> None:
    view["n"] = view.get("n", 0) + 1


SCHEMA = Schema("count/1", dict, count, frozenset({"end"}))


@pytest.fixture
def log(tmp_path: Path) -> RunLog:
    run = RunLog(tmp_path / "run-w.jsonl", schema=SCHEMA)
    run.create()
    return run


async def put(journal: Any, key: str) -> None:
    await journal.append("item", {}, key=key)


def contiguous(log: RunLog) -> list[int]:
    sequence = [event["seq"] for event in log.read_events()]
    assert sequence == list(range(1, len(sequence) + 1))
    return sequence


async def test_fifty_tasks_append_contiguously_in_batches(log: RunLog) -> None:
    results: dict[str, int] = {}

    async with open_journal(log) as journal:

        async def producer(task: int) -> None:
            for index in range(20):
                key = f"t{task}-{index}"
                outcome = await journal.append("item", {"task": task}, key=key)
                assert isinstance(outcome, Appended)
                results[key] = outcome.sequence

        async with anyio.create_task_group() as group:
            for task in range(50):
                group.start_soon(producer, task)
        stats = journal.statistics()

    assert len(results) == 1000
    assert sorted(results.values()) == list(range(1, 1001))
    assert contiguous(log) == list(range(1, 1001))
    by_key = {event["data"]["idempotencyKey"]: event["seq"] for event in log.read_events()}
    assert by_key == results
    assert stats.committed == 1000
    assert stats.batches < 1000  # queued entries share one durable write


async def test_fifty_tasks_racing_the_same_keys_record_each_key_once(log: RunLog) -> None:
    outcomes: list[Any] = []
    async with open_journal(log) as journal:

        async def producer() -> None:
            for index in range(10):
                outcomes.append(await journal.append("item", {}, key=f"shared-{index}"))

        async with anyio.create_task_group() as group:
            for _ in range(50):
                group.start_soon(producer)
    assert contiguous(log) == list(range(1, 11))
    assert sum(isinstance(o, Appended) for o in outcomes) == 10
    assert sum(isinstance(o, Existing) for o in outcomes) == 490


async def test_two_writers_on_one_log_share_one_sequence(log: RunLog) -> None:
    async with (
        open_journal(RunLog(log.path, schema=SCHEMA)) as first,
        open_journal(RunLog(log.path, schema=SCHEMA)) as second,
    ):

        async def producer(journal: Any, name: str) -> None:
            for index in range(100):
                await journal.append("item", {}, key=f"{name}-{index}")

        async with anyio.create_task_group() as group:
            for task in range(10):
                group.start_soon(producer, first, f"a{task}")
                group.start_soon(producer, second, f"b{task}")
    assert contiguous(log) == list(range(1, 2001))


async def test_a_refusal_reaches_only_its_producer(log: RunLog) -> None:
    def refuse(view: Mapping[str, Any]) -> Any:
        raise ValueError("refused")

    async with open_journal(log) as journal:
        async with anyio.create_task_group() as group:
            for index in range(10):
                group.start_soon(put, journal, f"k{index}")
        refused = await journal.record(Mutation(type="item", id="r", decide=refuse))
        ok = await journal.append("item", {}, key="after")
    assert isinstance(refused, Refused) and str(refused.error) == "refused"
    assert isinstance(ok, Appended) and ok.sequence == 11


async def test_sealed_stream_refuses_and_a_second_seal_is_idempotent(log: RunLog) -> None:
    async with open_journal(log) as journal:
        await journal.append("item", {}, key="a")
        sealed = await journal.record(Mutation(type="end", id="end"))
        late = await journal.append("item", {}, key="b")
        again = await journal.record(Mutation(type="end", id="end"))
    assert isinstance(sealed, Appended) and sealed.sequence == 2
    assert isinstance(late, Refused)
    assert again == Existing(2)
    assert log.sealed_path.exists()


async def test_write_errors_reach_every_producer_of_the_batch(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "absent" / "run-none.jsonl")
    async with open_journal(log) as journal:
        with pytest.raises(Exception, match="no journal"):
            await journal.append("item", {}, key="a")


async def test_entries_queued_at_exit_are_committed(log: RunLog) -> None:
    async with open_journal(log, capacity=200) as journal, anyio.create_task_group() as group:
        for index in range(100):
            group.start_soon(put, journal, f"k{index}")
    assert contiguous(log) == list(range(1, 101))


async def test_record_after_close_is_refused(log: RunLog) -> None:
    async with open_journal(log) as journal:
        pass
    with pytest.raises(JournalClosedError):
        await journal.append("item", {}, key="late")


async def test_cancelling_the_owner_leaves_a_whole_journal(log: RunLog) -> None:
    with anyio.CancelScope() as outer:
        async with open_journal(log) as journal, anyio.create_task_group() as group:
            for index in range(30):
                group.start_soon(put, journal, f"k{index}")
            await anyio.sleep(0.05)
            outer.cancel()
            await anyio.sleep(5)
    assert outer.cancelled_caught
    contiguous(log)  # whatever was committed is whole and gap-free
    reopened = RunLog(log.path, schema=SCHEMA)
    async with open_journal(reopened) as journal:
        outcome = await journal.append("item", {}, key="after")
    assert isinstance(outcome, Appended)
    contiguous(log)


async def test_backpressure_bounds_the_queue(log: RunLog) -> None:
    async with open_journal(log, capacity=4) as journal, anyio.create_task_group() as group:
        for index in range(40):
            group.start_soon(put, journal, f"k{index}")
        await anyio.sleep(0)
        assert journal.statistics().backlog <= 4
    assert contiguous(log) == list(range(1, 41))
