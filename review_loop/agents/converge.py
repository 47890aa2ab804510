"""The task-completion loop's pure parts: ledger, positions, blind-review findings, results.

Seed ``004`` (task-completion loop) and ``docs/origins.md`` §3.1. Nothing here does I/O;
``review_loop.orchestrator.workflows.converge`` reads and writes the files and runs peers.

**How disagreement is detected.** Every position (the host's file and each peer's answer)
ends with one structured block, which the prompts ask for word for word::

    ## Disagreements
    - <each point still disputed, with its evidence>   (or "- none")

    ## Human decisions
    - <choices only the user can make>                  (or "- none")

    Position: AGREE | DISAGREE

The last non-empty line must be ``Position: AGREE`` or ``Position: DISAGREE`` (case and
Markdown emphasis ignored). A party *disagrees* when its position is ``DISAGREE``, when it
lists any disagreement (an ``AGREE`` that still lists one is contradictory and counts as
disagreement), or when the block is missing (agreement must be stated, never assumed).
Round A has a disagreement when any of the three parties disagrees; a B round has one when
either peer does. B round 1 always runs (the fast path never drops round B); round 2 runs
only when round 1 ended with a disagreement; what is left after round 2 goes to the host
(technical defaults, adjudicated on evidence) or to the user (``HUMAN_DECISION``).

Peers' "Human decisions" are proposals: agent opinions never create a gate on their own, so
only ``HUMAN_DECISION`` items in the ledger (set by the host) make the result
``HUMAN_GATE``; proposals are listed under "Remaining decisions" for the host to judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from review_loop.agents.errors import FormatError
from review_loop.agents.evidence import Evidence

# The seed asks for a real Claude Code session for the blind review; no product stands in.
BLIND_REVIEWER_PRODUCT = "claude"
MAX_B_ROUNDS = 2
MAX_BLIND_ROUNDS = 2
ITEM_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class LedgerStatus(StrEnum):
    """The seed's Phase 0 statuses of one work item."""

    VERIFIED_DONE = "VERIFIED_DONE"
    PENDING = "PENDING"
    OBSOLETE = "OBSOLETE"
    EXCLUDED = "EXCLUDED"
    HUMAN_DECISION = "HUMAN_DECISION"


OPEN_STATUSES = frozenset({LedgerStatus.PENDING, LedgerStatus.HUMAN_DECISION})
# Statuses whose claim must cite its proof or source.
CITED_STATUSES = frozenset(
    {LedgerStatus.VERIFIED_DONE, LedgerStatus.OBSOLETE, LedgerStatus.EXCLUDED}
)


class Result(StrEnum):
    """The terminal results of the loop."""

    COMPLETED = "COMPLETED"
    HUMAN_GATE = "HUMAN_GATE"
    MISSING_DEPENDENCIES = "MISSING_DEPENDENCIES"
    UNVERIFIED = "UNVERIFIED"


def result_ok(result: Result) -> bool:
    """The ``ok`` of a command document: false when evidence or a capability is missing."""
    return result in (Result.COMPLETED, Result.HUMAN_GATE)


class Gate(StrEnum):
    """The results that must cover the final evidence id."""

    VERIFICATION = "verification"
    AGENTIC_REVIEW = "agentic-review"
    ARCHITECTURE_HARDENING = "architecture-hardening"
    BLIND_REVIEW = "blind-review"
    # Phase 2's Goal Gate: not one of the three gates of the final evidence (it decides
    # before implementation), but its Decision is obeyed (``HUMAN_GATE`` stops the loop).
    GOAL_GATE = "goal-gate"


# The gates that must pass on the final evidence id for ``COMPLETED``.
COMPLETION_GATES = (
    Gate.VERIFICATION,
    Gate.AGENTIC_REVIEW,
    Gate.ARCHITECTURE_HARDENING,
    Gate.BLIND_REVIEW,
)
# Gates whose work a host skill does: proven by the skill's report (``docs/seed-workflows.md``).
GATE_SKILLS: dict[Gate, str] = {
    Gate.ARCHITECTURE_HARDENING: "architecture-hardening-loop",
    Gate.GOAL_GATE: "goal-gate",
}
# The conditional skill a user-owned decision makes required (seed 004, Capability Preflight).
GRILL_SKILL = "grill-with-docs"
# The goal-gate results: its Decision / Next lets the loop go on, or stops it for the user.
GOAL_GATE_TOKENS = frozenset({"CONTINUE", "HUMAN_GATE"})


# The result token each gate must report to count as passed.
GATE_PASS: dict[Gate, frozenset[str]] = {
    Gate.VERIFICATION: frozenset({"PASS"}),
    Gate.AGENTIC_REVIEW: frozenset({"PASS", "NO_FINDINGS"}),
    Gate.ARCHITECTURE_HARDENING: frozenset({"NO_ACTIONABLE_FINDINGS"}),
    Gate.BLIND_REVIEW: frozenset({"CLEAN"}),
    Gate.GOAL_GATE: frozenset({"CONTINUE"}),
}
# Architecture-hardening terminal results passed through as this loop's result.
PASS_THROUGH = frozenset({"HUMAN_GATE", "MISSING_DEPENDENCIES", "UNVERIFIED"})
GOALS = ("completed", "active-checkpoint", "not-created", "deferred-conflict")


