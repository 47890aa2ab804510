"""Collaboration tests: the whole loop on the ledger: preflight, converge, gates, blind review,
the result.

Drives the real command line in-process against fake peers; checks the Task Completion
Result against a golden file and that changed evidence or a changed scope makes every
older gate result stale.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import (  # fixtures re-exported for pytest
    CLEAN_REVIEW,
    fakes,
    files,
    position,
    repo,
    rl,
)

__all__ = ["fakes", "files", "repo"]
GOLDEN = Path(__file__).parents[2] / "golden" / "converge"
NO_FINDINGS_REVIEW = (
    "## Findings\n\n"
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|\n\nVerdict: NO_FINDINGS\n"
)


def normalise(text: str) -> str:
    text = re.sub(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}", "<stamp>", text)  # review packet names
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    return re.sub(r"\b[0-9a-f]{12,64}\b", "<hex>", text)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def ok(repo: Path, *argv: str) -> dict[str, Any]:
    code, doc = rl(repo, *argv, "--run", "task")
    assert code == 0, doc
    return doc


def test_full_loop_completed_then_stale(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    plan, host = files
    ok(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--title", "guard input")
    ok(repo, "ledger", "set", "--id", "T2", "--status", "EXCLUDED", "--evidence", "plan §3")
    ok(repo, "preflight", "--host", "claude")
    fakes.script(codex=[position("codex")], grok=[position("grok")])
    converged = ok(
        repo, "converge", "--plan", str(plan), "--host-position", str(host), "--host", "claude"
    )
    assert converged["status"] == "converged"
    # implement T1, verify, and record the gates against the same evidence
    (repo / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    ok(repo, "ledger", "set", "--id", "T1", "--status", "VERIFIED_DONE", "--evidence", "pytest")
    early = rl(repo, "ledger", "result", "--run", "task")[1]
    assert early["result"] == "UNVERIFIED" and "verification: not run" in early["reasons"]
    ok(repo, "ledger", "gate", "--gate", "verification", "--result", "PASS")
    # agentic-review is proven by a real review run archived on this same evidence
    fakes.script(codex=[{"mode": "ok", "text": NO_FINDINGS_REVIEW}])
    code, review = rl(repo, "run", "--reviewer", "codex")
    assert code == 0 and review["status"] == "archived", review
    proven = ok(repo, "ledger", "gate", "--gate", "agentic-review")
    assert proven["gate"]["provenance"] == "proven"
    assert proven["gate"]["proof"]["ref"] == review["packetId"]
    gate = ok(
        repo,
        "ledger",
        "gate",
        "--gate",
        "architecture-hardening",
        "--result",
        "no_actionable_findings",
    )
    assert gate["passed"] is True and gate["gate"]["result"] == "NO_ACTIONABLE_FINDINGS"
    fakes.script(claude=[{"mode": "ok", "text": CLEAN_REVIEW}])
    blind = ok(repo, "blind-review")
    assert blind["verdict"] == "CLEAN"
    ok(repo, "ledger", "meta", "--goal", "completed", "--implemented", "T1 guard in app.f")
    result = ok(repo, "ledger", "result")
    assert result["result"] == "COMPLETED" and result["staleGates"] == []
    assert Path(result["blockPath"]).read_text() == result["block"]
    check_golden("task_completion_result.md", normalise(result["block"]))

    # Any in-scope change invalidates every gate of the old snapshot.
    (repo / "app.py").write_text("def f(x):\n    return None\n")
    code, stale = rl(repo, "ledger", "result", "--run", "task")
    assert code == 2 and stale["result"] == "UNVERIFIED"
    assert sorted(g["gate"] for g in stale["staleGates"]) == [
        "agentic-review",
        "architecture-hardening",
        "blind-review",
        "verification",
    ]
    assert stale["block"].count("STALE") == 4
    # So does a change of scope (another path filter), even on the same tree.
    (repo / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    assert ok(repo, "ledger", "result")["result"] == "COMPLETED"
    code, scoped = rl(repo, "ledger", "result", "--run", "task", "--paths", "app.py")
    assert code == 2 and len(scoped["staleGates"]) == 4
    ledger = json.loads(Path(result["ledgerPath"]).read_text())
    assert [g["gate"] for g in ledger["gates"]] == [
        "verification",
        "agentic-review",
        "architecture-hardening",
        "blind-review",
    ]


def test_convergence_record_golden(repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]) -> None:
    plan, host = files
    ok(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--title", "guard input")
    fakes.script(
        codex=[{"mode": "hang"}],
        gemini=[position("gemini", "T1 needs a test first")],
        grok=[position("grok", human=("name of the flag",))],
    )
    doc = ok(
        repo,
        "converge",
        "--plan",
        str(plan),
        "--host-position",
        str(host),
        "--host",
        "claude",
        "--fallback",
        "auto",
        "--fallback",
        "gemini",
        "--timeout",
        "2",
    )
    assert doc["status"] == "host_adjudication"
    check_golden("convergence_record.md", normalise(doc["recordText"]))
