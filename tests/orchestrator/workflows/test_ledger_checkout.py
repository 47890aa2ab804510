"""Collaboration tests: the ledger records the checkout, and each call its deadline (T26, T42).

Seed 004 Phase 0: "Record the repository root, branch, HEAD, and working tree"; and "Set a
deadline for each external call … the host may shorten it and record that". The ledger's
first write takes the checkout snapshot (kept as taken); each journaled reviewer call
records the deadline chosen for it and where it came from. Fake reviewer CLIs through the
real process layer.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes import FakeCLIs
from tests.gitrepo import git
from tests.orchestrator.workflows.test_converge import CLEAN_REVIEW, fakes, repo, rl

__all__ = ["fakes", "repo"]


def checkout(repo: Path) -> dict[str, str]:
    code, shown = rl(repo, "ledger", "show", "--run", "task")
    assert code == 0, shown
    return dict(shown["ledger"]["checkout"])


def test_the_first_ledger_write_records_root_branch_head_and_working_tree(repo: Path) -> None:
    (repo / "app.py").write_text("def f(x):\n    return x\n")  # one uncommitted change
    assert rl(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--run", "task")[0] == 0
    first = checkout(repo)
    assert first["root"] == str(repo)
    assert first["branch"] == git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    assert first["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert first["workingTree"] == "1 changed path(s)"  # .review-handoff/ not counted
    (repo / "b.py").write_text("x = 1\n")
    assert rl(repo, "ledger", "meta", "--task", "t", "--run", "task")[0] == 0
    assert checkout(repo) == first  # the loop's starting point, kept as taken


def test_a_blind_review_call_records_its_chosen_deadline(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "text": CLEAN_REVIEW}])
    (repo / "app.py").write_text("def f(x):\n    return x\n")
    code, doc = rl(repo, "blind-review", "--run", "task", "--timeout", "90")
    assert code == 0, doc
    journal = repo / ".review-handoff" / "runtime" / "converge" / "task" / "journal.jsonl"
    starts = [
        entry
        for entry in map(json.loads, journal.read_text().splitlines())
        if entry.get("event") == "call.start" or entry.get("type") == "call.start"
    ]
    assert starts, journal.read_text()[:500]
    assert (starts[0]["deadlineMs"], starts[0]["deadlineFrom"]) == (90_000, "--timeout")