class _Model(BaseModel):
    # defer_build: a model's validator is built when first used, not at import (``ledger
    # show`` needs the ledger's, not the blind review's; docs/performance.md)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class LedgerItem(_Model):
    """One item of work from the plan.

    Attributes:
        evidence: the proof (``VERIFIED_DONE``), the superseding decision or contract
            (``OBSOLETE``), the exclusion's source (``EXCLUDED``), or a note.
    """

    id: str
    title: str = ""
    status: LedgerStatus
    evidence: str = ""
    updated: str = ""

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ITEM_ID_RE.match(value):
            raise ValueError(f"item id {value!r} must match {ITEM_ID_RE.pattern}")
        return value

    @model_validator(mode="after")
    def _cited(self) -> LedgerItem:
        if self.status in CITED_STATUSES and not self.evidence.strip():
            raise ValueError(f"{self.status.value} needs its evidence or source cited")
        return self


# Gates whose result must be proven by review-loop's own authenticated record: a typed
# token is never enough for them (``docs/authenticated-state.md``).
PROVEN_GATES = frozenset({Gate.AGENTIC_REVIEW, Gate.BLIND_REVIEW})
Provenance = Literal["proven", "self-reported"]
PROVEN: Provenance = "proven"
SELF_REPORTED: Provenance = "self-reported"


class GateProof(_Model):
    """What proved a gate result: a record review-loop wrote and authenticated itself.

    Attributes:
        kind: ``review-packet`` (an archived review packet whose run state carries a valid
            MAC), ``blind-review`` (a blind review this run's journal recorded) or
            ``skill-report`` (a host skill's report checked against the current evidence
            and the installed skill, see :class:`SkillReport`).
        ref: the packet id, the blind review's record path, or the report's file name.
        path: the packet, record or report file.
        round: the review round that gave the verdict.
        reviewer: the reviewer (peer name or product) that answered.
        sessionId: the reviewer's session.
        sha256: the report's bytes when it was recorded (``skill-report``).
        skill: the resolved installed ``SKILL.md`` (``skill-report``).
        skillSha256: that file's sha256, equal to the one the report names.
    """

    kind: Literal["review-packet", "blind-review", "skill-report"]
    ref: str
    path: str = ""
    round: int | None = None
    reviewer: str | None = None
    sessionId: str | None = None
    sha256: str | None = None
    skill: str | None = None
    skillSha256: str | None = None

    def describe(self) -> str:
        """``review packet <id> (round 2, codex session s1)``."""
        if self.kind == "skill-report":
            return (
                f"skill report {self.ref} (sha256 {(self.sha256 or '')[:12]}; skill "
                f"{self.skill} sha256 {(self.skillSha256 or '')[:12]})"
            )
        what = "review packet" if self.kind == "review-packet" else "blind review"
        parts = [f"round {self.round}"] if self.round is not None else []
        who = self.reviewer or ""
        if self.sessionId:
            who = f"{who} session {self.sessionId}".strip()
        if who:
            parts.append(who)
        detail = ", ".join(parts)
        return f"{what} {self.ref}" + (f" ({detail})" if detail else "")


class SkillReport(_Model):
    """What a host skill writes when it ends: review-loop's contract with the skill.

    The file is ``.review-handoff/gate-reports/<skill>/<evidence digest>.json``; review-loop
    checks it against the evidence recomputed now and the installed skill before a gate
    takes its result (``docs/seed-workflows.md``, "Skill gates").

    Attributes:
        skill: the skill's name (``architecture-hardening-loop``, ``goal-gate``).
        result: its terminal token (``NO_ACTIONABLE_FINDINGS``; goal-gate: ``CONTINUE`` or
            ``HUMAN_GATE``).
        evidence: the evidence (``baseSha + pathFilter + digest``) the skill's work covered.
        skillSha256: the sha256 of the ``SKILL.md`` that ran.
        decision: goal-gate's Decision / Next, as it stated them.
        summary: one line for the ledger.
    """

    skill: str = Field(description="the skill's name: goal-gate or architecture-hardening-loop")
    result: str = Field(
        pattern=r"^[A-Z][A-Z_]*$",
        description="its terminal token: goal-gate CONTINUE | HUMAN_GATE; "
        "architecture-hardening-loop NO_ACTIONABLE_FINDINGS (passes), FINDINGS_REMAIN, "
        "HUMAN_GATE, MISSING_DEPENDENCIES or UNVERIFIED",
    )
    evidence: Evidence = Field(
        description="the evidence the work covered, {baseSha, pathFilter, digest}, as "
        "`review-loop evidence` prints it now"
    )
    skillSha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="the sha256 (64 lowercase hex) of the installed SKILL.md that ran",
    )
    decision: str = Field("", description="goal-gate's Decision / Next, as it stated them")
    summary: str = Field("", description="one line for the ledger")


def skill_report_format() -> list[str]:
    """The skill report's fields, one line each, from :class:`SkillReport` itself."""
    return [
        f"{name}{'' if field.is_required() else ' (optional)'}: {field.description}"
        for name, field in SkillReport.model_fields.items()
    ]


