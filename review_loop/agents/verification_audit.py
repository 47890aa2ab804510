"""The audit's contracts: concerns from the selection, their prompt and reply, the records.

Pure: everything here turns data into data. ``review_loop.orchestrator.workflows.audit``
does the I/O (git, the dispatcher, the journal) in the order the seed fixes
(``seeds/002_70e1c3857fb49bd6.txt``, audit-implementation).

- A *concern* is one selected audit skill (``<plugin>:<audit>``) of contract ``concern``;
  its role fixes its concern partition (``implementation`` → ``code``; ``tests`` and
  ``architecture`` keep their names) and its kind the language partition.
- A concern is *installed* when the concern configuration names an agent for it: the
  product that runs it and its prompt. Nothing here maps a file extension to a skill.
- Persistence order: kinds in the order they first appear in the selection, then concern
  order code, tests, architecture; each concern's complete rows before its findings; a
  missing skill at its concern's place; the accounting records of unclaimed paths last.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from review_loop.agents.errors import FormatError
from review_loop.agents.scope_rules import ROLE_CONCERNS

CONCERN_ORDER: Final = ("code", "tests", "architecture")
IMPLEMENTATION_KINDS: Final = frozenset({"code", "tests", "architecture", "eval-evidence"})
# review-loop's own identity as the run driver: used only when named (`audit --driver self`).
DEFAULT_DRIVER: Final[Mapping[str, str]] = {
    "producerKind": "tool",
    "agentName": "review-loop",
    "agentOwningPluginName": "review-loop",
    "skillName": "audit-implementation",
    "skillOwningPluginName": "review-loop",
    "invocationRole": "run-driver",
}
DRIVER_FIELDS: Final = tuple(DEFAULT_DRIVER)
HEX: Final = frozenset("0123456789abcdef")
REPLY_STATUSES: Final = ("completed", "not_applicable", "failed")

BUILTIN_PROMPT: Final = """You are a read-only concern auditor. Audit the changeset below for your \
concern only, against the standards your concern names, and report what you inspected.

