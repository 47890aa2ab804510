"""The review run's pure rules: branch slug, reviewer-answer parsing, verdicts, the ledger.

No I/O here. The orchestrator (``review_loop.orchestrator.workflows.review_run``) reads
and writes packets and state; this module only decides what a text means.

Reviewer answers (``docs/origins.md`` §3.7 step 9):

- round 1: a findings table with the seven columns
  ``ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check``;
- round ≥ 2: ``## Prior Findings Reassessment`` (``ID | 状态 | 复核证据``, covering exactly
  the prior IDs, each with non-empty evidence), ``## New Findings`` and
  ``## Regression Surface``;
- both: exactly one terminal verdict, ``Verdict: TOKEN`` as the last non-empty line or a
  bare ``TOKEN`` right after ``## Verdict``.

An unescaped ``|`` inside a cell breaks the column count and is malformed (pipes are
written ``&#124;``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from review_loop.agents.branch import branch_identity as branch_identity
from review_loop.agents.branch import branch_slug as branch_slug
from review_loop.agents.constants import DEFAULT_ROUNDS as DEFAULT_ROUNDS
from review_loop.agents.errors import FormatError

# -- branch slug (origins §3.3) ---------------------------------------------------------

# ``branch_identity`` and ``branch_slug`` (imported above) live in agents/branch.py: plain,
# so ``ledger show`` names its run without the review models (docs/performance.md).


def legacy_branch_slug(branch: str) -> str:
    """The v1 slug (lowercase, ``/`` → ``-``), still read when looking for packets."""
    return branch.lower().replace("/", "-")


SCOPE_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+){0,2}$")
SCOPE_MAX = 24


def valid_scope(scope: str) -> bool:
    """1–3 kebab-case words, at most 24 characters."""
    return len(scope) <= SCOPE_MAX and SCOPE_RE.match(scope) is not None


# -- verdicts -----------------------------------------------------------------------------


class Verdict(StrEnum):
    """The reviewer's terminal verdict."""

    PASS = "PASS"
    PASS_WITH_CONCERNS = "PASS_WITH_CONCERNS"
    BLOCKED = "BLOCKED"
    NO_FINDINGS = "NO_FINDINGS"


class ReviewFormatError(FormatError):
    """The reviewer's answer broke the contract; ``str(error)`` says how, for correction."""


_DECOR = r"[`*_\s]*"
_TOKEN = r"(PASS_WITH_CONCERNS|NO_FINDINGS|BLOCKED|PASS)\b"
_VERDICT_LINE = re.compile(rf"^\s*[`*_]*verdict{_DECOR}[:：]{_DECOR}{_TOKEN}[`*_]*\s*\.?\s*$", re.I)
_VERDICT_HEADING = re.compile(r"^\s*#{1,6}\s*verdict\s*[:：]?\s*$", re.I)
_BARE_TOKEN = re.compile(rf"^\s*[`*_]*{_TOKEN}[`*_]*\s*\.?\s*$")
_ANY_VERDICT_MENTION = re.compile(rf"verdict{_DECOR}[:：]{_DECOR}{_TOKEN}", re.I)


