"""How a review-loop document is compared with an original's: a drop-in keeps the contract.

Every key the original printed must be there with the same JSON type (keys review-loop adds
are fine); the values a client branches on (:data:`VALUE_KEYS`) must be equal; prose
(messages, notes, usage lines) is compared by type only. Per-run values are normalised
before (:func:`tests.differential.scenarios.normalise`).
"""

from __future__ import annotations

from typing import Any

VALUE_KEYS = frozenset(
    {
        "ok",
        "status",
        "code",
        "verdict",
        "round",
        "rounds",
        "openBlocking",
        "openConcerns",
        "unresolved",
        "lastVerdict",
        "roundsUsed",
        "roundsBudget",
        "lineCount",
        "lastAnchor",
        "lifecycleState",
        "id",
        "severity",
        "title",
        "blocking",
        "targetFiles",
        "evidence",
        "requiredFix",
        "acceptanceCheck",
        "findingIds",
        "acceptedConcernIds",
        "originalVerdict",
        "closeReason",
        "reason",
        "present",
        "fixRoundsCompleted",
        "needsContinue",
        "count",
        "mode",
        "product",
        "packetId",
        "packetPath",
        "sessionId",
        "pendingStage",
        "reviewer",
        "last_anchor",
        "lifecycle_state",
        "conclusion",
        "findingStatus",
        "verification",
    }
)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def differences(original: Any, ours: Any, where: str = "$", key: str = "") -> list[str]:
    """Every way ``ours`` breaks a client of ``original`` (empty: a drop-in)."""
    if _kind(original) != _kind(ours):
        return [f"{where}: {_kind(ours)} where the original has {_kind(original)}"]
    if isinstance(original, dict):
        found: list[str] = []
        for name, value in original.items():
            if name not in ours:
                found.append(f"{where}.{name}: missing")
            else:
                found += differences(value, ours[name], f"{where}.{name}", name)
        return found
    if isinstance(original, list):
        if key in VALUE_KEYS or any(isinstance(item, dict) for item in original):
            if len(original) != len(ours):
                return [f"{where}: {len(ours)} items where the original has {len(original)}"]
            found = []
            for i, (theirs, mine) in enumerate(zip(original, ours, strict=True)):
                found += differences(theirs, mine, f"{where}[{i}]", key)
            return found
        return [
            f"{where}[{i}]: {_kind(mine)} where the original has {_kind(original[0])}"
            for i, mine in enumerate(ours)
            if original and _kind(mine) != _kind(original[0])
        ]
    if key in VALUE_KEYS and original != ours:
        return [f"{where}: {ours!r} where the original has {original!r}"]
    return []