def skill_report_problems(error: Exception) -> str:
    """Every problem of a refused report: ``field: what is wrong; accepted: ...``."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return str(error).strip().splitlines()[0][:200] if str(error).strip() else "unreadable"
    fields = SkillReport.model_fields
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item["loc"]) or "the report"
        top = str(item["loc"][0]) if item["loc"] else ""
        accepted = fields[top].description if top in fields else "a JSON object of the fields"
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}; accepted: {accepted}")
    return "; ".join(problems)


class GateRecord(_Model):
    """A gate's result and the evidence id it covered.

    Attributes:
        provenance: ``proven`` (``proof`` names the authenticated record it came from) or
            ``self-reported`` (a token the caller typed; stored and shown as such).
    """

    gate: Gate
    result: str
    evidence: Evidence
    session: str | None = None
    detail: str = ""
    recordedAt: str = ""
    provenance: Provenance = SELF_REPORTED
    proof: GateProof | None = None

    @model_validator(mode="after")
    def _proof_matches(self) -> GateRecord:
        if (self.provenance == PROVEN) != (self.proof is not None):
            raise ValueError("a proven gate result names its proof, a self-reported one none")
        return self

    @property
    def passed(self) -> bool:
        """Whether the result is one of the gate's passing tokens."""
        return self.result in GATE_PASS[self.gate]

    @property
    def proven(self) -> bool:
        """Whether an authenticated record proved this result."""
        return self.proof is not None


class ConvergenceSummary(_Model):
    """Where the last convergence record is and what it decided."""

    status: str
    decision: str
    rounds: int
    recordPath: str
    at: str
    # the exclusions the host's ``## Scope`` stated, so the Task Completion Result shows
    # them as the record does (seed 004: "Scope / exclusions")
    hostExclusions: list[str] = Field(default_factory=list)


class PreflightSummary(_Model):
    """The last preflight: passed, or what was missing."""

    ready: bool
    missing: list[str] = Field(default_factory=list)
    at: str
    # "preflight", or "round A": converge's first successful round trip of both peers
    # (sessions listed), which the seed lets serve as the peers' preflight evidence.
    via: str = "preflight"


class BlindFinding(_Model):
    """One blind-review finding and its class."""

    id: str
    cls: Literal["Fix", "Backlog", "Reject"] = Field(alias="class")
    title: str
    evidence: str
    requiredFix: str

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


class BlindReviewSummary(_Model):
    """A delivered blind review, tied to the evidence id it saw."""

    round: int
    verdict: Literal["FIX", "CLEAN"]
    evidence: Evidence
    product: str
    sessionId: str | None
    findings: list[BlindFinding] = Field(default_factory=list)
    recordPath: str = ""
    at: str = ""


class CheckoutSnapshot(_Model):
    """Phase 0's record of the checkout the loop started in (seed 004: "Record the
    repository root, branch, HEAD, and working tree").

    Attributes:
        root: the repository's top level.
        branch: the branch checked out, or ``(detached)``.
        head: the full commit id of ``HEAD``.
        workingTree: ``clean``, or how many paths ``git status`` lists (protocol files
            under ``.review-handoff/`` excluded).
        at: when it was taken (the ledger's first write).
    """

    root: str
    branch: str
    head: str
    workingTree: str
    at: str


class Ledger(_Model):
    """The task ledger file: items, gate results, and the loop's own records."""

    version: Literal[1] = 1
    task: str = ""
    items: list[LedgerItem] = Field(default_factory=list)
    gates: list[GateRecord] = Field(default_factory=list)
    blindReviews: list[BlindReviewSummary] = Field(default_factory=list)
    # The first blind review of the current budget (``blind-review --continue`` after a
    # spent budget starts a new one: the seed continues from the incomplete evidence).
    blindBudgetFrom: int = 0
    convergence: ConvergenceSummary | None = None
    preflight: PreflightSummary | None = None
    goal: str = "not-created"
    implemented: str = ""
    lessons: str = ""
    updated: str = ""
    checkout: CheckoutSnapshot | None = None

    @field_validator("goal")
    @classmethod
    def _goal(cls, value: str) -> str:
        if value not in GOALS:
            raise ValueError(f"goal {value!r} is not one of {', '.join(GOALS)}")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> Ledger:
        ids = [item.id for item in self.items]
        if len(set(ids)) != len(ids):
            raise ValueError("item ids must be unique")
        return self

    def with_item(self, item: LedgerItem) -> Ledger:
        """The ledger with ``item`` added, or replacing the item of the same id."""
        items = [i for i in self.items if i.id != item.id]
        position = next((n for n, i in enumerate(self.items) if i.id == item.id), len(items))
        items.insert(position, item)
        return self.model_copy(update={"items": items})

    def by_status(self, status: LedgerStatus) -> list[LedgerItem]:
        """Items with ``status``, in ledger order."""
        return [i for i in self.items if i.status is status]

    def latest_gates(self) -> dict[Gate, GateRecord]:
        """The last recorded result of each gate."""
        latest: dict[Gate, GateRecord] = {}
        for record in self.gates:
            latest[record.gate] = record
        return latest

    def stale_gates(self, current: Evidence | None) -> list[GateRecord]:
        """Latest completion-gate results whose evidence is not ``current``.

        The Goal Gate decides before implementation, so it is never stale.
        """
        return [
            record
            for record in self.latest_gates().values()
            if record.gate in COMPLETION_GATES
            and (current is None or not record.evidence.same_snapshot(current))
        ]


# -- positions -----------------------------------------------------------------------------

