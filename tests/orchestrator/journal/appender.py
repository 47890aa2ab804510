"""A journal-appending process for the multi-process and crash tests (not a test module).

Usage::

    python appender.py sync  <log> <prefix> <count> [<go-file>]
    python appender.py async <log> <prefix> <count> <tasks> <payload-bytes> [<go-file>]

Prints ``ack <key> <seq> <appended|existing>`` for every outcome, flushed, only after the
journal has answered (so every printed line names a durable event). With a go-file, waits
for it to exist before the first append, so many processes start appending together.

With ``TORN_AFTER=<n>`` in the environment, the n-th ``pwrite`` writes only part of its
buffer and the process then kills itself with SIGKILL: a death in the middle of a write,
made deterministic.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from review_loop.orchestrator.journal.store import Appended, Existing, Mutation, Outcome, RunLog


def wait_for(go: str | None) -> None:
    if go is None:
        return
    deadline = time.monotonic() + 30
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.002)


def ack(key: str, outcome: Outcome) -> None:
    if isinstance(outcome, Appended):
        print(f"ack {key} {outcome.sequence} appended", flush=True)
    elif isinstance(outcome, Existing):
        print(f"ack {key} {outcome.sequence} existing", flush=True)
    else:
        print(f"refused {key} {outcome.error}", flush=True)


def run_sync(log: RunLog, prefix: str, count: int, go: str | None) -> None:
    wait_for(go)
    for index in range(count):
        key = prefix if count == 1 else f"{prefix}-{index}"
        outcome = log.commit([Mutation(type="item", id=key, key=key, data={"pid": os.getpid()})])
        ack(key, outcome[0])


def run_async(log: RunLog, prefix: str, count: int, tasks: int, size: int, go: str | None) -> None:
    import anyio

    from review_loop.orchestrator.journal.writer import open_journal

    filler = "x" * size

    async def main() -> None:
        async with open_journal(log) as journal:

            async def producer(task: int) -> None:
                for index in range(count):
                    key = f"{prefix}-{task}-{index}"
                    outcome = await journal.append("item", {"fill": filler}, key=key)
                    ack(key, outcome)

            wait_for(go)
            async with anyio.create_task_group() as group:
                for task in range(tasks):
                    group.start_soon(producer, task)

    anyio.run(main)


def arm_torn_write(after: int) -> None:
    import signal

    real_pwrite = os.pwrite
    calls = 0

    def pwrite(fd: int, data: bytes | memoryview, offset: int) -> int:
        nonlocal calls
        calls += 1
        if calls >= after and len(data) > 1:
            real_pwrite(fd, bytes(data[: len(data) // 2 + 1]), offset)
            os.kill(os.getpid(), signal.SIGKILL)
        return real_pwrite(fd, data, offset)

    os.pwrite = pwrite


def main(argv: list[str]) -> None:
    if os.environ.get("TORN_AFTER"):
        arm_torn_write(int(os.environ["TORN_AFTER"]))
    mode, path, prefix, count = argv[0], Path(argv[1]), argv[2], int(argv[3])
    log = RunLog(path)
    if mode == "sync":
        run_sync(log, prefix, count, argv[4] if len(argv) > 4 else None)
    else:
        tasks, size = int(argv[4]), int(argv[5])
        run_async(log, prefix, count, tasks, size, argv[6] if len(argv) > 6 else None)


if __name__ == "__main__":
    main(sys.argv[1:])
