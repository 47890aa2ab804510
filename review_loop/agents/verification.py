"""The verification-run vocabulary: selectors, payload validators, the run fold, terminal rules.

Pure: no I/O, no clock, no async runtime. The journal (``review_loop.orchestrator.journal``)
calls these functions under its lock, so every decision is taken against the authoritative
history, and the CLI renders what they refuse.

The contract is ``spx verification run`` (outcomeeng/spx, ``src/domains/verify/verify.ts``):
the same event types, the same payload rules and the same rejection wording, so a skill
written against ``spx`` works unchanged. As in spx, the idempotency key is the client's
own choice (any non-empty string, scoped per evidence kind), a finding ``rule`` may hold any
character, and unknown payload fields — retired alias names such as ``id`` or
``subjectPaths`` included — are ignored and dropped (``docs/compatibility.md``).

Rejection reasons name field paths and requirements this module authored; they never echo
a payload's own values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

from review_loop.agents.errors import FormatError, ReviewLoopError


def _sha256_factory() -> Callable[[bytes], Any]:
    # The built-in ``_sha256`` avoids loading OpenSSL through ``hashlib`` (~3 ms per
    # command); every CLI call hashes the branch name.
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha256
    return sha256  # type: ignore[no-any-return,unused-ignore]


_SHA256: Final = _sha256_factory()


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return str(_SHA256(data).hexdigest())


# --- vocabularies ---------------------------------------------------------------------------

VERIFICATION_TYPES: Final = ("audit", "review", "test")
SCOPE_TYPES: Final = ("changeset", "file")
TERMINAL_STATUSES: Final = ("approved", "rejected", "failed", "interrupted", "passed")
REVIEW_TERMINAL_STATUSES: Final = frozenset({"approved", "rejected"})
TEST_TERMINAL_STATUSES: Final = frozenset({"passed", "failed", "interrupted"})
#: The terminal statuses ``finish`` accepts, per verification type (an audit's is the one
#: its evidence derives: ``approved`` or ``rejected``).
TERMINAL_BY_TYPE: Final[Mapping[str, tuple[str, ...]]] = {
    "audit": ("approved", "rejected"),
    "review": ("approved", "rejected"),
    "test": ("passed", "failed", "interrupted"),
}

EVENT_SOURCE: Final = "/spx/verify"
RUN_CONTEXT_EVENT: Final = "sh.spx.verify.run-context"
SCOPE_EVENT: Final = "sh.spx.verify.scope"
FINDING_EVENT: Final = "sh.spx.verify.finding"
TERMINAL_EVENT: Final = "sh.spx.verify.terminal"
RUN_CONTEXT_ID_PREFIX: Final = "verify-run-context-"
TERMINAL_ID_PREFIX: Final = "verify-terminal-"
DRIVE_MODE_CALLER: Final = "caller"
DRIVE_MODE_SPX: Final = "spx"

SCOPE_SEPARATOR: Final = ".."
INPUT_STDIN: Final = "stdin"

#: ``YYYY-MM-DD_HH-MM-SS-mmm-<12 hex>`` in UTC, as spx mints them.
RUN_TOKEN_PATTERN: Final = re.compile(r"^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-\d{3}-[a-f0-9]{12}$")
_SAFE_SEGMENT: Final = re.compile(r"^[A-Za-z0-9_-]+$")

AUDIT_CLASSES: Final = ("implementation", "instructions", "spec")
AUDIT_KINDS_BY_CLASS: Final[Mapping[str, frozenset[str]]] = {
    "implementation": frozenset({"code", "tests", "architecture", "eval-evidence"}),
    "instructions": frozenset({"skill", "subagent", "prompt", "guide-template"}),
    "spec": frozenset({"spec", "adr", "pdr"}),
}
AUDIT_KINDS: Final = frozenset({"coverage-gap"}).union(*AUDIT_KINDS_BY_CLASS.values())
COVERAGE_REQUIREMENTS: Final = ("required", "optional")
COVERAGE_STATUSES: Final = (
    "audited",
    "incomplete",
    "missing-skill",
    "not-applicable",
    "skipped",
    "unsupported",
)
#: The statuses a required unit may end in (the skill's ``<coverage_model>``).
FINAL_COVERAGE_STATUSES: Final = frozenset(
    {"audited", "not-applicable", "missing-skill", "unsupported"}
)
#: A required unit carrying one of these rejects the run.
UNCOVERED_STATUSES: Final = frozenset({"unsupported", "missing-skill", "skipped", "incomplete"})
FINDING_SEVERITIES: Final = ("blocking", "debt")
PRODUCER_FIELDS: Final = (
    "producerKind",
    "agentName",
    "agentOwningPluginName",
    "skillName",
    "skillOwningPluginName",
    "invocationRole",
)
UNSEALED_NEXT_ACTIONS: Final = ("scope add", "finding add", "finish")

# --- requirement texts (spx ``EVIDENCE_REQUIREMENT`` / ``TERMINAL_REQUIREMENT``) -------------

REQ_PAYLOAD_IS_OBJECT: Final = "the payload is a JSON object"
REQ_REVIEW_FINDING_ANCHOR: Final = "a review finding anchors to a line or to a position"
REQ_KIND_MATCHES_CLASS: Final = "the audit kind is compatible with the audit class"
REQ_GAP_IS_UNCOVERED: Final = "a coverage-gap unit carries an uncovered coverage status"
REQ_GAP_HAS_NO_PROVENANCE: Final = "a coverage-gap unit records no producer provenance"
REQ_PARENT_IS_NOT_SELF: Final = "a unit's parent unit differs from the unit itself"
REQ_FIRST_UNIT_IS_ROOT: Final = "the run's first unit records no parent unit"
REQ_FILE_ROOT_MATCHES_SCOPE: Final = (
    "a file-scoped run opens with a required root unit whose subject is the run's file selector"
)
REQ_FILE_RUN_HAS_ONE_ROOT: Final = "a file-scoped run records no second root unit"
REQ_PARENT_IS_RECORDED: Final = "a child unit names a parent unit already recorded in the run"
REQ_FINDING_UNIT_IS_RECORDED: Final = (
    "a finding names a unit already recorded as scope evidence in the run"
)
# review-loop's own (beyond spx): the key is the client's choice, so the same finding
# under a second key would be counted twice; its identity may be recorded once. (A scope
# unit recorded twice counts once, as in spx: its unitId is a set member.)
REQ_FINDING_RECORDED_ONCE: Final = (
    "a finding's unitId and rule are not already recorded in the run (one finding per unit "
    "and rule: add a further location to its message instead)"
)

TERM_IN_TYPE_VOCABULARY: Final = "the terminal status is one the verification type seals with"
TERM_MATCHES_EVIDENCE: Final = (
    "the terminal status matches the status the run's recorded evidence requires"
)
TERM_METADATA_MATCHES_EVIDENCE: Final = (
    "the terminal metadata agrees with the run's recorded evidence"
)
TERM_NO_METADATA: Final = "the verification type seals with no terminal metadata"
TERM_PASSED_NO_FINDINGS: Final = "a run sealing as passed recorded no findings"

APPEND_RETRY_NOTE: Final = (
    "the run is unchanged; fix the payload and retry with the same idempotency key"
)
FINISH_RETRY_NOTE: Final = (
    "the run is unchanged and unsealed; fix the terminal completion and retry"
)


# --- rejections -----------------------------------------------------------------------------


class PayloadRejectedError(ReviewLoopError):
    """A payload (or terminal completion) failed validation; ``reason`` says which rule."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        #: every field problem of the payload at once (``agents.run_payloads.problems``),
        #: filled in by the journal when it renders the refusal.
        self.problems: list[str] = []
        super().__init__(reason)


