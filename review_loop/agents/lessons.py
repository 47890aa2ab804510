"""Cross-task lessons of the task-completion loop (seed 004, "Cross-task experience"): pure.

One lesson per ``<slug>.md`` under ``${AGENT_LESSONS_DIR:-$HOME/.local/state/agent-lessons}/
task-completion-loop/``: outside the skill and outside the repository. A lesson has exactly
three parts, each required (a missing one means nothing is written):

- ``cue``: the shape of situation it applies to (no file names or business facts);
- ``lesson``: the approach or pitfall learned;
- ``evidence``: the evidence id, gate or blind-review conclusion that proves it.

A lesson never holds credentials or review scores (refused with the part named).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from review_loop.agents.errors import InputError

LESSONS_ENV = "AGENT_LESSONS_DIR"
DEFAULT_LESSONS_ROOT = "~/.local/state/agent-lessons"
LOOP_DIR = "task-completion-loop"
PARTS = ("cue", "lesson", "evidence")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
# What a lesson must never carry: a credential (common key shapes, key=value secrets) or a
# review score. Heuristics: a match is refused naming the part, never rewritten.
_FORBIDDEN = (
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}"), "an API key"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), "a GitHub token"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "an AWS access key"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (
        re.compile(r"(?i)\b(password|passwd|secret|api[_-]?key|token)\s*[:=]\s*\S+"),
        "a credential",
    ),
    (re.compile(r"(?i)\bscore[ds]?\s*[:=]?\s*\d+(\.\d+)?\s*(/|out of)\s*\d+"), "a review score"),
)


class Lesson(BaseModel):
    """One lesson file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slug: str
    cue: str
    lesson: str
    evidence: str

    def render(self) -> str:
        """The file text: one ``part: text`` line per part."""
        return "".join(f"{part}: {' '.join(getattr(self, part).split())}\n" for part in PARTS)


def parse_lesson(slug: str, text: str) -> Lesson | None:
    """A lesson file's parts (a line ``part: text``, continued by indented lines)."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key.strip().lower() in PARTS and not line[:1].isspace():
            current = key.strip().lower()
            found[current] = [rest.strip()]
        elif current is not None and line.strip():
            found[current].append(line.strip())
    values = {part: " ".join(found.get(part, [])).strip() for part in PARTS}
    if not all(values.values()):
        return None
    return Lesson(slug=slug, **values)


def checked_lesson(slug: str, cue: str, lesson: str, evidence: str) -> Lesson:
    """A lesson to write, every part present and clean.

    Raises:
        InputError: a bad slug, a blank part (the seed writes nothing then), or a part
            that holds a credential or a review score.
    """
    if not SLUG_RE.match(slug):
        raise InputError("--slug", f"{slug!r} is not a slug", f"matching {SLUG_RE.pattern}")
    values = {"cue": cue, "lesson": lesson, "evidence": evidence}
    for part, value in values.items():
        if not value.strip():
            raise InputError(
                f"--{part}", "is empty: a lesson needs cue, lesson and evidence, or none is written"
            )
        for pattern, what in _FORBIDDEN:
            if pattern.search(value):
                raise InputError(
                    f"--{part}", f"holds {what}", "lessons never carry credentials or scores"
                )
    return Lesson(slug=slug, **values)


def same_cue(one: str, other: str) -> bool:
    """Two cues name the same situation (case and spacing ignored): update, never add."""
    return " ".join(one.lower().split()) == " ".join(other.lower().split())
