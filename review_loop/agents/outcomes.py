"""What the dispatcher's core builds and writes, as plain values: no pydantic.

The public embedding API returns pydantic models (:mod:`review_loop.agents.records`:
``Delivery``, ``Attempt``, ``Fallback``, ``RecordError``, ``SessionRecord``), and they stay
the contract (validation, ``model_dump``, JSON Schemas). The dispatcher builds these values
itself, from data it computed, so validating them again would only cost start-up: the
core builds the plain twins below (``docs/performance.md``), which ``review-loop consult``
and the workflows print and write directly, and
:func:`review_loop.agents.records.public_delivery` turns a twin into the model once, at the
public boundary (``Dispatcher.consult``/``fan_out``).

Each twin is a frozen, slotted, keyword-only stdlib dataclass (made by
:func:`~review_loop.agents.frozen_dataclass.frozen_dataclass`, which compiles no code when
the class is defined: ``docs/performance.md``). It has its model's field names, in the
same order, with the same defaults, and its
:meth:`document` is exactly the model's ``model_dump(mode="json", by_alias=True)``;
``tests/agents/test_outcomes.py`` holds each twin to its model over real deliveries.

A session record read back from disk is untrusted: :meth:`SessionRecord.read` takes it
plainly only when every key is known and every value has exactly the JSON type the model
wants (so it can only be stricter than the model), and otherwise lets the model decide.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Final, Literal

from review_loop.agents.constants import SESSION_FILE as SESSION_FILE
from review_loop.agents.frozen_dataclass import frozen_dataclass
from review_loop.agents.models import DeliveryState, Reply, Usage
from review_loop.agents.record_fields import FIELDS, REQUIRED

SessionStatus = Literal["starting", "running", "finished", "interrupted", "orphaned", "lost"]
"""Where a session is: ``starting`` (record written, not yet spawned), ``running``,
``finished`` (an outcome was read), ``interrupted`` (review-loop was cancelled or signalled
and ended the session itself), ``orphaned`` (its owner died after the process started; the
reaper ended what was left, or found nothing left: its ``reason`` says which) or ``lost``
(the owner died before the process was recorded, or the record is untrusted and nothing
was signalled); see ``docs/process-ownership.md``."""

INTERRUPTED: Final = "interrupted"
"""The ``reason`` of an attempt, and the ``status`` of a record, ended by cancellation."""


@frozen_dataclass
class RecordError:
    """A record that could not be written: which file, the errno's name, the message.

    The answer it belonged to is still delivered (printed); see ``docs/handoff-writes.md``.
    """

    path: str
    errno: str
    message: str

    def document(self) -> dict[str, Any]:
        """The JSON form: ``{path, errno, message}``."""
        return {"path": self.path, "errno": self.errno, "message": self.message}


@frozen_dataclass
class Fallback:
    """One product swap: ``{from, to, reason}`` (``from_`` in Python, ``from`` in JSON)."""

    from_: str
    to: str
    reason: str

    def document(self) -> dict[str, Any]:
        """The JSON form, keyed ``from``/``to``/``reason``."""
        return {"from": self.from_, "to": self.to, "reason": self.reason}


@frozen_dataclass
class Attempt:
    """One launch of one product, and what became of it."""

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

    def document(self) -> dict[str, Any]:
        """The JSON form; ``recordError`` appears only when a record failed, and
        ``outputTruncated``/``outputDroppedBytes`` only when output was dropped, so every
        other document (events.jsonl lines, consult attempts) keeps its exact shape."""
        data: dict[str, Any] = {
            "product": self.product,
            "peer": self.peer,
            "command": list(self.command),
            "state": self.state.value,
            "reason": self.reason,
            "detail": self.detail,
            "exitCode": self.exitCode,
            "timedOut": self.timedOut,
            "stopped": self.stopped,
            "elapsedMs": self.elapsedMs,
            "sessionId": self.sessionId,
            "resumed": self.resumed,
            "escalatedToKill": self.escalatedToKill,
        }
        if self.recordError is not None:
            data["recordError"] = self.recordError.document()
        if self.outputDroppedBytes:
            data["outputTruncated"] = True
            data["outputDroppedBytes"] = self.outputDroppedBytes
        return data


@frozen_dataclass
class Delivery:
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

    state: DeliveryState
    peer: str
    product: str
    reply: Reply | None = None
    sessionId: str | None = None
    reason: str | None = None
    detail: str = ""
    attempts: list[Attempt]
    fallbacks: list[Fallback] = field(default_factory=list)
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

    def document(self) -> dict[str, Any]:
        """The JSON form (the model's ``model_dump(mode="json", by_alias=True)``)."""
        return {
            "state": self.state.value,
            "peer": self.peer,
            "product": self.product,
            "reply": None if self.reply is None else dataclasses.asdict(self.reply),
            "sessionId": self.sessionId,
            "reason": self.reason,
            "detail": self.detail,
            "attempts": [attempt.document() for attempt in self.attempts],
            "fallbacks": [fallback.document() for fallback in self.fallbacks],
            "elapsedMs": self.elapsedMs,
            "cost": self.cost,
            "usage": None if self.usage is None else dataclasses.asdict(self.usage),
            "recordPath": self.recordPath,
            "cwd": self.cwd,
            "degraded": self.degraded,
            "degradedReason": self.degradedReason,
            "interrupted": self.interrupted,
            "recordError": None if self.recordError is None else self.recordError.document(),
            "unprotected": self.unprotected,
        }


@frozen_dataclass
class SessionRecord:
    """``reviewer-session.json`` as the dispatcher writes it (see the model's docstring).

    ``product``, ``sessionId`` and ``updated`` are the original tool's fields; the rest
    lets a later call (or the start-up reaper) see what is still running and where.
    """

    product: str
    sessionId: str | None = None
    updated: str
    cwd: str
    peer: str
    command: list[str] = field(default_factory=list)
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
        return dataclasses.replace(
            self, status=status, state=state, reason=reason, updated=at, finishedAt=at
        )

    def document(self) -> dict[str, Any]:
        """The JSON form written to disk (the model's ``model_dump(mode="json")``)."""
        data = {name: getattr(self, name) for name in _RECORD_FIELDS}
        data["command"] = list(self.command)
        data["state"] = None if self.state is None else self.state.value
        return data

    @classmethod
    def read(cls, raw: Any) -> SessionRecord | None:
        """A record read back from disk (parsed JSON, untrusted); ``None`` if invalid.

        Plainly when every key is a field and every value has exactly the JSON type the
        model wants. Refused without the model when the model refuses it whatever else it
        holds: not a JSON object, or a required field missing (the original tool's records,
        ``{product, sessionId, updated}``). On anything else the model
        (``records.SessionRecord``) decides, and its reading is taken field for field.
        """
        if type(raw) is not dict or not raw.keys() >= REQUIRED:
            return None  # the model has no default for a required field: it refuses too
        plain = _plain_record(raw)
        if plain is not None:
            return plain
        from pydantic import ValidationError

        from review_loop.agents.records import SessionRecord as Model

        try:
            model = Model.model_validate(raw)
        except ValidationError:
            return None
        return cls(**{name: getattr(model, name) for name in _RECORD_FIELDS})


_RECORD_FIELDS: Final = tuple(f.name for f in dataclasses.fields(SessionRecord))


def _plain_record(raw: Any) -> SessionRecord | None:
    """``raw`` as a record when it is plainly one (see :meth:`SessionRecord.read`)."""
    if type(raw) is not dict or not raw.keys() >= REQUIRED:
        return None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        check = FIELDS.get(key)
        if check is None:
            return None  # unknown: the model (which ignores it) decides
        if not check(value):
            return None
        if value is not None and key == "state":
            values[key] = DeliveryState(value)
        elif value is not None and key in ("procStart", "ownerStart"):
            values[key] = float(value)
        else:
            values[key] = value
    return SessionRecord(**values)
