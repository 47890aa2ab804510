"""Plain checks of a ``reviewer-session.json``: exactly the JSON types the model wants.

A session record read from a repository is untrusted input. Two readers take one without
pydantic when it is plainly valid — ``sessions`` (``orchestrator/session_read.py``) and the
reaper and the dispatcher (``outcomes.SessionRecord.read``) — and let the model
(``records.SessionRecord``) decide everything else, so neither can be looser than it. This
module is their one definition of "plainly valid"; plain data only (no dataclasses, no
pydantic), because ``sessions`` imports it. ``tests/orchestrator/test_session_read.py``
holds its field names, required fields and vocabularies equal to the model's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

STATUSES: Final = frozenset({"starting", "running", "finished", "interrupted", "orphaned", "lost"})
"""``SessionRecord.status``'s values (``records.SessionStatus``)."""

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
