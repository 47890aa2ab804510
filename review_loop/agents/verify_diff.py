"""verify-diff's pure contract: modes, scenarios, verdicts, edits, rails' checks, results.

No I/O here. ``review_loop.orchestrator.workflows.verify_diff`` reads the repository,
dispatches the executor and writes files; this module decides what a text means and
what the run reports. The rules are the seed's (``seeds/000_a61d05858c837abb.txt``) and
the public original's field semantics (``docs/origins.md`` §1):

- mode: all three framing fields non-blank → explicit-args; none → auto-derive; one or
  two → the ``incomplete args`` result;
- a verdict is parsed in the seed's order: parse failure, schema violation, converged
  (edits discarded), divergence (from iteration 2, sorted multisets), apply;
- an edit lands only when its ``old_string`` occurs exactly once in the re-read text;
- ``iterations_used`` counts dispatches that returned a valid verdict (including the
  converging one); ``applied_edits_count`` counts edits that landed, also ones a rail
  later reverted; ``objective_met`` and ``unresolved_gaps`` come from the last verdict
  only for ``converged``, ``unresolved`` and ``divergent gaps``; ``reason`` is JSON
  ``null`` for ``converged`` and ``unresolved``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import yaml

from review_loop.agents.errors import FormatError
from review_loop.agents.prompts import load_prompt

Mode = Literal["explicit-args", "auto-derive", "incomplete"]
Status = Literal["converged", "unresolved", "skipped", "conflict"]
AggregateStatus = Literal["converged", "partial", "unresolved", "skipped", "conflict"]
ObjectiveMet = Literal["yes", "partial", "no", "unknown"]
VerdictObjective = Literal["yes", "partial", "no"]
Confidence = Literal["high", "medium", "low"]
Reason = Literal[
    "verdict parse failure",
    "verdict schema violation",
    "divergent gaps",
    "frontmatter broken",
    "scope violation",
    "missing target",
    "incomplete args",
    "empty diff",
    "dispatch error",
]
AutoEarlyReason = Literal["empty diff", "no skill files in diff"]
ParseProblem = Literal["verdict parse failure", "verdict schema violation"]
Action = Literal["converged", "divergent", "apply"]

PARSE_FAILURE: ParseProblem = "verdict parse failure"
SCHEMA_VIOLATION: ParseProblem = "verdict schema violation"
SCENARIO_HEAD_LINES = 100
MIN_CHECKLIST, MAX_CHECKLIST = 3, 7
CRITICAL_TAG = "[critical]"
PROGRESS_PREFIX = "[verify-diff]"


# -- mode ---------------------------------------------------------------------------------


def provided(value: str | None) -> bool:
    """A field counts as provided iff it is non-empty and not whitespace-only."""
    return value is not None and value.strip() != ""


def select_mode(description: str | None, fix_direction: str | None, target: str | None) -> Mode:
    """All three framing fields → explicit-args; none → auto-derive; else incomplete."""
    count = sum(provided(v) for v in (description, fix_direction, target))
    if count == 3:
        return "explicit-args"
    if count == 0:
        return "auto-derive"
    return "incomplete"


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """The explicit-args summary (Step 5); also the body of a per-skill verdict."""

    status: Status
    iterations_used: int = 0
    objective_met: ObjectiveMet = "unknown"
    applied_edits_count: int = 0
    unresolved_gaps: tuple[str, ...] = ()
    reverted_paths: tuple[str, ...] = ()
    reason: Reason | None = None

    def to_json(self) -> dict[str, Any]:
        """The seed's schema, in the seed's key order; ``reason`` may be JSON null."""
        return {
            "status": self.status,
            "iterations_used": self.iterations_used,
            "objective_met": self.objective_met,
            "applied_edits_count": self.applied_edits_count,
            "unresolved_gaps": list(self.unresolved_gaps),
            "reverted_paths": list(self.reverted_paths),
            "reason": self.reason,
        }


def early_result(reason: Literal["incomplete args", "missing target", "empty diff"]) -> Result:
    """The early returns: ``skipped`` (incomplete args, missing target) or ``conflict``."""
    return Result(status="conflict" if reason == "empty diff" else "skipped", reason=reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillVerdict:
    """One skill's verdict in auto-derive mode (A2 § Per-skill verdict)."""

    primary_file: str
    files: tuple[str, ...]
    inferred_intent: str | None
    result: Result

    def to_json(self) -> dict[str, Any]:
        """The per-skill object, in the seed's key order."""
        return {
            "primary_file": self.primary_file,
            "files": list(self.files),
            "inferred_intent": self.inferred_intent,
            **self.result.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoResult:
    """The auto-derive aggregate (A3)."""

    status: AggregateStatus
    iterations_used_total: int = 0
    applied_edits_count_total: int = 0
    non_skill_files: tuple[str, ...] = ()
    per_skill: Mapping[str, SkillVerdict] = field(default_factory=dict)
    reason: AutoEarlyReason | None = None

    def to_json(self) -> dict[str, Any]:
        """The aggregate schema, in the seed's key order."""
        return {
            "mode": "auto-derive",
            "status": self.status,
            "iterations_used_total": self.iterations_used_total,
            "applied_edits_count_total": self.applied_edits_count_total,
            "non_skill_files": list(self.non_skill_files),
            "per_skill": {name: v.to_json() for name, v in self.per_skill.items()},
            "reason": self.reason,
        }


def auto_early_result(reason: AutoEarlyReason, non_skill_files: Sequence[str] = ()) -> AutoResult:
    """A1's early returns: ``skipped`` with the reason string."""
    return AutoResult(status="skipped", non_skill_files=tuple(non_skill_files), reason=reason)


def aggregate_status(statuses: Iterable[Status]) -> AggregateStatus:
    """A3's precedence rule, first match wins."""
    found = list(statuses)
    if "conflict" in found:
        return "conflict"
    if "unresolved" in found:
        return "unresolved"
    if all(s == "converged" for s in found):
        return "converged"
    if all(s == "skipped" for s in found):
        return "skipped"
    return "partial"


def aggregate(non_skill_files: Sequence[str], per_skill: Mapping[str, SkillVerdict]) -> AutoResult:
    """Sum the per-skill verdicts; the top-level ``reason`` is JSON null."""
    verdicts = list(per_skill.values())
    return AutoResult(
        status=aggregate_status(v.result.status for v in verdicts),
        iterations_used_total=sum(v.result.iterations_used for v in verdicts),
        applied_edits_count_total=sum(v.result.applied_edits_count for v in verdicts),
        non_skill_files=tuple(non_skill_files),
        per_skill=dict(per_skill),
        reason=None,
    )


# -- verdicts -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """One suggested edit; ``file`` is set in auto-derive mode only."""

    old_string: str
    new_string: str
    rationale: str = ""
    file: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """An executor verdict that passed the parse and schema checks."""

    objective_met: VerdictObjective
    remaining_gaps: tuple[str, ...]
    regressions: tuple[str, ...]
    suggested_edits: tuple[Edit, ...]
    confidence: Confidence
    inferred_intent: str | None = None


_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<rest>.*)$")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced code block as ``(info word, body)``, in order (CommonMark fences).

    A block closes at a line of the same fence character at least as long as the
    opener; JSON strings cannot span lines, so fences quoted inside a JSON value never
    end a block.
    """
    blocks: list[tuple[str, str]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence, rest = match.group("fence"), match.group("rest")
        if fence[0] == "`" and "`" in rest:  # an inline code span, not a fence
            index += 1
            continue
        words = rest.split()
        info = words[0].lower() if words else ""
        body: list[str] = []
        index += 1
        while index < len(lines):
            stripped = lines[index].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            body.append(lines[index])
            index += 1
        blocks.append((info, "\n".join(body)))
        index += 1
    return blocks


def last_json_block(text: str) -> str | None:
    """The body of the last fenced block tagged ``json`` (else the last untagged block
    that opens with ``{``), or ``None`` when there is none."""
    blocks = fenced_blocks(text)
    for info, body in reversed(blocks):
        if info == "json":
            return body
    for info, body in reversed(blocks):
        if info == "" and body.lstrip().startswith("{"):
            return body
    return None


def _str_list(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


def _non_blank(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _edits(value: object, *, auto: bool) -> tuple[Edit, ...] | None:
    if not isinstance(value, list):
        return None
    edits: list[Edit] = []
    for entry in value:
        if not isinstance(entry, dict):
            return None
        old, new = entry.get("old_string"), entry.get("new_string")
        rationale = entry.get("rationale", "")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        if not isinstance(rationale, str):
            return None
        target = entry.get("file")
        if auto and not _non_blank(target):
            return None
        edits.append(
            Edit(
                old_string=old,
                new_string=new,
                rationale=rationale,
                file=str(target) if auto else None,
            )
        )
    return tuple(edits)


REQUIRED_KEYS = ("objective_met", "remaining_gaps", "regressions", "suggested_edits", "confidence")


def parse_verdict(text: str, *, auto: bool = False) -> Verdict | ParseProblem:
    """Read the executor's answer: the last fenced JSON block, checked against the schema.

    Returns ``"verdict parse failure"`` when there is no fenced JSON block or it is not
    JSON; ``"verdict schema violation"`` when it is not an object, a required key is
    missing, ``objective_met`` or ``confidence`` is outside its enum, a list is not a list
    of strings, or an edit lacks its strings. ``auto`` adds the auto-derive checks: a
    non-empty ``inferred_intent`` and a non-empty ``file`` on every edit.
    """
    block = last_json_block(text)
    if block is None:
        return PARSE_FAILURE
    try:
        data = json.loads(block)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return PARSE_FAILURE
    if not isinstance(data, dict) or any(key not in data for key in REQUIRED_KEYS):
        return SCHEMA_VIOLATION
    objective = data["objective_met"]
    confidence = data["confidence"]
    gaps = _str_list(data["remaining_gaps"])
    regressions = _str_list(data["regressions"])
    edits = _edits(data["suggested_edits"], auto=auto)
    if (
        objective not in get_args(VerdictObjective)
        or confidence not in get_args(Confidence)
        or gaps is None
        or regressions is None
        or edits is None
    ):
        return SCHEMA_VIOLATION
    intent = data.get("inferred_intent")
    if auto and not _non_blank(intent):
        return SCHEMA_VIOLATION
    return Verdict(
        objective_met=objective,
        remaining_gaps=gaps,
        regressions=regressions,
        suggested_edits=edits,
        confidence=confidence,
        inferred_intent=str(intent).strip() if auto else None,
    )


def same_multiset(a: Sequence[str], b: Sequence[str]) -> bool:
    """Equal as multisets: each sorted textually, then compared."""
    return sorted(a) == sorted(b)


def decide(verdict: Verdict, iteration: int, previous: Verdict | None) -> Action:
    """Sub-cases 3–5 of Step 3 (b): converged, divergence (from iteration 2), apply."""
    if verdict.objective_met == "yes" and not verdict.regressions:
        return "converged"
    if (
        iteration >= 2
        and previous is not None
        and same_multiset(verdict.remaining_gaps, previous.remaining_gaps)
        and same_multiset(verdict.regressions, previous.regressions)
    ):
        return "divergent"
    return "apply"


@dataclass(slots=True)
class Tally:
    """What one loop has counted so far, and how its summary is filled in."""

    iterations_used: int = 0
    applied_edits_count: int = 0
    first: Verdict | None = None
    last: Verdict | None = None

    def record(self, verdict: Verdict) -> None:
        """A dispatch returned a valid verdict."""
        self.iterations_used += 1
        if self.first is None:
            self.first = verdict
        self.last = verdict

    def result(
        self, status: Status, reason: Reason | None = None, reverted: Sequence[str] = ()
    ) -> Result:
        """The summary, with the field semantics of the original (docs/origins.md §1.3)."""
        last = self.last
        from_last = last is not None and (
            status in ("converged", "unresolved") or reason == "divergent gaps"
        )
        gaps_from_last = last is not None and (status == "unresolved" or reason == "divergent gaps")
        return Result(
            status=status,
            iterations_used=self.iterations_used,
            objective_met=last.objective_met if from_last and last else "unknown",
            applied_edits_count=self.applied_edits_count,
            unresolved_gaps=last.remaining_gaps if gaps_from_last and last else (),
            reverted_paths=tuple(reverted),
            reason=None if status in ("converged", "unresolved") else reason,
        )


# -- edits and the frontmatter rail -------------------------------------------------------


def _replace_once(text: str, old: str, new: str) -> str | None:
    if not old:
        return None
    first = text.find(old)
    if first < 0 or text.find(old, first + 1) >= 0:
        return None
    return text[:first] + new + text[first + len(old) :]


def apply_edit(text: str, old: str, new: str) -> str | None:
    """``text`` with ``old`` replaced by ``new``, or ``None`` unless ``old`` occurs exactly
    once (overlapping occurrences count).

    In a file with CRLF line ends, an ``old`` written with bare ``\n`` that does not
    match as given is tried once more with CRLF (in ``old`` and ``new``), since agents
    quote files with ``\n``.
    """
    replaced = _replace_once(text, old, new)
    if replaced is None and "\r\n" in text and "\n" in old and "\r\n" not in old:
        replaced = _replace_once(text, old.replace("\n", "\r\n"), new.replace("\n", "\r\n"))
    return replaced


FrontmatterState = Literal["none", "ok", "unclosed", "invalid"]


def frontmatter_state(text: str) -> FrontmatterState:
    """``none`` (no opening ``---`` line), ``ok``, ``unclosed`` or ``invalid`` YAML."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        return "none"
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            block = "\n".join(lines[1:index])
            try:
                yaml.safe_load(block)
            except yaml.YAMLError:
                return "invalid"
            return "ok"
    return "unclosed"


def frontmatter_broken(text: str, before: str | None = None) -> bool:
    """Whether the Frontmatter integrity rail trips for ``text``.

    A ``---``-delimited block that does not parse as YAML is broken. An opening ``---``
    with no closing line is broken too, unless ``before`` (the text before this
    iteration's edits) was already like that — then the file is not frontmatter-style
    (a YAML document, say) and the rail does not apply. No opening line: no rail.
    """
    state = frontmatter_state(text)
    if state == "invalid":
        return True
    if state == "unclosed":
        return before is None or frontmatter_state(before) != "unclosed"
    return False


def frontmatter_description(text: str) -> str | None:
    """The frontmatter's ``description`` value, if it has one."""
    if frontmatter_state(text) != "ok":
        return None
    lines = text.removeprefix("\ufeff").splitlines()
    end = next(i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "..."))
    data = yaml.safe_load("\n".join(lines[1:end]))
    if isinstance(data, dict) and _non_blank(data.get("description")):
        return str(data["description"]).strip()
    return None


