"""A fake runner for the dispatcher's policy tests, in the manner of httpx's MockTransport.

``FakeRunner(handler)`` keeps the runner contract (``review_loop/orchestrator/runner.py``)
without a process: each run calls ``on_started``, then hands the invocation to ``handler``,
which returns the run's :class:`Completed` (sync or async), raises (a
:class:`LaunchRefusedError`: the CLI provably never ran), or sleeps. The fake ends a run
that outlasts its deadline as ``timed_out`` and one whose STOP file appears as
``stopped``, and lets a cancellation through, as the process runner does once the tree is
reaped. Every run is kept in :attr:`FakeRunner.runs`.

:class:`Script` is a ready handler: per product, the steps the fake CLI
(:mod:`tests.fakes.fake_agent`) takes in turn, printed in that product's own format, so
the real adapters read them. Usage::

    runner = FakeRunner(Script(claude=["not-logged-in", "ok"], codex=[{"mode": "hang"}]))
    async with open_dispatcher(repo=checkout, prefs=prefs, runner=runner) as dispatcher:
        ...
"""

from __future__ import annotations

import contextlib
import inspect
import io
import math
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator.runner import Confinement, LaunchRefusedError, Started
from tests.fakes import fake_agent

Handler = Callable[[Invocation], "Completed | Awaitable[Completed]"]
STOP_POLL_S = 0.2  # as the process layer polls
FAKE_MARKER = "fake-runner"

__all__ = ["FakeRunner", "LaunchRefusedError", "Run", "Script", "printed", "product_of"]


@dataclass(slots=True, kw_only=True)
class Run:
    """One call of :meth:`FakeRunner.run`: what it was asked, and when (the clock's)."""

    invocation: Invocation
    deadline: float | None
    grace: float
    stop_files: tuple[Path, ...]
    confine: Confinement | None
    started_at: float
    ended_at: float | None = None
    result: Completed | None = None

    @property
    def product(self) -> str:
        return product_of(self.invocation)


@dataclass(slots=True)
class FakeRunner:
    """A runner whose runs are answered by ``handler`` (see the module docstring)."""

    handler: Handler
    runs: list[Run] = field(default_factory=list)

    @property
    def sessions(self) -> list[Run]:
        """The reviewer sessions run (confined), without the CLIs' self-descriptions."""
        return [run for run in self.runs if run.confine is not None]

    async def run(
        self,
        invocation: Invocation,
        *,
        deadline: float | None,
        grace: float,
        stop_files: Sequence[Path] = (),
        on_started: Callable[[Started], Awaitable[None]] | None = None,
        complete: Callable[[Completed], bool] | None = None,
        spill_dir: Path | None = None,
        confine: Confinement | None = None,
        stall: float | None = None,
    ) -> Completed:
        """The runner contract, without a process (a stall is the process layer's)."""
        run = Run(
            invocation=invocation, deadline=deadline, grace=grace, stop_files=tuple(stop_files),
            confine=confine, started_at=anyio.current_time(),
        )  # fmt: skip
        self.runs.append(run)
        if on_started is not None:
            # This test process stands for the session: the dispatcher records it and
            # never signals it (only a process runner ends a tree).
            pid = os.getpid()
            await on_started(Started(pid=pid, pgid=os.getpgid(0), marker=FAKE_MARKER,
                                     argv=invocation.argv))  # fmt: skip
        result = await self._answered(invocation, deadline, tuple(stop_files))
        run.ended_at = anyio.current_time()
        elapsed_ms = int((run.ended_at - run.started_at) * 1000)
        run.result = Completed(**{**_fields(result), "elapsed_ms": elapsed_ms})
        return run.result

    async def _answered(
        self, invocation: Invocation, deadline: float | None, stop_files: tuple[Path, ...]
    ) -> Completed:
        """The handler's answer, or the run as ended by its deadline or a STOP file."""
        answer: list[Completed] = []
        raised: list[Exception] = []
        stopped = anyio.Event()
        with anyio.move_on_after(math.inf if deadline is None else deadline) as timer:
            async with anyio.create_task_group() as group:
                group.start_soon(_watch_stop, stop_files, stopped, group.cancel_scope)
                try:
                    result = self.handler(invocation)
                    answer.append(await result if inspect.isawaitable(result) else result)
                except Exception as error:  # raised outside the group, not inside one
                    raised.append(error)
                group.cancel_scope.cancel()
        if raised:
            raise raised[0]
        if answer:
            return answer[0]
        ended = -signal.SIGTERM
        return Completed(returncode=ended, timed_out=timer.cancel_called, stopped=stopped.is_set())