_POSITION_RE = re.compile(r"^[\s>*_`#-]*position\s*[*_`]*\s*:\s*[*_`]*\s*(agree|disagree)\b", re.I)
_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)\s*$")
_NONE_RE = re.compile(r"^[\s*_`(]*(none|n/?a|nothing|no)\b[\s.)*_`]*$", re.I)


#: The host position's Markdown headings, what each holds, and whether the convergence
#: record reads it (a heading whose title contains the word counts; ``##`` or any level).
#: The position ends with the line ``Position: AGREE`` or ``Position: DISAGREE``.
HOST_POSITION_SECTIONS: tuple[tuple[str, str, bool], ...] = (
    ("Scope", "what this round delivers and what it excludes (the record's frozen scope)", True),
    ("Attribution", "each ledger item's status and its source", False),
    ("Ownership", "which module owns each change, and the dependency direction", True),
    ("Assumptions and risks", "what the plan assumes and what could go wrong", False),
    ("Verification", "falsifiable checks that prove each PENDING item done", True),
    ("Disagreements", "one '- ' bullet per point still disputed, or '- none'", False),
    ("Human decisions", "one '- ' bullet per choice only the user can make, or '- none'", False),
)


def host_position_format() -> list[str]:
    """The host position's format, one line each (``converge --help``)."""
    lines = [
        f"## {title}{'' if read else ' (optional)'}: {what}"
        for title, what, read in HOST_POSITION_SECTIONS
    ]
    return [*lines, "Position: AGREE | DISAGREE   (the last line)"]


def missing_host_sections(text: str) -> list[str]:
    """The headings the record reads that ``text`` lacks (then: "not stated")."""
    titles = [m.group(2).lower() for line in text.splitlines() if (m := _HEADING_RE.match(line))]
    return [
        f"## {title}"
        for title, _, read in HOST_POSITION_SECTIONS
        if read and not any(title.lower() in found for found in titles)
    ]


class PositionBlock(_Model):
    """The structured end of a position.

    Attributes:
        position: ``AGREE``/``DISAGREE`` as stated, or ``None`` when the line is missing.
        disagreements: the listed points still disputed.
        humanDecisions: the listed choices the party says only the user can make.
    """

    position: Literal["AGREE", "DISAGREE"] | None
    disagreements: list[str] = Field(default_factory=list)
    humanDecisions: list[str] = Field(default_factory=list)

    @property
    def parsed(self) -> bool:
        """Whether the ``Position:`` line was found as the last non-empty line."""
        return self.position is not None

    @property
    def disagrees(self) -> bool:
        """The explicit rule: anything but a clean, stated ``AGREE`` is a disagreement."""
        return self.position != "AGREE" or bool(self.disagreements)

    def points(self, party: str) -> list[str]:
        """The disagreement points, named after ``party``; one line even when unlisted."""
        if self.disagreements:
            return [f"{party}: {point}" for point in self.disagreements]
        if self.position is None:
            return [f"{party}: no `Position: AGREE|DISAGREE` line, agreement not stated"]
        if self.position == "DISAGREE":
            return [f"{party}: DISAGREE (no point listed)"]
        return []


def _section_bullets(lines: Sequence[str], *names: str) -> list[str]:
    out: list[str] = []
    inside = False
    for line in lines:
        heading = _HEADING_RE.match(line)
        if heading:
            title = heading.group(2).strip().lower()
            inside = any(name in title for name in names)
            continue
        if not inside:
            continue
        if _POSITION_RE.match(line):
            inside = False
            continue
        bullet = _BULLET_RE.match(line)
        if bullet and not _NONE_RE.match(bullet.group(1)):
            out.append(bullet.group(1).strip())
    return out


def parse_position(text: str) -> PositionBlock:
    """Read the structured block at the end of a position (see the module docstring)."""
    lines = text.splitlines()
    non_empty = [line for line in lines if line.strip()]
    position: Literal["AGREE", "DISAGREE"] | None = None
    if non_empty:
        match = _POSITION_RE.match(non_empty[-1])
        if match:
            position = "AGREE" if match.group(1).lower() == "agree" else "DISAGREE"
    return PositionBlock(
        position=position,
        disagreements=_section_bullets(lines, "disagreement"),
        humanDecisions=_section_bullets(lines, "human decision", "user decision"),
    )


def section_text(text: str, *names: str) -> str:
    """The body of the first heading whose title contains one of ``names``, on one line."""
    lines = text.splitlines()
    out: list[str] = []
    level = 0
    for line in lines:
        heading = _HEADING_RE.match(line)
        if heading:
            if level and len(heading.group(1)) <= level:
                break
            if not level and any(n in heading.group(2).lower() for n in names):
                level = len(heading.group(1))
            continue
        if level and line.strip() and not _POSITION_RE.match(line):
            bullet = _BULLET_RE.match(line)
            out.append(bullet.group(1) if bullet else line.strip())
    return "; ".join(out)


# -- the convergence record ---------------------------------------------------------------


class PartyPosition(_Model):
    """One party's latest position as the record reports it."""

    role: Literal["host", "A", "B"]
    product: str | None
    sessionId: str | None
    block: PositionBlock | None
    stage: str | None
    state: str