class TerminalRejectedError(PayloadRejectedError):
    """``finish`` refused: ``conflict`` is True when the status contradicts the evidence.

    ``requirement`` is a terminal requirement (the reason says "terminal completion does
    not satisfy: ..."); with ``field=True`` it is a field rejection of the metadata,
    printed as is, as spx prints it.
    """

    def __init__(self, requirement: str, *, conflict: bool, field: bool = False) -> None:
        self.conflict = conflict
        super().__init__(
            requirement if field else f"terminal completion does not satisfy: {requirement}"
        )


class ScopeSelectorError(FormatError):
    """A ``--scope-type``/``--scope`` pair that names no run scope."""


def field_rejection(*path: str) -> PayloadRejectedError:
    """``payload field "a.b" is missing or malformed``."""
    return PayloadRejectedError(f'payload field "{".".join(path)}" is missing or malformed')


def requirement_rejection(requirement: str) -> PayloadRejectedError:
    """``payload does not satisfy: <requirement>``."""
    return PayloadRejectedError(f"payload does not satisfy: {requirement}")


def render_rejection(
    headline: str, verification_type: str, evidence_kind: str, reason: str, note: str
) -> str:
    """The labelled block spx prints on stderr for a refused payload."""
    width = max(len("verification type"), len("evidence kind"), len("reason"))
    safe_type = json.dumps(verification_type)[1:-1]  # caller text: escape control characters

    def line(label: str, value: str) -> str:
        return f"  {label.ljust(width)}  {value}"

    return "\n".join(
        [
            headline,
            "",
            line("verification type", safe_type),
            line("evidence kind", evidence_kind),
            line("reason", reason),
            "",
            f"  {note}",
        ]
    )


