"""The lessons directory of the task-completion loop: list at Phase 0, write one at the end.

The directory is the user's (``$AGENT_LESSONS_DIR`` or ``~/.local/state/agent-lessons``,
then ``task-completion-loop/``), never the repository's. Listing reads every ``*.md``
there (the host picks the entries whose cue matches its task: a lesson is a hint, the
code and the evidence prevail). Writing keeps the seed's rules: all three parts or
nothing; an entry with the same slug or the same cue is updated, not duplicated; with
``--run``, at most one entry per run, and the run's ledger records it (its ``Lessons``
line of the Task Completion Result).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from review_loop.agents.errors import InputError
from review_loop.agents.lessons import (
    DEFAULT_LESSONS_ROOT,
    LESSONS_ENV,
    LOOP_DIR,
    Lesson,
    parse_lesson,
    same_cue,
)
from review_loop.orchestrator.handoff.files import atomic_write_bytes

WRITTEN_PREFIX = "written "


def lessons_dir(env: Mapping[str, str] | None = None) -> Path:
    """``${AGENT_LESSONS_DIR:-$HOME/.local/state/agent-lessons}/task-completion-loop``."""
    env = os.environ if env is None else env
    root = env.get(LESSONS_ENV) or DEFAULT_LESSONS_ROOT
    if root.startswith("~"):
        root = str(Path(env.get("HOME") or Path.home())) + root[1:]
    return Path(root) / LOOP_DIR


def read_lessons(directory: Path) -> tuple[list[Lesson], list[str]]:
    """Every lesson in ``directory`` (sorted by slug) and the files that are none."""
    lessons: list[Lesson] = []
    unreadable: list[str] = []
    if not directory.is_dir():
        return lessons, unreadable
    for path in sorted(directory.glob("*.md")):
        try:
            parsed = parse_lesson(path.stem, path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError):
            parsed = None
        if parsed is None:
            unreadable.append(str(path))
        else:
            lessons.append(parsed)
    return lessons, unreadable


def list_lessons(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``lessons list`` document."""
    directory = lessons_dir(env)
    lessons, unreadable = read_lessons(directory)
    return {
        "ok": True,
        "dir": str(directory),
        "count": len(lessons),
        "lessons": [
            {**item.model_dump(), "path": str(directory / f"{item.slug}.md")} for item in lessons
        ],
        "unreadable": unreadable,
        "note": "hints only: where a lesson conflicts with the code, the evidence or the "
        "user's decisions, those prevail",
    }


def write_lesson(
    lesson: Lesson, *, env: Mapping[str, str] | None = None, ledger_written: str = ""
) -> dict[str, Any]:
    """Write ``lesson``, updating an entry with its slug or its cue.

    ``ledger_written`` is the run ledger's ``lessons`` text: a run that already wrote
    another entry may not write a second (the seed: at most one per run).

    Raises:
        InputError: this run already wrote a different entry.
    """
    directory = lessons_dir(env)
    existing, _ = read_lessons(directory)
    match = next(
        (e for e in existing if e.slug == lesson.slug or same_cue(e.cue, lesson.cue)), None
    )
    slug = match.slug if match else lesson.slug
    earlier = ledger_written.removeprefix(WRITTEN_PREFIX).split(" ", 1)[0]
    if ledger_written.startswith(WRITTEN_PREFIX) and earlier != slug:
        raise InputError(
            "--slug",
            f"this run already wrote the lesson {earlier!r}; the seed allows one per run",
            f"--slug {earlier} (to update it)",
        )
    final = lesson.model_copy(update={"slug": slug})
    path = directory / f"{slug}.md"
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, final.render().encode("utf-8"))
    return {
        "ok": True,
        "status": "updated" if match else "written",
        "path": str(path),
        "lesson": final.model_dump(),
        "ledgerLessons": f"{WRITTEN_PREFIX}{slug} ({'updated' if match else 'new'}; "
        f"evidence: {' '.join(final.evidence.split())})",
    }
