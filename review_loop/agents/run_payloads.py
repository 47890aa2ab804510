"""The payload fields of each ``verification run`` verb, per verification type.

One table per payload (audit/review/test scope units and findings, review terminal
metadata) says every field: its dotted name, whether it is required, and what is accepted.
The same tables give the verbs' ``--help`` (:func:`describe`) and the list of every problem
a refused payload has (:func:`problems`), so the help cannot drift from what is checked.
The validators in :mod:`review_loop.agents.verification` keep spx's first-failure reason
(the drop-in contract); a contract test holds them to these tables.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from review_loop.agents import verification as v


class PayloadField(NamedTuple):
    """One field: ``name`` (dotted), what is ``accepted``, and its check."""

    name: str
    accepted: str
    check: Callable[[Any], bool]
    required: bool = True


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and float(value).is_integer()
        and value > 0
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _one_of(values: Sequence[str]) -> tuple[str, Callable[[Any], bool]]:
    return "one of " + " | ".join(values), lambda value: value in values


TEXT: Final = "a non-empty string"
OBJECT: Final = "an object"


def _field(name: str, kind: str | Sequence[str], *, required: bool = True) -> PayloadField:
    checks: Mapping[str, tuple[str, Callable[[Any], bool]]] = {
        "text": (TEXT, _text),
        "string": ("a string (may be empty)", _string),
        "object": (OBJECT, _object),
        "positive": ("a positive integer", _positive),
        "strings": ("a list of strings", _strings),
    }
    accepted, check = checks[kind] if isinstance(kind, str) else _one_of(kind)
    return PayloadField(name, accepted, check, required)


def _producer(name: str) -> list[PayloadField]:
    return [_field(name, "object"), *(_field(f"{name}.{f}", "text") for f in v.PRODUCER_FIELDS)]


def _provenance(name: str, *, required: bool) -> list[PayloadField]:
    return [
        _field(name, "object", required=required),
        _field(f"{name}.agentOwningPluginVersion", "text"),
        _field(f"{name}.skillOwningPluginVersion", "text"),
        _field(f"{name}.toolVersion", "text", required=False),
    ]


_AUDIT_KINDS: Final = tuple(
    sorted(v.AUDIT_KINDS, key=lambda k: (k == "coverage-gap", k))
)  # coverage-gap last: it is compatible with every class

AUDIT_SCOPE: Final = (
    _field("unitId", "text"),
    _field("subject", "text"),
    _field("auditClass", v.AUDIT_CLASSES),
    _field("auditKind", _AUDIT_KINDS),
    _field("coverageRequirement", v.COVERAGE_REQUIREMENTS),
    _field("coverageStatus", v.COVERAGE_STATUSES),
    _field("priorContext", "object"),
    _field("priorContext.changedFilePartition", "text"),
    _field("priorContext.concernPartition", "text"),
    _field("priorContext.languagePartition", "text", required=False),
    *_producer("expectedProducer"),
    *_producer("recordedByRunDriver"),
    _field("parentUnitId", "text", required=False),
    *_provenance("producerProvenance", required=False),
)
AUDIT_FINDING: Final = (
    _field("unitId", "text"),
    _field("rule", "text"),
    _field("location", "text"),
    _field("message", "text"),
    _field("severity", v.FINDING_SEVERITIES),
    *_producer("producerIdentity"),
    *_provenance("producerProvenance", required=True),
    _field("evidence", "object"),
    _field("evidence.observed", "text"),
    _field("evidence.expected", "text"),
)
_ANCHOR: Final = (
    _field("line", "positive", required=False),
    _field("position", "positive", required=False),
    _field("providerIdentity", "text", required=False),
    _field("url", "text", required=False),
)
REVIEW_SCOPE: Final = (
    _field("path", "text"),
    _field("commit", "text"),
    _field("side", ("LEFT", "RIGHT")),
    _field("coverageState", ("clean", "finding")),
    *_ANCHOR,
)
REVIEW_FINDING: Final = (
    _field("path", "text"),
    _field("originalCommit", "text"),
    _field("diffHunk", "text"),
    _field("body", "text"),
    _field("side", ("LEFT", "RIGHT")),
    _field("finding", "object"),
    _field("finding.disposition", ("BLOCKING", "DEBT")),
    _field("finding.summary", "text"),
    *_ANCHOR,
)
REVIEW_TERMINAL_METADATA: Final = (
    _field("actor", "text"),
    _field("body", "string"),
    _field("submittedAt", "text"),
    _field("commit", "text"),
    _field("state", ("approved", "changes_requested", "commented")),
    _field("providerIdentity", "text", required=False),
    _field("url", "text", required=False),
)
TEST_SCOPE: Final = (_field("moduleId", "text"),)
TEST_FINDING: Final = (
    _field("moduleId", "text"),
    _field("testName", "text"),
    _field("errors", "strings"),
)

#: ``(verification type, evidence kind)`` -> the payload's fields.
TABLES: Final[Mapping[tuple[str, str], tuple[PayloadField, ...]]] = {
    ("audit", "scope"): AUDIT_SCOPE,
    ("audit", "finding"): AUDIT_FINDING,
    ("review", "scope"): REVIEW_SCOPE,
    ("review", "finding"): REVIEW_FINDING,
    ("review", "terminal-metadata"): REVIEW_TERMINAL_METADATA,
    ("test", "scope"): TEST_SCOPE,
    ("test", "finding"): TEST_FINDING,
}

#: The rules beyond single fields, per ``(type, kind)`` (enforced by the validators).
RULES: Final[Mapping[tuple[str, str], tuple[str, ...]]] = {
    ("audit", "scope"): (
        "auditKind is compatible with auditClass: "
        + "; ".join(f"{c}: {', '.join(sorted(k))}" for c, k in v.AUDIT_KINDS_BY_CLASS.items())
        + "; coverage-gap with any class",
        v.REQ_GAP_IS_UNCOVERED,
        v.REQ_GAP_HAS_NO_PROVENANCE,
        v.REQ_PARENT_IS_NOT_SELF,
        v.REQ_FIRST_UNIT_IS_ROOT,
        v.REQ_PARENT_IS_RECORDED,
        v.REQ_FILE_ROOT_MATCHES_SCOPE,
        v.REQ_FILE_RUN_HAS_ONE_ROOT,
    ),
    ("audit", "finding"): (v.REQ_FINDING_UNIT_IS_RECORDED, v.REQ_FINDING_RECORDED_ONCE),
    ("review", "finding"): (v.REQ_REVIEW_FINDING_ANCHOR,),
}

_MISSING: Final = object()


def _lookup(payload: Any, name: str) -> Any:
    value = payload
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _shown(value: Any) -> str:
    """What was given, by its JSON type only: a rejection never echoes a payload's values."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    return "a list" if isinstance(value, list) else "an object"