# --- canonical JSON, digests, tokens, selectors ---------------------------------------------


def canonical_json(value: Any) -> str:
    """Keys sorted, no whitespace: the form spx digests (``JSON.stringify`` of sorted keys)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_run_input(source: str, content: str) -> str:
    """``sha256(canonical_json({"content": content, "source": source}))``."""
    text = canonical_json({"content": content, "source": source})
    return sha256_hex(text.encode("utf-8"))


def is_run_token(token: str) -> bool:
    """Whether ``token`` has the run-token shape spx mints."""
    return bool(RUN_TOKEN_PATTERN.match(token))


UNSAFE_TOKEN: Final = "state-store token must be a safe path segment"


def is_safe_segment(token: str) -> bool:
    """Whether ``token`` can name a file without escaping its directory."""
    return bool(_SAFE_SEGMENT.match(token))


def branch_slug(identity: str, max_bytes: int = 120) -> str:
    """Lowercase, runs outside ``[a-z0-9]`` become ``-``, then ``-<sha256[:8]>``; ≤ 120 bytes."""
    digest = sha256_hex(identity.encode("utf-8"))[:8]
    prefix = re.sub(r"[^a-z0-9]+", "-", identity.lower()).strip("-")
    available = max_bytes - len(digest) - 1
    if not prefix or available <= 0:
        return digest[: max(0, max_bytes)]
    prefix = prefix[:available].rstrip("-")
    return f"{prefix}-{digest}" if prefix else digest


def parse_changeset_scope(scope: str) -> tuple[str, str]:
    """Split ``<base>..<head>``: exactly one ``..``, both sides non-empty (``a...b`` is refused).

    Raises:
        ScopeSelectorError: the scope is not ``<base>..<head>``.
    """
    index = scope.find(SCOPE_SEPARATOR)
    if index < 0 or scope.find(SCOPE_SEPARATOR, index + 1) >= 0:
        raise ScopeSelectorError("verify changeset scope must be <base>..<head>")
    base, head = scope[:index], scope[index + len(SCOPE_SEPARATOR) :]
    if not base or not head:
        raise ScopeSelectorError("verify changeset scope must be <base>..<head>")
    return base, head


def normalize_file_scope(path: str) -> str:
    """A safe, product-relative file path, normalized as spx normalizes it (``.`` and empty
    segments dropped, a trailing separator kept); refuses absolute paths and ``..``.

    Raises:
        ScopeSelectorError: the path is empty, absolute, or climbs out of the product.
    """
    bad = ScopeSelectorError("verify file scope must be a safe product-relative path")
    if not path.strip() or path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path):
        raise bad
    segments = path.replace("\\", "/").split("/")
    if ".." in segments:
        raise bad
    kept = [segment for segment in segments if segment not in ("", ".")]
    # As spx (Node's win32.normalize): one trailing separator is kept, so ``src/a.py/`` is
    # its own scope, written back as given; ``./`` is ``./`` while ``.`` is refused.
    trailing = "/" if segments[-1] == "" else ""
    if not kept:
        if trailing:
            return "./"
        raise bad
    return "/".join(kept) + trailing


def canonical_selector(scope_type: str, scope: str) -> tuple[str, str]:
    """``(scope_type, scope_identity)`` in the form a run records.

    Raises:
        ScopeSelectorError: unknown scope type or a malformed scope.
    """
    if scope_type == "changeset":
        base, head = parse_changeset_scope(scope)
        return scope_type, f"{base}{SCOPE_SEPARATOR}{head}"
    if scope_type == "file":
        return scope_type, normalize_file_scope(scope)
    raise ScopeSelectorError(
        "verify scope type has no verification-context substrate representation"
    )


# --- field readers --------------------------------------------------------------------------


def _record(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _object(value: Any, field: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else the rejection naming ``field``."""
    record = _record(value)
    if record is None:
        raise field_rejection(field)
    return record


