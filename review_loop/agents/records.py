"""Shapes of what the dispatcher records: session records, attempts, deliveries.

These pydantic models are the public contract: the embedding API returns ``Delivery``
(with its ``Attempt``/``Fallback``/``RecordError``), records read from a repository are
validated by ``SessionRecord``, and the JSON Schemas come from them. The dispatcher's core
builds their plain twins (:mod:`review_loop.agents.outcomes`, no pydantic) and
:func:`public_delivery` turns a twin into the model at the public boundary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from review_loop.agents.models import DeliveryState, Reply, Usage
from review_loop.agents.outcomes import INTERRUPTED as INTERRUPTED
from review_loop.agents.outcomes import SESSION_FILE as SESSION_FILE
from review_loop.agents.outcomes import SessionStatus as SessionStatus

if TYPE_CHECKING:
    from review_loop.agents import outcomes


class SessionRecord(BaseModel):
    """``reviewer-session.json``: written before the prompt is sent, updated as it runs.

    ``product``, ``sessionId`` and ``updated`` are the original tool's fields; the rest
    lets a later call (or the start-up reaper) see what is still running and where.
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    product: str
    sessionId: str | None = None
    updated: str
    cwd: str
    peer: str
    command: list[str] = Field(default_factory=list)
    status: SessionStatus = "starting"
    state: DeliveryState | None = None
    reason: str | None = None
    pid: int | None = None
    pgid: int | None = None
    marker: str | None = None
    procStart: float | None = None
    ownerPid: int
    ownerStart: float | None = None
    startedAt: str
    finishedAt: str | None = None
    attempt: int = 1

    def ended(
        self, status: SessionStatus, state: DeliveryState, reason: str | None, at: str
    ) -> SessionRecord:
        """This record with its end: ``status``, ``state``, ``reason``, ended ``at``."""
        update = {"status": status, "state": state, "reason": reason}
        return self.model_copy(update={**update, "updated": at, "finishedAt": at})


class RecordError(BaseModel):
    """A record that could not be written: which file, the errno's name, the message.

    The answer it belonged to is still delivered (printed); see ``docs/handoff-writes.md``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: str
    errno: str
    message: str


class Fallback(BaseModel):
    """One product swap: ``{from, to, reason}``."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, defer_build=True)

    from_: str = Field(alias="from")
    to: str
    reason: str


class Attempt(BaseModel):
    """One launch of one product, and what became of it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    product: str
    peer: str
    command: list[str]
    state: DeliveryState
    reason: str | None = None
    detail: str = ""
    exitCode: int | None = None
    timedOut: bool = False
    stopped: bool = False
    elapsedMs: int = 0
    sessionId: str | None = None
    resumed: bool = False
    escalatedToKill: bool = False
    recordError: RecordError | None = None
    outputDroppedBytes: int = 0
    """Bytes of the CLI's stdout dropped past the output cap (or a full disk)."""

    @model_serializer(mode="wrap")
    def _without_absent_record_error(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, object]:
        # ``recordError`` appears only when a record failed, and ``outputTruncated`` /
        # ``outputDroppedBytes`` only when output was dropped, so every other document
        # (events.jsonl lines, consult attempts) keeps its exact shape.
        data: dict[str, object] = handler(self)
        if data.get("recordError") is None:
            data.pop("recordError", None)
        dropped = data.pop("outputDroppedBytes", 0)
        if dropped:
            data["outputTruncated"] = True
            data["outputDroppedBytes"] = dropped
        return data


class Delivery(BaseModel):
    """The dispatcher's answer for one request: the last attempt decides ``state``.

    Attributes:
        degraded: a resume fell back to a new session; ``degradedReason`` says why
            (``no_session_id``, ``resume_unsupported`` or ``session_not_found``).
        interrupted: the request was cancelled (a signal to review-loop, or the embedding
            program) before an outcome was read; its session was ended and its record says
            ``interrupted``. ``state`` is then ``NOT_SUBMITTED`` if nothing was launched.
        recordError: the first record of this request that could not be written (the
            reply, if any, is still here).
        unprotected: why the reviewer ran without the sandbox that hides the user's
            secret stores and review-loop's state (no mount namespace here, and prefs
            ``allowUnprotected`` allowed it); ``None`` when it ran protected.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    state: DeliveryState
    peer: str
    product: str
    reply: Reply | None = None
    sessionId: str | None = None
    reason: str | None = None
    detail: str = ""
    attempts: list[Attempt]
    fallbacks: list[Fallback] = Field(default_factory=list)
    elapsedMs: int = 0
    cost: float | None = None
    usage: Usage | None = None
    recordPath: str | None = None
    cwd: str
    degraded: bool = False
    degradedReason: str | None = None
    interrupted: bool = False
    recordError: RecordError | None = None
    unprotected: str | None = None

    @property
    def ok(self) -> bool:
        """Whether a reply was parsed."""
        return self.state is DeliveryState.DELIVERED


def public_attempt(plain: outcomes.Attempt) -> Attempt:
    """The model of an attempt the dispatcher built (trusted: not validated again)."""
    failed = plain.recordError
    return Attempt.model_construct(
        product=plain.product,
        peer=plain.peer,
        command=list(plain.command),
        state=plain.state,
        reason=plain.reason,
        detail=plain.detail,
        exitCode=plain.exitCode,
        timedOut=plain.timedOut,
        stopped=plain.stopped,
        elapsedMs=plain.elapsedMs,
        sessionId=plain.sessionId,
        resumed=plain.resumed,
        escalatedToKill=plain.escalatedToKill,
        recordError=_public_record_error(failed),
        outputDroppedBytes=plain.outputDroppedBytes,
    )


def public_delivery(plain: outcomes.Delivery) -> Delivery:
    """The model of a delivery the dispatcher built, for the public API.

    ``model_construct``, not ``model_validate``: every value was made by the dispatcher with
    the model's own types (mypy checks the twin; a contract test checks that validating the
    twin's document gives this same model), so validating it again would only build the
    model's validators (tens of ms at first use) for nothing. ``Reply`` and ``Usage`` are
    shared: they are frozen dataclasses of both.
    """
    return Delivery.model_construct(
        state=plain.state,
        peer=plain.peer,
        product=plain.product,
        reply=plain.reply,
        sessionId=plain.sessionId,
        reason=plain.reason,
        detail=plain.detail,
        attempts=[public_attempt(attempt) for attempt in plain.attempts],
        fallbacks=[
            Fallback.model_construct(from_=f.from_, to=f.to, reason=f.reason)
            for f in plain.fallbacks
        ],
        elapsedMs=plain.elapsedMs,
        cost=plain.cost,
        usage=plain.usage,
        recordPath=plain.recordPath,
        cwd=plain.cwd,
        degraded=plain.degraded,
        degradedReason=plain.degradedReason,
        interrupted=plain.interrupted,
        recordError=_public_record_error(plain.recordError),
        unprotected=plain.unprotected,
    )


def _public_record_error(plain: outcomes.RecordError | None) -> RecordError | None:
    if plain is None:
        return None
    return RecordError.model_construct(path=plain.path, errno=plain.errno, message=plain.message)
