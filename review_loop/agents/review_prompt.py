"""The reviewer's prompt: packet, frozen diff, answer format; a too-large diff summarised.

A diff that does not fit the prompt budget is cut per file: whole file diffs are inlined
while they fit, and every other changed path is still named, with its added/removed line
counts, under "not shown inline". Those paths must then be listed in the answer's
``## Coverage`` section before a passing verdict is accepted
(:func:`review_loop.agents.review.missing_coverage`): a review that never saw a changed
file must not pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template

from review_loop.agents.evidence import path_name
from review_loop.agents.prompts import load_prompt
from review_loop.agents.review import FINDING_COLUMNS, Ledger

DEFAULT_DIFF_BUDGET = 60_000
"""Characters of diff inlined in one prompt (prompts may travel as one argv word)."""

_CHUNK_START = re.compile(r"(?m)^(?=diff --git |review-evidence untracked-symlink-v1$)")


@dataclass(frozen=True, slots=True)
class DiffChunk:
    """One file's part of the frozen diff."""

    path: str | None
    text: str
    added: int
    removed: int


def _unquote_git(path: str) -> str:
    if len(path) >= 2 and path.startswith('"') and path.endswith('"'):
        raw = path[1:-1]
        out = bytearray()
        i = 0
        simple = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\"}
        while i < len(raw):
            ch = raw[i]
            if ch == "\\" and i + 1 < len(raw):
                nxt = raw[i + 1]
                if nxt in simple:
                    out += simple[nxt]
                    i += 2
                    continue
                if re.match(r"[0-7]{3}", raw[i + 1 : i + 4]):
                    out.append(int(raw[i + 1 : i + 4], 8))
                    i += 4
                    continue
            out += ch.encode("utf-8")
            i += 1
        return out.decode("utf-8", "surrogateescape")  # _named writes it as evidence does
    return path


def _named(path: str) -> str:
    """The path as ``coveredPaths`` names it (a name that is not UTF-8: C-quoted)."""
    return path_name(path.encode("utf-8", "surrogateescape"))


def _chunk_path(lines: Sequence[str]) -> str | None:
    if lines and lines[0] == "review-evidence untracked-symlink-v1" and len(lines) > 2:
        try:
            value = json.loads(lines[2])
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            return None
        return value if isinstance(value, str) else None
    for line in lines[1:12]:
        if line[:1] not in ("+", "-", "r"):  # none of the prefixes below can match
            continue
        for prefix, strip in (("+++ ", "b/"), ("rename to ", ""), ("--- ", "a/")):
            if line.startswith(prefix):
                raw = _unquote_git(line[len(prefix) :].rstrip("\t"))
                if raw == "/dev/null":
                    continue
                return _named(raw[len(strip) :] if strip and raw.startswith(strip) else raw)
    pattern = r"^diff --git (\S+|\"[^\"]+\") (\S+|\"[^\"]+\")$"
    header = re.match(pattern, lines[0]) if lines else None
    if header:
        b = _unquote_git(header.group(2))
        return _named(b[2:] if b.startswith("b/") else b)
    return None


def split_diff(diff_text: str) -> list[DiffChunk]:
    """The frozen diff cut at each file's ``diff --git`` header (or symlink record)."""
    if not diff_text.strip():
        return []
    chunks = []
    for part in _CHUNK_START.split(diff_text):
        if not part.strip():
            continue
        body = part.rstrip("\n")
        lines = body.splitlines()  # once per part: a tree of 100,000 new files has as many
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        chunks.append(DiffChunk(_chunk_path(lines), body, added, removed))
    return chunks


@dataclass(frozen=True, slots=True)
class DiffView:
    """What of the diff the prompt shows."""

    text: str
    note: str
    summarised: tuple[str, ...]
    """Changed paths whose diff is not in the prompt (must appear in ``## Coverage``)."""


def diff_view(diff_text: str, changed: Sequence[str], budget: int) -> DiffView:
    """Inline whole file diffs while they fit ``budget``; name every other changed path.

    Linear in the number of changed paths and diff parts (a vendored tree or a generated
    directory can change 100,000 paths): every membership test is a set or dict lookup.
    """
    if not diff_text.strip():
        return DiffView("(empty: no changes against the base)", "empty", ())
    if len(diff_text) <= budget:
        return DiffView(diff_text.rstrip("\n"), "complete", ())
    chunks = split_diff(diff_text)
    shown: list[DiffChunk] = []
    left: list[DiffChunk] = []
    used = 0
    for chunk in chunks:
        if chunk.path is not None and used + len(chunk.text) + 2 <= budget:
            shown.append(chunk)
            used += len(chunk.text) + 2
        else:
            left.append(chunk)
    summarised = _summarised_paths(changed, shown, left)
    stats = _left_stats(left)
    unnamed = sum(1 for c in left if c.path is None)
    summary = ["Not shown inline (read these in the frozen evidence file):"]
    for path in summarised:
        if path in stats:
            add, rem, size = stats[path]
            summary.append(f"- {path} (+{add} -{rem}, {size} characters of diff)")
        else:
            summary.append(f"- {path}")
    if unnamed:
        summary.append(f"- {unnamed} further diff part(s) without a file header")
    text = "\n\n".join([*(c.text for c in shown), "\n".join(summary)])
    note = (
        f"summarised: {len(shown)} of {len(chunks)} file diffs inline, "
        f"{len(summarised)} path(s) only named"
    )
    return DiffView(text, note, tuple(summarised))