def parse_verdict(text: str) -> Verdict:
    """The one terminal verdict of ``text``.

    Raises:
        ReviewFormatError: no verdict, more than one, or not at the end.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ReviewFormatError("empty answer: no Verdict line")
    found: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        match = _VERDICT_LINE.match(line)
        if match:
            found.append((index, match.group(1).upper()))
            continue
        if _VERDICT_HEADING.match(line) and index + 1 < len(lines):
            bare = _BARE_TOKEN.match(lines[index + 1])
            if bare:
                found.append((index + 1, bare.group(1).upper()))
    mentions = len(_ANY_VERDICT_MENTION.findall(text))
    if not found:
        raise ReviewFormatError(
            "no terminal verdict: end the answer with exactly one line "
            "'Verdict: PASS|PASS_WITH_CONCERNS|BLOCKED|NO_FINDINGS'"
        )
    if len(found) > 1 or mentions > 1:
        raise ReviewFormatError(
            f"more than one verdict ({', '.join(v for _, v in found)}): give exactly one, "
            "as the last line"
        )
    index, token = found[0]
    if index != len(lines) - 1:
        raise ReviewFormatError("the Verdict line must be the last non-empty line of the answer")
    return Verdict(token)


# -- tables -------------------------------------------------------------------------------

FINDING_COLUMNS = (
    "ID",
    "严重度",
    "标题",
    "证据",
    "Target files",
    "Required fix",
    "Acceptance check",
)
_FINDING_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "severity": ("严重度", "severity"),
    "title": ("标题", "title"),
    "evidence": ("证据", "evidence"),
    "targetFiles": ("target files", "targetfiles", "target_files"),
    "requiredFix": ("required fix", "requiredfix", "required_fix"),
    "acceptanceCheck": ("acceptance check", "acceptancecheck", "acceptance_check"),
}
REASSESSMENT_COLUMNS = ("ID", "状态", "复核证据")
_REASSESS_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "status": ("状态", "status"),
    "evidence": ("复核证据", "evidence", "re-check evidence", "recheck evidence"),
}
_SEPARATOR_CELL = re.compile(r"^:?-{3,}:?$")
_PLACEHOLDER = re.compile(r"^(?:|-+|—+|–+|n/?a|none|无|\(none\)|（无）)$", re.I)


def _split_row(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return None
    body = stripped[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [cell.strip().replace("\\|", "&#124;") for cell in cells]


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().strip("*`_").strip()).lower()


def _header_map(cells: Sequence[str], aliases: dict[str, tuple[str, ...]]) -> dict[str, int] | None:
    names = [_norm(c) for c in cells]
    found: dict[str, int] = {}
    for key, options in aliases.items():
        for index, name in enumerate(names):
            # "状态 (resolved|partially|unresolved)" style headers: match on the first word
            head = re.split(r"[\s(（]", name, maxsplit=1)[0] if key == "status" else name
            if name in options or head in options:
                found[key] = index
                break
    return found if len(found) == len(aliases) else None


class _Table(BaseModel):
    columns: dict[str, int]
    width: int
    rows: list[list[str]]


def _tables(lines: Sequence[str], aliases: dict[str, tuple[str, ...]], what: str) -> list[_Table]:
    """Every table in ``lines`` whose header has all the ``aliases`` columns."""
    tables: list[_Table] = []
    index = 0
    while index < len(lines):
        header = _split_row(lines[index])
        if header is None or index + 1 >= len(lines):
            index += 1
            continue
        columns = _header_map(header, aliases)
        separator = _split_row(lines[index + 1])
        if (
            columns is None
            or separator is None
            or not all(_SEPARATOR_CELL.match(c) for c in separator if c)
        ):
            index += 1
            continue
        if len(separator) != len(header):
            raise ReviewFormatError(
                f"{what} table: the separator row has {len(separator)} cells, the header "
                f"{len(header)}"
            )
        rows: list[list[str]] = []
        index += 2
        while index < len(lines):
            cells = _split_row(lines[index])
            if cells is None:
                break
            if len(cells) != len(header):
                raise ReviewFormatError(
                    f"{what} table: a row has {len(cells)} cells where the header has "
                    f"{len(header)} (write a literal pipe inside a cell as &#124;): "
                    f"{lines[index].strip()[:200]}"
                )
            rows.append(cells)
            index += 1
        tables.append(_Table(columns=columns, width=len(header), rows=rows))
    return tables


# -- findings -----------------------------------------------------------------------------

_BLOCKING = re.compile(r"阻塞|blocking|blocker", re.I)
_NON_BLOCKING = re.compile(r"非阻塞|non[- ]?blocking|non[- ]?blocker", re.I)
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")


def is_blocking(severity: str) -> bool:
    """``阻塞|blocking|blocker`` and not ``非阻塞|non-blocking``."""
    return bool(_BLOCKING.search(severity)) and not _NON_BLOCKING.search(severity)


def split_files(cell: str) -> list[str]:
    """A ``Target files`` cell as a list of paths (comma, semicolon or ``<br>`` separated)."""
    parts = re.split(r"\s*(?:,|;|<br\s*/?>|、)\s*", cell)
    out = []
    for part in parts:
        part = part.strip().strip("`").strip()
        if part and not _PLACEHOLDER.match(part):
            out.append(part)
    return out


class Finding(BaseModel):
    """One row of a findings table."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    severity: str
    title: str
    evidence: str
    targetFiles: list[str]
    requiredFix: str
    acceptanceCheck: str
    blocking: bool
    round: int = 1

    def row(self) -> str:
        """The row as the packet shows it."""
        cells = [
            self.id,
            self.severity,
            self.title,
            self.evidence,
            ", ".join(self.targetFiles),
            self.requiredFix,
            self.acceptanceCheck,
        ]
        return "| " + " | ".join(escape_cell(c) for c in cells) + " |"

    def document(self) -> dict[str, object]:
        """The finding as ``run`` prints it: the original's keys and types.

        ``targetFiles`` is a string (the files joined with ``", "``) as the original
        ``review-loop`` prints it, so a client's ``targetFiles.split(",")`` works;
        ``targetFileList`` adds the parsed list. ``evidence``, ``requiredFix`` and
        ``acceptanceCheck`` tell the fixer what to do and how it will be checked.
        """
        return {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "evidence": self.evidence,
            "targetFiles": ", ".join(self.targetFiles),
            "targetFileList": list(self.targetFiles),
            "requiredFix": self.requiredFix,
            "acceptanceCheck": self.acceptanceCheck,
            "blocking": self.blocking,
        }