def problems(verification_type: str, kind: str, payload: Any) -> list[str]:
    """Every field problem of ``payload`` at once: ``<field>: <what is wrong>; accepted: ...``.

    A field under an absent optional object, or under an object already reported, is not
    reported again. An unknown ``(type, kind)`` has no table: no problems.
    """
    table = TABLES.get((verification_type, kind))
    if table is None:
        return []
    if not isinstance(payload, dict):
        return [f"the payload: {_shown(payload)}, not an object; accepted: an object"]
    found: list[str] = []
    skipped: list[str] = []
    for entry in table:
        if any(entry.name.startswith(f"{parent}.") for parent in skipped):
            continue
        value = _lookup(payload, entry.name)
        if value is _MISSING:
            if entry.required:
                found.append(f"{entry.name}: missing; accepted: {entry.accepted}")
            skipped.append(entry.name)
        elif not entry.check(value):
            given = _shown(value)
            found.append(f"{entry.name}: {given}, not accepted; accepted: {entry.accepted}")
            skipped.append(entry.name)
    return found


def describe(verification_type: str, kind: str) -> list[str]:
    """The help lines of one payload: every field with what is accepted, then its rules."""
    lines = []
    for entry in TABLES[(verification_type, kind)]:
        optional = "" if entry.required else " (optional)"
        lines.append(f"{entry.name}{optional}: {entry.accepted}")
    lines += [f"rule: {rule}" for rule in RULES.get((verification_type, kind), ())]
    return lines