# -- auto-derive grouping ------------------------------------------------------------------

_SKILL_PATH = re.compile(r"^(?P<prefix>(?:\.claude/)?skills)/(?P<name>[^/]+)/.+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillGroup:
    """One skill's changed files (both prefixes merged) and its primary file."""

    name: str
    files: tuple[str, ...]
    primary_file: str


def group_by_skill(paths: Iterable[str]) -> tuple[dict[str, SkillGroup], tuple[str, ...]]:
    """Split changed paths into skills (``skills/<name>/``, ``.claude/skills/<name>/``,
    merged by name) and ``non_skill_files``; both sorted.

    ``primary_file`` is ``<skill-dir>/SKILL.md`` when changed (the ``skills/`` form
    preferred), else the lexicographically first file.
    """
    by_name: dict[str, set[str]] = {}
    others: set[str] = set()
    for path in paths:
        match = _SKILL_PATH.match(path)
        if match is None:
            others.add(path)
        else:
            by_name.setdefault(match.group("name"), set()).add(path)
    groups: dict[str, SkillGroup] = {}
    for name in sorted(by_name):
        files = tuple(sorted(by_name[name]))
        preferred = (f"skills/{name}/SKILL.md", f".claude/skills/{name}/SKILL.md")
        primary = next((p for p in preferred if p in files), files[0])
        groups[name] = SkillGroup(name=name, files=files, primary_file=primary)
    return groups, tuple(sorted(others))


# -- scenarios ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One evaluation scenario with its requirements checklist."""

    kind: Literal["median", "edge"]
    title: str
    description: str
    checklist: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The scenarios-file shape."""
        return {
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "checklist": list(self.checklist),
        }


class ScenarioError(FormatError):
    """Scenarios that break Step 2's rules; the message says which rule."""


def _scenario(index: int, entry: object) -> Scenario:
    where = f"scenarios[{index}]"
    if not isinstance(entry, dict):
        raise ScenarioError(f"{where} is not an object")
    kind = entry.get("kind")
    if kind not in ("median", "edge"):
        raise ScenarioError(f"{where}.kind must be 'median' or 'edge'")
    description = entry.get("description")
    if not _non_blank(description):
        raise ScenarioError(f"{where}.description must be non-blank text")
    title = entry.get("title", "")
    if not isinstance(title, str):
        raise ScenarioError(f"{where}.title must be text")
    checklist = entry.get("checklist")
    if not isinstance(checklist, list) or not all(_non_blank(item) for item in checklist):
        raise ScenarioError(f"{where}.checklist must be a list of non-blank strings")
    if not MIN_CHECKLIST <= len(checklist) <= MAX_CHECKLIST:
        raise ScenarioError(
            f"{where}.checklist has {len(checklist)} items; it needs "
            f"{MIN_CHECKLIST}-{MAX_CHECKLIST}"
        )
    items = tuple(str(item).strip() for item in checklist)
    if not any(item.lower().startswith(CRITICAL_TAG) for item in items):
        raise ScenarioError(f"{where}.checklist needs at least one item tagged {CRITICAL_TAG}")
    return Scenario(
        kind=kind, title=title.strip(), description=str(description).strip(), checklist=items
    )


def parse_scenarios(data: object) -> tuple[Scenario, ...]:
    """Validate ``{"scenarios": [...]}`` (or the bare list): a median scenario first, at
    most one edge scenario after it, 3–7 checklist items each, at least one ``[critical]``.

    Raises:
        ScenarioError: the first rule broken.
    """
    entries = data.get("scenarios") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not 1 <= len(entries) <= 2:
        raise ScenarioError("expected 1-2 scenarios under 'scenarios'")
    scenarios = tuple(_scenario(i, entry) for i, entry in enumerate(entries))
    if scenarios[0].kind != "median":
        raise ScenarioError("the first scenario must be the median one")
    if len(scenarios) == 2 and scenarios[1].kind != "edge":
        raise ScenarioError("a second scenario must be the edge one")
    return scenarios


def parse_scenarios_reply(text: str) -> tuple[Scenario, ...] | None:
    """Scenarios from an agent's answer (its last fenced JSON block), or ``None``."""
    block = last_json_block(text)
    if block is None:
        return None
    try:
        return parse_scenarios(json.loads(block))
    except (ValueError, RecursionError, ScenarioError):
        return None


def fallback_scenarios(declared_purpose: str | None) -> tuple[Scenario, ...]:
    """The median scenario when no valid scenarios came back (Step 2 always yields one).

    Built from the target file alone: its frontmatter ``description`` when it declares one,
    else intent-framed items any file of instructions must meet. It never quotes the
    Finding's Description or fix direction: the executor judges without that framing
    (Step 3: "you have not seen the original Finding framing").
    """
    purpose = " ".join(declared_purpose.split()) if declared_purpose else ""
    first = (
        f"{CRITICAL_TAG} The file achieves what it declares as its purpose: {purpose}"
        if purpose
        else f"{CRITICAL_TAG} A typical user following the file as written reaches the "
        "outcome it promises, with no step failing or left ambiguous"
    )
    checklist = (
        first,
        "Every instruction, command or example the file gives works as written when run",
        "Behaviour the file relied on before the diff still works (no regressions)",
    )
    return (
        Scenario(
            kind="median",
            title="typical use",
            description="Use the target file as its typical user would, after the diff.",
            checklist=checklist,
        ),
    )


def render_scenarios(scenarios: Sequence[Scenario]) -> str:
    """The SCENARIOS section text: identical on every iteration of a run."""
    parts = []
    for number, scenario in enumerate(scenarios, start=1):
        heading = f"Scenario {number} ({scenario.kind})"
        if scenario.title:
            heading += f": {scenario.title}"
        items = "\n".join(f"- {item}" for item in scenario.checklist)
        parts.append(f"{heading}\n{scenario.description}\n\nRequirements checklist:\n{items}")
    return "\n\n".join(parts)


def scenarios_prompt(description: str, fix_direction: str, target: str, head: str) -> str:
    """The read-only call that derives the scenarios (Step 2), once per run."""
    return (
        f"{load_prompt('verify_diff_scenarios')}\n\n"
        f"--- DESCRIPTION ---\n{description.strip()}\n\n"
        f"--- SUGGESTED FIX DIRECTION ---\n{fix_direction.strip()}\n\n"
        f"--- TARGET FILE ---\n{target}\n\n"
        f"--- FIRST {SCENARIO_HEAD_LINES} LINES OF THE TARGET FILE ---\n{head}\n"
    )


def head_lines(text: str, count: int = SCENARIO_HEAD_LINES) -> str:
    """The first ``count`` lines of ``text``."""
    return "".join(text.splitlines(keepends=True)[:count])


# -- executor prompts ---------------------------------------------------------------------


def _fenced_section(label: str, body: str) -> str:
    return f"--- {label} ---\n{body.rstrip(chr(10))}\n"


def executor_prompt(target_text: str, diff: str, scenarios: str) -> str:
    """Explicit-args dispatch: TARGET FILE, UNIFIED DIFF, SCENARIOS, EXECUTOR PROMPT."""
    return "\n".join(
        [
            _fenced_section("TARGET FILE", target_text),
            _fenced_section("UNIFIED DIFF", diff),
            _fenced_section("SCENARIOS", scenarios),
            _fenced_section("EXECUTOR PROMPT", load_prompt("verify_diff_executor")),
        ]
    )


MISSING_FILE_NOTE = "(this file does not exist in the working tree)"


def auto_executor_prompt(skill: str, diff: str, files: Mapping[str, str | None]) -> str:
    """Auto-derive dispatch: DIFF, AFFECTED FILES, INFERENCE PROMPT, RESPONSE FORMAT."""
    affected = "\n\n".join(
        f"### {path}\n{MISSING_FILE_NOTE if text is None else text.rstrip(chr(10))}"
        for path, text in files.items()
    )
    inference = load_prompt("verify_diff_auto_executor").replace("<skill-name>", skill)
    return "\n".join(
        [
            _fenced_section("DIFF", diff),
            _fenced_section("AFFECTED FILES", affected),
            _fenced_section("INFERENCE PROMPT", inference),
            _fenced_section("RESPONSE FORMAT", load_prompt("verify_diff_auto_response")),
        ]
    )


# -- progress rows ------------------------------------------------------------------------


class IterationBoard:
    """The pre-registered iteration rows (``iteration k`` / ``<skill> iter k``), shown to
    a person as lines: ``pending`` up front, ``in_progress`` before each dispatch,
    ``completed`` after parse and apply; on an early exit the rows left are completed
    with ``— skipped: <reason> at iter <i>``.
    """

    def __init__(self, labels: Sequence[str], emit: Callable[[str], None]) -> None:
        self._labels = list(labels)
        self._emit = emit
        self._done = 0

    @classmethod
    def explicit(cls, count: int, emit: Callable[[str], None]) -> IterationBoard:
        """Rows ``iteration 1`` … ``iteration <count>``."""
        return cls([f"iteration {i}" for i in range(1, count + 1)], emit)

    @classmethod
    def for_skill(cls, skill: str, count: int, emit: Callable[[str], None]) -> IterationBoard:
        """Rows ``<skill> iter 1`` … ``<skill> iter <count>``."""
        return cls([f"{skill} iter {i}" for i in range(1, count + 1)], emit)

    def _row(self, index: int, status: str, note: str = "") -> None:
        total = len(self._labels)
        line = f"{PROGRESS_PREFIX} {self._labels[index]} ({index + 1}/{total}): {status}"
        self._emit(line + (f" — {note}" if note else ""))

    def register(self) -> None:
        """Every row, ``pending``."""
        for index in range(len(self._labels)):
            self._row(index, "pending")

    def start(self, iteration: int) -> None:
        """Row ``iteration`` (1-based) is ``in_progress``."""
        self._row(iteration - 1, "in_progress")

    def complete(self, iteration: int, note: str = "") -> None:
        """Row ``iteration`` is ``completed``."""
        self._row(iteration - 1, "completed", note)
        self._done = max(self._done, iteration)

    def close(self, iteration: int, note: str) -> None:
        """Early exit at ``iteration``: complete it and every row after it with ``note``."""
        self.complete(iteration, note)
        for index in range(iteration, len(self._labels)):
            self._row(index, "completed", f"skipped: {note}")
        self._done = len(self._labels)


def exit_note(result: Result, iteration: int) -> str:
    """``converged at iter 2``, ``divergent gaps at iter 3`` …"""
    what = "converged" if result.status == "converged" else str(result.reason or result.status)
    return f"{what} at iter {iteration}"


__all__ = [
    "AutoResult",
    "Edit",
    "IterationBoard",
    "Result",
    "Scenario",
    "ScenarioError",
    "SkillGroup",
    "SkillVerdict",
    "Tally",
    "Verdict",
    "aggregate",
    "aggregate_status",
    "apply_edit",
    "auto_early_result",
    "auto_executor_prompt",
    "decide",
    "early_result",
    "executor_prompt",
    "fallback_scenarios",
    "frontmatter_broken",
    "frontmatter_description",
    "group_by_skill",
    "head_lines",
    "parse_scenarios",
    "parse_scenarios_reply",
    "parse_verdict",
    "render_scenarios",
    "same_multiset",
    "scenarios_prompt",
    "select_mode",
]
