"""Cross-task lessons of seed 004 (contract tests, and process tests of ``review-loop lessons``).

The directory is ``${AGENT_LESSONS_DIR:-$HOME/.local/state/agent-lessons}/
task-completion-loop/``: listed at Phase 0, at most one entry written per run, with cue,
lesson and evidence, or nothing; the same cue or slug is updated, never duplicated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.errors import InputError
from review_loop.agents.lessons import checked_lesson, parse_lesson
from tests.gitrepo import committed_repo
from tests.orchestrator.workflows.test_peer_selection import run_json

CUE = "a re-review after a fix that touched shared helpers"
LESSON = "rerun the downstream gates before the blind review"
EVIDENCE = "blind review r2 CLEAN on digest 9e97 versus r1 FIX on 765d"


def test_contract_a_lesson_round_trips_and_needs_all_three_parts() -> None:
    lesson = checked_lesson("rerun-gates", CUE, LESSON, EVIDENCE)
    assert parse_lesson("rerun-gates", lesson.render()) == lesson
    assert parse_lesson("x", "cue: a\nlesson: b\n") is None  # no evidence: not a lesson
    for part in ("cue", "lesson", "evidence"):
        values = {"cue": CUE, "lesson": LESSON, "evidence": EVIDENCE, part: "  "}
        with pytest.raises(InputError, match=f"--{part}: is empty"):
            checked_lesson("rerun-gates", **values)


@pytest.mark.parametrize(
    ("part", "text", "what"),
    [
        ("evidence", "token: abc123def", "a credential"),
        ("lesson", "use sk-abcdefghijklmnopqrstuv to call", "an API key"),
        ("evidence", "review score 8/10", "a review score"),
    ],
)
def test_contract_credentials_and_scores_are_refused(part: str, text: str, what: str) -> None:
    values = {"cue": CUE, "lesson": LESSON, "evidence": EVIDENCE, part: text}
    with pytest.raises(InputError, match=f"--{part}: holds {what}"):
        checked_lesson("rerun-gates", **values)
    with pytest.raises(InputError, match="--slug"):
        checked_lesson("../x", CUE, LESSON, EVIDENCE)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = dict(os.environ)
    environ["HOME"] = str(tmp_path / "home")
    environ.pop("AGENT_LESSONS_DIR", None)
    return environ


def rl(env: dict[str, str], *args: str) -> tuple[int, Any]:
    return run_json(args, env)


def write(env: dict[str, str], slug: str, *extra: str, cue: str = CUE) -> tuple[int, Any]:
    return rl(
        env, "lessons", "write", "--slug", slug, "--cue", cue, "--lesson", LESSON,
        "--evidence", EVIDENCE, *extra,
    )  # fmt: skip


def test_process_the_default_directory_and_one_entry_per_cue(env: dict[str, str]) -> None:
    folder = Path(env["HOME"]) / ".local/state/agent-lessons/task-completion-loop"
    code, doc = rl(env, "lessons")
    assert code == 0 and doc["count"] == 0 and doc["dir"] == str(folder)
    code, doc = write(env, "rerun-gates")
    assert code == 0 and doc["status"] == "written"
    assert (folder / "rerun-gates.md").read_text().startswith(f"cue: {CUE}\n")
    code, doc = write(env, "another-name", cue=CUE.upper())  # the same situation: updated
    assert code == 0 and doc["status"] == "updated" and doc["path"].endswith("rerun-gates.md")
    code, doc = rl(env, "lessons", "list")
    assert doc["count"] == 1 and doc["lessons"][0]["evidence"] == EVIDENCE
    env["AGENT_LESSONS_DIR"] = str(Path(env["HOME"]) / "elsewhere")
    code, doc = rl(env, "lessons")
    assert doc["dir"] == str(Path(env["HOME"]) / "elsewhere" / "task-completion-loop")


def test_process_a_missing_part_writes_nothing(env: dict[str, str]) -> None:
    code, doc = rl(env, "lessons", "write", "--slug", "x", "--cue", CUE, "--lesson", LESSON)
    assert code == 1 and doc["error"].startswith("--evidence: is empty")
    assert not (Path(env["HOME"]) / ".local").exists()


def test_process_one_lesson_per_run_recorded_in_its_ledger(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = committed_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    code, doc = write(env, "rerun-gates", "--repo", str(repo), "--run", "task")
    assert code == 0, doc
    code, again = write(env, "rerun-gates", "--repo", str(repo), "--run", "task")
    assert code == 0 and again["status"] == "updated"  # the same entry may be updated
    code, other = write(env, "other", "--repo", str(repo), "--run", "task", cue="another shape")
    assert code == 1 and "one per run" in other["error"]
    code, result = rl(env, "ledger", "result", "--repo", str(repo), "--run", "task")
    assert "- Lessons: written rerun-gates (updated; evidence: " in result["block"]
