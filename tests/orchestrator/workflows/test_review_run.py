"""Collaboration tests: the review run (`run`, `fix-completion`, `close`), fake reviewer CLIs.

Each test builds a small git repository, puts the fake `codex`/`claude`/... first on PATH,
scripts the reviewer's answer per round, and drives the real command line in-process
(``review_loop.orchestrator.cli.run``), so parsing, the dispatcher, the process layer and
the files on disk are all exercised.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.workflows.review_store import STATE_PURPOSE
from tests.fakes import FakeCLIs
from tests.gitrepo import guarded_change

HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
F1 = "| F1 | [阻塞] | crash on empty input | app.py:2 | app.py | guard it | test passes |"
F2 = "| F2 | [非阻塞] | vague name | app.py:1 | app.py | rename | reads well |"
FIX = """# Fix Completion

## Fix Conclusion
Guarded the empty input.
## Original Findings Snapshot
F1 blocking, F2 concern
## Finding Status
F1 fixed; F2 open
## Verification
pytest -q
## Re-review Instructions
Check app.py.
"""


def first(*rows: str, verdict: str) -> dict[str, Any]:
    text = "## Findings\n\n" + HEADER + "\n" + "\n".join(rows) + f"\n\nVerdict: {verdict}\n"
    return {"mode": "ok", "text": text}


def again(reassess: list[str], verdict: str, new: list[str] | None = None) -> dict[str, Any]:
    table = "| ID | 状态 | 复核证据 |\n|---|---|---|\n" + "\n".join(reassess)
    new_text = HEADER + "\n" + "\n".join(new) if new else "None"
    text = (
        f"## Prior Findings Reassessment\n\n{table}\n\n## New Findings\n\n{new_text}\n\n"
        f"## Regression Surface\n\nNo regressions.\n\nVerdict: {verdict}\n"
    )
    return {"mode": "ok", "text": text}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return guarded_change(tmp_path / "repo")


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    clis = FakeCLIs(tmp_path / "fakes")
    env = clis.env()
    for key in ("PATH", "FAKE_AGENT_SCRIPT", "FAKE_AGENT_LOG"):
        monkeypatch.setenv(key, env[key])
    return clis


def rl(repo: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    out: list[str] = []
    code = cli_run([argv[0], "--repo", str(repo), *argv[1:]], stdout=out.append)
    assert len(out) == 1
    return code, json.loads(out[0])


def fix(repo: Path, packet: str, tmp_path: Path, body: str = FIX) -> dict[str, Any]:
    path = tmp_path / "fix.md"
    path.write_text(body)
    code, doc = rl(repo, "fix-completion", "--packet", packet, "--body-file", str(path))
    assert code == 0, doc
    return doc


def runtime_of(doc: dict[str, Any], repo: Path) -> Path:
    return repo / ".review-handoff" / "runtime" / str(doc["packetId"])


def state_of(doc: dict[str, Any], repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((runtime_of(doc, repo) / "auto-run-state.json").read_text())
    return data


def write_signed_state(path: Path, state: dict[str, Any]) -> None:
    """Write a run state as review-loop itself would: signed with this user's secret."""
    path.write_text(json.dumps(state_auth.sign(STATE_PURPOSE, state)))


def resumed_ids(fakes: FakeCLIs) -> list[str | None]:
    out: list[str | None] = []
    for call in fakes.calls():
        argv = call["argv"]
        out.append(argv[argv.index("resume") + 1] if "resume" in argv else None)
    return out


# -- the full loop -------------------------------------------------------------------------