Rules:
- Read every subject body completely from the head commit (git show '<head>:<path>'); \
never judge from a patch alone. Page through a long body in ranges until its end: a read \
that stops early is partial.
- For each path you list under "audited", give its read receipt under "read": the number \
of lines of the body you read and its last non-blank line, verbatim. The run driver checks \
each receipt against the body and asks again for a truncated or partial read.
- Claim only paths you inspected completely and that your concern applies to; list each \
exact path once under "audited". Return "not_applicable" when none applies.
- Report each violation as a finding with the exact path and line, a colon-free rule \
identifier, the severity (blocking or debt), and observed-versus-expected evidence that a \
reader can check.
- Never edit files. If an operation you need fails, return "failed" and name it."""

RESPONSE_CONTRACT: Final = """Answer with one JSON object and nothing else:
{"status": "completed" | "not_applicable" | "failed",
 "audited": ["<exact path from the changed paths>", ...],
 "notApplicable": ["<a path your selection names that you inspected and your concern does
                    not apply to>", ...],
 "unsupported": ["<a path your selection names that your concern cannot audit>", ...],
 "findings": [{"path": "<exact path>", "line": <line number in the head version>,
               "rule": "<colon-free rule id>", "severity": "blocking" | "debt",
               "message": "<one sentence>", "observed": "<what the code does>",
               "expected": "<what the standard requires>",
               "invalidatedByChange": <true when the change invalidates this text>}],
 "read": {"<each audited path>": {"lines": <how many lines the body you read has>,
                                  "lastLine": "<its last non-blank line, verbatim>"}},
 "failure": "<the failed operation or absent prerequisite, only when status is failed>"}"""


class ConcernConfigError(FormatError):
    """A concern configuration that does not have the configuration's shape."""


class ConcernReplyError(FormatError):
    """A concern's reply that is not the response contract."""


@dataclass(frozen=True)
class Concern:
    """One selected concern skill, and the paths whose selection names it."""

    kind: str
    role: str
    plugin: str
    audit: str
    paths: tuple[str, ...]

    @property
    def skill(self) -> str:
        """``<plugin>:<audit>``."""
        return f"{self.plugin}:{self.audit}"

    @property
    def concern(self) -> str:
        """The concern partition (``code``, ``tests``, ``architecture``, or the role)."""
        return ROLE_CONCERNS.get(self.role, self.role)

    @property
    def audit_kind(self) -> str:
        """The unit's ``auditKind``."""
        return self.concern if self.concern in IMPLEMENTATION_KINDS else "code"

    def unit_id(self, subject: str) -> str:
        """``implementation:<lang>:<concern>:<subject>`` (also the scope key)."""
        return f"implementation:{self.kind or 'unknown'}:{self.concern}:{subject}"

    def producer(self) -> dict[str, str]:
        """The concern skill's producer identity (its units' ``expectedProducer``)."""
        return {
            "producerKind": "skill",
            "agentName": self.skill,
            "agentOwningPluginName": self.plugin,
            "skillName": self.audit,
            "skillOwningPluginName": self.plugin,
            "invocationRole": "leaf-skill",
        }


@dataclass(frozen=True)
class ConcernAgent:
    """How a concern runs: the product (or peer alias), its prompt text, its version."""

    product: str
    prompt: str
    version: str = "unversioned"
    timeout_ms: int | None = None
    rules: tuple[str, ...] | None = None


def concerns_from_selection(selection: Sequence[Mapping[str, Any]]) -> list[Concern]:
    """The selected concern skills in persistence order (kind first appearance, then
    code/tests/architecture, then any other role in first-appearance order)."""
    kinds: list[str] = []
    found: dict[tuple[str, str, str, str], list[str]] = {}
    for entry in selection:
        path = entry.get("path")
        if not isinstance(path, str):
            continue
        for artifact in entry.get("artifacts") or []:
            if not isinstance(artifact, Mapping) or artifact.get("contract") != "concern":
                continue
            kind = str(artifact.get("kind") or "unknown")
            key = (kind, str(artifact["role"]), str(artifact["plugin"]), str(artifact["audit"]))
            if kind not in kinds:
                kinds.append(kind)
            paths = found.setdefault(key, [])
            if path not in paths:
                paths.append(path)
    arrival = list(found)

    def rank(key: tuple[str, str, str, str]) -> tuple[int, int, int]:
        concern = ROLE_CONCERNS.get(key[1], key[1])
        order = CONCERN_ORDER.index(concern) if concern in CONCERN_ORDER else len(CONCERN_ORDER)
        return kinds.index(key[0]), order, arrival.index(key)

    return [Concern(*key, paths=tuple(found[key])) for key in sorted(found, key=rank)]


def artifact_type_auditors(selection: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Path → ``<plugin>:<audit>`` of the first artifact-type auditor its selection names."""
    auditors: dict[str, str] = {}
    for entry in selection:
        path = entry.get("path")
        for artifact in entry.get("artifacts") or []:
            if (
                isinstance(path, str)
                and isinstance(artifact, Mapping)
                and artifact.get("contract") == "artifact-type"
                and path not in auditors
            ):
                auditors[path] = f"{artifact['plugin']}:{artifact['audit']}"
    return auditors


# --- configuration --------------------------------------------------------------------------


def check_concern_config(document: Any, source: str) -> dict[str, dict[str, Any]]:
    """Validate ``{"concerns": {"<plugin>:<audit>" | "*": {"product", "prompt"?, ...}}}``.

    ``prompt`` is ``"builtin"`` (default) or a file path, resolved by the caller.

    Raises:
        ConcernConfigError: names ``source`` and the field.
    """
    if not isinstance(document, dict) or not isinstance(document.get("concerns"), dict):
        raise ConcernConfigError(f"{source}: a concern configuration has a 'concerns' object")
    checked: dict[str, dict[str, Any]] = {}
    for name, entry in document["concerns"].items():
        where = f"{source}: concerns[{name!r}]"
        if name != "*" and (":" not in name or name.startswith(":") or name.endswith(":")):
            raise ConcernConfigError(f"{where}: a concern is named <plugin>:<audit> (or '*')")
        if not isinstance(entry, dict):
            raise ConcernConfigError(f"{where} must be an object")
        product = entry.get("product")
        if not isinstance(product, str) or not product:
            raise ConcernConfigError(f"{where}.product must name the product that runs it")
        prompt = entry.get("prompt", "builtin")
        if not isinstance(prompt, str) or not prompt:
            raise ConcernConfigError(f"{where}.prompt must be 'builtin' or a file path")
        version = entry.get("version", "unversioned")
        timeout = entry.get("timeoutMs")
        if not isinstance(version, str) or not version:
            raise ConcernConfigError(f"{where}.version must be a non-empty string")
        if timeout is not None and (
            not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0
        ):
            raise ConcernConfigError(f"{where}.timeoutMs must be a positive integer")
        rules = entry.get("rules")
        if rules is not None and not _rule_list(rules):
            raise ConcernConfigError(f"{where}.rules must be a list of colon-free rule ids")
        checked[name] = {
            "product": product,
            "prompt": prompt,
            "version": version,
            "timeoutMs": timeout,
            "rules": tuple(rules) if rules is not None else None,
        }
    return checked


def check_rule_catalog(document: Any, source: str) -> tuple[str, ...] | None:
    """The configuration's shared ``ruleCatalog`` (rule ids every concern may use), if any.

    Raises:
        ConcernConfigError: ``ruleCatalog`` is not a list of colon-free rule ids.
    """
    catalog = document.get("ruleCatalog") if isinstance(document, dict) else None
    if catalog is None:
        return None
    if not _rule_list(catalog):
        raise ConcernConfigError(f"{source}: ruleCatalog must be a list of colon-free rule ids")
    return tuple(catalog)


def _rule_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(r, str) and r and ":" not in r for r in value)


def allowed_rules(agent: ConcernAgent, catalog: Sequence[str] | None) -> frozenset[str] | None:
    """The rule ids a concern may report (the shared catalog and its own), or ``None``
    when neither is configured (then any colon-free rule id stands)."""
    if agent.rules is None and catalog is None:
        return None
    return frozenset((*(catalog or ()), *(agent.rules or ())))


# --- prompt and reply -----------------------------------------------------------------------


def concern_prompt(
    agent: ConcernAgent,
    concern: Concern,
    *,
    repository: str,
    base: str,
    head: str,
    changed_paths: Sequence[str],
    live_paths: Sequence[str] = (),
    governance: str = "",
) -> str:
    """The concern's instructions, then the whole changeset (never pre-filtered), the
    governing context (decisions, specs, ``spx/local/`` overlays), the rule ids it may use,
    then the response contract."""
    lines = [
        agent.prompt.rstrip(),
        "",
        "--- audit task ---",
        f"concern skill: {concern.skill}",
        f"concern: {concern.concern} (kind: {concern.kind}, role: {concern.role})",
        f"repository: {repository}",
        f"base: {base}",
        f"head: {head}",
        "changed paths (base...head, complete):",
        *[f"- {path}" for path in changed_paths],
    ]
    if live_paths:
        lines += [
            "live paths (advisory: modified or untracked in the working tree):",
            *[f"- {path}" for path in live_paths],
        ]
    lines += [
        "paths whose registry selection names this concern:",
        *[f"- {path}" for path in concern.paths],
    ]
    if governance:
        lines += ["", governance.rstrip()]
    if agent.rules is not None:
        lines += [
            "rule ids you may report (any other is withdrawn):",
            *[f"- {rule}" for rule in sorted(agent.rules)],
        ]
    lines += ["", RESPONSE_CONTRACT]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ReturnedFinding:
    """A finding as a concern returned it."""

    path: str
    line: int | None
    rule: str
    severity: str
    message: str
    observed: str
    expected: str
    invalidated: bool = False

    @property
    def location(self) -> str:
        """``path:line`` (or the path alone)."""
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True)
class ConcernResult:
    """A parsed reply: what the concern audited and found (or why it failed)."""

    status: str
    audited: tuple[str, ...] = ()
    not_applicable: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    findings: tuple[ReturnedFinding, ...] = ()
    failure: str | None = None
    withdrawn: tuple[str, ...] = field(default=())
    read: Mapping[str, ReadReceipt] = field(default_factory=dict)  # path -> its read receipt


@dataclass(frozen=True)
class ReadReceipt:
    """What only a complete read of a body knows: its line count and last non-blank line.

    The concern agents run with read-only tools (some have no shell), so they cannot be
    asked for a git blob id or a digest; a read cut short (a tool's line cap, a partial
    range) cannot know where the body ends. The run driver computes the same receipt from
    the true body (:func:`receipt_of`) and compares (seed 002 stage "Inspect": a truncated
    or partial read is re-issued).
    """

    lines: int
    last_line: str

    def describe(self) -> str:
        """``3 lines ending 'return x'`` (for the BLOCKED diagnostic)."""
        return f"{self.lines} lines ending {self.last_line[:80]!r}"


def receipt_of(body: bytes) -> ReadReceipt | None:
    """The receipt of a complete read of ``body``; ``None`` for a body that is not text
    (not UTF-8, or holding NUL), which no receipt is asked for.

    Lines are counted as an editor numbers them: a last line without a newline counts.
    """
    if b"\0" in body:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return ReadReceipt(len(lines), last)


def partial_reads(
    concern: Concern, result: ConcernResult, expected: Mapping[str, ReadReceipt | None]
) -> dict[str, str]:
    """The audited paths of ``concern``'s selection whose read receipt is missing or wrong,
    each with why (the values, for the diagnostic; never sent back to the concern).

    A path whose body is not text, or has none at the audited end (a deletion), needs no
    receipt.
    """
    mine = set(concern.paths)
    out: dict[str, str] = {}
    for path in (p for p in result.audited if p in mine):
        want = expected.get(path)
        if want is None:
            continue
        got = result.read.get(path)
        if got is None:
            out[path] = f"no read receipt (the body has {want.describe()})"
        elif got.lines != want.lines or got.last_line.strip() != want.last_line:
            out[path] = f"receipt {got.describe()}, the body has {want.describe()}"
    return out


def without_paths(result: ConcernResult, paths: Iterable[str]) -> ConcernResult:
    """``result`` with ``paths`` taken out of ``audited``: not inspected after all."""
    gone = set(paths)
    return replace(result, audited=tuple(p for p in result.audited if p not in gone))


def unsettled_paths(concern: Concern, result: ConcernResult) -> tuple[str, ...]:
    """The paths of a concern's selection its completed result did not settle.

    A completed concern answers for every path its selection names: audited, not
    applicable, or unsupported (seed 002: "each read-only concern skill identifies the
    subject paths it audited or returns NOT_APPLICABLE"). A path it passed over in silence
    was inspected by nobody, so it may not become an accounting record "left to another
    auditor". A concern that returned NOT_APPLICABLE as a whole, or failed, settles none
    and leaves none unsettled here (the whole-concern answer speaks for every path).
    """
    if result.status != "completed":
        return ()
    settled = {*result.audited, *result.not_applicable, *result.unsupported}
    return tuple(path for path in concern.paths if path not in settled)


def unsettled_prompt(paths: Sequence[str], partial: Sequence[str] = ()) -> str:
    """The re-ask for a completed result that left paths of its selection unsettled, or
    whose read receipts show a truncated or partial read of ``partial``."""
    parts = []
    if paths:
        listed = "\n".join(f"- {path}" for path in paths)
        parts.append(
            "Your answer did not settle every path your selection names. Each of these must "
            "be in audited, notApplicable or unsupported, or answer status failed naming the "
            f"failed operation or absent prerequisite:\n{listed}"
        )
    if partial:
        listed = "\n".join(f"- {path}" for path in partial)
        parts.append(
            "Your read of these bodies was truncated or partial: their read receipts (line "
            "count and last non-blank line) are missing or do not match the body at the "
            "head. Read each one again completely, in ranges until its end, and give its "
            f'receipt under "read":\n{listed}'
        )
    return (
        "\n\n".join(parts) + "\n\nAnswer again with the complete JSON object (every path, "
        f"every finding, every read receipt) only.\n\n{RESPONSE_CONTRACT}\n"
    )


def _json_object(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [m.group(1) for m in re.finditer(r"```(?:json)?\s*\n(.*?)```", text, re.S)][::-1]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            continue
        if isinstance(value, dict):
            return value
    raise ConcernReplyError("the reply holds no JSON object")


def _text(record: Mapping[str, Any], name: str) -> str | None:
    value = record.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def parse_concern_reply(text: str) -> ConcernResult:
    """Read the response contract out of a reply.

    Malformed findings are withdrawn (each with its reason); the rest stands.

    Raises:
        ConcernReplyError: no JSON object, or its status/audited are not the contract's.
    """
    document = _json_object(text)
    status = document.get("status")
    if status not in REPLY_STATUSES:
        raise ConcernReplyError(f"status must be one of {', '.join(REPLY_STATUSES)}")
    if status == "failed":
        failure = _text(document, "failure") or "the concern reported a failure without naming it"
        return ConcernResult("failed", failure=failure)
    if status == "not_applicable":
        return ConcernResult("not_applicable")
    lists = {}
    for name in ("audited", "notApplicable", "unsupported"):
        value = document.get(name, [])
        if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
            raise ConcernReplyError(f"{name} must be a list of paths")
        lists[name] = tuple(dict.fromkeys(value))
    audited = lists["audited"]
    findings: list[ReturnedFinding] = []
    withdrawn: list[str] = []
    for index, raw in enumerate(document.get("findings") or []):
        if not isinstance(raw, dict):
            withdrawn.append(f"findings[{index}]: not an object")
            continue
        values = {
            name: _text(raw, name) for name in ("path", "rule", "message", "observed", "expected")
        }
        missing = [name for name, value in values.items() if value is None]
        if missing:
            withdrawn.append(f"findings[{index}]: missing {', '.join(missing)}")
            continue
        rule = values["rule"] or ""
        if ":" in rule:
            withdrawn.append(f"findings[{index}]: rule {rule!r} contains a colon")
            continue
        severity = raw.get("severity", "blocking")
        if severity not in ("blocking", "debt"):
            withdrawn.append(f"findings[{index}]: severity must be blocking or debt")
            continue
        line = raw.get("line")
        if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 1):
            withdrawn.append(f"findings[{index}]: line must be a positive integer")
            continue
        findings.append(
            ReturnedFinding(
                path=values["path"] or "",
                line=line,
                rule=rule,
                severity=str(severity),
                message=values["message"] or "",
                observed=values["observed"] or "",
                expected=values["expected"] or "",
                invalidated=raw.get("invalidatedByChange") is True,
            )
        )
    return ConcernResult(
        "completed",
        read=_receipts(document.get("read")),
        audited=audited,
        not_applicable=tuple(p for p in lists["notApplicable"] if p not in audited),
        unsupported=tuple(
            p for p in lists["unsupported"] if p not in audited and p not in lists["notApplicable"]
        ),
        findings=tuple(findings),
        withdrawn=tuple(withdrawn),
    )


def _receipts(value: Any) -> dict[str, ReadReceipt]:
    """The well-formed read receipts of a reply (a malformed one is no receipt: that
    path's read is re-asked, never the whole reply refused)."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for path, raw in value.items():
        if not isinstance(raw, dict):
            continue
        lines, last = raw.get("lines"), raw.get("lastLine")
        if not isinstance(lines, int) or isinstance(lines, bool) or lines < 0:
            continue
        if isinstance(last, str):
            out[str(path)] = ReadReceipt(lines, last)
    return out


# --- touched text ---------------------------------------------------------------------------


def changed_lines(diff_text: str) -> dict[str, list[tuple[int, int]]]:
    """New-side line ranges per path from ``git diff -U0 --no-renames`` output."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    current: str | None = None
    for line in diff_text.splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            current = target[2:] if target.startswith("b/") else None
            if current is not None:
                ranges.setdefault(current, [])
        elif line.startswith("@@ ") and current is not None:
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or "1")
                if count:
                    ranges[current].append((start, start + count - 1))
    return ranges


def is_touched(
    finding: ReturnedFinding,
    ranges: Mapping[str, Sequence[tuple[int, int]]],
    deleted: Iterable[str],
    live: Iterable[str],
) -> bool:
    """On a changed line, on a deleted or live path, or on text the change invalidates."""
    if finding.invalidated or finding.path in set(deleted) or finding.path in set(live):
        return True
    if finding.line is None:
        return False
    return any(start <= finding.line <= end for start, end in ranges.get(finding.path, ()))


# --- the records ----------------------------------------------------------------------------


def path_unit(
    concern: Concern,
    path: str,
    driver: Mapping[str, str],
    provenance: Mapping[str, str],
    status: str = "audited",
) -> dict[str, Any]:
    """One required path-scoped unit of an executed concern: ``audited``, or
    ``not-applicable`` / ``unsupported`` as the concern answered for that path."""
    return {
        "unitId": concern.unit_id(path),
        "auditClass": "implementation",
        "auditKind": concern.audit_kind,
        "subject": path,
        "coverageRequirement": "required",
        "coverageStatus": status,
        "priorContext": {
            "changedFilePartition": path,
            "languagePartition": concern.kind,
            "concernPartition": concern.concern,
        },
        "expectedProducer": concern.producer(),
        "recordedByRunDriver": dict(driver),
        "producerProvenance": dict(provenance),
    }


def missing_skill_unit(concern: Concern, driver: Mapping[str, str]) -> dict[str, Any]:
    """The required ``missing-skill`` unit of a selected concern that is not installed."""
    return {
        "unitId": concern.unit_id(concern.skill),
        "auditClass": "implementation",
        "auditKind": concern.audit_kind,
        "subject": concern.skill,
        "coverageRequirement": "required",
        "coverageStatus": "missing-skill",
        "priorContext": {
            "changedFilePartition": concern.skill,
            "languagePartition": concern.kind,
            "concernPartition": concern.concern,
        },
        "expectedProducer": concern.producer(),
        "recordedByRunDriver": dict(driver),
    }


def governance_gap_unit(path: str, driver: Mapping[str, str]) -> dict[str, Any]:
    """Missing governance as coverage evidence: no decision or spec governs ``path``.

    An optional ``coverage-gap`` unit (the seed's coverage model has no other place for
    it): recorded and rendered, it names the gap without rejecting the run by itself.
    """
    return {
        "unitId": f"implementation:governance:coverage-gap:{path}",
        "auditClass": "implementation",
        "auditKind": "coverage-gap",
        "subject": path,
        "coverageRequirement": "optional",
        "coverageStatus": "skipped",
        "priorContext": {"changedFilePartition": path, "concernPartition": "ungoverned"},
        "expectedProducer": dict(driver),
        "recordedByRunDriver": dict(driver),
    }


def accounting_unit(path: str, auditor: str | None, driver: Mapping[str, str]) -> dict[str, Any]:
    """The record of a path no concern claimed: considered, left to ``auditor``."""
    return {
        "unitId": f"implementation:unknown:coverage-gap:{path}",
        "auditClass": "implementation",
        "auditKind": "coverage-gap",
        "subject": path,
        "coverageRequirement": "optional",
        "coverageStatus": "skipped",
        "priorContext": {
            "changedFilePartition": path,
            "concernPartition": auditor or "unclaimed",
        },
        "expectedProducer": dict(driver),
        "recordedByRunDriver": dict(driver),
    }


def finding_payload(
    unit: Mapping[str, Any], finding: ReturnedFinding, provenance: Mapping[str, str]
) -> dict[str, Any]:
    """A finding against an accepted unit; its producer is the unit's expected producer."""
    return {
        "unitId": unit["unitId"],
        "producerIdentity": dict(unit["expectedProducer"]),
        "producerProvenance": dict(provenance),
        "rule": finding.rule,
        "severity": finding.severity,
        "location": finding.location,
        "message": finding.message,
        "evidence": {"observed": finding.observed, "expected": finding.expected},
    }


def check_driver(document: Any, source: str) -> dict[str, str]:
    """The six run-driver identity fields.

    Raises:
        ConcernConfigError: a field is missing or empty.
    """
    if not isinstance(document, dict):
        raise ConcernConfigError(f"{source}: the run-driver identity is a JSON object")
    missing = [
        name
        for name in DRIVER_FIELDS
        if not isinstance(document.get(name), str) or not document[name]
    ]
    if missing:  # every one at once, each accepting a non-empty string
        fields = ", ".join(repr(name) for name in missing)
        raise ConcernConfigError(
            f"{source}: run-driver field{'s' if len(missing) > 1 else ''} {fields} "
            "missing or empty (each a non-empty string)"
        )
    return {name: document[name] for name in DRIVER_FIELDS}


def check_deterministic(document: Any) -> dict[str, Any]:
    """Established deterministic-verification facts: an object naming the ``head`` they
    cover, and ``passing`` (``true``/``false``) when they establish whether it passes.

    Raises:
        ValueError: not an object, ``head`` is not a full 40-hex commit id, or ``passing``
            is there but not a boolean.
    """
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    head = document.get("head")
    if not (isinstance(head, str) and len(head) == 40 and all(c in HEX for c in head)):
        raise ValueError('"head" must be the full commit id the facts were established for')
    if "passing" in document and not isinstance(document["passing"], bool):
        raise ValueError('"passing" must be true or false (whether the established checks pass)')
    return document


def gate_eligibility(advisory: bool, head: str, deterministic: Any) -> tuple[bool, str]:
    """Whether the audit supplies reusable gate evidence, and why (seed 002: "A committed
    audit is reusable only when the applicable deterministic verification is established as
    passing for that subject; an advisory audit never supplies reusable gate evidence").

    ``deterministic`` is what the run retained: ``"unestablished"`` or the established facts
    (``{"status": "established", "head": ..., "passing": ...}``). Passing is never inferred:
    only ``"passing": true`` in facts for this head establishes it. Eligibility says
    whether the run may be reused as gate evidence, whatever its terminal status.
    """
    if advisory:
        return False, (
            "an advisory (worktree:) audit never supplies reusable gate evidence: it judges "
            "live files, not an exact committed head"
        )
    if not isinstance(deterministic, Mapping) or deterministic.get("status") != "established":
        return False, (
            f"no deterministic verification is established for head {head} "
            '(--deterministic-verification FILE with {"head": ..., "passing": true})'
        )
    if deterministic.get("passing") is not True:
        state = "fail" if deterministic.get("passing") is False else "do not say they pass"
        return False, (
            f"the deterministic verification facts established for head {head} {state} "
            '(reusable only with "passing": true)'
        )
    return True, (
        f"a committed audit of head {head} whose deterministic verification is established "
        "as passing"
    )


def filed_line(key: str, finding: ReturnedFinding, token: str, base: str, head: str) -> str:
    """``filed: <key> | rule: <rule> | severity: <s> | run: <token> | range: <base>..<head>``."""
    return (
        f"filed: {key} | rule: {finding.rule} | severity: {finding.severity} | run: {token} "
        f"| range: {base}..{head}"
    )


def blocked_text(fields: Mapping[str, Any]) -> str:
    """The seed's BLOCKED diagnostic, every field present (``none`` when absent)."""

    def show(value: Any) -> str:
        return "none" if value is None or value == "" else str(value)

    return "\n".join(
        [
            "BLOCKED",
            f"runToken: {fields.get('runToken') or 'not-started'}",
            f"command: {show(fields.get('command'))}",
            f"payloadSource: {show(fields.get('payloadSource'))}",
            f"payloadKey: {show(fields.get('payloadKey'))}",
            f"exitCode: {show(fields.get('exitCode'))}",
            f"stderr: {show(fields.get('stderr'))}",
            f"diagnostic: {show(fields.get('diagnostic'))}",
        ]
    )


def shell_quote(value: str) -> str:
    """Single-quote for a POSIX shell; an apostrophe becomes ``'"'"'``."""
    return "'" + value.replace("'", "'\"'\"'") + "'"
