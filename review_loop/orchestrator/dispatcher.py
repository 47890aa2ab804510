"""Policy over a runner: peers, retry, fallback, resume, fan-out, records.

Usage::

    async with open_dispatcher(repo=repo, prefs=prefs) as dispatcher:
        delivery = await dispatcher.consult(PeerRequest(peer="codex", prompt=text,
                                                        record_dir=run_dir))
        a, b = await dispatcher.fan_out([request_a, request_b])

Rules (docs/design.md, "The dispatcher"):

- Each attempt is one run of the runner (:mod:`.runner` holds its contract; by default a
  supervised process in the reviewer sandbox) with its own full deadline. Its session
  record is written before the run and updated with the pid before a byte of the prompt
  is sent.
- Only a proven ``NOT_SUBMITTED`` is retried, once, with the same parameters.
  ``DELIVERY_UNKNOWN`` is never re-sent to the same product.
- Fallback: on a timeout or a proven ``NOT_SUBMITTED``, swap in the next installed product
  from the request's fallback list that neither another peer nor the host uses, and record
  ``{from, to, reason}``. The first attempt is dead (reaped) before the fallback starts.
- Resume: continue the stored session; start a new one only when there is no id, the CLI
  cannot resume, or it said "session not found" within 5 s (docs/origins.md §3.5).
- The dispatcher never names a product: everything product-specific is the adapter's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.lowlevel import checkpoint

from review_loop.adapters import Adapter, get_adapter, is_product, product_names
from review_loop.adapters.base import RequiredFlag, answered, output_complete
from review_loop.agents.errors import AdapterRefusalError, InputError
from review_loop.agents.models import (
    AgentRequest,
    Capabilities,
    Completed,
    DeliveryState,
    EnvPassthrough,
    Failure,
    Invocation,
    Reply,
)
from review_loop.agents.outcomes import (
    INTERRUPTED,
    SESSION_FILE,
    Attempt,
    Delivery,
    Fallback,
    RecordError,
    SessionRecord,
    SessionStatus,
)
from review_loop.agents.refusals import STALLED
from review_loop.orchestrator.explain import (
    emit_progress,
    fallback_reason,
    progress_line,
    retry_may_help,
    stop_hint,
    timeout_detail,
)
from review_loop.orchestrator.handoff import unfinished
from review_loop.orchestrator.handoff.files import (
    make_dir_exclusive,
    make_file,
    read_bytes,
    utc_now,
)
from review_loop.orchestrator.handoff.git import Checkout, ensure_layout, locate
from review_loop.orchestrator.handoff.recording import (
    RecordingError,
    append_record,
    record_error,
    write_or_raise,
    write_record,
)
from review_loop.orchestrator.log import log_event
from review_loop.orchestrator.process.environment import reviewer_passthrough
from review_loop.orchestrator.process.procfs import start_time
from review_loop.orchestrator.process.run import Supervisors, resolve_executable
from review_loop.orchestrator.runner import (
    Confinement,
    LaunchRefusedError,
    ProcessRunner,
    Runner,
    Started,
    open_process_runner,
)
from review_loop.orchestrator.sandbox import reviewer as sandbox
from review_loop.orchestrator.sandbox.isolation import orphaned_scratch, remove_orphaned_scratch
from review_loop.prefs.defaults import MAX_TIMEOUT_MS
from review_loop.prefs.model import Prefs

if TYPE_CHECKING:
    from review_loop.prefs.model import Prefs

RESUME_NOT_FOUND_WINDOW_MS = 5000
EVENTS_FILE = "events.jsonl"
OUTCOMES_KEPT = 128
"""How many deliveries :attr:`Dispatcher.outcomes` keeps (the newest), by default."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerRequest:
    """One question for one peer.

    Attributes:
        peer: a product name or a peer-command alias from prefs.
        prompt: the full prompt; never passes through a shell.
        record_dir: the directory for this request's ``reviewer-session.json`` and events
            (a ``str`` or a ``Path``). Omitted: a new directory per call under
            ``.review-handoff/runtime/embedded/``, where ``review-loop sessions`` finds it.
            Relative: under ``.review-handoff/runtime/`` (never in the working tree).
        resume_session_id: continue this session of the same product.
        fallback: products to swap in on timeout or proven non-submission, in order.
        avoid: products that must not be swapped in (the host, the other peers).
        timeout_ms: this request's per-attempt deadline in milliseconds, from 1 to one
            day (default: prefs). ``0`` or a negative value is refused, never "the default".
        stop_files: extra STOP files (a run's own) polled besides the global one.
        isolate: run in a throw-away copy of the repository without ``.review-handoff/``,
            the repository mounted read-only, for a reviewer that must not see earlier
            records (the blind review). Its session cannot be resumed from the repository.
    """

    peer: str
    prompt: str
    record_dir: Path | str = Path()
    resume_session_id: str | None = None
    fallback: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    timeout_ms: int | None = None
    stop_files: tuple[Path, ...] = ()
    isolate: bool = False

    def __post_init__(self) -> None:
        """Refuse what would silently mean something else; accept a ``str`` record_dir.

        Raises:
            InputError: an empty peer or prompt (nothing to ask, never retried), a
                record_dir that is not a path, or ``timeout_ms`` not an integer from 1 to
                one day.
        """
        _check_request_text(self.peer, self.prompt)
        if isinstance(self.record_dir, str):
            object.__setattr__(self, "record_dir", Path(self.record_dir))
        elif not isinstance(self.record_dir, Path):
            raise InputError(
                "PeerRequest.record_dir", f"{self.record_dir!r} is not a path", "a str or a Path"
            )
        value = self.timeout_ms
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TIMEOUT_MS:
            raise InputError(
                "PeerRequest.timeout_ms",
                f"{value!r} is not a deadline",
                f"an integer of milliseconds from 1 to {MAX_TIMEOUT_MS} (one day), or None "
                "for the prefs deadline",
            )

    @property
    def directory(self) -> Path:
        """``record_dir`` as a ``Path`` (a ``str`` is converted on construction)."""
        return Path(self.record_dir)


_PROGRESS_FIELDS = re.compile(r"^\[review-loop\] reviewer=(\S+) status=(\S+)")