def _payload_object(payload: Any) -> dict[str, Any]:
    """The payload when it is a JSON object, else the rejection of that requirement."""
    record = _record(payload)
    if record is None:
        raise requirement_rejection(REQ_PAYLOAD_IS_OBJECT)
    return record


def _required_string(record: Mapping[str, Any], field: str, *path: str) -> str:
    value = record.get(field)
    if isinstance(value, str) and value:
        return value
    raise field_rejection(*path, field)


_ABSENT: Final = object()


def _optional_string(record: Mapping[str, Any], field: str, *path: str) -> str | None:
    value = record.get(field, _ABSENT)
    if value is _ABSENT:
        return None
    if isinstance(value, str) and value:
        return value
    raise field_rejection(*path, field)


def _optional_positive_int(record: Mapping[str, Any], field: str) -> int | None:
    value = record.get(field, _ABSENT)
    if value is _ABSENT:
        return None
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and float(value).is_integer()
        and value > 0
    ):
        return int(value)
    raise field_rejection(field)


def _producer(value: Any, field: str) -> dict[str, str]:
    record = _object(value, field)
    return {name: _required_string(record, name, field) for name in PRODUCER_FIELDS}


def _provenance(value: Any, field: str) -> dict[str, str]:
    record = _object(value, field)
    result = {
        "agentOwningPluginVersion": _required_string(record, "agentOwningPluginVersion", field),
        "skillOwningPluginVersion": _required_string(record, "skillOwningPluginVersion", field),
    }
    tool_version = _optional_string(record, "toolVersion", field)
    if tool_version is not None:
        result["toolVersion"] = tool_version
    return result


# --- audit payloads -------------------------------------------------------------------------


