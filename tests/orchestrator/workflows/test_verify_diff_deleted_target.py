"""Collaboration tests: a deleted ``--target`` whose diff is non-empty is judged (N-3).

Seed 000 Step 1: "missing target" is a missing *field*; a target the change deletes has a
diff to judge. The executor is a fake CLI through the real dispatcher and process layer;
async tests run on asyncio and trio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_verify_diff import PASS, explicit_plan, make_repo, run

pytestmark = pytest.mark.anyio


async def test_a_deleted_target_is_judged_on_its_diff(tmp_path: Path, fakes: FakeCLIs) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# Read me\n", "other.txt": "o\n"})
    (repo / "README.md").unlink()
    fakes.script(claude=[PASS])
    document, _ = await run(repo, explicit_plan(target="README.md"))
    assert document["status"] == "converged", document
    [call] = fakes.calls()
    assert "-# Read me" in call["stdin"]  # the deletion's diff reached the executor


async def test_a_target_in_neither_tree_nor_diff_is_missing(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# Read me\n"})
    document, _ = await run(repo, explicit_plan(target="nowhere.md"))
    assert (document["status"], document["reason"]) == ("skipped", "missing target")
    assert fakes.calls() == []
