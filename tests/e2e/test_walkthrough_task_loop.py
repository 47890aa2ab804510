"""End-to-end tests: seed 004 (task-completion loop, host Claude) walked by a host agent.

Each command the seed tells the host to run, in order, as processes of the console script,
with fake reviewer CLIs first on PATH: Phase 0 (lessons, ledger items; the ledger records
the checkout), the capability preflight's recipe (``consult`` per peer and the blind
reviewer's Claude, then ``sessions``: the preflight evidence), Phase 1 round A while the
host writes its position in the format ``converge --help`` gives, round B, Phase 2's Goal
Gate through the report ``ledger --help`` describes, Phase 3's verification, Phase 4's
agentic review, architecture hardening and blind review, lessons, and the Task Completion
Result: ``COMPLETED``. Then the T67 path: a blind-review Fix resolved by going back to the
snapshot already reviewed CLEAN completes again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.walkthrough import Host
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

PLAN = "# Plan\n\n- T1: restock() adds qty - 1\n- T2: restock() accepts qty <= 0\n"
CODE = "def restock(stock, qty):\n    return stock + qty - 1\n"
FIXED = (
    "def restock(stock, qty):\n    if qty <= 0:\n        raise ValueError(qty)\n"
    "    return stock + qty\n"
)
NO_FINDINGS = (
    "## Findings\n\n"
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|\n\nVerdict: NO_FINDINGS\n"
)
CLEAN = "## Findings\n\nNone\n\nVerdict: CLEAN"
FIX = (
    "## Findings\n\n| ID | Class | Title | Evidence | Required fix |\n|---|---|---|---|---|\n"
    "| B1 | Fix | debug print left | inventory.py:2 prints | remove it |\n\nVerdict: FIX"
)


def position(label: str) -> dict[str, Any]:
    text = (
        f"{label}\n\n## Scope\nT1, T2.\n\n## Disagreements\n- none\n\n"
        "## Human decisions\n- none\n\nPosition: AGREE"
    )
    return {"mode": "ok", "text": text}


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def headings_from_help(text: str) -> list[str]:
    """The host position's headings, as ``converge --help`` lists them."""
    return [
        line.strip().split(":")[0].removesuffix(" (optional)")
        for line in text.splitlines()
        if line.strip().startswith("## ")
    ]


def write_report(host: Host, skill: str, result: str) -> None:
    """A skill's report where and as ``ledger --help`` says (on the evidence now)."""
    evidence = host.ok("review-loop", "evidence", "--repo", str(host.cwd)).json()["evidence"]
    installed = Path(os.environ["REVIEW_LOOP_SKILL_DIRS"]) / skill / "SKILL.md"
    report = {
        "skill": skill,
        "result": result,
        "evidence": evidence,
        "skillSha256": hashlib.sha256(installed.read_bytes()).hexdigest(),
    }
    path = host.cwd / ".review-handoff" / "gate-reports" / skill / f"{evidence['digest']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report))