class ConvergenceRecord(_Model):
    """The seed's "Three-party Convergence" record, field by field."""

    decision: str
    why: str
    workLedger: str
    frozenScope: str
    ownership: str
    verification: str
    peerA: str
    peerB: str
    fallbacks: str
    remainingDecisions: str

    def render(self, peer_a: str, peer_b: str) -> str:
        """The record as the seed writes it (``peer_a``/``peer_b``: the products)."""
        return (
            "Three-party Convergence\n"
            f"- Decision: {self.decision}\n"
            f"- Why: {self.why}\n"
            f"- Work ledger: {self.workLedger}\n"
            f"- Frozen scope / exclusions: {self.frozenScope}\n"
            f"- Ownership and dependency direction: {self.ownership}\n"
            f"- Verification: {self.verification}\n"
            f"- Peer A ({peer_a}) session: {self.peerA}\n"
            f"- Peer B ({peer_b}) session: {self.peerB}\n"
            f"- Fallbacks: {self.fallbacks}\n"
            f"- Remaining decisions: {self.remainingDecisions}\n"
        )


def ledger_summary(ledger: Ledger) -> str:
    """``2 PENDING (T1, T2); 1 VERIFIED_DONE (T0)`` in status order; ``empty``."""
    parts = []
    for status in LedgerStatus:
        items = ledger.by_status(status)
        if items:
            parts.append(f"{len(items)} {status.value} ({', '.join(i.id for i in items)})")
    return "; ".join(parts) if parts else "empty"


_EXCLUSION_LABEL_RE = re.compile(
    r"^[\s*_`]*(?:exclu\w*|out of scope|not in scope)[\s*_`]*:[\s*_`]*(.*?)[\s*_`]*$", re.I
)
_EXCLUSION_TITLE_RE = re.compile(r"exclu|out of scope|not in scope", re.I)


def host_scope(text: str) -> tuple[str, list[str]]:
    """The host position's ``## Scope`` section: its words on one line, and apart from
    them the exclusions it states (seed 004: each side writes "the scope, ..., exclusions").

    An exclusion is the value of a line or bullet labelled ``Exclusions:`` (``Excluded:``,
    ``Excludes:``, ``Out of scope:``, ``Not in scope:``), or a line or bullet under a
    sub-heading of the section whose title says so (``### Exclusions``); ``none`` states
    none.
    """
    words: list[str] = []
    excluded: list[str] = []
    level = 0
    sub = 0  # the level of an exclusions sub-heading we are under, else 0
    for line in text.splitlines():
        heading = _HEADING_RE.match(line)
        if heading:
            depth = len(heading.group(1))
            if level and depth <= level:
                break
            if not level and "scope" in heading.group(2).lower():
                level = depth
            elif level:
                sub = depth if _EXCLUSION_TITLE_RE.search(heading.group(2)) else 0
            continue
        if not level or not line.strip() or _POSITION_RE.match(line):
            continue
        bullet = _BULLET_RE.match(line)
        item = bullet.group(1) if bullet else line.strip()
        label = _EXCLUSION_LABEL_RE.match(item)
        value = label.group(1) if label else item if sub else None
        if value is None:
            words.append(item)
        elif value and not _NONE_RE.match(value):
            excluded.append(value)
    return "; ".join(words), excluded


def frozen_scope(ledger: Ledger, host_words: str, host_excluded: Sequence[str] = ()) -> str:
    """The frozen scope: every PENDING item (plus the host's words), and the exclusions:
    the ledger's EXCLUDED items, then the ones the host's position states (which never
    exclude a plan item: only the user or valid documentation does, seed 004)."""
    pending_items = ledger.by_status(LedgerStatus.PENDING)
    pending = ", ".join(f"{i.id} {i.title}".strip() for i in pending_items)
    scope = pending or "no PENDING item"
    if host_words:
        scope += f" — host: {host_words}"
    return f"{scope}; exclusions: {exclusions_text(ledger, host_excluded)}"


def exclusions_text(ledger: Ledger, host_excluded: Sequence[str] = ()) -> str:
    """The exclusions as the record and the Task Completion Result write them: the
    ledger's EXCLUDED items, then apart the host's (a PENDING item the host names is said
    to stay PENDING)."""
    excluded = ", ".join(i.id for i in ledger.by_status(LedgerStatus.EXCLUDED))
    text = excluded or "none"
    if host_excluded:
        text += f" (ledger); host excludes: {'; '.join(host_excluded)}"
        named = [
            i.id
            for i in ledger.by_status(LedgerStatus.PENDING)
            if any(re.search(rf"\b{re.escape(i.id)}\b", e) for e in host_excluded)
        ]
        if named:
            text += (
                f" ({', '.join(named)} stay PENDING: only the user or valid documentation "
                "excludes a plan item, `ledger set --status EXCLUDED`)"
            )
    return text


def decision_text(
    status: str, rounds: int, fast_path: bool, missing: Sequence[str], remaining: Sequence[str]
) -> str:
    """The Decision line for a convergence status."""
    if status == "UNVERIFIED":
        return (
            "UNVERIFIED — missing position(s): "
            + "; ".join(missing)
            + ". Handles kept; the next `converge` continues from the missing side"
        )
    if status == "converged":
        path = " (fast path)" if fast_path else ""
        return f"converged after {rounds} cross-examination round(s){path}"
    if status == "HUMAN_GATE":
        return "HUMAN_GATE — the ledger holds HUMAN_DECISION items the user owns"
    return (
        f"disagreement remains after {rounds} cross-examination rounds: the host adjudicates "
        f"technical defaults on evidence; user decisions go to C ({len(remaining)} point(s))"
    )


