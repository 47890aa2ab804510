"""What the dispatcher delivers and records: one frozen dataclass per concept.

:class:`Delivery` (with its :class:`Attempt`, :class:`Fallback` and :class:`RecordError`) is
what :meth:`Dispatcher.consult <review_loop.orchestrator.dispatcher.Dispatcher.consult>`
returns to an embedder and what ``review-loop consult`` and the workflows print and write;
:class:`SessionRecord` is ``reviewer-session.json``. Each is a frozen, slotted, keyword-only
stdlib dataclass: the dispatcher builds them from values it computed, so ``mypy --strict``
is their check and building one costs no pydantic (``docs/performance.md``).

Their JSON form is :meth:`document` (camelCase keys, ``from`` for :attr:`Fallback.from_`,
``recordError``/``outputTruncated`` on an attempt only when they say something): the exact
bytes every consult document, ``events.jsonl`` line and record carries. pydantic describes
them at the edge, imported only there: ``pydantic.TypeAdapter(Delivery).json_schema()`` is
the public JSON Schema, and ``TypeAdapter(Delivery).validate_python(d.document())`` reads a
document back as the same value (``__pydantic_config__`` names ``from_`` ``from``).

A session record read back from disk is untrusted: :meth:`SessionRecord.read` is its one
reader, by the exact JSON types of :mod:`review_loop.agents.record_fields`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from review_loop.agents.constants import SESSION_FILE as SESSION_FILE
from review_loop.agents.models import DeliveryState, Reply, Usage
from review_loop.agents.record_fields import checked

SessionStatus = Literal["starting", "running", "finished", "interrupted", "orphaned", "lost"]
"""Where a session is: ``starting`` (record written, not yet spawned), ``running``,
``finished`` (an outcome was read), ``interrupted`` (review-loop was cancelled or signalled
and ended the session itself), ``orphaned`` (its owner died after the process started; the
reaper ended what was left, or found nothing left: its ``reason`` says which) or ``lost``
(the owner died before the process was recorded, or the record is untrusted and nothing
was signalled); see ``docs/process-ownership.md``."""

INTERRUPTED: Final = "interrupted"
"""The ``reason`` of an attempt, and the ``status`` of a record, ended by cancellation."""


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallback:
    """One product swap: ``{from, to, reason}`` (``from_`` in Python, ``from`` in JSON)."""

    # What pydantic reads of a stdlib dataclass (a plain dict, so no pydantic import here):
    # the JSON name of ``from_``, for the JSON Schema and for reading a document back.
    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "alias_generator": lambda name: "from" if name == "from_" else name,
        "populate_by_name": True,
    }

    from_: str
    to: str
    reason: str

    def document(self) -> dict[str, Any]:
        """The JSON form, keyed ``from``/``to``/``reason``."""
        return {"from": self.from_, "to": self.to, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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
        """The JSON form: what ``consult`` prints and embedders serialise (see the module)."""
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


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """``reviewer-session.json``: written before the prompt is sent, updated as it runs.

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
        """The JSON form written to disk."""
        data = {name: getattr(self, name) for name in _RECORD_FIELDS}
        data["command"] = list(self.command)
        data["state"] = None if self.state is None else self.state.value
        return data

    @classmethod
    def read(cls, raw: Any) -> SessionRecord | None:
        """A record read back from disk (parsed JSON, untrusted); ``None`` if it is not one.

        Its one reader: every field present has exactly its JSON type
        (:func:`~review_loop.agents.record_fields.checked`), the required ones are there,
        unknown keys are ignored.
        """
        values = checked(raw)
        if values is None:
            return None
        if values.get("state") is not None:
            values["state"] = DeliveryState(values["state"])
        return cls(**values)


_RECORD_FIELDS: Final = tuple(f.name for f in dataclasses.fields(SessionRecord))