def escape_cell(text: str) -> str:
    """A cell value safe inside a markdown table row."""
    return text.replace("\r", "").replace("\n", "<br>").replace("|", "&#124;")


def _findings_from(table: _Table, round_number: int) -> list[Finding]:
    out: list[Finding] = []
    c = table.columns
    for cells in table.rows:
        if all(_PLACEHOLDER.match(cell) for cell in cells):
            continue
        fid = cells[c["id"]].strip("`*_ ")
        if not _ID_RE.match(fid):
            raise ReviewFormatError(f"finding ID {fid!r} is not a short identifier such as F1")
        severity = cells[c["severity"]]
        if not (_BLOCKING.search(severity) or _NON_BLOCKING.search(severity)):
            raise ReviewFormatError(
                f"finding {fid}: severity {severity!r} must be [阻塞] (blocking) or "
                "[非阻塞] (non-blocking)"
            )
        title = cells[c["title"]]
        if not title or _PLACEHOLDER.match(title):
            raise ReviewFormatError(f"finding {fid}: the title is empty")
        out.append(
            Finding(
                id=fid,
                severity=severity,
                title=title,
                evidence=cells[c["evidence"]],
                targetFiles=split_files(cells[c["targetFiles"]]),
                requiredFix=cells[c["requiredFix"]],
                acceptanceCheck=cells[c["acceptanceCheck"]],
                blocking=is_blocking(severity),
                round=round_number,
            )
        )
    seen: set[str] = set()
    for finding in out:
        if finding.id in seen:
            raise ReviewFormatError(f"finding ID {finding.id} appears twice")
        seen.add(finding.id)
    return out


def _one_findings_table(lines: Sequence[str], round_number: int, what: str) -> list[Finding]:
    tables = _tables(lines, _FINDING_ALIASES, what)
    if not tables:
        raise ReviewFormatError(f"no {what} table with the columns " + " | ".join(FINDING_COLUMNS))
    if len(tables) > 1:
        raise ReviewFormatError(f"more than one {what} table: give exactly one")
    return _findings_from(tables[0], round_number)


