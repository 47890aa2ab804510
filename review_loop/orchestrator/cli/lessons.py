"""``review-loop lessons``: the task-completion loop's cross-task lessons (seed 004).

- ``list``: every lesson in ``${AGENT_LESSONS_DIR:-~/.local/state/agent-lessons}/
  task-completion-loop/`` with its cue, lesson and evidence (Phase 0 reads them).
- ``write --slug S --cue C --lesson L --evidence E [--run NAME]``: write one lesson (all
  three parts or nothing; the same slug or cue is updated); with ``--run`` at most one per
  run, recorded in that run's ledger (the result's ``Lessons`` line).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = [
    "review-loop lessons [list]",
    "review-loop lessons write --slug S --cue C --lesson L --evidence E [--repo DIR --run NAME]",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the action and its options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("action", nargs="?", default="list")
    parser.add_argument("--slug")
    parser.add_argument("--cue", default="")
    parser.add_argument("--lesson", default="")
    parser.add_argument("--evidence", default="")
    parser.add_argument("--run")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """List, or validate everything then write (nothing is written on bad input)."""
    from review_loop.agents.errors import InputError
    from review_loop.agents.lessons import checked_lesson
    from review_loop.orchestrator.workflows.lessons import list_lessons, write_lesson

    if args.action == "list":
        return list_lessons()
    if args.action != "write":
        raise InputError("action", f"unknown lessons action {args.action!r}", "list | write")
    if not args.slug:
        raise InputError("--slug", "is required", "a slug such as fix-before-rereview")
    lesson = checked_lesson(args.slug, args.cue, args.lesson, args.evidence)
    if args.run is None:
        return write_lesson(lesson)
    return _write_for_run(args, lesson)


def _write_for_run(args: argparse.Namespace, lesson: Any) -> Mapping[str, Any]:
    """Write under the run's lock; the run's ledger records the entry (one per run)."""
    from review_loop.orchestrator.cli.common import repo_from
    from review_loop.orchestrator.handoff.git import ensure_layout
    from review_loop.orchestrator.workflows.converge_store import (
        RunPaths,
        check_run,
        load_ledger,
        run_lock,
        save_ledger,
    )
    from review_loop.orchestrator.workflows.lessons import write_lesson

    repo = repo_from(args)
    paths = RunPaths(repo, check_run(args.run))
    ensure_layout(repo)
    with run_lock(paths):
        ledger = load_ledger(paths)
        document = write_lesson(lesson, ledger_written=ledger.lessons)
        save_ledger(paths, ledger.model_copy(update={"lessons": document["ledgerLessons"]}))
    return {**document, "run": paths.run}