def test_three_rounds_blocked_concerns_then_archived(
    repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(
        codex=[
            first(F1, F2, verdict="BLOCKED"),
            again(
                ["| F1 | resolved | guarded |", "| F2 | unresolved | same |"],
                "PASS_WITH_CONCERNS",
            ),
            again(["| F1 | resolved | guarded |", "| F2 | resolved | renamed |"], "PASS"),
        ]
    )
    code, r1 = rl(repo, "run", "--completion", "pass")  # the "fix it" behaviour, by flag
    assert code == 0, r1
    assert r1["status"] == "blocked" and r1["verdict"] == "BLOCKED"
    assert r1["openBlocking"] == ["F1"] and r1["openConcerns"] == ["F2"]
    assert r1["lastAnchor"] == "fix_handoff" and r1["needsContinue"] is True
    packet = r1["packetPath"]
    assert "/.review-handoff/active/main--" in packet
    assert r1["evidence"]["sourceRound"] == 1 and r1["evidence"]["coveredPaths"] == ["app.py"]

    # continuing without a Fix Completion is refused
    code, refused = rl(repo, "run", "--continue")
    assert code == 1 and "Fix Completion" in refused["error"]

    fix(repo, packet, tmp_path)
    (repo / "app.py").write_text("def first(x):\n    return x[0] if x else None\n")
    code, r2 = rl(repo, "run", "--continue")
    assert code == 0, r2
    assert r2["status"] == "concerns_require_fix" and r2["verdict"] == "PASS_WITH_CONCERNS"
    assert r2["openBlocking"] == [] and r2["openConcerns"] == ["F2"]
    assert r2["lastAnchor"] == "re_review" and r2["lifecycleState"] == "blocked"

    fix(repo, packet, tmp_path)
    code, r3 = rl(repo, "run", "--continue", "--packet", packet)
    assert code == 0, r3
    assert r3["status"] == "archived" and r3["verdict"] == "PASS" and r3["round"] == 3
    assert r3["report"]["rounds"] == 3 and r3["report"]["findingIds"] == ["F1", "F2"]
    assert "/.review-handoff/archive/" in r3["packetPath"]
    assert not Path(packet).exists() and Path(r3["packetPath"]).exists()

    # one session: round 1 new, every later round resumes it
    sid = r1["sessionId"]
    assert sid and resumed_ids(fakes) == [None, sid, sid]
    state = state_of(r3, repo)
    assert state["round"] == 3 and state["lastVerdict"] == "PASS"
    assert state["openBlocking"] == [] and state["openConcerns"] == []
    assert state["lifecycleState"] == "archived" and state["pendingStage"] is None
    for n in (1, 2, 3):
        diff = runtime_of(r3, repo) / "evidence" / f"round-{n}.diff"
        assert diff.exists() and state[f"evidenceDigest{n}"] == state[f"evidenceRound{n}"]["digest"]
    assert state["evidenceDigest1"] != state["evidenceDigest2"]  # the fix changed the tree
    text = Path(r3["packetPath"]).read_text()
    assert [line for line in text.splitlines() if line.startswith("# ")] == [
        "# Review Handoff",
        "# Review Findings",
        "# Fix Handoff",
        "# Fix Completion",
        "# Re-review",
        "# Fix Completion",
        "# Re-review",
    ]
    assert "lifecycle_state: archived" in text and "last_anchor: re_review" in text

    # and the sessions command lists the review run's session
    code, listed = rl(repo, "sessions", "--product", "codex")
    assert code == 0 and sid in json.dumps(listed)

    # as the original: nothing active to continue is a usage error; --packet reports it
    code, done = rl(repo, "run", "--continue")
    assert code == 1 and "requires an active packet" in done["error"]
    code, done = rl(repo, "run", "--continue", "--packet", r3["packetPath"])
    assert code == 0 and done["status"] == "already_archived"


def test_no_findings_archives_in_one_round(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[first(verdict="NO_FINDINGS")])
    code, doc = rl(repo, "run", "--scope", "tiny-fix", "--paths", "app.py")
    assert code == 0 and doc["status"] == "archived" and doc["verdict"] == "NO_FINDINGS"
    assert doc["evidence"]["pathFilter"] == ["app.py"]
    assert Path(doc["packetPath"]).name.endswith("-tiny-fix.md")


def test_review_mode_parks_concerns_then_close_archives(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[first(F2, verdict="PASS_WITH_CONCERNS")])
    code, doc = rl(repo, "run", "--completion", "review")
    assert code == 0 and doc["status"] == "awaiting_user_decision"
    assert doc["openConcerns"] == ["F2"]
    assert doc["concerns"] == [
        {
            "id": "F2",
            "severity": "[非阻塞]",
            "title": "vague name",
            "evidence": "app.py:1",
            "targetFiles": "app.py",
            "targetFileList": ["app.py"],
            "requiredFix": "rename",
            "acceptanceCheck": "reads well",
            "blocking": False,
        }
    ]
    code, bad = rl(repo, "close", "--packet", doc["packetPath"], "--reason", "looks-fine")
    assert code == 1 and "accept-concerns" in bad["error"]
    code, closed = rl(repo, "close", "--packet", doc["packetPath"], "--reason", "accept-concerns")
    assert code == 0, closed
    assert closed["status"] == "archived" and closed["originalVerdict"] == "PASS_WITH_CONCERNS"
    assert closed["acceptedConcernIds"] == ["F2"] and closed["lastAnchor"] == "decision_closure"
    text = Path(closed["packetPath"]).read_text()
    assert "# Decision Closure" in text and "Verdict: PASS_WITH_CONCERNS" in text
    code, _ = rl(repo, "close", "--packet", doc["packetId"], "--reason", "accept-concerns")
    assert code == 1


def test_close_refuses_a_blocked_packet(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[first(F1, verdict="BLOCKED")])
    _, doc = rl(repo, "run")
    code, refused = rl(repo, "close", "--packet", doc["packetPath"], "--reason", "accept-concerns")
    assert code == 1 and "CLOSE_NOT_ALLOWED" in refused["error"]


# -- failures ------------------------------------------------------------------------------


def test_delivery_failure_is_delivery_unknown_and_continue_reuses_evidence(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(codex=[{"mode": "fail"}, first(verdict="NO_FINDINGS")])
    code, doc = rl(repo, "run")
    assert code == 2
    assert doc["status"] == "DELIVERY_UNKNOWN" and doc["ok"] is False
    assert doc["message"].startswith("Reviewer invoke failed (no retry)")
    assert "verdict" not in doc
    packet = Path(doc["packetPath"])
    assert "# Review Findings" not in packet.read_text()
    assert len(fakes.calls()) == 1  # never retried
    digest = state_of(doc, repo)["evidenceDigest1"]

    code, retry = rl(repo, "run", "--continue")
    assert code == 0 and retry["status"] == "archived" and retry["round"] == 1
    assert retry["evidence"]["digest"] == digest


def test_frozen_evidence_edited_on_disk_fails_closed(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "fail"}])
    _, doc = rl(repo, "run")
    diff = runtime_of(doc, repo) / "evidence" / "round-1.diff"
    diff.write_text(diff.read_text() + "+tampered\n")
    code, res = rl(repo, "run", "--continue")
    assert code == 2 and res["status"] == "evidence_hash_mismatch"
    assert len(fakes.calls()) == 1