# -- blind review -----------------------------------------------------------------------------

_VERDICT_RE = re.compile(r"^[\s*_`]*verdict[\s*_`]*:[\s*_`]*(FIX|CLEAN)[\s*_`.]*$", re.I)
_CLASSES = {"fix": "Fix", "backlog": "Backlog", "reject": "Reject"}
BLIND_COLUMNS = ("ID", "Class", "Title", "Evidence", "Required fix")


class MalformedReviewError(FormatError):
    """A blind review that does not follow the required shape."""


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body.removeprefix("|").removesuffix("|")
    return [cell.strip().replace("&#124;", "|") for cell in body.split("|")]


def parse_blind_review(text: str) -> tuple[Literal["FIX", "CLEAN"], list[BlindFinding]]:
    """The verdict (``FIX``/``CLEAN``) and findings of a blind review.

    Shape: a ``## Findings`` section holding ``None`` or a table with the columns
    ``ID | Class | Title | Evidence | Required fix`` (Class: Fix, Backlog or Reject), and the
    last non-empty line ``Verdict: FIX`` (at least one Fix) or ``Verdict: CLEAN`` (none).

    Raises:
        MalformedReviewError: the shape is wrong (names what).
    """
    lines = text.splitlines()
    non_empty = [line for line in lines if line.strip()]
    verdict_match = _VERDICT_RE.match(non_empty[-1]) if non_empty else None
    if verdict_match is None:
        raise MalformedReviewError(
            "the last non-empty line must be `Verdict: FIX` or `Verdict: CLEAN`"
        )
    verdict: Literal["FIX", "CLEAN"] = "FIX" if verdict_match.group(1).upper() == "FIX" else "CLEAN"
    if sum(1 for line in lines if _VERDICT_RE.match(line)) != 1:
        raise MalformedReviewError("exactly one `Verdict:` line is allowed")
    start = next(
        (
            n
            for n, line in enumerate(lines)
            if (h := _HEADING_RE.match(line)) and "finding" in h.group(2).lower()
        ),
        None,
    )
    if start is None:
        raise MalformedReviewError("no `## Findings` section")
    findings: list[BlindFinding] = []
    header_seen = False
    for line in lines[start + 1 :]:
        if _HEADING_RE.match(line) or _VERDICT_RE.match(line):
            break
        if not line.strip().startswith("|"):
            continue
        cells = _cells(line)
        if all(re.fullmatch(r":?-{1,}:?", c) for c in cells if c):
            continue
        if not header_seen:
            header_seen = True
            if [c.lower() for c in cells] != [c.lower() for c in BLIND_COLUMNS]:
                raise MalformedReviewError(f"the findings table needs the columns {BLIND_COLUMNS}")
            continue
        if len(cells) != len(BLIND_COLUMNS):
            raise MalformedReviewError(
                f"row {cells[0]!r} has {len(cells)} cells, not {len(BLIND_COLUMNS)} "
                "(write a pipe inside a cell as &#124;)"
            )
        cls = _CLASSES.get(cells[1].strip("*_` ").lower())
        if cls is None:
            raise MalformedReviewError(
                f"finding {cells[0]!r}: class must be Fix, Backlog or Reject"
            )
        findings.append(
            BlindFinding.model_validate(
                {
                    "id": cells[0],
                    "class": cls,
                    "title": cells[2],
                    "evidence": cells[3],
                    "requiredFix": cells[4],
                }
            )
        )
    ids = [f.id for f in findings]
    if len(set(ids)) != len(ids) or any(not i for i in ids):
        raise MalformedReviewError("finding ids must be present and unique")
    has_fix = any(f.cls == "Fix" for f in findings)
    if has_fix != (verdict == "FIX"):
        raise MalformedReviewError("`Verdict: FIX` exactly when at least one finding is class Fix")
    return verdict, findings


# -- the task completion result -----------------------------------------------------------------


class CompletionInputs(_Model):
    """What the Task Completion Result is derived from."""

    ledger: Ledger
    evidence: Evidence | None
    protocol: str


def evidence_id(evidence: Evidence | None) -> str:
    """``baseSha[:12] pathFilter digest[:16]``: the three fields equality compares."""
    if evidence is None:
        return "none"
    paths = ",".join(evidence.pathFilter) if evidence.pathFilter else "(whole tree)"
    return f"base {evidence.baseSha[:12]} paths {paths} digest {evidence.digest[:16]}"


