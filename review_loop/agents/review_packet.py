"""The review packet as text: frontmatter, H1 stages, and the stages the run appends.

A packet is a markdown file::

    ---
    packet_id: <slug>/<base>
    branch: <identity>
    ...
    ---

    # Review Handoff            (or # Review Intake)
    # Review Findings           round 1, appended by `run`
    # Fix Handoff               with BLOCKED / concerns to fix
    # Fix Completion            appended by `fix-completion`
    # Re-review                 round ≥ 2
    # Decision Closure          appended by `close`

Every H1 has an anchor (its title in snake case); ``last_anchor`` in the frontmatter must
name the last H1. Pure: parsing and rendering only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from review_loop.agents.errors import FormatError
from review_loop.agents.review import (
    FINDING_COLUMNS,
    REASSESSMENT_COLUMNS,
    Finding,
    Ledger,
    ReviewAnswer,
    Verdict,
    apply_answer,
    h2_sections,
    parse_answer,
)

ANCHORS = {
    "review handoff": "review_handoff",
    "review intake": "review_intake",
    "review findings": "review_findings",
    "fix handoff": "fix_handoff",
    "fix completion": "fix_completion",
    "re-review": "re_review",
    "decision closure": "decision_closure",
}
FIX_COMPLETION_SECTIONS = (
    "Fix Conclusion",
    "Original Findings Snapshot",
    "Finding Status",
    "Verification",
    "Re-review Instructions",
)
PACKET_NAME_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-[a-z0-9]+(?:-[a-z0-9]+){0,2}(?:-\d{2})?\.md$"
)


class PacketFormatError(FormatError):
    """The packet text is not a packet this tool can work on."""


def anchor_of(title: str) -> str:
    """The anchor of an H1 title (``Re-review`` → ``re_review``)."""
    key = re.sub(r"\s+", " ", title.strip()).lower()
    return ANCHORS.get(key, re.sub(r"[^a-z0-9]+", "_", key).strip("_"))


def split_packet(text: str) -> tuple[dict[str, str], str]:
    """``(frontmatter, body)``. Frontmatter values are plain strings, in file order.

    Raises:
        PacketFormatError: no ``---`` frontmatter block at the top.
    """
    if not text.startswith("---\n"):
        raise PacketFormatError("the packet does not start with a '---' frontmatter block")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise PacketFormatError("the packet's frontmatter block is not closed with '---'")
    meta: dict[str, str] = {}
    for line in text[4:end].splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise PacketFormatError(f"frontmatter line is not 'key: value': {line!r}")
        meta[key.strip()] = _unquote(value.strip())
    return meta, text[end + 5 :]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _quote(value: str) -> str:
    if value == "" or re.search(r"[:#\"'\n]|^\s|\s$", value):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'
    return value


def render_frontmatter(meta: Mapping[str, str]) -> str:
    """The ``---`` block for ``meta``."""
    lines = [f"{key}: {_quote(str(value))}" for key, value in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n"


def join_packet(meta: Mapping[str, str], body: str) -> str:
    """Frontmatter plus body."""
    return render_frontmatter(meta) + body


def h1_titles(body: str) -> list[str]:
    """Every H1 title of ``body``, outside code fences, in order."""
    titles: list[str] = []
    fence = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        if not fence and line.startswith("# "):
            titles.append(line[2:].strip())
    return titles


def h1_sections(body: str) -> list[tuple[str, str]]:
    """``[(anchor, text under the H1), ...]`` in order."""
    anchors: list[str] = []
    texts: list[list[str]] = []
    fence = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and line.startswith("# "):
            anchors.append(anchor_of(line[2:]))
            texts.append([])
            continue
        if texts:
            texts[-1].append(line)
    return [(a, "\n".join(t)) for a, t in zip(anchors, texts, strict=True)]


def demote_headings(text: str) -> str:
    """Embedded free text: an H1 inside it would fake a stage, so make it an H3."""
    out = []
    fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and re.match(r"^#{1,2}\s", line):
            line = "###" + line.lstrip("#")
        out.append(line)
    return "\n".join(out)


# -- new packets --------------------------------------------------------------------------


def new_packet_text(
    *,
    packet_id: str,
    branch: str,
    scope: str,
    created: str,
    intake: bool,
    base_sha: str,
    paths: Sequence[str] | None,
) -> str:
    """A fresh packet: frontmatter and the ``# Review Handoff`` (or intake) stage."""
    anchor = "review_intake" if intake else "review_handoff"
    title = "Review Intake" if intake else "Review Handoff"
    meta = {
        "packet_id": packet_id,
        "branch": branch,
        "scope": scope,
        "created": created,
        "updated": created,
        "last_anchor": anchor,
        "lifecycle_state": "in_progress",
        "round": "1",
        "loop": "on",
    }
    scope_line = ", ".join(paths) if paths else "(every changed path)"
    body = (
        f"\n# {title}\n\n"
        f"- Scope: {scope}\n"
        f"- Branch: {branch}\n"
        f"- Base: {base_sha}\n"
        f"- Paths: {scope_line}\n"
        "- Mode: auto (review-loop run)\n\n"
        "Review the working tree against the pinned base. The frozen diff of each round is "
        "the evidence; the reviewer is read-only and answers on stdout.\n"
    )
    return join_packet(meta, body)