def test_packet_stop_file_is_delivery_unknown(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "fail"}])
    _, doc = rl(repo, "run")
    (runtime_of(doc, repo) / "STOP").write_text("")
    code, res = rl(repo, "run", "--continue")
    assert code == 2 and res["status"] == "DELIVERY_UNKNOWN"
    assert "STOP" in res["message"]
    assert len(fakes.calls()) == 1


def test_malformed_twice_is_malformed_and_correction_resumes(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "looks good to me"}])
    code, doc = rl(repo, "run")
    assert code == 2 and doc["status"] == "malformed_reviewer_output"
    assert "no terminal verdict" in doc["error"]
    ids = resumed_ids(fakes)
    assert ids[0] is None and ids[1] is not None and len(ids) == 2
    assert "CORRECTION" in fakes.calls()[1]["stdin"] or "CORRECTION" in json.dumps(
        fakes.calls()[1]["argv"]
    )
    assert "# Review Findings" not in Path(doc["packetPath"]).read_text()
    assert state_of(doc, repo)["round"] == 0


def test_one_correction_round_repairs_the_answer(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[first(F1, verdict="PASS"), first(F1, verdict="BLOCKED")])
    code, doc = rl(repo, "run")
    assert code == 0 and doc["status"] == "blocked", doc
    assert resumed_ids(fakes)[1] == doc["sessionId"]