def derive_result(inputs: CompletionInputs) -> tuple[Result, list[str]]:
    """The terminal result and every reason that kept it from ``COMPLETED``.

    Precedence: a failed preflight is ``MISSING_DEPENDENCIES``; a user-owned decision (a
    ``HUMAN_DECISION`` item, a deferred Goal, a passed-through ``HUMAN_GATE``) is
    ``HUMAN_GATE``; any other missing, failed or stale evidence is ``UNVERIFIED``.
    """
    ledger, current = inputs.ledger, inputs.evidence
    latest = ledger.latest_gates()
    missing_deps: list[str] = []
    human: list[str] = []
    unverified: list[str] = []
    if ledger.preflight is not None and not ledger.preflight.ready:
        missing_deps.extend(ledger.preflight.missing or ["preflight failed"])
    hardening = latest.get(Gate.ARCHITECTURE_HARDENING)
    if hardening is not None and hardening.result in PASS_THROUGH:
        reason = f"architecture-hardening returned {hardening.result}"
        {
            "HUMAN_GATE": human,
            "MISSING_DEPENDENCIES": missing_deps,
            "UNVERIFIED": unverified,
        }[hardening.result].append(reason)
    decisions = ledger.by_status(LedgerStatus.HUMAN_DECISION)
    if decisions:
        human.append("HUMAN_DECISION: " + ", ".join(i.id for i in decisions))
    if ledger.goal == "deferred-conflict":
        human.append("Goal deferred: conflicting goal ownership")
    if ledger.preflight is None:
        unverified.append("no preflight recorded")
    if ledger.convergence is None:
        unverified.append("no three-party convergence recorded")
    elif ledger.convergence.status == "UNVERIFIED":
        unverified.append("three-party convergence is UNVERIFIED (a position is missing)")
    pending = ledger.by_status(LedgerStatus.PENDING)
    if pending:
        unverified.append("PENDING: " + ", ".join(i.id for i in pending))
    if current is None:
        unverified.append("no current evidence id")
    goal_gate = latest.get(Gate.GOAL_GATE)
    if goal_gate is not None and not goal_gate.passed:
        human.append(f"goal-gate returned {goal_gate.result}: {goal_gate.detail or 'stop'}")
    for gate in COMPLETION_GATES:
        record = latest.get(gate)
        if record is None:
            unverified.append(f"{gate.value}: not run")
        elif current is not None and not record.evidence.same_snapshot(current):
            unverified.append(f"{gate.value}: stale (covers {evidence_id(record.evidence)})")
        elif not record.passed:
            unverified.append(f"{gate.value}: {record.result}")
        elif gate is Gate.AGENTIC_REVIEW and not record.proven:
            unverified.append(
                f"{gate.value}: {record.result} is self-reported; only an authenticated "
                "archived review packet of this evidence proves it"
            )
    # A spent budget matters only while no passing review covers the tree now: a Fix
    # resolved by returning to a snapshot already reviewed CLEAN is that review's.
    blind = latest.get(Gate.BLIND_REVIEW)
    covered = (
        blind is not None
        and blind.passed
        and current is not None
        and blind.evidence.same_snapshot(current)
    )
    reviews = ledger.blindReviews[ledger.blindBudgetFrom :]
    if not covered and len(reviews) >= MAX_BLIND_ROUNDS and reviews[-1].verdict == "FIX":
        unverified.append(f"blind review budget used ({MAX_BLIND_ROUNDS} rounds, last one FIX)")
    if missing_deps:
        return Result.MISSING_DEPENDENCIES, missing_deps
    if human:
        return Result.HUMAN_GATE, human + unverified
    if unverified:
        return Result.UNVERIFIED, unverified
    return Result.COMPLETED, []


def _findings_line(ledger: Ledger) -> str:
    if not ledger.blindReviews:
        return "none (no blind review yet)"
    counts: dict[str, list[str]] = {"Fix": [], "Backlog": [], "Reject": []}
    for review in ledger.blindReviews:
        for finding in review.findings:
            counts[finding.cls].append(f"r{review.round}:{finding.id}")
    fixed = counts["Fix"]
    return (
        f"Fixed {len(fixed)} ({', '.join(fixed) or 'none'}) / "
        f"Backlog {len(counts['Backlog'])} ({', '.join(counts['Backlog']) or 'none'}) / "
        f"Rejected {len(counts['Reject'])} ({', '.join(counts['Reject']) or 'none'})"
    )


def _gate_line(ledger: Ledger, gate: Gate, current: Evidence | None) -> str:
    record = ledger.latest_gates().get(gate)
    if record is None:
        return "not run"
    stale = "" if current and record.evidence.same_snapshot(current) else " — STALE"
    session = f"{record.session} + " if record.session else ""
    return f"{record.result}: {session}{evidence_id(record.evidence)}{stale}"


def _goal_gate_note(ledger: Ledger) -> str:
    record = ledger.latest_gates().get(Gate.GOAL_GATE)
    return f" (goal-gate: {record.result}, {record.provenance})" if record else ""


def gate_provenance(ledger: Ledger) -> dict[str, list[str]]:
    """The gates whose latest result is ``proven`` and those ``self-reported``."""
    out: dict[str, list[str]] = {PROVEN: [], SELF_REPORTED: []}
    for gate, record in ledger.latest_gates().items():
        out[record.provenance].append(gate.value)
    return out


def _provenance_line(ledger: Ledger) -> str:
    latest = ledger.latest_gates()
    proven = [
        f"{gate.value} ({record.proof.describe()})"
        for gate, record in latest.items()
        if record.proof is not None
    ]
    typed = [gate.value for gate, record in latest.items() if record.proof is None]
    return f"proven: {', '.join(proven) or 'none'}; self-reported: {', '.join(typed) or 'none'}"