def validate_audit_scope(payload: Any) -> dict[str, Any]:
    """Validate one audit scope unit; returns the normalized unit (unknown fields dropped).

    Raises:
        PayloadRejectedError: names the first field or requirement that failed.
    """
    record = _payload_object(payload)
    unit_id = _required_string(record, "unitId")
    subject = _required_string(record, "subject")
    audit_class = record.get("auditClass")
    if audit_class not in AUDIT_CLASSES:
        raise field_rejection("auditClass")
    audit_kind = record.get("auditKind")
    if audit_kind not in AUDIT_KINDS:
        raise field_rejection("auditKind")
    if audit_kind != "coverage-gap" and audit_kind not in AUDIT_KINDS_BY_CLASS[audit_class]:
        raise requirement_rejection(REQ_KIND_MATCHES_CLASS)
    requirement = record.get("coverageRequirement")
    if requirement not in COVERAGE_REQUIREMENTS:
        raise field_rejection("coverageRequirement")
    status = record.get("coverageStatus")
    if status not in COVERAGE_STATUSES:
        raise field_rejection("coverageStatus")
    if audit_kind == "coverage-gap" and status in ("audited", "not-applicable"):
        raise requirement_rejection(REQ_GAP_IS_UNCOVERED)
    prior = _object(record.get("priorContext"), "priorContext")
    prior_context = {
        "changedFilePartition": _required_string(prior, "changedFilePartition", "priorContext"),
        "concernPartition": _required_string(prior, "concernPartition", "priorContext"),
    }
    language = _optional_string(prior, "languagePartition", "priorContext")
    if language is not None:
        prior_context["languagePartition"] = language
    expected = _producer(record.get("expectedProducer"), "expectedProducer")
    recorder = _producer(record.get("recordedByRunDriver"), "recordedByRunDriver")
    parent = _optional_string(record, "parentUnitId")
    provenance_value = record.get("producerProvenance", _ABSENT)
    if provenance_value is not _ABSENT and _record(provenance_value) is None:
        raise field_rejection("producerProvenance")
    provenance = (
        None if provenance_value is _ABSENT else _provenance(provenance_value, "producerProvenance")
    )
    if parent is not None and parent == unit_id:
        raise requirement_rejection(REQ_PARENT_IS_NOT_SELF)
    if audit_kind == "coverage-gap" and provenance is not None:
        raise requirement_rejection(REQ_GAP_HAS_NO_PROVENANCE)
    unit: dict[str, Any] = {
        "unitId": unit_id,
        "auditClass": audit_class,
        "auditKind": audit_kind,
        "subject": subject,
        "coverageRequirement": requirement,
        "coverageStatus": status,
        "priorContext": prior_context,
        "expectedProducer": expected,
        "recordedByRunDriver": recorder,
    }
    if parent is not None:
        unit["parentUnitId"] = parent
    if provenance is not None:
        unit["producerProvenance"] = provenance
    return unit


def validate_audit_finding(payload: Any) -> dict[str, Any]:
    """Validate one audit finding; returns the normalized finding.

    Raises:
        PayloadRejectedError: names the first field or requirement that failed.
    """
    record = _payload_object(payload)
    unit_id = _required_string(record, "unitId")
    rule = _required_string(record, "rule")
    location = _required_string(record, "location")
    message = _required_string(record, "message")
    severity = record.get("severity")
    if severity not in FINDING_SEVERITIES:
        raise field_rejection("severity")
    producer = _producer(record.get("producerIdentity"), "producerIdentity")
    provenance = _provenance(record.get("producerProvenance"), "producerProvenance")
    evidence = _object(record.get("evidence"), "evidence")
    observed = _required_string(evidence, "observed", "evidence")
    expected = _required_string(evidence, "expected", "evidence")
    return {
        "unitId": unit_id,
        "producerIdentity": producer,
        "producerProvenance": provenance,
        "rule": rule,
        "severity": severity,
        "location": location,
        "message": message,
        "evidence": {"observed": observed, "expected": expected},
    }


# --- review and test payloads ---------------------------------------------------------------


def _review_anchor(record: Mapping[str, Any], result: dict[str, Any]) -> None:
    line = _optional_positive_int(record, "line")
    position = _optional_positive_int(record, "position")
    provider = _optional_string(record, "providerIdentity")
    url = _optional_string(record, "url")
    if provider is not None:
        result["providerIdentity"] = provider
    if line is not None:
        result["line"] = line
    if position is not None:
        result["position"] = position
    if url is not None:
        result["url"] = url


def validate_review_scope(payload: Any) -> dict[str, Any]:
    """Validate a review scope unit (an anchored path with a coverage state)."""
    record = _payload_object(payload)
    path = _required_string(record, "path")
    commit = _required_string(record, "commit")
    side = record.get("side")
    if side not in ("LEFT", "RIGHT"):
        raise field_rejection("side")
    state = record.get("coverageState")
    if state not in ("clean", "finding"):
        raise field_rejection("coverageState")
    result: dict[str, Any] = {"path": path, "side": side, "commit": commit, "coverageState": state}
    _review_anchor(record, result)
    return result