# -- stages -------------------------------------------------------------------------------


# The findings tables keep the original's Chinese column names and severity tokens
# (reviewers write them, clients and the packet's own reader key on them); a person reading
# the packet finds them in English under each table. No line starts with "|": no reader
# takes it for a table row.
FINDINGS_LEGEND = (
    "_Columns: 严重度 = severity ([阻塞] = blocking, [非阻塞] = non-blocking), "
    "标题 = title, 证据 = evidence._"
)
REASSESSMENT_LEGEND = (
    "_Columns: 状态 = status (resolved, partially or unresolved), 复核证据 = re-check evidence._"
)


def _findings_table(findings: Sequence[Finding]) -> str:
    header = "| " + " | ".join(FINDING_COLUMNS) + " |"
    sep = "|" + "|".join("---" for _ in FINDING_COLUMNS) + "|"
    return "\n".join([header, sep, *(f.row() for f in findings), "", FINDINGS_LEGEND])


def _meta_lines(items: Mapping[str, object]) -> str:
    return "\n".join(f"- {key}: {value}" for key, value in items.items() if value is not None)


def review_stage(
    *,
    answer: ReviewAnswer,
    ledger: Ledger,
    reviewer: str,
    session_id: str | None,
    base_sha: str,
    evidence_path: str,
    digest: str,
    fix_handoff: bool,
    completion: str,
) -> tuple[str, str]:
    """The markdown a round appends, and the anchor of its last H1.

    Round 1 is ``# Review Findings`` (plus ``# Fix Handoff`` when something must be
    fixed); later rounds are ``# Re-review``.
    """
    head = _meta_lines(
        {
            "round": answer.round,
            "reviewer": reviewer,
            "session": session_id or "unknown",
            "base_sha": base_sha,
            "evidence": evidence_path,
            "evidence_digest": digest,
        }
    )
    if answer.round <= 1:
        text = (
            f"\n# Review Findings\n\n{head}\n\n"
            f"{_findings_table(answer.findings)}\n\n"
            f"Verdict: {answer.verdict.value}\n"
        )
        anchor = "review_findings"
        if fix_handoff:
            text += fix_handoff_text(ledger, answer.verdict, completion)
            anchor = "fix_handoff"
    else:
        rows = "\n".join(r.row() for r in answer.reassessments)
        rheader = "| " + " | ".join(REASSESSMENT_COLUMNS) + " |\n|---|---|---|"
        text = (
            f"\n# Re-review\n\n{head}\n\n"
            f"## Prior Findings Reassessment\n\n{rheader}\n{rows}\n\n{REASSESSMENT_LEGEND}\n\n"
            f"## New Findings\n\n"
            + (_findings_table(answer.findings) if answer.findings else "None")
            + "\n\n## Regression Surface\n\n"
            + demote_headings(answer.regressionSurface)
            + "\n"
        )
        if fix_handoff:
            # A re-review keeps re_review as its last anchor: the handoff is an H2 here.
            text += fix_handoff_text(ledger, answer.verdict, completion, heading="##")
        text += f"\n## Verdict\n\nVerdict: {answer.verdict.value}\n"
        anchor = "re_review"
    return text, anchor


def rebuild_ledger(body: str) -> Ledger:
    """The ledger re-derived from the review stages the packet shows, in order.

    Raises:
        ReviewFormatError: a stage cannot be read back (the ledger cannot be rebuilt).
    """
    ledger = Ledger()
    round_number = 0
    for anchor, text in h1_sections(body):
        if anchor == "review_findings":
            round_number = 1
        elif anchor == "re_review":
            round_number += 1
        else:
            continue
        ledger = apply_answer(ledger, parse_answer(text, round_number, ledger.finding_ids))
    return ledger