def _summarised_paths(
    changed: Sequence[str], shown: Sequence[DiffChunk], left: Sequence[DiffChunk]
) -> list[str]:
    """The changed paths not inlined (in ``changed``'s order, repeats kept), then each path
    of a left-over diff part that ``changed`` does not list, once, in diff order."""
    inline_paths = {c.path for c in shown}
    summarised = [p for p in changed if p not in inline_paths]
    listed = set(changed)
    extra: set[str] = set()
    for chunk in left:
        if chunk.path is not None and chunk.path not in listed and chunk.path not in extra:
            extra.add(chunk.path)
            summarised.append(chunk.path)
    return summarised


def _left_stats(left: Sequence[DiffChunk]) -> dict[str, tuple[int, int, int]]:
    """``path: (added, removed, characters)`` summed over the path's left-over parts."""
    stats: dict[str, tuple[int, int, int]] = {}
    for chunk in left:
        if chunk.path is not None:
            add, rem, size = stats.get(chunk.path, (0, 0, 0))
            stats[chunk.path] = (add + chunk.added, rem + chunk.removed, size + len(chunk.text))
    return stats


@dataclass(frozen=True, slots=True)
class ReviewPrompt:
    """A round's prompt and the paths a passing answer must list under ``## Coverage``."""

    text: str
    format_rules: str
    must_cover: tuple[str, ...]


def _coverage_rule(must_cover: Sequence[str]) -> str:
    if not must_cover:
        return "(optional) ## Coverage: the changed paths you read."
    return (
        "## Coverage: a list of every path you reviewed. It MUST name each path listed "
        "under 'Not shown inline' ("
        + ", ".join(must_cover)
        + "); a passing verdict without them is rejected."
    )


def _prior_table(ledger: Ledger) -> str:
    rows = []
    for fid, finding in ledger.catalog.items():
        state = ledger.status.get(fid, "open")
        rows.append(
            f"- {fid} [{state}] ({'blocking' if finding.blocking else 'non-blocking'}): "
            f"{finding.title} — required fix: {finding.requiredFix}"
        )
    return "\n".join(rows) or "(none)"


def build_review_prompt(
    *,
    round_number: int,
    packet_id: str,
    packet_path: str,
    packet_body: str,
    base_sha: str,
    evidence_path: str,
    paths: Sequence[str] | None,
    changed: Sequence[str],
    diff_text: str,
    ledger: Ledger,
    budget: int = DEFAULT_DIFF_BUDGET,
) -> ReviewPrompt:
    """The reviewer prompt for one round."""
    view = diff_view(diff_text, changed, budget)
    values = {
        "round": str(round_number),
        "packet_id": packet_id,
        "packet_path": packet_path,
        "base_sha": base_sha,
        "evidence_path": evidence_path,
        "paths": ", ".join(paths) if paths else "(all changed paths)",
        "changed_paths": "\n".join(f"- {p}" for p in changed) or "- (none)",
        "prior_ids": ", ".join(ledger.finding_ids) or "(none)",
        "prior_table": _prior_table(ledger),
        "coverage_rule": _coverage_rule(view.summarised),
        "packet_text": packet_body.strip(),
        "diff_note": view.note,
        "diff_text": view.text,
    }
    name = "review_round1" if round_number <= 1 else "review_rereview"
    template = load_prompt(name)
    text = Template(template).substitute(values) + "\n"
    rules_start = template.index("Your answer MUST")
    rules_end = template.index("--- packet ---")
    rules = Template(template[rules_start:rules_end]).substitute(values).strip()
    return ReviewPrompt(text=text, format_rules=rules, must_cover=view.summarised)


def correction_prompt(prompt: ReviewPrompt, error: str, round_number: int, *, resumed: bool) -> str:
    """The one correction round: the error and the format (the whole prompt if not resumed)."""
    text = Template(load_prompt("review_correction")).substitute(
        error=error, round=str(round_number), format=prompt.format_rules
    )
    if not resumed:
        text += "\n\n--- the original request ---\n" + prompt.text
    return text + "\n"


__all__ = [
    "DEFAULT_DIFF_BUDGET",
    "FINDING_COLUMNS",
    "DiffChunk",
    "DiffView",
    "ReviewPrompt",
    "build_review_prompt",
    "correction_prompt",
    "diff_view",
    "split_diff",
]
