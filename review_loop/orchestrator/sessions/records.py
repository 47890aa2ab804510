"""Session records read from a repository for ``sessions``: ours, or the original tool's.

A ``reviewer-session.json`` under ``.review-handoff/runtime/`` is untrusted input. It is
either ours, read by the one check of a record
(:func:`review_loop.agents.record_fields.checked`: exact JSON types, unknown keys
ignored), or, when a field ours requires is missing or ill-typed, the original
``review-loop``'s (``{product, sessionId, updated}``, three strings: it writes one only
after a call succeeded, so it is resumable). Anything else is skipped
(``docs/performance.md``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from review_loop.agents.record_fields import checked


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


def read_record(packet_id: str, raw: Any, repo: str) -> Record | None:
    """The record ``raw`` (parsed JSON), or ``None`` when it is not one (skipped)."""
    ours = checked(raw)
    if ours is not None:
        return Record(
            packet_id,
            ours["product"],
            ours.get("sessionId"),
            ours["updated"],
            ours["cwd"],
            tuple(ours.get("command", ())),
            ours.get("status", "starting"),
            ours.get("state") == "DELIVERED",
        )
    if type(raw) is not dict:
        return None
    product, session, updated = raw.get("product"), raw.get("sessionId"), raw.get("updated")
    if type(product) is str and type(session) is str and type(updated) is str:
        return Record(packet_id, product, session, updated, repo, (), None, True)
    return None