class ProgressLine(str):
    """One progress line handed to ``open_dispatcher``'s ``progress``: the text and its request.

    The text is exactly what ``review-loop`` prints on stderr (``[review-loop] reviewer=P
    status=S ...``), so a callable written for ``str`` keeps working; two requests to the
    same reviewer at once give lines of the same text and different requests.

    Attributes:
        request: the very :class:`PeerRequest` object the caller passed to ``consult`` or
            ``fan_out`` (compare it with ``is``), or ``None`` for a line about no request.
        record_dir: that request's record directory (unique per call).
        peer: the line's ``reviewer=`` (the peer name or alias being run).
        status: the line's ``status=`` (``active``, ``answered``, ``timeout``, ``fallback``,
            ``not-started``, ``failed``).
    """

    request: PeerRequest | None
    record_dir: Path | None
    peer: str
    status: str

    def __new__(
        cls, text: str, *, request: PeerRequest | None = None, record_dir: Path | None = None
    ) -> ProgressLine:
        """The line ``text`` about ``request`` (recorded in ``record_dir``)."""
        line = super().__new__(cls, text)
        found = _PROGRESS_FIELDS.match(text)
        line.request = request
        line.record_dir = record_dir
        line.peer = found.group(1) if found else ""
        line.status = found.group(2) if found else ""
        return line


def _check_request_text(peer: object, prompt: object) -> None:
    """A peer name and a prompt that can be asked (non-blank strings)."""
    if not isinstance(peer, str) or not peer.strip():
        raise InputError("PeerRequest.peer", f"{peer!r} names no peer", "a product or alias")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("PeerRequest.prompt", "the prompt is empty", "non-blank text")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedPeer:
    """A peer name resolved to its product, adapter and launch command (keywords only)."""

    name: str
    product: str
    adapter: Adapter
    command: tuple[str, ...]


def peer_name(name: str, prefs: Prefs) -> str:
    """``name`` as the original reads a product name: in any case (``CLAUDE`` is claude).

    A peer-command alias keeps its own spelling; a name that is neither stays as given
    (:func:`resolve_peer` refuses it, naming it).
    """
    if name in prefs.peerCommands or is_product(name) or not is_product(name.lower()):
        return name
    return name.lower()


def resolve_peer(name: str, prefs: Prefs, *, field: str = "--peer") -> ResolvedPeer:
    """Resolve a product name or alias.

    Raises:
        InputError: neither a registered product nor an alias in prefs.
    """
    alias = prefs.peerCommands.get(name)
    if alias is not None:
        adapter = get_adapter(alias.product)
        return ResolvedPeer(
            name=name, product=alias.product, adapter=adapter, command=alias.command
        )
    if is_product(name):
        adapter = get_adapter(name, field=field)
        command = (adapter.default_executable,)
        return ResolvedPeer(name=name, product=name, adapter=adapter, command=command)
    accepted = ", ".join([*product_names(), *sorted(prefs.peerCommands)])
    raise InputError(field, f"unknown product or peer-command {name!r}", accepted)


def reviewer_env(peer: ResolvedPeer, prefs: Prefs, repo: Path) -> EnvPassthrough:
    """What of the caller's environment this peer's CLI gets: its adapter's, the names
    its user configuration gives for credentials (``orchestrator/sandbox/user_config.py``),
    and prefs'."""
    from review_loop.orchestrator.sandbox.user_config import configured_names

    configured = configured_names(peer.adapter, os.environ, repo)
    declared = peer.adapter.env_passthrough.plus(EnvPassthrough(names=configured))
    return reviewer_passthrough(declared, prefs.envPassthrough)


def is_installed(peer: ResolvedPeer, env: dict[str, str] | None = None) -> bool:
    """Whether the peer's executable (or launcher) is on PATH."""
    return resolve_executable(peer.command[0], dict(os.environ if env is None else env)) is not None


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60:02d}:{whole % 60:02d}"


def _process_start(pid: int) -> float | None:
    """``pid``'s start time, as the reaper compares it (``procfs``: psutil's create_time)."""
    return start_time(pid)


_Result = tuple[Reply | Failure, Attempt, bool]
"""What an attempt returns: its outcome, its record, and whether its process ended within
``RESUME_NOT_FOUND_WINDOW_MS`` (a "session not found" that fast degrades to a new session)."""


class _InFlight:
    """One attempt in progress: what it asks and its session record as last written.

    ``record`` is replaced as the attempt goes on (a session id chosen up front, then the
    pid); finishing, and the cancellation path, read the latest one. ``indexed``: whether
    its entry in the index of unfinished records (:mod:`.unfinished`) is made. ``made``: the
    empty file made while the CLI ran that is to become its finished record.

    A plain class: mutable state of one attempt, never compared or printed.
    """

    __slots__ = (
        "deadline_ms",
        "indexed",
        "made",
        "peer",
        "record",
        "record_path",
        "repo",
        "request",
        "resume",
        "stop_files",
    )

    def __init__(
        self,
        *,
        request: PeerRequest,
        peer: ResolvedPeer,
        resume: str | None,
        deadline_ms: int,
        stop_files: tuple[Path, ...],
        record: SessionRecord,
        repo: Path,
    ) -> None:
        self.request = request
        self.peer = peer
        self.resume = resume
        self.deadline_ms = deadline_ms
        self.stop_files = stop_files
        self.record = record
        self.repo = repo
        self.indexed = False
        self.record_path = request.directory / SESSION_FILE  # its reviewer-session.json
        self.made: Path | None = None

    def write(self, *, durable: bool = True) -> RecordError | None:
        """Write ``record`` (unfinished) as it stands; returns what failed instead of raising.

        Its entry in the index of unfinished records is made first, so the start-up
        reaper finds it after a crash; when neither the entry nor a full scan by the next
        reaper can be assured, nothing is written (no record, no launch).
        """
        if not self.indexed:
            try:
                # False: no entry (the next reaper scans all), so nothing is made beside it
                self.indexed = unfinished.add(
                    self.repo, self.request.directory, self.record.ownerPid, self.record.ownerStart
                )
            except OSError as error:
                return record_error(Path(error.filename or unfinished.index_dir(self.repo)), error)
        return write_record(self.record_path, self.record.document(), durable=durable)

    def make_record_ahead(self) -> None:
        """Make the file that is to become its finished record (:func:`.unfinished.make_ahead`:
        beside its index entry, removed with it)."""
        if self.indexed:
            record = self.record
            self.made = unfinished.make_ahead(
                self.repo, self.request.directory, record.ownerPid, record.ownerStart
            )

    def make_events_ahead(self) -> None:
        """Make ``events.jsonl`` (empty) if it is missing: the finish then only appends."""
        with suppress(OSError):  # a link or a full disk: the finish reports it
            make_file(self.request.directory / EVENTS_FILE)

    def finished(self) -> None:
        """Its finished record is written: remove its index entry."""
        if self.indexed:
            unfinished.remove(
                self.repo, self.request.directory, self.record.ownerPid, self.record.ownerStart
            )
            self.indexed = False


