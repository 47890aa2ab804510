"""Work that must run to its end once started, however often the awaiting task is cancelled.

``anyio.CancelScope(shield=True)`` holds against cancel scopes on both backends, but on
asyncio not against ``Task.cancel()`` of the task inside it: each such call raises
``CancelledError`` at the shielded ``await`` (anyio 4.16, checked by
``tests/faults/test_embedding_cancel.py``). An embedding program that cancels its task
three times in a row therefore stopped waiting for a session's teardown: its ``consult``
raised while the reviewer was still running.

:func:`to_the_end` runs the work in a task of its own, which no ``Task.cancel()`` of the
caller's task reaches, inside a shield that holds against every cancel scope. anyio's task
group waits for that task through every native cancellation of its host (it shields its
own wait once one came) and raises the cancellation once the work has ended, so the
caller's cancellation is delayed, never lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio


async def to_the_end(work: Callable[[], Awaitable[None]]) -> None:
    """Await ``work()`` to its end whatever cancels the caller; then re-raise a cancellation
    that came meanwhile.

    ``work`` must not raise (an error would reach the caller inside an exception group):
    the teardowns that use this catch their own errors.
    """

    async def run() -> None:
        with anyio.CancelScope(shield=True):
            await work()

    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
