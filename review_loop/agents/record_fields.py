"""The one check of a ``reviewer-session.json``: exactly the JSON types each field has.

A session record read from a repository is untrusted input. :func:`checked` is its one
reader, for the reaper and the dispatcher (``outcomes.SessionRecord.read``) and for
``sessions`` (``orchestrator/sessions/records.py``). It is plain data and functions (no
dataclasses, no pydantic) because ``sessions``, which lists thousands of records, imports it
and neither of those (``tests/test_startup_imports.py``). A record written by review-loop
always passes; one with a value of another JSON type (``"pid": "12"``, ``"attempt": 1.0``)
was written by hand or planted, and is refused, as are unknown ``status``/``state`` words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

STATUSES: Final = frozenset({"starting", "running", "finished", "interrupted", "orphaned", "lost"})
"""``SessionRecord.status``'s values (``outcomes.SessionStatus``)."""

STATES: Final = frozenset({"DELIVERED", "NOT_SUBMITTED", "DELIVERY_UNKNOWN"})
"""``DeliveryState``'s values."""

REQUIRED: Final = frozenset({"product", "updated", "cwd", "peer", "ownerPid", "startedAt"})
"""The fields ``SessionRecord`` requires (it has no default for them)."""

EXACT_FLOAT: Final = 2**53
"""Past this an ``int`` is not read plainly as a float (the model rounds it, or refuses)."""


def _str(value: Any) -> bool:
    return type(value) is str


def _optional_str(value: Any) -> bool:
    return value is None or type(value) is str


def _int(value: Any) -> bool:
    return type(value) is int


def _optional_int(value: Any) -> bool:
    return value is None or type(value) is int


def _optional_float(value: Any) -> bool:
    kind = type(value)
    return value is None or kind is float or (kind is int and -EXACT_FLOAT <= value <= EXACT_FLOAT)


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _status(value: Any) -> bool:
    return type(value) is str and value in STATUSES


def _optional_state(value: Any) -> bool:
    return value is None or (type(value) is str and value in STATES)


FIELDS: Final[dict[str, Callable[[Any], bool]]] = {
    "product": _str,
    "sessionId": _optional_str,
    "updated": _str,
    "cwd": _str,
    "peer": _str,
    "command": _strings,
    "status": _status,
    "state": _optional_state,
    "reason": _optional_str,
    "pid": _optional_int,
    "pgid": _optional_int,
    "marker": _optional_str,
    "procStart": _optional_float,
    "ownerPid": _int,
    "ownerStart": _optional_float,
    "startedAt": _str,
    "finishedAt": _optional_str,
    "attempt": _int,
}
"""Every field of ``SessionRecord`` and its plain check, ``None`` allowed where the model
allows it."""


def checked(raw: Any) -> dict[str, Any] | None:
    """The fields of the record ``raw`` (parsed JSON), or ``None`` when it is not one.

    ``raw`` must be a JSON object holding every :data:`REQUIRED` field, and every field of
    :data:`FIELDS` it holds must pass its check; keys it does not know are ignored (a newer
    review-loop may write more). An ``int`` in a float field is read as a ``float``. The
    dict holds the known fields only, as read (``state`` as its word).
    """
    if type(raw) is not dict or not raw.keys() >= REQUIRED:
        return None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        check = FIELDS.get(key)
        if check is None:
            continue
        if not check(value):
            return None
        values[key] = float(value) if key in _FLOATS and value is not None else value
    return values


_FLOATS: Final = frozenset({"procStart", "ownerStart"})