def test_ledger_invariant_failure_after_correction(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[first(F1, verdict="PASS")])
    code, doc = rl(repo, "run")
    assert code == 2 and doc["status"] == "malformed_reviewer_output"
    assert "needs every finding resolved" in doc["error"]


def test_budget_exhausted_then_more_rounds(repo: Path, fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(
        codex=[first(F1, verdict="BLOCKED"), again(["| F1 | resolved | ok |"], "NO_FINDINGS")]
    )
    _, r1 = rl(repo, "run", "--rounds", "1")
    fix(repo, r1["packetPath"], tmp_path)
    code, out = rl(repo, "run", "--continue")
    assert code == 2 and out["status"] == "budget_exhausted"
    assert out["roundsUsed"] == 1 and out["roundsBudget"] == 1
    assert out["openBlocking"] == ["F1"] and out["unresolved"] == ["F1"]
    assert out["positions"]["reviewer"]["lastVerdict"] == "BLOCKED"
    assert out["positions"]["reviewer"]["reassessments"] == []
    assert out["positions"]["reviewer"]["findings"][0]["id"] == "F1"
    assert out["positions"]["fixer"]["present"] is True
    assert out["positions"]["fixer"]["verification"] == "pytest -q"
    assert "--rounds +N" in out["recommendation"]
    code, r2 = rl(repo, "run", "--continue", "--rounds", "+1")
    assert code == 0 and r2["status"] == "archived" and r2["round"] == 2


# -- fail-closed state ---------------------------------------------------------------------


def test_packet_edited_behind_the_tools_back(repo: Path, fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(codex=[first(F1, verdict="BLOCKED")])
    _, doc = rl(repo, "run")
    packet = Path(doc["packetPath"])
    packet.write_text(packet.read_text() + "\nI fixed it, trust me.\n")
    body = tmp_path / "fix.md"
    body.write_text(FIX)
    code, res = rl(repo, "fix-completion", "--packet", str(packet), "--body-file", str(body))
    assert code == 2 and res["status"] == "packet_hash_mismatch"
    code, res = rl(repo, "run", "--continue")
    assert code == 2 and res["status"] == "packet_hash_mismatch"
    assert len(fakes.calls()) == 1


def test_interrupted_stage_write_needs_recovery(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "fail"}])
    _, doc = rl(repo, "run")
    state_path = runtime_of(doc, repo) / "auto-run-state.json"
    state = json.loads(state_path.read_text())
    state["pendingStage"] = {"round": 1, "anchor": "review_findings"}
    write_signed_state(state_path, state)  # as the tool's own interrupted write leaves it
    code, res = rl(repo, "run", "--continue")
    assert code == 2 and res["status"] == "STATE_RECOVERY_REQUIRED"
    # A state that is not even JSON carries no MAC: it is untrusted, never a verdict, and
    # the review runs again on a new packet (docs/authenticated-state.md).
    state_path.write_text("{not json")
    fakes.script(codex=[first(verdict="NO_FINDINGS")])
    code, res = rl(repo, "run", "--continue")
    assert code == 0 and res["status"] == "archived", res
    assert res["packetId"] != doc["packetId"] and len(fakes.calls()) == 2
    assert [u["path"] for u in res["untrusted"]] == [str(state_path)]


