"""A stall is not a deadline: ending a session that shows no sign of life.

The deadline bounds a whole attempt, however busy the reviewer is. A stall is something
else: for ``stall`` seconds the session printed no byte on stdout or stderr, and no process
of its tree used any CPU time (``/proc/<pid>/stat``'s user and system ticks, its reaped
children's included) nor started or ended. A reviewer that prints now and then, or thinks
(burns CPU) without printing, is alive and is never ended for it; one that sleeps on a dead
connection is. The stall time is the user's (prefs ``stallMs``, off by default); the
deadline still applies whatever the stall time.

:func:`watch` is run by :func:`~review_loop.orchestrator.process.run_process` beside the
child; it returns when the session stalled, and the caller ends the session and reports
``Completed.stalled``.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from review_loop.orchestrator.process import procfs, subreaper

POLL_MAX_S = 1.0
"""The longest pause between two looks: a stall is noticed at most this late."""
POLL_MIN_S = 0.05


def tree_pids(pid: int, *, include_root: bool) -> list[int]:
    """Every descendant ``pid`` has now (zombies included), and ``pid`` if ``include_root``.

    A session's supervisor (:mod:`.subreaper`) is left out: it wakes four times a second
    to watch its owner, and the CPU tick that adds up to now and then is not the CLI's.
    """
    below = subreaper.descendants(pid)
    return [pid, *below] if include_root else below


def tree_signature(pid: int, include_root: bool = True) -> tuple[int, frozenset[int]]:
    """The CPU ticks used so far by ``pid``'s tree, and which processes are in it.

    Any change between two looks is a sign of life: a tick of CPU, a process started or
    ended (an ended process's ticks move to its parent's ``cutime`` once reaped, so the sum
    can also fall, which is a change too).
    """
    pids = tree_pids(pid, include_root=include_root)
    ticks = sum(procfs.cpu_ticks(member) or 0 for member in pids)
    return ticks, frozenset(pids)


async def watch(
    stall: float, pid: int, output_bytes: Callable[[], int], *, supervised: bool
) -> None:
    """Return once the session of ``pid`` showed no sign of life for ``stall`` seconds.

    ``output_bytes`` tells how many bytes the session has printed so far (stdout and stderr
    together); ``supervised``: ``pid`` is the session's supervisor, whose own CPU time is
    not counted. The tree is read in a worker thread (it reads ``/proc``), every ``stall/4``
    seconds at most :data:`POLL_MAX_S` apart.
    """
    interval = min(max(stall / 4, POLL_MIN_S), POLL_MAX_S)
    include_root = not supervised
    last = (output_bytes(), await anyio.to_thread.run_sync(tree_signature, pid, include_root))
    quiet_since = anyio.current_time()
    while True:
        await anyio.sleep(interval)
        now = (output_bytes(), await anyio.to_thread.run_sync(tree_signature, pid, include_root))
        if now != last:
            last, quiet_since = now, anyio.current_time()
        elif anyio.current_time() - quiet_since >= stall:
            return