def validate_review_finding(payload: Any) -> dict[str, Any]:
    """Validate a review finding: an anchored review comment plus its disposition."""
    record = _payload_object(payload)
    required = {
        name: _required_string(record, name)
        for name in ("path", "originalCommit", "diffHunk", "body")
    }
    side = record.get("side")
    if side not in ("LEFT", "RIGHT"):
        raise field_rejection("side")
    finding = _object(record.get("finding"), "finding")
    if finding.get("disposition") not in ("BLOCKING", "DEBT"):
        raise field_rejection("finding", "disposition")
    summary = _required_string(finding, "summary", "finding")
    anchor: dict[str, Any] = {}
    _review_anchor(record, anchor)
    if "line" not in anchor and "position" not in anchor:
        raise requirement_rejection(REQ_REVIEW_FINDING_ANCHOR)
    return {
        "path": required["path"],
        "side": side,
        "originalCommit": required["originalCommit"],
        "diffHunk": required["diffHunk"],
        "body": required["body"],
        "finding": {"disposition": finding["disposition"], "summary": summary},
        **anchor,
    }


def validate_review_terminal_metadata(payload: Any) -> dict[str, Any]:
    """Validate review terminal metadata (the submitted review)."""
    record = _payload_object(payload)
    actor = _required_string(record, "actor")
    body = record.get("body")
    if not isinstance(body, str):
        raise field_rejection("body")
    submitted_at = _required_string(record, "submittedAt")
    commit = _required_string(record, "commit")
    state = record.get("state")
    if state not in ("approved", "changes_requested", "commented"):
        raise field_rejection("state")
    result: dict[str, Any] = {
        "actor": actor,
        "state": state,
        "body": body,
        "submittedAt": submitted_at,
        "commit": commit,
    }
    provider = _optional_string(record, "providerIdentity")
    url = _optional_string(record, "url")
    if provider is not None:
        result["providerIdentity"] = provider
    if url is not None:
        result["url"] = url
    return result


def validate_test_scope(payload: Any) -> dict[str, Any]:
    """Validate a test scope unit: one inspected test module."""
    record = _payload_object(payload)
    return {"moduleId": _required_string(record, "moduleId")}


def validate_test_finding(payload: Any) -> dict[str, Any]:
    """Validate a test finding: one failing test case with its error messages."""
    record = _payload_object(payload)
    module_id = _required_string(record, "moduleId")
    test_name = _required_string(record, "testName")
    errors = record.get("errors")
    if not isinstance(errors, list) or not all(isinstance(item, str) for item in errors):
        raise field_rejection("errors")
    return {"moduleId": module_id, "testName": test_name, "errors": list(errors)}


# --- the run fold ---------------------------------------------------------------------------
#
# A JSON-serializable summary of a run's history, updated one event at a time. The journal
# keeps it beside the log (so one command costs the same after 5,000 events as after 5) and
# every run-level rule below reads it instead of re-reading the history.

FOLD_ID: Final = "verification-run/2"


def new_view() -> dict[str, Any]:
    """The fold of an empty history."""
    return {
        "driveMode": DRIVE_MODE_CALLER,
        "units": {},  # unitId -> 1, every recorded audit scope unit
        "anyParent": False,
        "scopeCount": 0,  # recorded audit scope units
        "requiredUncovered": 0,
        "requiredRoots": [],  # subjects of required root units (file-scope rule)
        "reviewFindingScopes": 0,
        "findingCount": 0,
        "findings": {},  # "<unitId>:<rule>" -> 1, every recorded audit finding
        "terminal": None,  # {"terminalStatus": ..., "terminalMetadata"?: ...}
    }