# -- sections -----------------------------------------------------------------------------

_H2 = re.compile(r"^\s*##\s+(.+?)\s*#*\s*$")


def h2_sections(text: str) -> dict[str, list[str]]:
    """``## Title`` → its lines, keyed by the lowercased title (outside code fences)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        match = None if fence else _H2.match(line)
        if match:
            current = sections.setdefault(_norm(match.group(1)), [])
            continue
        if current is not None:
            current.append(line)
    return sections


def _section(sections: dict[str, list[str]], *names: str) -> list[str] | None:
    for name in names:
        for key, lines in sections.items():
            if key == name or key.startswith(name):
                return lines
    return None


# -- parsed answers -----------------------------------------------------------------------

ReassessStatus = Literal["resolved", "partially", "unresolved"]


class Reassessment(BaseModel):
    """One row of the prior-findings reassessment."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    status: ReassessStatus
    evidence: str

    def row(self) -> str:
        """The row as the packet shows it."""
        return f"| {escape_cell(self.id)} | {self.status} | {escape_cell(self.evidence)} |"


class ReviewAnswer(BaseModel):
    """A reviewer's answer that passed every format check."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    round: int
    verdict: Verdict
    findings: list[Finding] = Field(default_factory=list)
    """Round 1: the findings; later rounds: the new findings."""
    reassessments: list[Reassessment] = Field(default_factory=list)
    regressionSurface: str = ""
    coverage: list[str] = Field(default_factory=list)
    """Paths the reviewer says it read (``## Coverage``); checked for summarised diffs."""


_STATUS_WORDS: dict[str, ReassessStatus] = {
    "resolved": "resolved",
    "fixed": "resolved",
    "已解决": "resolved",
    "partially": "partially",
    "partial": "partially",
    "partially_resolved": "partially",
    "partially resolved": "partially",
    "部分解决": "partially",
    "unresolved": "unresolved",
    "未解决": "unresolved",
    "open": "unresolved",
}


def _status(cell: str, fid: str) -> ReassessStatus:
    word = _norm(cell).strip("[]")
    status = _STATUS_WORDS.get(word)
    if status is None:
        raise ReviewFormatError(
            f"reassessment of {fid}: status {cell!r} must be resolved, partially or unresolved"
        )
    return status


def _coverage(sections: dict[str, list[str]]) -> list[str]:
    lines = _section(sections, "coverage", "files reviewed")
    if lines is None:
        return []
    paths: list[str] = []
    for line in lines:
        stripped = line.strip()
        stripped = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", stripped)
        if stripped.startswith("|"):
            cells = _split_row(stripped) or []
            stripped = cells[0] if cells else ""
            if _SEPARATOR_CELL.match(stripped) or _norm(stripped) in ("path", "file"):
                continue
        stripped = stripped.strip("`").strip()
        if stripped:
            paths.append(stripped.split("`")[0].strip())
    return paths


def parse_answer(text: str, round_number: int, prior_ids: Sequence[str]) -> ReviewAnswer:
    """Check and parse a reviewer's answer for ``round_number``.

    Args:
        text: the reviewer's reply.
        round_number: 1 for the first review, ≥ 2 for a re-review.
        prior_ids: every finding ID of the ledger (round ≥ 2 must reassess exactly these).

    Raises:
        ReviewFormatError: the answer breaks the contract; the message is for the reviewer.
    """
    verdict = parse_verdict(text)
    lines = text.splitlines()
    sections = h2_sections(text)
    coverage = _coverage(sections)
    if round_number <= 1:
        findings = _one_findings_table(lines, 1, "findings")
        return ReviewAnswer(round=1, verdict=verdict, findings=findings, coverage=coverage)
    reassess_lines = _required(
        sections, "prior findings reassessment", "Prior Findings Reassessment"
    )
    new_lines = _required(sections, "new findings", "New Findings")
    regression_text = _regression_surface(sections)
    reassessments = _reassessments(reassess_lines, prior_ids)
    return ReviewAnswer(
        round=round_number,
        verdict=verdict,
        findings=_new_findings(new_lines, round_number),
        reassessments=reassessments,
        regressionSurface=regression_text,
        coverage=coverage,
    )


def _required(sections: dict[str, list[str]], key: str, title: str) -> list[str]:
    """The lines of the section ``## title`` (looked up as ``key``), which must be there."""
    lines = _section(sections, key)
    if lines is None:
        raise ReviewFormatError(f"missing section '## {title}'")
    return lines


def _regression_surface(sections: dict[str, list[str]]) -> str:
    """The re-review's ``## Regression Surface`` conclusion, verdict lines left out."""
    regression = _required(sections, "regression surface", "Regression Surface")
    regression_text = "\n".join(
        line for line in regression if not _VERDICT_LINE.match(line)
    ).strip()
    if not regression_text:
        raise ReviewFormatError("'## Regression Surface' is empty: give a short conclusion")
    return regression_text


def _reassessments(lines: list[str], prior_ids: Sequence[str]) -> list[Reassessment]:
    """The ``## Prior Findings Reassessment`` table: one row per prior finding, exactly."""
    tables = _tables(lines, _REASSESS_ALIASES, "reassessment")
    if len(tables) != 1:
        if prior_ids or tables:
            raise ReviewFormatError(
                "'## Prior Findings Reassessment' needs exactly one table with the columns "
                + " | ".join(REASSESSMENT_COLUMNS)
            )
        rows: list[list[str]] = []
        columns: dict[str, int] = {}
    else:
        rows, columns = tables[0].rows, tables[0].columns
    reassessments: list[Reassessment] = []
    for cells in rows:
        if all(_PLACEHOLDER.match(cell) for cell in cells):
            continue
        fid = cells[columns["id"]].strip("`*_ ")
        evidence = cells[columns["evidence"]]
        if not evidence or _PLACEHOLDER.match(evidence):
            raise ReviewFormatError(f"reassessment of {fid}: the re-check evidence is empty")
        reassessments.append(
            Reassessment(id=fid, status=_status(cells[columns["status"]], fid), evidence=evidence)
        )
    _check_reassessed([r.id for r in reassessments], prior_ids)
    return reassessments


def _check_reassessed(given: list[str], prior_ids: Sequence[str]) -> None:
    """Refuse a reassessment that repeats an ID, misses a prior one or adds another."""
    if len(set(given)) != len(given):
        raise ReviewFormatError("a prior finding is reassessed twice")
    missing = [fid for fid in prior_ids if fid not in given]
    extra = [fid for fid in given if fid not in prior_ids]
    if missing or extra:
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing)}")
        if extra:
            detail.append(f"not prior findings: {', '.join(extra)}")
        raise ReviewFormatError(
            "the reassessment must cover exactly the prior finding IDs "
            f"{', '.join(prior_ids) or '(none)'} ({'; '.join(detail)})"
        )


