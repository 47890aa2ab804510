"""Collaboration tests: the exclusions a host writes in its position reach the record
(seed 004 Phase 1 A: each side "writes clearly the scope, attribution, assumptions,
risks, exclusions, and falsifiable verification").

The convergence record's "Frozen scope / exclusions" lists the ledger's EXCLUDED items and,
apart, the exclusions the host's ``## Scope`` section states (``Exclusions: ...``, or
under an exclusions sub-heading). They never exclude a plan item: "the attribution of
items promised by the plan belongs only to the user or valid decisions", so a PENDING item
the host names stays PENDING and the record says so.

Drives the real command line in-process against fake peers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from review_loop.agents.converge import Ledger, LedgerItem, frozen_scope, host_scope
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import fakes, files, position, repo, rl

__all__ = ["fakes", "files", "repo"]

HOST = (
    "## Scope\nT1 guard input.\n- Exclusions: the CLI module; T2\n\n"
    "### Out of scope\n- docs/\n\n## Ownership\napp.py owns the guard.\n\n"
    "## Verification\npytest -q tests/test_app.py\n\n"
    "## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE\n"
)


def converge_with_host_exclusions(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> dict[str, Any]:
    """T1, T2 PENDING and T3 EXCLUDED in the ledger, :data:`HOST` as the host's position,
    one converged round; the converge document."""
    plan, host = files
    host.write_text(HOST)
    for item, status in (("T1", "PENDING"), ("T2", "PENDING"), ("T3", "EXCLUDED")):
        cited = ["--evidence", "the user, in the task"] if status == "EXCLUDED" else []
        code, _ = rl(repo, "ledger", "set", "--run", "x", "--id", item, "--status", status, *cited)
        assert code == 0
    fakes.script(codex=[position("codex")], grok=[position("grok")])
    code, doc = rl(repo, "converge", "--run", "x", "--plan", str(plan), "--host-position",
                   str(host), "--host", "claude", "--timeout", "5")  # fmt: skip
    assert code == 0, doc
    return doc


def test_the_hosts_scope_exclusions_are_in_the_convergence_record(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    doc = converge_with_host_exclusions(repo, fakes, files)
    line = next(x for x in doc["recordText"].splitlines() if x.startswith("- Frozen scope"))
    assert line == (
        "- Frozen scope / exclusions: T1, T2 — host: T1 guard input.; exclusions: T3 "
        "(ledger); host excludes: the CLI module; T2; docs/ (T2 stay PENDING: only the user "
        "or valid documentation excludes a plan item, `ledger set --status EXCLUDED`)"
    )
    code, ledger = rl(repo, "ledger", "show", "--run", "x")
    assert code == 0
    assert {i["id"]: i["status"] for i in ledger["ledger"]["items"]}["T2"] == "PENDING"


def test_host_scope_splits_words_from_exclusions() -> None:
    assert host_scope("## Scope\nT1 only.\nExclusions: none\n## Ownership\nx\n") == (
        "T1 only.",
        [],
    )
    assert host_scope("# Task scope\n**Out of scope:** web/\n- Excluded: T9\n") == (
        "",
        ["web/", "T9"],
    )
    assert host_scope("## Ownership\nExclusions: not in the scope section\n") == ("", [])


def test_frozen_scope_without_host_exclusions_is_unchanged() -> None:
    ledger = Ledger(items=[LedgerItem(id="T1", status="PENDING")])
    assert frozen_scope(ledger, "words") == "T1 — host: words; exclusions: none"
    assert frozen_scope(ledger, "words", ["x"]) == (
        "T1 — host: words; exclusions: none (ledger); host excludes: x"
    )