def fold_event(view: dict[str, Any], event: Mapping[str, Any]) -> None:
    """Update ``view`` with one event (in place)."""
    kind = event.get("type")
    data = event.get("data")
    if not isinstance(data, dict):
        return
    if kind == SCOPE_EVENT:
        payload = data.get("payload")
        try:
            unit = validate_audit_scope(payload)
        except PayloadRejectedError:
            unit = None
        if unit is not None:
            view["units"][unit["unitId"]] = 1
            view["scopeCount"] += 1
            if "parentUnitId" in unit:
                view["anyParent"] = True
            elif unit["coverageRequirement"] == "required":
                view["requiredRoots"].append(unit["subject"])
            if audit_unit_rejects_run(unit):
                view["requiredUncovered"] += 1
        elif isinstance(payload, dict) and payload.get("coverageState") == "finding":
            view["reviewFindingScopes"] += 1
    elif kind == FINDING_EVENT:
        view["findingCount"] += 1
        try:
            finding = validate_audit_finding(data.get("payload"))
        except PayloadRejectedError:
            finding = None
        if finding is not None:
            view["findings"][f"{finding['unitId']}:{finding['rule']}"] = 1
    elif kind == RUN_CONTEXT_EVENT:
        mode = data.get("driveMode")
        if mode in (DRIVE_MODE_CALLER, DRIVE_MODE_SPX):
            view["driveMode"] = mode
    elif kind == TERMINAL_EVENT and view["terminal"] is None:
        terminal: dict[str, Any] = {}
        if isinstance(data.get("terminalStatus"), str):
            terminal["terminalStatus"] = data["terminalStatus"]
        if "terminalMetadata" in data:
            terminal["terminalMetadata"] = data["terminalMetadata"]
        view["terminal"] = terminal


def audit_unit_rejects_run(unit: Mapping[str, Any]) -> bool:
    """A required unit that is a coverage gap or carries an uncovered status."""
    return unit.get("coverageRequirement") == "required" and (
        unit.get("auditKind") == "coverage-gap" or unit.get("coverageStatus") in UNCOVERED_STATUSES
    )


def next_actions(view: Mapping[str, Any]) -> list[str]:
    """The lifecycle actions the run still admits."""
    if view["terminal"] is not None:
        return []
    if view["driveMode"] == DRIVE_MODE_CALLER:
        return list(UNSEALED_NEXT_ACTIONS)
    return ["finish"]


# --- run-level rules ------------------------------------------------------------------------


class Selector(NamedTuple):
    """A run's recorded scope: ``scope_type`` and its canonical ``scope_identity``."""

    scope_type: str
    scope_identity: str


def validate_scope_for_run(
    verification_type: str,
    payload: Any,
    view: Mapping[str, Any],
    selector: Selector,
    idempotency_key: str,
) -> dict[str, Any]:
    """Validate a scope payload against the run's recorded evidence; returns what to record.

    ``idempotency_key`` is the client's own choice: as in spx, no rule ties it to the unit.

    Raises:
        PayloadRejectedError: the payload or its place in the run is refused.
    """
    if verification_type == "review":
        return validate_review_scope(payload)
    if verification_type == "test":
        return validate_test_scope(payload)
    unit = validate_audit_scope(payload)
    has_parent = "parentUnitId" in unit
    if view["scopeCount"] == 0:
        if has_parent:
            raise requirement_rejection(REQ_FIRST_UNIT_IS_ROOT)
        if selector.scope_type == "file" and not (
            unit["coverageRequirement"] == "required" and unit["subject"] == selector.scope_identity
        ):
            raise requirement_rejection(REQ_FILE_ROOT_MATCHES_SCOPE)
    elif not has_parent:
        if selector.scope_type == "file":
            raise requirement_rejection(REQ_FILE_RUN_HAS_ONE_ROOT)
        if view["anyParent"]:
            raise requirement_rejection(REQ_PARENT_IS_RECORDED)
    elif unit["parentUnitId"] not in view["units"]:
        raise requirement_rejection(REQ_PARENT_IS_RECORDED)
    return unit