def _new_findings(lines: list[str], round_number: int) -> list[Finding]:
    """The ``## New Findings`` table, or none when the section says so ('None')."""
    new_tables = _tables(lines, _FINDING_ALIASES, "new findings")
    if len(new_tables) > 1:
        raise ReviewFormatError("'## New Findings' holds more than one findings table")
    if new_tables:
        return _findings_from(new_tables[0], round_number)
    rest = " ".join(line.strip() for line in lines if line.strip())
    rest = re.sub(r"[.。]$", "", rest)
    if rest and not _PLACEHOLDER.match(rest):
        raise ReviewFormatError(
            "'## New Findings' must be a findings table with the columns "
            + " | ".join(FINDING_COLUMNS)
            + " (or 'None')"
        )
    return []


def missing_coverage(answer: ReviewAnswer, required: Iterable[str]) -> list[str]:
    """Required paths the answer's ``## Coverage`` does not name (only passing verdicts).

    A review that never saw a changed file must not pass: when part of the diff was only
    summarised in the prompt, a passing verdict must name every summarised path.
    """
    if answer.verdict is Verdict.BLOCKED:
        return []
    named = set(answer.coverage)
    return [path for path in required if path not in named]


# -- ledger -------------------------------------------------------------------------------


class Ledger(BaseModel):
    """Every finding so far and which stay open.

    ``status`` holds the latest state of each catalog ID: ``open`` (new, ``unresolved`` or
    ``partially``) or ``resolved``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    catalog: dict[str, Finding] = Field(default_factory=dict)
    status: dict[str, Literal["open", "resolved"]] = Field(default_factory=dict)

    @property
    def finding_ids(self) -> list[str]:
        """Every catalog ID, in the order found."""
        return list(self.catalog)

    @property
    def open_blocking(self) -> list[str]:
        """Open blocking findings."""
        return [i for i, f in self.catalog.items() if self.status[i] == "open" and f.blocking]

    @property
    def open_concerns(self) -> list[str]:
        """Open non-blocking findings."""
        return [i for i, f in self.catalog.items() if self.status[i] == "open" and not f.blocking]


def apply_answer(ledger: Ledger, answer: ReviewAnswer) -> Ledger:
    """The ledger after ``answer``, with the verdict invariants checked.

    Round 1 builds the catalog. Later rounds close ``resolved`` IDs, keep ``unresolved`` and
    ``partially`` open, and add new IDs (which must be unused). Then:
    PASS_WITH_CONCERNS → no open blocking and ≥ 1 open concern; PASS / NO_FINDINGS →
    nothing open; BLOCKED → ≥ 1 open blocking.

    Raises:
        ReviewFormatError: a reused ID or a verdict the ledger contradicts.
    """
    catalog = dict(ledger.catalog) if answer.round > 1 else {}
    status = dict(ledger.status) if answer.round > 1 else {}
    for item in answer.reassessments:
        status[item.id] = "resolved" if item.status == "resolved" else "open"
    for finding in answer.findings:
        if finding.id in catalog:
            raise ReviewFormatError(
                f"new finding ID {finding.id} is already used by a prior finding; pick an unused ID"
            )
        catalog[finding.id] = finding
        status[finding.id] = "open"
    after = Ledger(catalog=catalog, status=status)
    blocking, concerns = after.open_blocking, after.open_concerns
    verdict = answer.verdict
    if verdict is Verdict.BLOCKED and not blocking:
        raise ReviewFormatError("Verdict BLOCKED needs at least one open blocking ([阻塞]) finding")
    if verdict is Verdict.PASS_WITH_CONCERNS and (blocking or not concerns):
        raise ReviewFormatError(
            "Verdict PASS_WITH_CONCERNS needs no open blocking finding and at least one open "
            f"non-blocking concern (open blocking: {blocking or 'none'}, "
            f"open concerns: {concerns or 'none'})"
        )
    if verdict in (Verdict.PASS, Verdict.NO_FINDINGS) and (blocking or concerns):
        raise ReviewFormatError(
            f"Verdict {verdict.value} needs every finding resolved (open: "
            f"{', '.join(blocking + concerns)})"
        )
    return after


__all__ = [
    "FINDING_COLUMNS",
    "REASSESSMENT_COLUMNS",
    "Finding",
    "Ledger",
    "Reassessment",
    "ReviewAnswer",
    "ReviewFormatError",
    "Verdict",
    "apply_answer",
    "branch_identity",
    "branch_slug",
    "escape_cell",
    "h2_sections",
    "is_blocking",
    "legacy_branch_slug",
    "missing_coverage",
    "parse_answer",
    "parse_verdict",
    "split_files",
    "valid_scope",
]
