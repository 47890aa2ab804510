"""The single writer: one task owns a stream's order; producers wait for durability.

::

    async with open_journal(RunLog(path)) as journal:
        outcome = await journal.record(Mutation(type="x", id="k", key="k", data={...}))

Producers send immutable :class:`~.store.Mutation` entries through a *bounded* anyio memory
stream, so backpressure is real. The writer task takes what is queued (up to ``max_batch``)
with ``receive_nowait``, commits the batch in a worker thread — decide, assign ``seq``, one
``pwrite``, one ``fdatasync`` — under a shield so a batch is never half-done, and only then
answers each producer. Across processes, :meth:`RunLog.commit` holds the stream's file lock,
so several processes each running a writer still produce one contiguous sequence.

A producer cancelled while it waits for its answer does not un-write its entry: once queued,
an entry is committed (or refused) like every other.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from review_loop.orchestrator.journal.store import (
    JournalError,
    Mutation,
    Outcome,
    RunLog,
)

DEFAULT_CAPACITY: Final = 64
DEFAULT_MAX_BATCH: Final = 512
DRAIN_SECONDS: Final = 10.0
SNAPSHOT_INTERVAL: Final = 0.5


class JournalClosedError(JournalError):
    """The journal's writer has stopped; the entry was not recorded."""

    def __init__(self) -> None:
        super().__init__("JOURNAL_CLOSED", "the journal writer has stopped")


@dataclass(eq=False)
class _Entry:
    mutation: Mutation
    done: anyio.Event
    outcome: Outcome | None = None
    error: BaseException | None = None

    def answer(self, outcome: Outcome | None, error: BaseException | None) -> None:
        self.outcome, self.error = outcome, error
        self.done.set()


@dataclass(frozen=True)
class JournalStatistics:
    """A snapshot of the writer: entries queued and batches committed so far."""

    backlog: int
    batches: int
    committed: int


class Journal:
    """The producer side of a stream. Obtain one from :func:`open_journal`."""

    def __init__(self, send: MemoryObjectSendStream[_Entry], log: RunLog) -> None:
        self._send = send
        self.log = log
        self.batches = 0
        self.committed = 0

    async def record(self, mutation: Mutation) -> Outcome:
        """Queue ``mutation`` and wait until its outcome is durable.

        Returns:
            ``Appended`` (durable), ``Existing`` (the key or seal was already recorded) or
            ``Refused`` (sealed stream, or the mutation's ``decide`` refused it).

        Raises:
            JournalClosedError: the writer has stopped.
            OSError: the batch could not be written; nothing of it was acknowledged.
        """
        entry = _Entry(mutation, anyio.Event())
        try:
            await self._send.send(entry)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise JournalClosedError() from None
        await entry.done.wait()
        if entry.error is not None:
            raise entry.error
        assert entry.outcome is not None
        return entry.outcome

    async def append(
        self, type: str, data: Any = None, *, key: str | None = None, id: str | None = None
    ) -> Outcome:
        """Shorthand for :meth:`record` of ``Mutation(type, id or key or type, key, data)``."""
        return await self.record(Mutation(type=type, id=id or key or type, key=key, data=data))

    def statistics(self) -> JournalStatistics:
        """Entries waiting in the stream, batches and events committed so far."""
        return JournalStatistics(
            backlog=self._send.statistics().current_buffer_used,
            batches=self.batches,
            committed=self.committed,
        )


async def _commit(journal: Journal, batch: Sequence[_Entry]) -> None:
    with anyio.CancelScope(shield=True):
        try:
            outcomes = await anyio.to_thread.run_sync(
                journal.log.commit, [entry.mutation for entry in batch]
            )
        except Exception as error:
            for entry in batch:
                entry.answer(None, error)
            return
    journal.batches += 1
    journal.committed += len(batch)
    for entry, outcome in zip(batch, outcomes, strict=True):
        entry.answer(outcome, None)


def _take(receive: MemoryObjectReceiveStream[_Entry], batch: list[_Entry], limit: int) -> None:
    while len(batch) < limit:
        try:
            batch.append(receive.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return


async def _write(
    journal: Journal, receive: MemoryObjectReceiveStream[_Entry], max_batch: int
) -> None:
    try:
        async for first in receive:
            batch = [first]
            _take(receive, batch, max_batch)
            await _commit(journal, batch)
    finally:
        # Cancelled (or the stream broke): commit what is already queued, bounded in time,
        # and answer anything left so no producer waits forever.
        with anyio.CancelScope(shield=True) as scope:
            scope.deadline = anyio.current_time() + DRAIN_SECONDS
            while True:
                batch = []
                _take(receive, batch, max_batch)
                if not batch:
                    break
                await _commit(journal, batch)
        leftover: list[_Entry] = []
        _take(receive, leftover, 1 << 30)
        for entry in leftover:
            entry.answer(None, JournalClosedError())
        receive.close()
        if journal.committed:
            # Leave a fresh snapshot, so the next reader folds no tail (a cache: best effort).
            with anyio.CancelScope(shield=True) as scope, contextlib.suppress(Exception):
                scope.deadline = anyio.current_time() + DRAIN_SECONDS
                await anyio.to_thread.run_sync(journal.log.checkpoint)


@asynccontextmanager
async def open_journal(
    log: RunLog,
    *,
    capacity: int = DEFAULT_CAPACITY,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> AsyncIterator[Journal]:
    """Start the single writer task for ``log``; yield the producer side.

    On exit the stream is closed and the writer drains and commits everything queued
    before the context returns. While it runs, the stream's snapshot is rewritten at most
    every ``SNAPSHOT_INTERVAL`` seconds (and once more at the end), not once per batch.
    """
    log.snapshot_interval = max(log.snapshot_interval, SNAPSHOT_INTERVAL)
    send, receive = anyio.create_memory_object_stream[_Entry](capacity)
    journal = Journal(send, log)
    async with anyio.create_task_group() as group:
        group.start_soon(_write, journal, receive, max_batch)
        with send:
            yield journal
