"""Signals are cancellation, for every command that runs reviewers.

``TERM``, ``HUP`` and ``INT`` sent to ``review-loop consult`` (``run``, ``verify-diff``,
``converge``, ``blind-review``, ``preflight``, ``audit``) cancel the command's scope inside
the running event loop. Cancellation does the rest, in the layers that own it: the process
layer ends each reviewer's tree (group, descendants, marker; TERM, grace, KILL; shielded),
the dispatcher finishes each record as ``interrupted``, and the workflow hands over the
document of what had ended (answers that arrived are kept). The command then prints ONE
JSON document (``ok: false``, ``"signal"``, ``"interrupted": [peer, ...]``) and exits
128 + the signal's number. See ``docs/process-ownership.md``.

How the signal reaches the loop:

1. :func:`install` (called by the CLI entry before the command runs) puts a Python-level
   handler on the three signals that only notes the first one. A signal that arrives
   before the loop runs (while arguments are checked) is kept, not fatal.
2. :func:`run_cancellable` runs the command's coroutine under ``anyio.run`` inside a
   cancel scope, with ``anyio.open_signal_receiver`` listening; the first signal (or one
   noted before the loop) cancels that scope.
3. A second signal while the reviewers are being ended is reported on stderr and
   otherwise ignored: cleanup is bounded (grace, then SIGKILL) and must not be killed
   half-way, or reviewers would be left running. ``kill -9`` is still there; it leaves
   the work to the next command's reaper.

A signal ignored when review-loop started (``nohup`` ignores HUP) stays ignored.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from review_loop.orchestrator.dispatcher import Dispatcher

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""The signals that cancel a command which runs reviewers."""


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _progress(line: str) -> None:
    """A line among the reviewers' progress (above the live status on a terminal)."""
    from review_loop.orchestrator.explain import emit_progress

    emit_progress(line)


class Stop:
    """One command's stop state: which signals it listens to and what arrived.

    A plain class, not a dataclass: state that signal handlers change, never compared or
    printed.

    Attributes:
        signals: the signals handled (those not ignored when review-loop started).
        received: the first signal, once one arrived.
        cancelled: whether that signal cancelled the command's scope (then the exit code
            is 128 + its number).
        partial: the document the workflow handed over when it was cancelled.
        dispatchers: the dispatchers the command opened, whose outcomes make the
            document when the workflow handed over none.
    """

    __slots__ = ("_previous", "cancelled", "dispatchers", "partial", "received", "signals")

    def __init__(self) -> None:
        self.signals: tuple[signal.Signals, ...] = ()
        self.received: signal.Signals | None = None
        self.cancelled = False
        self.partial: dict[str, Any] | None = None
        self.dispatchers: list[Dispatcher] = []
        self._previous: dict[signal.Signals, Any] = {}

    def note(self, signum: int, frame: FrameType | None = None) -> None:
        """The Python-level handler: remember the first signal (the loop acts on it)."""
        del frame
        if self.received is None:
            self.received = signal.Signals(signum)
        else:
            _say(f"[review-loop] {signal.Signals(signum).name} again: already stopping")

    def keep(self, document: dict[str, Any]) -> None:
        """Receive the workflow's document of what had ended when it was cancelled."""
        self.partial = document

    @asynccontextmanager
    async def open_dispatcher(self, **options: Any) -> AsyncIterator[Dispatcher]:
        """:func:`~review_loop.orchestrator.dispatcher.open_dispatcher`, remembered here."""
        from review_loop.orchestrator.dispatcher import open_dispatcher

        async with open_dispatcher(**options) as dispatcher:
            self.dispatchers.append(dispatcher)
            yield dispatcher

    @property
    def exit_code(self) -> int | None:
        """128 + the signal's number when a signal cancelled the command, else ``None``."""
        if self.cancelled and self.received is not None:
            return 128 + int(self.received)
        return None


_current: Stop | None = None


def install() -> Stop:
    """Handle TERM, HUP and INT as cancellation for the command about to run.

    Only in the main thread (signals cannot be handled elsewhere); a signal that was
    ignored when review-loop started stays ignored. Undo with :func:`uninstall`.
    """
    global _current
    stop = Stop()
    if threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            stop._previous[sig] = previous
            signal.signal(sig, stop.note)
        stop.signals = tuple(stop._previous)
    _current = stop
    return stop


def uninstall(stop: Stop) -> None:
    """Put back the handlers :func:`install` replaced."""
    global _current
    for sig, previous in stop._previous.items():
        # None: the handler had not been set from Python; the default is what was there
        signal.signal(sig, signal.SIG_DFL if previous is None else previous)
    if _current is stop:
        _current = None


def current() -> Stop:
    """The stop state of the running command (an inert one outside the CLI entry)."""
    return _current if _current is not None else Stop()