def render_completion(inputs: CompletionInputs, result: Result, reasons: Iterable[str]) -> str:
    """The seed's "Task Completion Result" block."""
    ledger, current = inputs.ledger, inputs.evidence
    host_excluded = ledger.convergence.hostExclusions if ledger.convergence else ()
    excluded = exclusions_text(ledger, host_excluded)
    scope = ", ".join(i.id for i in ledger.items if i.status not in (LedgerStatus.EXCLUDED,))
    done = ", ".join(i.id for i in ledger.by_status(LedgerStatus.VERIFIED_DONE))
    decision = ledger.convergence.decision if ledger.convergence else "not recorded"
    blind = ledger.blindReviews[-1] if ledger.blindReviews else None
    audit = (
        f"{blind.verdict}: fresh {blind.product} session {blind.sessionId} + "
        f"{evidence_id(blind.evidence)}"
        + ("" if current and blind.evidence.same_snapshot(current) else " — STALE")
        if blind
        else "not run"
    )
    why = "; ".join(reasons)
    return (
        "Task Completion Result\n"
        f"- Scope / exclusions: {scope or 'none'} / {excluded}\n"
        f"- Work ledger: {ledger_summary(ledger)}\n"
        f"- Three-party decision: {decision}\n"
        f"- Goal: {ledger.goal}{_goal_gate_note(ledger)}\n"
        f"- Final evidence id: {evidence_id(current)}\n"
        f"- Implemented: {ledger.implemented or done or 'none recorded'}\n"
        f"- Verification: {_gate_line(ledger, Gate.VERIFICATION, current)}\n"
        f"- Agentic review: {_gate_line(ledger, Gate.AGENTIC_REVIEW, current)}\n"
        f"- Architecture hardening: {_gate_line(ledger, Gate.ARCHITECTURE_HARDENING, current)}\n"
        f"- Final Claude audit: {audit}\n"
        f"- Gate provenance: {_provenance_line(ledger)}\n"
        f"- Fixed / Backlog / Rejected: {_findings_line(ledger)}\n"
        f"- Protocol, Git, and external actions: {inputs.protocol}\n"
        f"- Lessons: {ledger.lessons or 'none (no comparable evidence recorded)'}\n"
        f"- Result: {result.value}\n" + (f"- Open: {why}\n" if why else "")
    )


def render_missing_dependencies(missing: Sequence[str]) -> str:
    """The seed's block for a failed preflight."""
    return (
        "Task Completion Result\n"
        "- Result: MISSING_DEPENDENCIES\n"
        f"- Missing: {'; '.join(missing)}\n"
        "- Stop point: before discussion, Goal activation, and source changes\n"
        "- Substitution/install: none; no generic agent impersonation, copied skill logic, "
        "or automatic install\n"
        "- Work started: no\n"
    )


# -- prompts ------------------------------------------------------------------------------------

BLIND_DIFF_LIMIT = 150_000


def ledger_text(ledger: Ledger) -> str:
    """The ledger as a Markdown table for prompts (``none`` when empty)."""
    if not ledger.items:
        return "(empty: no item recorded yet)"
    rows = ["| ID | Status | Title | Evidence |", "|---|---|---|---|"]
    for item in ledger.items:
        cells = (item.id, item.status.value, item.title, item.evidence)
        rows.append("| " + " | ".join(c.replace("|", "&#124;") for c in cells) + " |")
    return "\n".join(rows)


def round_a_prompt(side: str, plan: str, ledger: Ledger) -> str:
    """Round A: an independent position on the plan and ledger (no other position shown)."""
    from review_loop.agents.prompts import load_prompt

    return load_prompt("converge_round_a").format(
        side=side,
        position_block=load_prompt("converge_position_block"),
        ledger=ledger_text(ledger),
        plan=plan.strip(),
    )


def round_b_prompt(
    round_number: int, side: str, other: str, host: str, other_position: str, own_position: str
) -> str:
    """Round B: the host's and the other peer's positions, to be attacked."""
    from review_loop.agents.prompts import load_prompt

    return load_prompt("converge_round_b").format(
        round=round_number,
        side=side,
        other=other,
        position_block=load_prompt("converge_position_block"),
        host=host.strip(),
        other_position=other_position.strip(),
        own_position=own_position.strip(),
    )


def continuation_prompt(prompt: str) -> str:
    """The same request, sent again into the session whose earlier answer never arrived."""
    return (
        "Your answer to the request below did not reach the host (the call timed out or "
        "its delivery is unknown). Answer it now, in full.\n\n" + prompt
    )


def preflight_prompt() -> str:
    """The preflight round trip."""
    from review_loop.agents.prompts import load_prompt

    return load_prompt("converge_preflight") + "\n"


def blind_review_prompt(evidence: Evidence, diff: str) -> str:
    """The blind review: only the final evidence id and change set, nothing earlier."""
    from review_loop.agents.prompts import load_prompt

    if len(diff) > BLIND_DIFF_LIMIT:
        listed = "\n".join(f"- {p}" for p in evidence.coveredPaths)
        diff = (
            f"(the diff has {len(diff)} characters; its first {BLIND_DIFF_LIMIT} follow. "
            f"Open the changed files yourself:)\n{listed}\n\n{diff[:BLIND_DIFF_LIMIT]}"
        )
    identity = {
        "baseSha": evidence.baseSha,
        "pathFilter": evidence.pathFilter,
        "digest": evidence.digest,
        "coveredPaths": evidence.coveredPaths,
    }
    return (
        load_prompt("blind_review").format(
            evidence=json.dumps(identity, ensure_ascii=False, indent=2),
            diff=diff.rstrip("\n") or "(empty: no change against the base)",
        )
        + "\n"
    )