def test_incomplete_ledger_needs_migration(repo: Path, fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(codex=[first(F1, verdict="BLOCKED")])
    _, doc = rl(repo, "run")
    fix(repo, doc["packetPath"], tmp_path)
    state_path = runtime_of(doc, repo) / "auto-run-state.json"
    state = json.loads(state_path.read_text())
    del state["findingCatalog"]
    write_signed_state(state_path, state)  # an older review-loop's state, signed by this user
    # the packet's own stages can rebuild it ...
    fakes.script(codex=[again(["| F1 | resolved | ok |"], "PASS")])
    packet = Path(doc["packetPath"])
    saved = packet.read_bytes()
    code, res = rl(repo, "run", "--continue")
    assert code == 0 and res["status"] == "archived", res
    assert state_of(res, repo)["ledgerRebuiltFromPacket"] is True
    # ... unless they cannot be read back
    archived = Path(res["packetPath"])
    archived.rename(packet)
    broken = saved.replace("| F1 | [阻塞] |".encode(), b"| F1 | major |")
    packet.write_bytes(broken)
    state["packetHash"] = hashlib.sha256(broken).hexdigest()
    write_signed_state(state_path, state)
    code, res = rl(repo, "run", "--continue")
    assert code == 2 and res["status"] == "STATE_MIGRATION_REQUIRED", res


# -- the lock ------------------------------------------------------------------------------


def _lock_with_owner(runtime: Path, pid: int) -> Path:
    lock = runtime / ".auto-run.lock"
    lock.mkdir(parents=True)
    (lock / "owner").write_text(f"someone-else\n{pid}\n")
    return lock


def test_lock_of_a_live_owner_is_respected(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "fail"}, first(verdict="NO_FINDINGS")])
    _, doc = rl(repo, "run")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        lock = _lock_with_owner(runtime_of(doc, repo), sleeper.pid)
        code, res = rl(repo, "run", "--continue")
        assert code == 1 and "PACKET_LOCK_HELD" in res["error"]
        assert str(sleeper.pid) in res["error"]
        assert (lock / "owner").read_text() == f"someone-else\n{sleeper.pid}\n"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert len(fakes.calls()) == 1


def test_lock_of_a_dead_owner_is_reclaimed(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "fail"}, first(verdict="NO_FINDINGS")])
    _, doc = rl(repo, "run")
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = _lock_with_owner(runtime_of(doc, repo), dead.pid)
    code, res = rl(repo, "run", "--continue")
    assert code == 0 and res["status"] == "archived"
    assert not lock.exists()  # released after the run


def test_fresh_lock_without_owner_is_held_then_reclaimed(repo: Path, fakes: FakeCLIs) -> None:
    import os
    import time

    fakes.script(codex=[{"mode": "fail"}, first(verdict="NO_FINDINGS")])
    _, doc = rl(repo, "run")
    lock = runtime_of(doc, repo) / ".auto-run.lock"
    lock.mkdir()
    code, res = rl(repo, "run", "--continue")
    assert code == 1 and "owner not published" in res["error"]
    old = time.time() - 10
    os.utime(lock, (old, old))
    code, res = rl(repo, "run", "--continue")
    assert code == 0 and res["status"] == "archived"


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["run", "--intake", "--continue"], "--intake"),
        (["run", "--no-sandbox"], "--no-sandbox"),
        (["run", "--scope", "Not_Kebab"], "--scope"),
        (["run", "--rounds", "zero"], "--rounds"),
        (["run", "--completion", "maybe"], "--completion"),
        (["run", "--reviewer", "nobody"], "--reviewer"),
        (["run", "--continue"], "--continue"),
        (["fix-completion", "--packet", "nope.md", "--body", "x"], "--body"),
    ],
)
def test_bad_options_write_nothing(
    repo: Path, fakes: FakeCLIs, argv: list[str], field: str
) -> None:
    code, doc = rl(repo, *argv)
    assert code == 1 and field in doc["error"], doc
    assert not (repo / ".review-handoff" / "active").exists()
    assert fakes.calls() == []


def test_a_new_run_refuses_a_packet_with_rounds(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[first(F1, verdict="BLOCKED")])
    _, doc = rl(repo, "run")
    code, res = rl(repo, "run", "--packet", doc["packetPath"])
    assert code == 1 and "--continue" in res["error"]