def _fields(completed: Completed) -> dict[str, Any]:
    return {name: getattr(completed, name) for name in Completed.__dataclass_fields__}


async def _watch_stop(
    paths: tuple[Path, ...], stopped: anyio.Event, scope: anyio.CancelScope
) -> None:
    while not any(path.exists() for path in paths):
        await anyio.sleep(STOP_POLL_S)
    stopped.set()
    scope.cancel()


def product_of(invocation: Invocation) -> str:
    """The product an invocation runs: its command's name (the tests' aliases keep it)."""
    return Path(invocation.argv[0]).name


def printed(invocation: Invocation, mode: str = "ok", *, text: str | None = None) -> Completed:
    """What the fake CLI prints for ``mode`` (``ok``, ``fail``, ``not-logged-in``,
    ``session-not-found``, ``bad-args``, ``garbage``, ``empty``), or for a self-description
    (``--version``, ``--help``), as the process layer returns it."""
    product, argv = product_of(invocation), list(invocation.argv[1:])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = _print_step(product, argv, mode, text)
    stdout, stderr = out.getvalue().encode(), err.getvalue().encode()
    return Completed(returncode=code, stdout=stdout, stderr=stderr, stdout_bytes=len(stdout))


def _print_step(product: str, argv: list[str], mode: str, text: str | None) -> int:
    """Print what ``fake_agent`` prints for ``mode``; its exit status."""
    if "--version" in argv or "--help" in argv:
        help_text = fake_agent.GROK_BUILD_HELP if product == "grok" else f"{product} 9.9.9"
        fake_agent._print(help_text)
        return 0
    sid = fake_agent._session_id(product, argv)
    if mode == "ok":
        fake_agent._ok(product, sid, text or f"FAKE-ANSWER from {product}", "build")
        return 0
    if mode == "fail":
        return fake_agent._fail(product, sid, "build")
    if mode == "not-logged-in":
        return fake_agent._not_logged_in(product, sid)
    if mode == "session-not-found":
        return fake_agent._session_not_found(product, sid)
    if mode == "bad-args":
        fake_agent._print("error: unexpected argument '--bogus' found", err=True)
        return 2
    if mode == "garbage":
        fake_agent._print("this is not json {{{ at all")
        return 0
    if mode == "empty":
        return 0
    raise ValueError(f"FakeRunner: unknown mode {mode!r}")


class Script:
    """A handler: per product (or ``any_`` for all), its steps in turn; the last repeats.

    A step is a mode of :func:`printed`, ``"hang"`` (never answers: the deadline, a STOP
    file or a cancellation ends it), or a dict ``{"mode": ..., "text": ..., "delay": s}``
    (``delay``: seconds before it answers). A CLI describing itself is answered at once
    and takes no step.
    """

    def __init__(self, **steps: Sequence[str | dict[str, Any]]) -> None:
        self.steps = {("*" if name == "any_" else name): list(s) for name, s in steps.items()}
        self.taken: dict[str, int] = {}

    async def __call__(self, invocation: Invocation) -> Completed:
        product = product_of(invocation)
        if {"--version", "--help"} & set(invocation.argv[1:]):
            return printed(invocation)
        steps = self.steps.get(product) or self.steps.get("*") or ["ok"]
        index = self.taken.get(product, 0)
        self.taken[product] = index + 1
        step = steps[min(index, len(steps) - 1)]
        step = {"mode": step} if isinstance(step, str) else step
        await anyio.sleep(float(step.get("delay", 0)))
        if step["mode"] == "hang":
            await anyio.sleep_forever()
        return printed(invocation, step["mode"], text=step.get("text"))
