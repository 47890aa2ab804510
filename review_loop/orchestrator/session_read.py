"""Session records read from a repository for ``sessions``: plainly, or by the models.

A ``reviewer-session.json`` under ``.review-handoff/runtime/`` is untrusted input. It is
either ours (:class:`~review_loop.agents.records.SessionRecord`) or the original tool's
(:class:`OriginalRecord`); anything else is skipped. The models decide; this module only
spares ``sessions`` importing pydantic for the records that are plainly valid
(``docs/performance.md``):

- :func:`plain_record` reads a record whose every field the model reads has the plain JSON
  type the model wants (``agents/record_fields.py``: an exact ``str``, ``int``, ``float``,
  ``list`` of ``str``, a known ``status`` or ``state``), with the model's defaults and,
  as the model (``extra="ignore"``), ignoring keys it does not know. It reads a record as
  the original's only when a field ``SessionRecord`` requires is missing, so the model
  would refuse it as ours. On anything else it returns ``None``.
- :func:`model_record` reads it with the models: ``SessionRecord`` first, then
  ``OriginalRecord``; it alone decides what a lax value means and what is refused.

So the plain path can only be stricter than the models, never looser:
``tests/orchestrator/test_session_read.py`` runs valid, lax and broken records through
both and checks that whatever the plain path reads, the models read the same.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from review_loop.agents.record_fields import FIELDS, REQUIRED


class Record(NamedTuple):
    """What ``sessions`` uses of one record: ours (with its delivery) or the original's."""

    packet_id: str
    product: str
    session_id: str | None
    updated: str
    cwd: str
    command: tuple[str, ...]
    status: str | None
    delivered: bool


def plain_record(packet_id: str, raw: Any, repo: str) -> Record | None:
    """``raw`` (parsed JSON) read without the models when it is plainly a record; ``None``
    when only the models can say what it is (:func:`model_record`)."""
    if type(raw) is not dict:
        return None
    if raw.keys() >= REQUIRED:
        for key, value in raw.items():
            check = FIELDS.get(key)
            if check is not None and not check(value):
                return None
        return Record(
            packet_id,
            raw["product"],
            raw.get("sessionId"),
            raw["updated"],
            raw["cwd"],
            tuple(raw.get("command", ())),
            raw.get("status", "starting"),
            raw.get("state") == "DELIVERED",
        )
    # not ours (a required field is missing): the original's, when plainly so
    product, session, updated = raw.get("product"), raw.get("sessionId"), raw.get("updated")
    if type(product) is str and type(session) is str and type(updated) is str:
        return Record(packet_id, product, session, updated, repo, (), None, True)
    return None


def model_record(packet_id: str, raw: Any, repo: str) -> Record | None:
    """``raw`` read by the models (``SessionRecord``, else ``OriginalRecord``); ``None``
    when neither accepts it."""
    from pydantic import ValidationError

    from review_loop.agents.models import DeliveryState
    from review_loop.agents.records import SessionRecord
    from review_loop.orchestrator.original_record import OriginalRecord

    try:
        ours = SessionRecord.model_validate(raw)
    except ValidationError:
        try:
            theirs = OriginalRecord.model_validate(raw)
        except ValidationError:
            return None  # foreign: skipped
        return Record(
            packet_id, theirs.product, theirs.sessionId, theirs.updated, repo, (), None, True
        )
    return Record(
        packet_id,
        ours.product,
        ours.sessionId,
        ours.updated,
        ours.cwd,
        tuple(ours.command),
        ours.status,
        ours.state is DeliveryState.DELIVERED,
    )


def read_record(packet_id: str, raw: Any, repo: str) -> Record | None:
    """The record ``raw`` (parsed JSON), or ``None`` when it is not one (skipped)."""
    return plain_record(packet_id, raw, repo) or model_record(packet_id, raw, repo)
