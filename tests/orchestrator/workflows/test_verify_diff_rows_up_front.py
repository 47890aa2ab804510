"""Collaboration tests: auto-derive pre-registers every skill's iteration rows up front (V16).

Seed 000: "Auto-derive pre-registers N skills × Max iterations task rows total", before
the first skill's loop starts. The executor is a fake CLI through the real dispatcher and
process layer; async tests run on asyncio and trio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_verify_diff import (
    auto_plan,
    auto_verdict,
    run,
    skills_repo,
)

__all__ = ["skills_repo"]  # the fixture

pytestmark = pytest.mark.anyio


async def test_all_skills_rows_are_pending_before_the_first_dispatch(
    skills_repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(
        claude=[
            auto_verdict("Make alpha do its thing well.", "yes", gaps=()),
            auto_verdict("Beta does a second thing.", "yes", gaps=()),
        ]
    )
    document, rows = await run(skills_repo, auto_plan(max_iterations=3))
    assert document["status"] == "converged", document
    board = [row for row in rows if " iter " in row]
    pending = [
        f"[verify-diff] {skill} iter {i} ({i}/3): pending"
        for skill in ("alpha", "beta")
        for i in (1, 2, 3)
    ]
    # N skills x Max iterations rows, all pending, before any row moves on
    assert board[: len(pending)] == pending
    assert board[len(pending)] == "[verify-diff] alpha iter 1 (1/3): in_progress"
    assert sum(row.endswith(": pending") for row in board) == len(pending)
    # beta's rows then run in their own turn, not registered again
    assert board.index("[verify-diff] beta iter 1 (1/3): in_progress") > board.index(
        "[verify-diff] alpha iter 1 (1/3): completed — converged at iter 1"
    )