def loop_to_completed(host: Host, fakes: FakeCLIs, tmp_path: Path) -> None:
    """Phases 0 to 4 as the seed orders them; every command must exit 0."""
    repo = str(host.cwd)
    run = ["--run", "loop1"]
    host.ok("review-loop", "lessons", "list")
    for item, title in (("T1", "off-by-one"), ("T2", "ValueError on qty <= 0")):
        host.ok("review-loop", "ledger", "set", "--repo", repo, "--id", item,
                "--status", "PENDING", "--title", title, *run)  # fmt: skip
    shown = host.ok("review-loop", "ledger", "show", "--repo", repo, *run).json()
    assert shown["ledger"]["checkout"]["root"] == repo  # Phase 0's record (T26)
    # Capability preflight: one real round trip per peer, then its resumable handle
    question = tmp_path / "preflight-q.md"
    question.write_text("Preflight: answer OK.\n")
    for peer in ("codex", "grok", "claude"):  # the peers, and likewise the blind reviewer
        answered = host.ok(
            "review-loop", "consult", "--repo", repo, "--peer", peer,
            "--fallback", "gemini", "--question-file", str(question),
        ).json()  # fmt: skip
        listed = host.ok("review-loop", "sessions", "--repo", repo, f"--product={peer}").json()
        assert answered["sessionId"] in json.dumps(listed)
    early = host.run("review-loop", "ledger", "result", "--repo", repo, *run).json()
    assert "no preflight recorded" not in early["reasons"]  # the recipe is the evidence
    # Phase 1: round A while the host writes its position, in the format the help gives
    plan = str(tmp_path / "plan.md")
    round_a = host.ok(
        "review-loop", "converge", "--repo", repo, "--plan", plan, "--host", "claude", *run
    ).json()
    assert round_a["status"] == "awaiting_host_position"
    headings = headings_from_help(host.ok("review-loop", "converge", "--help").out)
    body = {"## Scope": "T1 and T2; nothing else.", "## Ownership": "inventory.py owns both.",
            "## Verification": "pytest -q: restock(1, 2) == 3; restock(1, 0) raises."}  # fmt: skip
    text = "".join(f"{h}\n{body.get(h, '- none')}\n\n" for h in headings) + "Position: AGREE\n"
    position_file = tmp_path / "host-position.md"
    position_file.write_text(text)
    converged = host.ok(
        "review-loop", "converge", "--repo", repo, "--plan", plan,
        "--host-position", str(position_file), "--host", "claude", *run,
    ).json()  # fmt: skip
    assert converged["status"] == "converged" and converged["host"]["missingSections"] == []
    assert "not stated" not in converged["recordText"]
    # Phase 2: the Goal Gate's report, as `ledger --help` describes it
    assert (
        "goal-gate accepts only CONTINUE | HUMAN_GATE"
        in host.ok("review-loop", "ledger", "--help").out
    )
    write_report(host, "goal-gate", "CONTINUE")
    goal = host.ok("review-loop", "ledger", "gate", "--repo", repo, "--gate", "goal-gate", *run)
    assert goal.json()["gate"]["provenance"] == "proven"
    host.ok("review-loop", "ledger", "meta", "--repo", repo, "--goal", "not-created", *run)
    # Phase 3: the fix, verified
    (host.cwd / "inventory.py").write_text(FIXED)
    for item in ("T1", "T2"):
        host.ok("review-loop", "ledger", "set", "--repo", repo, "--id", item,
                "--status", "VERIFIED_DONE", "--evidence", "pytest -q: 4 passed", *run)  # fmt: skip
    host.ok("review-loop", "ledger", "gate", "--repo", repo, "--gate", "verification",
            "--result", "PASS", *run)  # fmt: skip
    # Phase 4: agentic review, architecture hardening, blind review, lessons, the result
    reviewed = host.ok("review-loop", "run", "--repo", repo, "--host", "claude").json()
    assert reviewed["status"] == "archived", reviewed
    host.ok("review-loop", "ledger", "gate", "--repo", repo, "--gate", "agentic-review", *run)
    write_report(host, "architecture-hardening-loop", "NO_ACTIONABLE_FINDINGS")
    host.ok("review-loop", "ledger", "gate", "--repo", repo, "--gate", "architecture-hardening",
            *run)  # fmt: skip
    blind = host.ok("review-loop", "blind-review", "--repo", repo, *run).json()
    assert blind["verdict"] == "CLEAN"
    host.ok("review-loop", "lessons", "write", "--slug", "restock", "--cue", "quantity input",
            "--lesson", "validate qty before arithmetic", "--evidence", "pytest -q",
            "--repo", repo, *run)  # fmt: skip
    result = host.ok("review-loop", "ledger", "result", "--repo", repo, *run).json()
    assert result["result"] == "COMPLETED", result["reasons"]


def test_the_seed_walked_literally_completes(tmp_path: Path, fakes: FakeCLIs) -> None:
    repo = committed_repo(tmp_path / "repo", {"inventory.py": CODE})
    (tmp_path / "plan.md").write_text(PLAN)
    fakes.script(
        codex=[position("codex"), position("codex"), position("codex"),
               {"mode": "ok", "text": NO_FINDINGS}],
        grok=[position("grok")],
        claude=[{"mode": "ok", "text": "OK"}, {"mode": "ok", "text": CLEAN}],
    )  # fmt: skip
    host = Host(fakes, repo)
    loop_to_completed(host, fakes, tmp_path)


def test_a_fix_resolved_by_returning_to_the_clean_snapshot_completes(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = committed_repo(tmp_path / "repo", {"inventory.py": CODE})
    (tmp_path / "plan.md").write_text(PLAN)
    fakes.script(
        codex=[position("codex"), position("codex"), position("codex"),
               {"mode": "ok", "text": NO_FINDINGS}],
        grok=[position("grok")],
        claude=[{"mode": "ok", "text": t} for t in ("OK", CLEAN, FIX)],
    )  # fmt: skip
    host = Host(fakes, repo)
    loop_to_completed(host, fakes, tmp_path)
    run = ["--repo", str(repo), "--run", "loop1"]
    (repo / "inventory.py").write_text(FIXED.replace("    return", "    print(qty)\n    return"))
    assert host.ok("review-loop", "blind-review", *run).json()["verdict"] == "FIX"
    (repo / "inventory.py").write_text(FIXED.replace("    return", "    print(1)\n    return"))
    spent = host.run("review-loop", "blind-review", *run)
    assert spent.code == 2 and spent.json()["status"] == "budget_exhausted"
    (repo / "inventory.py").write_text(FIXED)  # the minimal fix: the reviewed snapshot again
    reused = host.ok("review-loop", "blind-review", *run, "--continue").json()
    assert (reused["verdict"], reused["reused"]) == ("CLEAN", True)
    result = host.ok("review-loop", "ledger", "result", *run).json()
    assert result["result"] == "COMPLETED", result["reasons"]