def test_intake_packet_and_other_reviewer_starts_a_new_session(
    repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(
        codex=[first(F1, verdict="BLOCKED")],
        claude=[again(["| F1 | resolved | ok |"], "PASS")],
    )
    code, doc = rl(repo, "run", "--intake")
    assert code == 0 and "# Review Intake" in Path(doc["packetPath"]).read_text()
    fix(repo, doc["packetPath"], tmp_path)
    code, res = rl(repo, "run", "--continue", "--reviewer", "claude")
    assert code == 0 and res["status"] == "archived" and res["reviewer"] == "claude"
    claude_call = next(c for c in fakes.calls() if c["product"] == "claude")
    assert "--resume" not in claude_call["argv"]  # a codex session is never resumed by claude
    assert "new session" in res["warning"]


# -- a diff too large for one prompt (the workflow API, on asyncio and trio) -------------------


def _coverage_answer(paths: list[str], verdict: str) -> dict[str, Any]:
    listing = "\n".join(f"- {p}" for p in paths)
    text = f"## Coverage\n\n{listing}\n\n## Findings\n\n{HEADER}\n\nVerdict: {verdict}\n"
    return {"mode": "ok", "text": text}


@pytest.mark.anyio
async def test_summarised_diff_must_be_covered_to_pass(repo: Path, fakes: FakeCLIs) -> None:
    from review_loop.orchestrator.cli.common import load_user_prefs
    from review_loop.orchestrator.dispatcher import open_dispatcher
    from review_loop.orchestrator.workflows.review_run import RunPlan, run_review

    (repo / "big.txt").write_text("".join(f"line {i}\n" for i in range(400)))
    prefs = load_user_prefs()
    fakes.script(
        codex=[
            first(verdict="NO_FINDINGS"),
            _coverage_answer(["app.py"], "NO_FINDINGS"),
            _coverage_answer(["app.py", "big.txt"], "NO_FINDINGS"),
        ]
    )
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        refused = await run_review(dispatcher, RunPlan(diff_budget=300))
        assert refused["status"] == "malformed_reviewer_output"
        assert "big.txt" in refused["error"] and "Coverage" in refused["error"]
        prompt = fakes.calls()[0]["stdin"] or json.dumps(fakes.calls()[0]["argv"])
        assert "big.txt (+400 -0" in prompt and "Not shown inline" in prompt
        assert "line 399" not in prompt

        passed = await run_review(dispatcher, RunPlan(diff_budget=300, cont=True))
    assert passed["status"] == "archived", passed
    assert "summarised" in passed["warning"]
    assert passed["evidence"]["coveredPaths"] == ["app.py", "big.txt"]


def test_lost_session_falls_back_to_a_new_one_with_a_warning(
    repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(
        codex=[
            first(F1, verdict="BLOCKED"),
            {"mode": "session-not-found"},
            again(["| F1 | resolved | ok |"], "PASS"),
        ]
    )
    _, r1 = rl(repo, "run")
    fix(repo, r1["packetPath"], tmp_path)
    code, r2 = rl(repo, "run", "--continue")
    assert code == 0 and r2["status"] == "archived", r2
    assert "session_not_found" in r2["warning"]
    assert resumed_ids(fakes) == [None, r1["sessionId"], None]


def test_budget_exhausted_after_a_rereview_shows_both_positions(
    repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(
        codex=[
            first(F1, verdict="BLOCKED"),
            again(["| F1 | unresolved | still raises on [] |"], "BLOCKED"),
        ]
    )
    _, r1 = rl(repo, "run", "--rounds", "2", "--intake=false")
    fix(repo, r1["packetPath"], tmp_path)
    # BLOCKED on the last budgeted round stops there (as the original), the round recorded
    code, r2 = rl(repo, "run", "--continue")
    assert code == 2 and r2["status"] == "budget_exhausted" and r2["lastAnchor"] == "re_review"
    assert r2["roundsUsed"] == 2 and r2["positions"]["fixer"]["fixRoundsCompleted"] == 1
    fix(repo, r1["packetPath"], tmp_path)
    code, out = rl(repo, "run", "--continue")
    assert code == 2 and out["status"] == "budget_exhausted"
    assert out["roundsUsed"] == 2 and out["lastVerdict"] == "BLOCKED"
    assert out["positions"]["reviewer"]["reassessments"] == [
        {"id": "F1", "status": "unresolved", "evidence": "still raises on []"}
    ]
    assert out["positions"]["fixer"]["fixRoundsCompleted"] == 2
    assert len(fakes.calls()) == 2