def run_cancellable(body: Callable[[Stop], Awaitable[Mapping[str, Any]]]) -> Mapping[str, Any]:
    """``anyio.run(body)``, a listed signal cancelling it; returns its document.

    ``body`` receives the :class:`Stop`: it opens its dispatcher through
    :meth:`Stop.open_dispatcher` and passes :meth:`Stop.keep` to a workflow that can hand
    over a partial document. When a signal cancelled it, the document returned is the one
    handed over (else one built from the dispatchers' outcomes), with ``"signal"`` set.
    """
    import anyio

    stop = current()
    document = anyio.run(_supervised, body, stop)
    if document is None:  # a signal cancelled the body
        return interrupted_document(stop)
    return document


async def _supervised(
    body: Callable[[Stop], Awaitable[Mapping[str, Any]]], stop: Stop
) -> Mapping[str, Any] | None:
    import anyio

    _end_of_start_up()
    scope = anyio.CancelScope()
    document: Mapping[str, Any] | None = None
    failed: Exception | None = None
    with _receiving(stop) as arrivals:
        async with anyio.create_task_group() as group:
            if arrivals is not None:
                group.start_soon(_watch, arrivals, stop, scope)
            if stop.received is not None:  # arrived before the loop ran
                _cancel(stop, scope, stop.received)
            try:
                with scope:
                    document = await body(stop)
            except Exception as error:  # re-raised below, as it was
                # Raised out of the task group it would come wrapped in an ExceptionGroup
                # ("unhandled errors in a TaskGroup"); the CLI reports the error itself.
                failed = error
            finally:
                # A body that returned although a signal came (it had finished) gives a
                # whole answer: only a cancellation that ended it makes it "interrupted".
                stop.cancelled = scope.cancel_called and document is None
            group.cancel_scope.cancel()
    if failed is not None:
        raise failed
    return document


def _end_of_start_up() -> None:
    """Collect garbage again once the command runs, if ``main`` held it during start-up.

    A reviewer command may run for hours (``mcp``, a review with slow reviewers): from here
    its garbage is collected as usual. What start-up built is frozen first, so no later
    collection walks it again. An embedding program's or a test's collector, never
    disabled by ``main``, is left alone.
    """
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


@contextmanager
def _receiving(stop: Stop) -> Iterator[Any]:
    """``anyio.open_signal_receiver`` on the stop's signals; our handler back afterwards.

    asyncio resets a signal to its default when its receiver closes; putting the noting
    handler back at once (no checkpoint in between) leaves no instant in which a TERM
    would kill review-loop before it has printed its document.
    """
    import anyio

    if not stop.signals:
        yield None
        return
    try:
        with anyio.open_signal_receiver(*stop.signals) as arrivals:
            yield arrivals
    finally:
        for sig in stop.signals:
            signal.signal(sig, stop.note)


async def _watch(arrivals: Any, stop: Stop, scope: Any) -> None:
    async for signum in arrivals:
        sig = signal.Signals(signum)
        if stop.received is None:
            _cancel(stop, scope, sig)
        else:
            _progress(
                f"[review-loop] {sig.name} again: already stopping; the reviewers are being "
                "ended (TERM, grace, KILL) and their records finished. kill -9 would leave "
                "that to the next command's reaper."
            )


def _cancel(stop: Stop, scope: Any, sig: signal.Signals) -> None:
    stop.received = sig
    _progress(
        f"[review-loop] {sig.name}: stopping every reviewer (TERM, grace, KILL); "
        "what has arrived will be printed"
    )
    scope.cancel()


def interrupted_document(stop: Stop) -> dict[str, Any]:
    """The one document printed after a signal cancelled the command.

    The workflow's own (handed over with :meth:`Stop.keep`) when there is one; else every
    request the dispatchers saw, each as a consult peer document. Always
    ``ok: false``, ``status`` ``interrupted``, ``signal`` and ``interrupted`` (the peers
    whose sessions were ended; answers that arrived are in ``results``).
    """
    from review_loop.orchestrator.workflows.consult import consult_result

    name = stop.received.name if stop.received is not None else "cancelled"
    if stop.partial is not None:
        found = dict(stop.partial)
    else:
        outcomes = [d for dispatcher in stop.dispatchers for d in dispatcher.outcomes]
        found = {
            "results": [consult_result(d, None) for d in outcomes],
            "interrupted": [d.peer for d in outcomes if d.interrupted],
        }
    fixed = ("ok", "status", "signal", "interrupted", "error")
    return {
        "ok": False,
        "status": "interrupted",
        "signal": name,
        "interrupted": found.get("interrupted", []),
        **{key: value for key, value in found.items() if key not in fixed},
        "error": (
            f"review-loop was stopped by {name}: every reviewer still running was ended and "
            "its record marked interrupted; answers that had arrived are kept"
        ),
    }
