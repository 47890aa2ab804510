"""Collaboration tests: the exclusions a host writes in its position reach the Task
Completion Result as they reach the convergence record (seed 004: the result's "Scope /
exclusions" line reports the frozen scope the three parties converged on).

The convergence record lists the ledger's EXCLUDED items and, apart, the exclusions the
host's ``## Scope`` section states; ``ledger result`` shows the same exclusions, the same
way, so a reader of the final block does not lose what the record said was out of scope.

Drives the real command line in-process against fake peers.
"""

from __future__ import annotations

from pathlib import Path

from review_loop.agents.converge import Ledger, LedgerItem, exclusions_text
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import fakes, files, repo, rl
from tests.orchestrator.workflows.test_host_exclusions import converge_with_host_exclusions

__all__ = ["fakes", "files", "repo"]


def _scope_line(text: str) -> str:
    return next(x for x in text.splitlines() if x.startswith("- Scope / exclusions"))


def test_the_hosts_scope_exclusions_are_in_the_task_completion_result(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    doc = converge_with_host_exclusions(repo, fakes, files)
    _, result = rl(repo, "ledger", "result", "--run", "x")
    assert _scope_line(result["block"]) == (
        "- Scope / exclusions: T1, T2 / T3 (ledger); host excludes: the CLI module; T2; "
        "docs/ (T2 stay PENDING: only the user or valid documentation excludes a plan item, "
        "`ledger set --status EXCLUDED`)"
    )
    # the record says the same exclusions
    record = next(x for x in doc["recordText"].splitlines() if x.startswith("- Frozen scope"))
    assert record.endswith(
        "exclusions: " + _scope_line(result["block"]).split(": ", 1)[1].split(" / ", 1)[1]
    )


def test_without_a_convergence_the_result_shows_the_ledgers_exclusions_only(
    repo: Path,
) -> None:
    for item, status in (("T1", "PENDING"), ("T3", "EXCLUDED")):
        cited = ["--evidence", "the user, in the task"] if status == "EXCLUDED" else []
        code, _ = rl(repo, "ledger", "set", "--run", "y", "--id", item, "--status", status, *cited)
        assert code == 0
    _, result = rl(repo, "ledger", "result", "--run", "y")
    assert _scope_line(result["block"]) == "- Scope / exclusions: T1 / T3"


def test_exclusions_text_is_the_records_form() -> None:
    ledger = Ledger(items=[LedgerItem(id="T1", status="PENDING")])
    assert exclusions_text(ledger) == "none"
    assert exclusions_text(ledger, ["T1 and docs"]) == (
        "none (ledger); host excludes: T1 and docs (T1 stay PENDING: only the user or valid "
        "documentation excludes a plan item, `ledger set --status EXCLUDED`)"
    )