def fix_handoff_text(
    ledger: Ledger, verdict: Verdict, completion: str, *, heading: str = "#"
) -> str:
    """Fix instructions: the open findings and how to hand back."""
    items = []
    for fid in ledger.open_blocking + ledger.open_concerns:
        f = ledger.catalog[fid]
        kind = "blocking" if f.blocking else "concern"
        items.append(
            f"- {fid} ({kind}): {f.title} — required fix: {f.requiredFix}; acceptance: "
            f"{f.acceptanceCheck}"
        )
    why = (
        "blocking findings are open"
        if verdict is Verdict.BLOCKED
        else f"completion={completion} requires the concerns to be fixed"
    )
    return (
        f"\n{heading} Fix Handoff\n\n"
        f"Fix before re-review ({why}):\n\n" + "\n".join(items) + "\n\n"
        "Then record the fix with `review-loop fix-completion --packet <packet> --body-file "
        "<md>` (sections: " + ", ".join(FIX_COMPLETION_SECTIONS) + ") and re-review with "
        "`review-loop run --continue --packet <packet>`.\n"
    )


def normalise_fix_completion(body: str) -> str:
    """The Fix Completion stage text, checked.

    Prefixes ``# Fix Completion`` when the body has no H1.

    Raises:
        PacketFormatError: another H1, or a required H2 missing or empty.
    """
    text = body.strip("\n")
    titles = h1_titles(text)
    if not titles:
        text = "# Fix Completion\n\n" + text
    elif titles != ["Fix Completion"] or not text.startswith("# Fix Completion"):
        raise PacketFormatError(
            "the body must start with '# Fix Completion' and hold no other H1 "
            f"(found: {', '.join(titles)})"
        )
    sections = h2_sections(text)
    for name in FIX_COMPLETION_SECTIONS:
        lines = sections.get(name.lower())
        if lines is None:
            raise PacketFormatError(
                f"missing section '## {name}' (required: "
                + ", ".join(f"## {n}" for n in FIX_COMPLETION_SECTIONS)
                + ")"
            )
        if not "\n".join(lines).strip():
            raise PacketFormatError(f"section '## {name}' is empty")
    return "\n" + text + "\n"


def decision_closure_text(
    *, reason: str, concern_ids: Sequence[str], closed: str, evidence_digest: str | None
) -> str:
    """The ``# Decision Closure`` stage ``close`` appends."""
    ids = ", ".join(concern_ids) or "none"
    return (
        "\n# Decision Closure\n\n"
        f"- reason: {reason}\n"
        "- original_verdict: PASS_WITH_CONCERNS (not rewritten to PASS)\n"
        f"- accepted_concerns: {ids}\n"
        f"- evidence_digest: {evidence_digest or 'unknown'}\n"
        f"- closed: {closed}\n\n"
        "The user accepted the open non-blocking concerns; the packet is archived as is.\n"
    )


def fixer_position(body: str) -> dict[str, object]:
    """What the last Fix Completion says (for ``budget_exhausted``)."""
    fixes = [text for anchor, text in h1_sections(body) if anchor == "fix_completion"]
    if not fixes:
        return {
            "present": False,
            "conclusion": None,
            "findingStatus": None,
            "verification": None,
            "fixRoundsCompleted": 0,
            "note": "No # Fix Completion stage on packet (budget exhausted before a fix pass, "
            "or Fix Completion missing)",
        }
    sections = h2_sections(fixes[-1])

    def text_of(name: str) -> str | None:
        lines = sections.get(name)
        return "\n".join(lines).strip() if lines is not None else None

    return {
        "present": True,
        "conclusion": text_of("fix conclusion"),
        "findingStatus": text_of("finding status"),
        "verification": text_of("verification"),
        "fixRoundsCompleted": len(fixes),
    }


__all__ = [
    "ANCHORS",
    "FIX_COMPLETION_SECTIONS",
    "PACKET_NAME_RE",
    "PacketFormatError",
    "anchor_of",
    "decision_closure_text",
    "demote_headings",
    "fix_handoff_text",
    "fixer_position",
    "h1_sections",
    "h1_titles",
    "join_packet",
    "new_packet_text",
    "normalise_fix_completion",
    "rebuild_ledger",
    "render_frontmatter",
    "review_stage",
    "split_packet",
]