def validate_finding_for_run(
    verification_type: str,
    payload: Any,
    view: Mapping[str, Any],
    idempotency_key: str,
) -> dict[str, Any]:
    """Validate a finding payload against the run's recorded evidence; returns what to record.

    ``idempotency_key`` is the client's own choice: as in spx, no rule ties it to the finding;
    its ``<unitId>:<rule>`` may be recorded once (a second key cannot record it twice).

    Raises:
        PayloadRejectedError: the payload or its place in the run is refused.
    """
    if verification_type == "review":
        return validate_review_finding(payload)
    if verification_type == "test":
        return validate_test_finding(payload)
    finding = validate_audit_finding(payload)
    if finding["unitId"] not in view["units"]:
        raise requirement_rejection(REQ_FINDING_UNIT_IS_RECORDED)
    if f"{finding['unitId']}:{finding['rule']}" in view.get("findings", {}):
        raise requirement_rejection(REQ_FINDING_RECORDED_ONCE)
    return finding


def expected_audit_status(view: Mapping[str, Any], selector: Selector) -> str:
    """``rejected`` on any finding, no unit, an uncovered required unit, or a bad file root."""
    file_root_ok = selector.scope_type != "file" or (
        len(view["requiredRoots"]) == 1 and view["requiredRoots"][0] == selector.scope_identity
    )
    if (
        view["findingCount"] > 0
        or view["scopeCount"] == 0
        or view["requiredUncovered"] > 0
        or not file_root_ok
    ):
        return "rejected"
    return "approved"


def check_terminal(
    verification_type: str,
    terminal_status: str,
    metadata: Any,
    view: Mapping[str, Any],
    selector: Selector,
    *,
    has_metadata: bool,
) -> Any:
    """Check a terminal completion against the evidence; returns the metadata to record.

    Raises:
        TerminalRejectedError: the status or metadata contradicts the run's evidence.
    """
    if verification_type == "audit":
        if has_metadata:
            raise TerminalRejectedError(TERM_NO_METADATA, conflict=False)
        if terminal_status != expected_audit_status(view, selector):
            raise TerminalRejectedError(TERM_MATCHES_EVIDENCE, conflict=True)
        return None
    if verification_type == "test":
        if has_metadata:
            raise TerminalRejectedError(TERM_NO_METADATA, conflict=False)
        if terminal_status not in TEST_TERMINAL_STATUSES:
            raise TerminalRejectedError(TERM_IN_TYPE_VOCABULARY, conflict=True)
        if terminal_status == "passed" and view["findingCount"] > 0:
            raise TerminalRejectedError(TERM_PASSED_NO_FINDINGS, conflict=True)
        return None
    validated = None
    if has_metadata:
        try:
            validated = validate_review_terminal_metadata(metadata)
        except PayloadRejectedError as rejection:
            reason = rejection.reason
            requirement = reason.removeprefix("payload does not satisfy: ")
            raise TerminalRejectedError(
                requirement, conflict=False, field=requirement == reason
            ) from None
    if terminal_status not in REVIEW_TERMINAL_STATUSES:
        raise TerminalRejectedError(TERM_IN_TYPE_VOCABULARY, conflict=True)
    evidence = "rejected" if view["findingCount"] > 0 or view["reviewFindingScopes"] > 0 else None
    state = validated["state"] if validated else None
    from_metadata = {"approved": "approved", "changes_requested": "rejected"}.get(state or "")
    if evidence and from_metadata and evidence != from_metadata:
        raise TerminalRejectedError(TERM_METADATA_MATCHES_EVIDENCE, conflict=True)
    expected = evidence or from_metadata
    if expected and terminal_status != expected:
        raise TerminalRejectedError(TERM_MATCHES_EVIDENCE, conflict=True)
    return validated


def audit_scope_units(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every recorded scope payload that validates as an audit unit, in journal order."""
    units = []
    for event in events:
        data = event.get("data")
        if event.get("type") != SCOPE_EVENT or not isinstance(data, dict):
            continue
        try:
            units.append(validate_audit_scope(data.get("payload")))
        except PayloadRejectedError:
            continue
    return units