class _Asked:
    """A request given to the dispatcher (held, so its ``id()`` stays its own) and its
    delivery once it ended (``None``: still running)."""

    __slots__ = ("delivery", "request")

    def __init__(self, request: PeerRequest, delivery: Delivery | None = None) -> None:
        self.request = request
        self.delivery = delivery


class _Call:
    """One request's call in progress: its cancel scope and what it ended with.

    ``caller_error``: the first exception the caller's progress callback raised during
    the call; ``raised``: an error of the request itself (bad input). A plain slotted class,
    as :class:`_InFlight` is.
    """

    __slots__ = ("asked", "caller_error", "delivery", "raised", "record_dir", "scope")

    def __init__(self, asked: PeerRequest, record_dir: Path) -> None:
        self.asked = asked  # the caller's own request object (progress lines name it)
        self.record_dir = record_dir
        self.scope = anyio.CancelScope()
        self.delivery: Delivery | None = None
        self.caller_error: Exception | None = None
        self.raised: Exception | None = None


_CALL: ContextVar[_Call | None] = ContextVar("review_loop_call", default=None)
"""The call the current task works for (:meth:`Dispatcher._say` ends it)."""


def _outcomes_bound(value: object) -> int:
    """``keep_outcomes``: a positive integer, or a clear error naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(
            "keep_outcomes", f"{value!r} is not a number of deliveries", "an integer >= 1"
        )
    return value


class Dispatcher:
    """Runs peer requests. Create with :func:`open_dispatcher`.

    :meth:`consult` and :meth:`fan_out` return :class:`~review_loop.agents.outcomes.Delivery`
    values, which the command line and the workflows print and write as they are
    (``Delivery.document()``); :attr:`outcomes` and :meth:`outcome_of` hold the same values.

    Attributes:
        repo: the checkout's top level.
        prefs: deadlines, grace, liveness interval and aliases (plain view).
        progress: receives the liveness and progress lines.
        runner: what runs each attempt's invocation (:mod:`.runner`: the contract);
            a :class:`~.runner.ProcessRunner` unless the embedder gave its own.
        supervisors: where the process runner takes each session's supervisor from
            (``None`` for another runner).
        checkout: the located checkout (``git.locate``), when known.
        reaped: the records the start-up reaper finished.
        outcomes: what became of the requests asked so far, in order: the newest
            ``keep_outcomes`` deliveries (:data:`OUTCOMES_KEPT` by default), each with its
            answer text, so a long-lived dispatcher holds bounded memory. Older ones are
            dropped (their records stay on disk); :meth:`outcome_of` finds only these.
    """

    def __init__(
        self,
        *,
        repo: Path,
        prefs: Prefs,
        progress: Callable[[ProgressLine], None],
        supervisors: Supervisors | None = None,
        checkout: Checkout | None = None,
        keep_outcomes: int = OUTCOMES_KEPT,
        runner: Runner | None = None,
    ) -> None:
        # A plain class, not a dataclass: an object with behaviour, never compared or printed.
        self.repo = repo
        self.prefs = prefs
        self.progress = progress
        self.runner: Runner = ProcessRunner(supervisors) if runner is None else runner
        self.checkout = checkout
        self.reaped: list[SessionRecord] = []
        self.outcomes: list[Delivery] = []
        self.keep_outcomes = _outcomes_bound(keep_outcomes)
        self._interrupted: dict[Path, Attempt] = {}
        self._capabilities: dict[tuple[str, ...], Capabilities] = {}
        self._flag_checks: dict[
            tuple[str, ...], tuple[tuple[RequiredFlag, ...], tuple[str, ...]]
        ] = {}
        # What each request asked of this dispatcher became, by the request's identity:
        # ``id()`` is unique only among live objects, so each entry holds its request (an id
        # cannot be reused while it is here) and a lookup checks ``is``. Bounded as outcomes.
        self._asked: dict[int, _Asked] = {}

    @property
    def supervisors(self) -> Supervisors | None:
        """The process runner's pool of session supervisors (``None`` for another runner)."""
        return self.runner.supervisors if isinstance(self.runner, ProcessRunner) else None

    @property
    def global_stop_file(self) -> Path:
        """``.review-handoff/STOP``: stops every session of this repository."""
        return self.repo / ".review-handoff" / "STOP"

    async def consult(self, request: PeerRequest) -> Delivery:
        """Ask one peer; returns the delivery with every attempt and fallback recorded."""
        return await self._tracked(request, claimed=set())

    async def fan_out(self, requests: Sequence[PeerRequest]) -> list[Delivery]:
        """Ask several peers at once in one task group; results keep the request order.

        A fallback never swaps in a product another request of this fan-out uses. An error
        one request raises (the caller's progress callback broke) ends the others' sessions
        too, then is raised as it is, not inside an exception group.
        """
        results: list[Delivery | None] = [None] * len(requests)
        claimed = {resolve_peer(r.peer, self.prefs).product for r in requests}
        errors: list[Exception] = []

        async def run(index: int, request: PeerRequest) -> None:
            try:
                results[index] = await self._tracked(request, claimed=claimed)
            except Exception as error:
                errors.append(error)
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            for index, request in enumerate(requests):
                group.start_soon(run, index, request)
        if errors:
            raise errors[0]
        return [r for r in results if r is not None]

    # -- internals ---------------------------------------------------------------------

    async def _tracked(self, request: PeerRequest, *, claimed: set[str]) -> Delivery:
        """:meth:`_deliver`, keeping what became of the request in :attr:`outcomes`.

        On cancellation (a signal to ``review-loop``, or the embedding program's cancel
        scope or ``Task.cancel()``, however often) the session has been ended and its
        record finished as ``interrupted`` by :meth:`_attempt` before this returns; an
        ``interrupted`` delivery joins :attr:`outcomes`, so a caller can still report the
        answers that did arrive, and the cancellation propagates. An error the caller's
        progress callback raised ends the session the same way, then is raised as it is.

        The request runs in a task of its own: asyncio's ``Task.cancel()`` of the caller's
        task, which no shield stops, reaches only this task's wait for it, and anyio's task
        group turns it into a cancel scope's cancellation there, which the shielded
        teardown below holds against, and waits for the task to end.
        """
        started = anyio.current_time()
        asked = request  # the caller's own object: what outcome_of is given back
        self._asked[id(asked)] = _Asked(asked)
        try:
            request = await self._place(request)
        except anyio.get_cancelled_exc_class():
            self._keep(asked, self._unlaunched(asked, "cancelled before it was launched"))
            raise
        call = _Call(asked, request.directory)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._deliver_call, call, request, claimed)
        except anyio.get_cancelled_exc_class():
            self._keep(asked, self._interrupted_delivery(request, started))
            raise
        if call.raised is not None:
            self._asked.pop(id(asked), None)
            raise call.raised  # the request's own error (bad input), not inside a group
        delivery = call.delivery or self._interrupted_delivery(request, started)
        self._keep(asked, delivery)
        if call.caller_error is not None:
            raise call.caller_error
        return delivery

    async def _deliver_call(self, call: _Call, request: PeerRequest, claimed: set[str]) -> None:
        """:meth:`_deliver` in the call's task, inside the call's own cancel scope (which
        :meth:`_say` cancels when the caller's callback breaks)."""
        _CALL.set(call)  # this task's context: the attempt's liveness task inherits it
        try:
            with call.scope:
                call.delivery = await self._deliver(request, claimed=claimed)
        except Exception as error:
            call.raised = error

    def _keep(self, request: PeerRequest, delivery: Delivery) -> None:
        """Add ``delivery`` (``request``'s) to :attr:`outcomes`, dropping the oldest past
        the bound, and to what :meth:`outcome_of` finds for ``request``."""
        self.outcomes.append(delivery)
        del self.outcomes[: -self.keep_outcomes]
        self._asked.pop(id(request), None)  # re-inserted: the newest last
        self._asked[id(request)] = _Asked(request, delivery)
        while len(self._asked) > self.keep_outcomes:
            del self._asked[next(iter(self._asked))]  # the oldest first

    def _say(self, line: str) -> None:
        """Hand ``line`` to the caller's progress callback.

        An exception it raises is the caller's error, not the session's: it ends this
        call (its session is ended and its record finished, as on cancellation) and the
        call raises it (:meth:`_tracked`).
        """
        call = _CALL.get()
        named = (
            ProgressLine(line)
            if call is None
            else ProgressLine(line, request=call.asked, record_dir=call.record_dir)
        )
        try:
            self.progress(named)
        except Exception as error:
            if call is None:
                raise
            if call.caller_error is None:
                call.caller_error = error
            call.scope.cancel()

    def outcome_of(self, request: PeerRequest) -> Delivery:
        """What became of ``request`` (this very object, given to :meth:`consult` or
        :meth:`fan_out`): its last delivery, cancelled ones included.

        For a caller whose :meth:`fan_out` was cancelled: the requests that ended before
        the cancellation keep their delivery (an answer that arrived is here); one cancelled
        before it was launched is ``NOT_SUBMITTED`` and ``interrupted``. A request this
        dispatcher was never given (or dropped past ``keep_outcomes``) is ``NOT_SUBMITTED``
        and ``interrupted``, its detail ``never asked of this dispatcher``: never another
        request's delivery, even one equal to it or with the same ``record_dir``. One still
        running is ``DELIVERY_UNKNOWN``, reason ``running``. Found by identity, never by
        value or by ``id()`` alone; reads and writes nothing.
        """
        asked = self._asked.get(id(request))
        if asked is None or asked.request is not request:
            return self._unlaunched(request, "never asked of this dispatcher")
        if asked.delivery is not None:
            return asked.delivery
        return dataclasses.replace(
            self._unlaunched(request, "still running: await its consult or fan_out"),
            state=DeliveryState.DELIVERY_UNKNOWN,
            reason="running",
            interrupted=False,
        )

    def _product_of(self, peer: str) -> str:
        """The product ``peer`` names, or ``peer`` itself when it names none (a request
        that was never asked may name anything; saying so must not raise)."""
        try:
            return resolve_peer(peer, self.prefs).product
        except InputError:
            return peer

    def _unlaunched(self, request: PeerRequest, detail: str) -> Delivery:
        """A delivery for a request with no attempt: nothing was launched for it."""
        return Delivery(
            state=DeliveryState.NOT_SUBMITTED,
            peer=request.peer,
            product=self._product_of(request.peer),
            reason=INTERRUPTED,
            detail=detail,
            attempts=[],
            cwd=str(self.repo),
            interrupted=True,
        )

    async def _place(self, request: PeerRequest) -> PeerRequest:
        """The request with an absolute record directory (see ``PeerRequest.record_dir``).

        An omitted one is made here, exclusively, so two calls never share a record; a
        relative one goes under ``.review-handoff/runtime/``. Either way ``.review-handoff/``
        is made and excluded from git first (the workflows did so before naming theirs).
        """
        if request.directory.is_absolute():
            return request
        await anyio.to_thread.run_sync(ensure_layout, self.checkout or self.repo)
        runtime = self.repo / ".review-handoff" / "runtime"
        if request.directory == Path():
            import uuid  # here: only a request without a record directory needs it

            stamp = utc_now().replace(":", "-").replace(".", "-")
            record_dir = runtime / "embedded" / f"{stamp}-{uuid.uuid4().hex[:8]}"
            await anyio.to_thread.run_sync(make_dir_exclusive, record_dir)
        else:
            record_dir = runtime / request.directory
        return dataclasses.replace(request, record_dir=record_dir)

    def _interrupted_delivery(self, request: PeerRequest, started: float) -> Delivery:
        attempt = self._interrupted.pop(request.directory, None)
        if attempt is None:
            attempt = self._finish_unfinished_record(request)
        return Delivery(
            state=attempt.state if attempt else DeliveryState.NOT_SUBMITTED,
            peer=request.peer,
            product=attempt.product if attempt else resolve_peer(request.peer, self.prefs).product,
            sessionId=attempt.sessionId if attempt else None,
            reason=INTERRUPTED,
            detail=attempt.detail if attempt else "cancelled before it was launched",
            attempts=[attempt] if attempt else [],
            elapsedMs=int((anyio.current_time() - started) * 1000),
            recordPath=str(request.directory / SESSION_FILE),
            cwd=str(self.repo),
            interrupted=True,
            recordError=attempt.recordError if attempt else None,
        )

    def _finish_unfinished_record(self, request: PeerRequest) -> Attempt | None:
        """Finish as ``interrupted`` a record this process left ``starting``/``running``.

        :meth:`_attempt` finishes the record of a cancelled launch itself; this covers a
        cancellation that came between the record's first write and the launch (a
        namespace being prepared, a throw-away copy being made). Synchronous: it runs in
        the cancelled task's ``except`` and must not be cancelled half-way.
        """
        path = request.directory / SESSION_FILE
        try:
            record = SessionRecord.read(json.loads(read_bytes(path)))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep
            return None  # never written (cancelled before), or unreadable: nothing to finish
        if record is None:
            return None  # not a record the model accepts: not ours to finish
        if record.status not in ("starting", "running") or record.ownerPid != os.getpid():
            return None
        failure = _interrupted(record)
        final = record.ended(INTERRUPTED, failure.state, INTERRUPTED, utc_now())
        failed = write_record(path, final.document())
        if failed is None:
            unfinished.remove(self.repo, request.directory, record.ownerPid, record.ownerStart)
        attempt = Attempt(
            product=record.product,
            peer=record.peer,
            command=record.command,
            state=failure.state,
            reason=INTERRUPTED,
            detail=failure.detail,
            sessionId=record.sessionId,
            resumed=request.resume_session_id is not None,
            recordError=failed,
        )
        append_record(
            request.directory / "events.jsonl",
            {"event": "attempt", "at": utc_now(), **attempt.document()},
        )
        return attempt

    def _env(self, peer: ResolvedPeer) -> EnvPassthrough:
        """What of the caller's environment this peer's CLI gets (:func:`reviewer_env`)."""
        return reviewer_env(peer, self.prefs, self.repo)

    async def _capabilities_of(self, peer: ResolvedPeer) -> Capabilities:
        key = peer.command
        if key in self._capabilities:
            return self._capabilities[key]
        args = peer.adapter.probe_args()
        output: str | None = None
        if args is not None:
            output = await self._probe_output(peer, args)
        capabilities = peer.adapter.capabilities(output)
        self._capabilities[key] = capabilities
        return capabilities

    async def _probe_output(self, peer: ResolvedPeer, args: tuple[str, ...]) -> str | None:
        """What ``[*command, *args]`` prints, cached per executable (path, size, mtime).

        Probing costs a whole CLI start (hundreds of ms for a Node CLI), so the answer is
        kept in the user's state until the executable changes (:mod:`.sandbox.flags`). It
        runs where the help probes run, never in the repository: a CLI may load the project
        configuration of its working directory even to print its version.
        """
        from review_loop.orchestrator.sandbox.flags import NEUTRAL_CWD, cached_output

        return await cached_output(
            peer.command, args, cwd=NEUTRAL_CWD, pass_env=self._env(peer), run=self.runner.run
        )

    async def _flag_refusal(self, peer: ResolvedPeer, capabilities: Capabilities) -> str | None:
        """Why ``peer`` must not run: a flag that keeps it read-only or locked down that its
        help does not list (:mod:`.sandbox.flags`); ``None`` when all are there. Checked once
        per executable and dispatcher (the help pages are cached across processes)."""
        from review_loop.adapters.base import describe_missing
        from review_loop.orchestrator.sandbox.flags import check_flags

        key = peer.command
        if key not in self._flag_checks:
            checked = await check_flags(
                peer.adapter, key, capabilities, pass_env=self._env(peer), run=self.runner.run
            )
            self._flag_checks[key] = (checked.missing, checked.unread)
        missing, unread = self._flag_checks[key]
        if not missing:
            return None
        return describe_missing(peer.product, capabilities.version, missing, unread=unread)

    def _pick_fallback(
        self, request: PeerRequest, tried: set[str], claimed: set[str]
    ) -> ResolvedPeer | None:
        blocked = set(request.avoid) | tried | claimed
        for name in request.fallback:
            try:
                candidate = resolve_peer(name, self.prefs, field="--fallback")
            except InputError:
                continue
            if candidate.product in blocked or not is_installed(candidate):
                continue
            return candidate
        return None

    async def _deliver(self, request: PeerRequest, *, claimed: set[str]) -> Delivery:
        started = anyio.current_time()
        peer = resolve_peer(request.peer, self.prefs)
        attempts: list[Attempt] = []
        fallbacks: list[Fallback] = []
        tried: set[str] = set()
        resume = request.resume_session_id
        degraded_reason: str | None = None
        current = peer
        retried = False
        while True:
            tried.add(current.product)
            outcome, attempt, resume_failed_fast = await self._attempt(
                request, current, resume, number=len(attempts) + 1
            )
            attempts.append(attempt)
            if isinstance(outcome, Reply):
                return self._delivery(
                    request, current, attempts, fallbacks, started, outcome, degraded_reason
                )
            if resume is not None and outcome.session_not_found and resume_failed_fast:
                _log("resume-degraded", peer=current.name, sessionId=resume, level="warning")
                resume = None
                degraded_reason = "session_not_found"
                continue
            if (
                outcome.state is DeliveryState.NOT_SUBMITTED
                and not retried
                and retry_may_help(outcome.reason, outcome.detail)
            ):
                retried = True
                _log("retry", peer=current.name, reason=outcome.reason, why="not submitted")
                continue
            if (
                outcome.state is DeliveryState.NOT_SUBMITTED
                or attempt.timedOut
                or outcome.reason == STALLED  # a stall is ended like a deadline: fall back
            ):
                fallback = self._pick_fallback(request, tried, claimed - {peer.product})
                if fallback is not None:
                    claimed.add(fallback.product)
                    fallbacks.append(
                        Fallback(
                            from_=current.name,
                            to=fallback.name,
                            reason=fallback_reason(outcome.reason, timed_out=attempt.timedOut),
                        )
                    )
                    _log("fallback", level="warning", echoed=True, **fallbacks[-1].document())
                    self._say(
                        progress_line(
                            current.name, "fallback", to=fallback.name, why=fallbacks[-1].reason
                        )
                    )
                    current, resume, retried = fallback, None, False
                    continue
            return self._delivery(
                request, current, attempts, fallbacks, started, outcome, degraded_reason
            )

    def _delivery(
        self,
        request: PeerRequest,
        peer: ResolvedPeer,
        attempts: list[Attempt],
        fallbacks: list[Fallback],
        started: float,
        outcome: Reply | Failure,
        degraded_reason: str | None,
    ) -> Delivery:
        last = attempts[-1]
        is_reply = isinstance(outcome, Reply)
        return Delivery(
            state=DeliveryState.DELIVERED if is_reply else outcome.state,  # type: ignore[union-attr]
            peer=request.peer,
            product=peer.product,
            reply=outcome if isinstance(outcome, Reply) else None,
            sessionId=last.sessionId,
            reason=None if is_reply else last.reason,
            detail="" if is_reply else last.detail,
            attempts=attempts,
            fallbacks=fallbacks,
            elapsedMs=int((anyio.current_time() - started) * 1000),
            cost=outcome.cost_usd if isinstance(outcome, Reply) else None,
            usage=outcome.usage if isinstance(outcome, Reply) else None,
            recordPath=str(request.directory / SESSION_FILE),
            cwd=str(self.repo),
            degraded=degraded_reason is not None,
            degradedReason=degraded_reason,
            recordError=next((a.recordError for a in attempts if a.recordError), None),
            unprotected=sandbox.unprotected(peer.adapter) if self.prefs.allowUnprotected else None,
        )

    async def _attempt(
        self, request: PeerRequest, peer: ResolvedPeer, resume: str | None, *, number: int
    ) -> _Result:
        """One supervised launch of ``peer``; returns (outcome, attempt, failed fast).

        Its steps, each a method below: check STOP; build the invocation; write the record
        (no record, no launch); run it through the runner (which owns the sandbox and the
        process) with liveness lines; interpret what it left. Every path ends in
        :meth:`_finish`; a cancellation finishes the record ``interrupted`` and goes on
        (:meth:`_run`).
        """
        current = self._begin(request, peer, resume, number=number)
        stopped = self._stop_before_spawn(current)
        if stopped is not None:
            return self._finish(current, stopped, None)
        try:
            built = await self._build_invocation(current)
        except anyio.get_cancelled_exc_class():
            # Cancelled while its CLI was probed (version, help): nothing was launched,
            # and the record says so, unless the record there is another process's.
            if not _foreign_record(current.request.directory / SESSION_FILE):
                self._finish_interrupted(current)
            raise
        if isinstance(built, Failure):
            return self._finish(current, built, None)
        invocation, capabilities = built
        failed = self._record_before_launch(current, invocation)
        if failed is not None:
            # No record, no launch: a session nobody could find after a crash is an orphan.
            reason = Failure(
                state=DeliveryState.NOT_SUBMITTED, reason="record failed", detail=failed.message
            )
            return self._finish(current, reason, None, failed)
        ran = await self._run(current, invocation, capabilities)
        if not isinstance(ran, Completed):
            return ran  # finished inside the run: refused, or the pid could not be recorded
        return self._finish(current, self._interpret(current, invocation, ran), ran)

    def _begin(
        self, request: PeerRequest, peer: ResolvedPeer, resume: str | None, *, number: int
    ) -> _InFlight:
        """The attempt's deadline, STOP files and first session record (not yet written).

        The record names this process as its owner, so the reaper can tell a session
        whose owner died from one still supervised.
        """
        record = SessionRecord(
            product=peer.product,
            sessionId=resume,
            updated=utc_now(),
            cwd=str(self.repo),
            peer=peer.name,
            command=list(peer.command),
            ownerPid=os.getpid(),
            ownerStart=_process_start(os.getpid()),
            startedAt=utc_now(),
            attempt=number,
        )
        return _InFlight(
            request=request,
            peer=peer,
            resume=resume,
            deadline_ms=self.prefs.timeoutMs if request.timeout_ms is None else request.timeout_ms,
            stop_files=(self.global_stop_file, *request.stop_files),
            record=record,
            repo=self.repo,
        )

    def _stop_before_spawn(self, current: _InFlight) -> Failure | None:
        """``NOT_SUBMITTED`` when a STOP file exists before spawn, its record written first.

        Nothing is launched: the prompt provably never left this process.
        """
        if not any(path.exists() for path in current.stop_files):
            return None
        current.write()
        return Failure(
            state=DeliveryState.NOT_SUBMITTED,
            reason="STOP interrupt (pre-spawn)",
            detail=stop_hint(current.stop_files),
        )

    async def _build_invocation(
        self, current: _InFlight
    ) -> tuple[Invocation, Capabilities] | Failure:
        """The adapter's invocation for this attempt, with the environment it may pass.

        The adapter owns the argv; this step owns what is asked (prompt, cwd, resume), the
        environment passthrough and the request's isolation. A refusal (a CLI version that
        cannot resume, an adapter that cannot run this request) is ``NOT_SUBMITTED``, its
        record written first.
        """
        request, peer, resume = current.request, current.peer, current.resume
        try:
            capabilities = await self._capabilities_of(peer)
            if resume is not None and not capabilities.resumable:
                raise AdapterRefusalError(peer.product, "this CLI version cannot resume sessions")
            missing = await self._flag_refusal(peer, capabilities)
            if missing is not None:  # never run without the flags that keep it read-only
                raise AdapterRefusalError(peer.product, missing)
            agent_request = AgentRequest(
                prompt=request.prompt, cwd=self.repo, resume_session_id=resume
            )
            built = peer.adapter.build(
                agent_request, command=peer.command, capabilities=capabilities
            )
            invocation = dataclasses.replace(built, pass_env=self._env(peer))
        except AdapterRefusalError as refusal:
            current.write()
            reason = refusal.code or "refused"  # a named one (cli_too_old) when it has one
            return Failure(state=DeliveryState.NOT_SUBMITTED, reason=reason, detail=str(refusal))
        if request.isolate:
            invocation = dataclasses.replace(invocation, isolate_in_copy=True)
        return invocation, capabilities

    def _record_before_launch(
        self, current: _InFlight, invocation: Invocation
    ) -> RecordError | None:
        """Write the session record (with a session id chosen up front) before any spawn.

        Not fsynced, like the pid update: it must survive a crash of this process, and the
        session it describes cannot outlive a crash of the machine. Returns what failed;
        the caller then launches nothing.
        """
        if invocation.session_id is not None:
            current.record = dataclasses.replace(current.record, sessionId=invocation.session_id)
        return current.write(durable=False)

    async def _run(
        self, current: _InFlight, invocation: Invocation, capabilities: Capabilities
    ) -> Completed | _Result:
        """Run the invocation through the runner, with liveness lines.

        The pid is recorded before a byte of stdin is written; when it cannot be, the
        session is ended and the attempt finished here, as it is when the runner proves
        the CLI never ran (``NOT_SUBMITTED``: a sandbox that cannot be made here, a missing
        executable). Cancelled: the runner has ended the session; the record is finished
        ``interrupted`` and the cancellation goes on. Liveness lines start only once the
        process exists.
        """
        launched = anyio.Event()  # liveness lines only for a process that exists

        async def on_started(info: Started) -> None:
            await self._record_pid(current, info)
            launched.set()

        deadline = current.deadline_ms / 1000
        confine = Confinement(
            adapter=current.peer.adapter,
            repo=self.repo,
            whole_filesystem=not capabilities.read_only,
            allow_unprotected=self.prefs.allowUnprotected,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(self._liveness, current.peer.name, deadline, launched)
            group.start_soon(_make_ahead, current, launched)
            try:
                completed = await self.runner.run(
                    invocation,
                    deadline=deadline,
                    grace=self.prefs.graceMs / 1000,
                    stop_files=current.stop_files,
                    on_started=on_started,
                    complete=partial(output_complete, current.peer.adapter, invocation),
                    confine=confine,
                    stall=self.prefs.stallMs / 1000 if self.prefs.stallMs else None,
                )
            except LaunchRefusedError as refused:
                group.cancel_scope.cancel()
                failure = Failure(
                    state=DeliveryState.NOT_SUBMITTED, reason=refused.reason, detail=refused.detail
                )
                return self._finish(current, failure, refused.completed)
            except RecordingError as unrecorded:
                group.cancel_scope.cancel()
                failure = _unrecorded_launch(invocation, unrecorded)
                return self._finish(current, failure, None, unrecorded.error)
            except anyio.get_cancelled_exc_class():
                self._finish_interrupted(current)
                raise
            group.cancel_scope.cancel()
        return completed

    async def _record_pid(self, current: _InFlight, info: Started) -> None:
        """Record the running session's pid, group and marker before its stdin is fed.

        Not fsynced: it must survive a crash of this process (the reaper reads it), and
        the session it describes cannot outlive a crash of the machine. Unwritable:
        :class:`RecordingError` ends the session before its stdin is fed. Written in the
        event loop's thread, as the record before the launch is: a few hundred
        microseconds of local writes, while a hop to a worker thread and back costs about
        as much again, on the path between the spawn and the prompt.
        """
        current.record = dataclasses.replace(
            current.record,
            status="running",
            pid=info.pid,
            pgid=info.pgid,
            marker=info.marker,
            procStart=_process_start(info.pid),
            updated=utc_now(),
        )
        write_or_raise(current.record_path, current.record.document(), durable=False)

    def _finish_interrupted(self, current: _InFlight) -> None:
        """Finish a cancelled attempt's record as ``interrupted``, for :meth:`_tracked`.

        Synchronous, so nothing can cancel it half-way; it runs in the cancelled task's
        ``except`` and the caller re-raises. ``DELIVERY_UNKNOWN`` once a pid was recorded.
        """
        _, attempt, _ = self._finish(
            current, _interrupted(current.record), None, status=INTERRUPTED
        )
        self._interrupted[current.request.directory] = attempt

    def _interpret(
        self, current: _InFlight, invocation: Invocation, completed: Completed
    ) -> Reply | Failure:
        """What the ended process means: the adapter's reading (a sandbox that failed to
        set up never gets here: the runner raised :class:`.LaunchRefusedError`)."""
        if completed.killed_after_grace:
            _log(
                "escalated-to-sigkill",
                level="warning",
                peer=current.peer.name,
                graceMs=self.prefs.graceMs,
                why="the session ignored SIGTERM for the whole grace period",
            )
        if completed.stdout_spill_error is not None:
            _log(
                "output-kept-in-part",
                level="warning",
                peer=current.peer.name,
                errno=completed.stdout_spill_error,
                droppedBytes=completed.stdout_dropped,
                why="the output could not be spilled: its middle was dropped",
            )
        return current.peer.adapter.interpret(invocation, answered(completed))

    def _finish(
        self,
        current: _InFlight,
        outcome: Reply | Failure,
        completed: Completed | None,
        failed: RecordError | None = None,
        status: SessionStatus = "finished",
    ) -> _Result:
        """Record how the attempt ended. A record that cannot be written is reported
        in ``Attempt.recordError`` (path, errno), never raised: the outcome — a reply
        that arrived — must reach the caller whatever the disk does."""
        request, peer, record = current.request, current.peer, current.record
        if isinstance(outcome, Failure) and outcome.reason == "timeout" and completed:
            # The deadline the user set, not deadline + the grace it took to end.
            detail = timeout_detail(current.deadline_ms, completed.elapsed_ms)
            outcome = dataclasses.replace(outcome, detail=detail)
        self._say(_end_line(peer.name, outcome, completed))
        session_id = outcome.session_id or record.sessionId
        state = DeliveryState.DELIVERED if isinstance(outcome, Reply) else outcome.state
        reason = None if isinstance(outcome, Reply) else outcome.reason
        final = dataclasses.replace(
            record,
            sessionId=session_id,
            status=status,
            state=state,
            reason=reason,
            updated=utc_now(),
            finishedAt=utc_now(),
        )
        if failed is None:
            failed = write_record(current.record_path, final.document(), made=current.made)
            if failed is None:
                current.finished()
        attempt = Attempt(
            product=peer.product,
            peer=peer.name,
            command=list(peer.command),
            state=state,
            reason=reason,
            detail="" if isinstance(outcome, Reply) else outcome.detail,
            exitCode=completed.returncode if completed else None,
            timedOut=completed.timed_out if completed else False,
            stopped=completed.stopped if completed else False,
            elapsedMs=completed.elapsed_ms if completed else 0,
            sessionId=session_id,
            resumed=current.resume is not None,
            escalatedToKill=completed.killed_after_grace if completed else False,
            recordError=failed,
            outputDroppedBytes=completed.stdout_dropped if completed else 0,
        )
        failed = append_record(
            request.directory / EVENTS_FILE,
            {"event": "attempt", "at": utc_now(), **attempt.document()},
        )
        if failed is not None and attempt.recordError is None:
            attempt = dataclasses.replace(attempt, recordError=failed)
        fast = completed is not None and completed.elapsed_ms <= RESUME_NOT_FOUND_WINDOW_MS
        return outcome, attempt, fast

    async def _liveness(self, name: str, timeout_s: float, launched: anyio.Event) -> None:
        await launched.wait()
        start = anyio.current_time()
        interval = self.prefs.livenessMs / 1000
        while True:
            elapsed = anyio.current_time() - start
            self._say(
                f"[review-loop] reviewer={name} status=active elapsed={_clock(elapsed)} "
                f"timeout={_clock(timeout_s)}"
            )
            await anyio.sleep(interval)


async def _make_ahead(current: _InFlight, launched: anyio.Event) -> None:
    """Make the files the attempt's finish writes while its CLI runs.

    The finished record and the event line are fsynced before the answer is returned, and
    each new file costs an inode first: 0.1-0.8 ms on this machine's disk, more than an
    fsync. Made here, empty and closed (no descriptor stays open during the session), that
    cost falls in the time the CLI takes anyway. Each is made after two checkpoints, so
    the process layer's tasks, started as the pid is recorded, feed the prompt first.
    Cancelled with the run (the CLI ended first): the finish makes what is missing.
    """
    await launched.wait()
    for make in (current.make_record_ahead, current.make_events_ahead):
        await checkpoint()
        await checkpoint()
        make()


def _log(event: str, *, level: str = "info", echoed: bool = False, **fields: object) -> None:
    """:func:`~.log.log_event` for the current call's request: ``recordDir`` names it."""
    call = _CALL.get()
    if call is not None:
        fields["recordDir"] = str(call.record_dir)
    log_event(event, level=level, echoed=echoed, **fields)


def _foreign_record(path: Path) -> bool:
    """Whether ``path`` holds a record another process owns (never to be finished here)."""
    try:
        record = SessionRecord.read(json.loads(read_bytes(path)))
    except (OSError, ValueError, RecursionError):
        return False  # none yet (or unreadable): this attempt's own is written
    return record is not None and record.ownerPid != os.getpid()


def _interrupted(record: SessionRecord) -> Failure:
    """The outcome of an attempt cancelled before its outcome was read.

    ``NOT_SUBMITTED`` when no process was launched, else ``DELIVERY_UNKNOWN``: the CLI may
    have sent the prompt.
    """
    launched = record.pid is not None
    return Failure(
        state=DeliveryState.DELIVERY_UNKNOWN if launched else DeliveryState.NOT_SUBMITTED,
        reason=INTERRUPTED,
        detail="cancelled before an outcome was read; the session was ended",
    )


def _unrecorded_launch(invocation: Invocation, failed: RecordingError) -> Failure:
    """The outcome of a session ended because its pid could not be recorded.

    It was ended before its stdin was written: with the prompt on stdin nothing was sent
    (``NOT_SUBMITTED``); with the prompt in argv the CLI may already have sent it.
    """
    return Failure(
        state=DeliveryState.NOT_SUBMITTED if invocation.stdin else DeliveryState.DELIVERY_UNKNOWN,
        reason="record failed",
        detail=failed.error.message,
    )


def _end_line(name: str, outcome: Reply | Failure, completed: Completed | None) -> str:
    """The progress line that says how one attempt ended."""
    elapsed = _clock(completed.elapsed_ms / 1000) if completed else None
    if isinstance(outcome, Reply):
        return progress_line(name, "answered", elapsed=elapsed)
    from shlex import quote as shlex_quote  # here: only a failure's line quotes its reason

    if outcome.reason == "timeout":
        return progress_line(name, "timeout", elapsed=elapsed)
    if outcome.state is DeliveryState.NOT_SUBMITTED and (
        completed is None or completed.spawn_error
    ):
        return progress_line(name, "not-started", why=shlex_quote(outcome.detail or outcome.reason))
    return progress_line(name, "failed", elapsed=elapsed, why=shlex_quote(outcome.reason or ""))


def _stderr_line(text: str) -> None:
    emit_progress(text)  # a line on stderr, or the command line's live status on a terminal


@asynccontextmanager
async def open_dispatcher(
    *,
    repo: Path | str | Checkout,
    prefs: Prefs | None = None,
    progress: Callable[[ProgressLine], None] | None = None,
    reap: bool = True,
    keep_outcomes: int = OUTCOMES_KEPT,
    runner: Runner | None = None,
) -> AsyncIterator[Dispatcher]:
    """Open a dispatcher for ``repo``.

    Args:
        repo: a directory of an existing git checkout (``str`` or ``Path``); its top level
            is used. Every session runs there (read-only). Nothing is created but the
            records (see ``PeerRequest.record_dir``). A :class:`~.git.Checkout` that
            ``git.locate`` has just made (the command line's) is used as it is.
        prefs: deadlines, grace, liveness interval and peer-command aliases: the ``Prefs``.
            Omitted: the user's, as :func:`review_loop.load_prefs` returns them (read when
            the dispatcher opens; a bad file raises ``PrefsError`` naming the key).
        progress: receives each progress line (default: stderr), a
            :class:`ProgressLine`: a ``str`` that also names its request
            (``line.request`` is the caller's own object). An exception it raises
            ends the call it was reporting on (sessions ended, records finished) and that
            call raises it.
        reap: first find sessions of this repository whose recorded process is gone or
            whose owner died, end orphans, and mark their records (``Dispatcher.reaped``).
        keep_outcomes: how many of the newest deliveries ``Dispatcher.outcomes`` keeps.
        runner: what runs each attempt (the contract: :mod:`.runner`), owned and closed
            by the caller. Default: a :class:`~.runner.ProcessRunner`, opened and closed
            here, whose first session supervisor is started first (a warm spare,
            :class:`.Supervisors`), so its interpreter starts while the repository is
            located and reaped.
    """
    bound = _outcomes_bound(keep_outcomes)
    if prefs is None:
        from review_loop.adapters import known_products
        from review_loop.prefs import load_prefs

        prefs = load_prefs(known_products())
    opened = partial(_opened, repo, prefs, progress or _stderr_line, reap=reap, keep=bound)
    if runner is not None:
        yield await opened(runner=runner)
        return
    async with open_process_runner() as process_runner:
        yield await opened(runner=process_runner)


def _reap_and_sweep(repo: Path, grace: float) -> list[SessionRecord]:
    """The start-up reaper, then the throw-away copies of isolated runs whose review-loop
    was killed with SIGKILL: one worker thread for both (each hop costs a few tenths of a
    millisecond of every command's start)."""
    from review_loop.orchestrator.process.reaper import reap_sync

    reaped = reap_sync(repo, grace)
    remove_orphaned_scratch()
    return reaped


async def _opened(
    repo: Path | str | Checkout,
    prefs: Prefs,
    progress: Callable[[ProgressLine], None],
    *,
    reap: bool,
    keep: int,
    runner: Runner,
) -> Dispatcher:
    """The dispatcher of :func:`open_dispatcher`, with its repository located and reaped."""
    # An existing git checkout (its top level), never created.
    if not isinstance(repo, Checkout):
        repo = await anyio.to_thread.run_sync(locate, repo)
    dispatcher = Dispatcher(
        repo=repo.root, prefs=prefs, progress=progress, checkout=repo, keep_outcomes=keep,
        runner=runner,
    )  # fmt: skip
    if reap:
        from review_loop.orchestrator.process.reaper import nothing_to_reap

        # The usual case is checked here, without starting a worker thread (several
        # tenths of a millisecond, more under load): a trusted index naming no dead
        # owner's record, and no orphaned scratch directory.
        if not nothing_to_reap(repo.root) or orphaned_scratch():
            dispatcher.reaped = await anyio.to_thread.run_sync(
                _reap_and_sweep, repo.root, prefs.graceMs / 1000
            )
        for record in dispatcher.reaped:
            log_event(
                "reaped",
                level="warning",
                product=record.product,
                sessionId=record.sessionId,
                status=record.status,
                pid=record.pid,
            )
    return dispatcher


__all__ = [
    "SESSION_FILE",
    "Dispatcher",
    "PeerRequest",
    "ProgressLine",
    "ResolvedPeer",
    "open_dispatcher",
    "resolve_peer",
]
