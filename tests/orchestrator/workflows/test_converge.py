"""Collaboration tests: three-party convergence, preflight and the blind review, fake peers.

Each test builds a small git repository, puts the fake ``claude``/``codex``/``grok``/
``gemini`` first on PATH, scripts each product's answers, and drives the real command line
in-process (``review_loop.orchestrator.cli.run``): parsing, the workflow, the dispatcher,
the process layer and the files on disk are all exercised. The host is ``claude``, so by
the default prefs order Peer A is ``codex`` and Peer B is ``grok``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.agents.converge import preflight_prompt
from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.orchestrator.workflows.converge import (
    ConvergeInputs,
    run_converge,
    select_converge_peers,
)
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo, git

PLAN = "# Plan\n\n- T1: guard empty input in app.f\n- T2: document it\n"
HOST = (
    "## Scope\nT1 and T2; nothing else.\n\n## Ownership\napp.py owns the guard.\n\n"
    "## Verification\npytest -q tests/test_app.py\n\n"
    "## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE\n"
)


def position(label: str, *disagreements: str, human: tuple[str, ...] = ()) -> dict[str, Any]:
    """A scripted peer answer ending with the structured block."""
    points = "\n".join(f"- {d}" for d in disagreements) or "- none"
    decisions = "\n".join(f"- {h}" for h in human) or "- none"
    stance = "DISAGREE" if disagreements else "AGREE"
    text = (
        f"{label}\n\n## Disagreements\n{points}\n\n## Human decisions\n{decisions}\n\n"
        f"Position: {stance}"
    )
    return {"mode": "ok", "text": text}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(tmp_path / "repo", {"app.py": "def f(x):\n    return x[0]\n"})
    return root


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    clis = FakeCLIs(tmp_path / "fakes")
    env = clis.env(path_only=True)
    for key in ("PATH", "FAKE_AGENT_SCRIPT", "FAKE_AGENT_LOG"):
        monkeypatch.setenv(key, env[key])
    return clis


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    plan, host = tmp_path / "plan.md", tmp_path / "host.md"
    plan.write_text(PLAN)
    host.write_text(HOST)
    return plan, host


def rl(repo: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    out: list[str] = []
    code = cli_run([argv[0], "--repo", str(repo), *argv[1:]], stdout=out.append)
    assert len(out) == 1
    return code, json.loads(out[0])


def converge(
    repo: Path, files: tuple[Path, Path], *extra: str, host_product: str = "claude"
) -> tuple[int, dict[str, Any]]:
    plan, host = files
    return rl(
        repo,
        "converge",
        "--plan",
        str(plan),
        "--host-position",
        str(host),
        "--host",
        host_product,
        "--run",
        "task",
        *extra,
    )


def prompt_of(call: dict[str, Any]) -> str:
    argv = call["argv"]
    if call["product"] == "grok":
        return str(argv[argv.index("-p") + 1])
    return str(call["stdin"])


def resumed(call: dict[str, Any]) -> str | None:
    argv = call["argv"]
    for flag in ("resume", "-r", "--resume"):
        if flag in argv:
            return str(argv[argv.index(flag) + 1])
    return None


def journal(repo: Path) -> list[dict[str, Any]]:
    path = repo / ".review-handoff" / "runtime" / "converge" / "task" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- convergence -----------------------------------------------------------------------------


def test_agreement_on_round_one(repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]) -> None:
    fakes.script(
        codex=[position("codex A: T1 in app.py"), position("codex B1: holds")],
        grok=[position("grok A: T1 then T2"), position("grok B1: holds")],
    )
    code, doc = converge(repo, files)
    assert code == 0, doc
    assert doc["status"] == "converged" and doc["rounds"] == 1 and doc["fastPath"] is True
    assert doc["asked"] == 4 and doc["reused"] == 0
    everything = fakes.calls()
    # with no preflight recorded, the blind-review Claude is proven alongside round A
    checks = [c for c in everything if preflight_prompt().strip() in str(c["stdin"])]
    assert [(c["product"], resumed(c)) for c in checks] == [("claude", None)]
    calls = [c for c in everything if c not in checks]
    assert [c["product"] for c in calls].count("codex") == 2
    assert [c["product"] for c in calls].count("grok") == 2
    assert "claude" not in [c["product"] for c in calls]  # the host is never its own peer
    a_calls = [c for c in calls if resumed(c) is None]
    b_calls = [c for c in calls if resumed(c) is not None]
    assert len(a_calls) == 2 and len(b_calls) == 2
    for call in a_calls:  # A is independent: neither the host's nor the other's position
        assert "app.py owns the guard" not in prompt_of(call)
        assert "codex A" not in prompt_of(call) and "grok A" not in prompt_of(call)
    by_product = {c["product"]: c for c in b_calls}
    # B: each peer in its own resumed session, with the host's and the other peer's position
    assert resumed(by_product["codex"]) == doc["peers"]["A"]["sessionId"]
    assert resumed(by_product["grok"]) == doc["peers"]["B"]["sessionId"]
    assert "grok A: T1 then T2" in prompt_of(by_product["codex"])
    assert "app.py owns the guard" in prompt_of(by_product["codex"])
    assert "codex A: T1 in app.py" in prompt_of(by_product["grok"])
    text = doc["recordText"]
    assert text.startswith("Three-party Convergence\n- Decision: converged after 1 ")
    assert "- Peer A (codex) session: " + doc["peers"]["A"]["sessionId"] in text
    assert "- Fallbacks: none\n" in text and "- Remaining decisions: none\n" in text
    assert "- Ownership and dependency direction: app.py owns the guard." in text
    record = Path(doc["recordPath"]).read_text()
    assert record == text
    ledger = json.loads(Path(doc["ledgerPath"]).read_text())
    assert ledger["convergence"]["status"] == "converged"
    # sessions lists every converge session (resumable handles)
    code, sessions = rl(repo, "sessions", "--product", "codex")
    assert doc["peers"]["A"]["sessionId"] in [s["sessionId"] for s in sessions["sessions"]]


def test_disagreement_resolved_in_round_two(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    fakes.script(
        codex=[
            position("codex A", "T2 belongs to docs/, not app.py"),
            position("codex B1", "still docs/"),
            position("codex B2: grok's evidence holds"),
        ],
        grok=[
            position("grok A"),
            position("grok B1", "codex misreads app.py:2"),
            position("grok B2"),
        ],
    )
    code, doc = converge(repo, files)
    assert code == 0, doc
    assert doc["status"] == "converged" and doc["rounds"] == 2
    assert doc["disagreementInA"] is True and doc["fastPath"] is False
    assert doc["asked"] == 6
    calls = fakes.calls()
    b2 = [c for c in calls if "round B2" in prompt_of(c)]
    assert len(b2) == 2
    codex_b2 = next(c for c in b2 if c["product"] == "codex")
    assert "grok B1" in prompt_of(codex_b2)  # round 2 carries the other's round-1 position
    assert resumed(codex_b2) == doc["peers"]["A"]["sessionId"]
    assert "converged after 2 cross-examination round(s)" in doc["recordText"]


def test_disagreement_left_after_two_rounds(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    fakes.script(
        codex=[position("codex", "T2 is out of scope")],
        grok=[position("grok", human=("should T2 ship in this release?",))],
    )
    code, doc = converge(repo, files)
    assert code == 0, doc
    assert doc["status"] == "host_adjudication" and doc["rounds"] == 2
    assert doc["asked"] == 6  # never a third round
    assert doc["remainingDisagreements"] == ["Peer A (codex): T2 is out of scope"]
    assert doc["proposedHumanDecisions"] == ["(proposed by Peer B) should T2 ship in this release?"]
    text = doc["recordText"]
    assert "disagreement remains after 2 cross-examination rounds" in text
    assert "Peer A (codex): T2 is out of scope" in text


def test_human_decision_in_ledger_gates(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    code, _ = rl(
        repo,
        "ledger",
        "set",
        "--run",
        "task",
        "--id",
        "T3",
        "--status",
        "HUMAN_DECISION",
        "--title",
        "public API name",
    )
    assert code == 0
    fakes.script(codex=[position("codex")], grok=[position("grok")])
    code, doc = converge(repo, files)
    assert code == 0, doc
    assert doc["status"] == "HUMAN_GATE" and doc["result"] == "HUMAN_GATE"
    assert doc["fastPath"] is False and doc["rounds"] == 1  # B still runs
    assert "HUMAN_DECISION T3: public API name" in doc["record"]["remainingDecisions"]


def test_timeout_with_fallback(repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]) -> None:
    fakes.script(
        codex=[{"mode": "hang"}],
        gemini=[position("gemini A"), position("gemini B1")],
        grok=[position("grok A"), position("grok B1")],
    )
    code, doc = converge(repo, files, "--fallback", "gemini", "--timeout", "2")
    assert code == 0, doc
    assert doc["status"] == "converged"
    assert doc["peers"]["A"]["product"] == "gemini"
    assert doc["fallbacks"] == ["codex → gemini (timeout, A)"]
    assert "- Fallbacks: codex → gemini (timeout, A)" in doc["recordText"]
    assert "- Peer A (gemini) session: " in doc["recordText"]
    calls = fakes.calls()
    assert [c["product"] for c in calls].count("codex") == 1  # never re-sent after a timeout
    gemini_b = [c for c in calls if c["product"] == "gemini" and resumed(c)]
    assert len(gemini_b) == 1 and resumed(gemini_b[0]) == doc["peers"]["A"]["sessionId"]


def test_timeout_without_fallback_is_unverified_then_continues(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    # Host codex: Peer A is claude (its session id is chosen before launch), Peer B grok.
    fakes.script(claude=[{"mode": "hang"}], grok=[position("grok A")])
    code, doc = converge(repo, files, "--timeout", "2", host_product="codex")
    assert code == 2 and doc["ok"] is False
    assert doc["status"] == "UNVERIFIED" and doc["missingStage"] == "A"
    assert doc["result"] == "UNVERIFIED"
    handle = doc["peers"]["A"]["sessionId"]
    assert handle  # the handle of the timed-out session is kept
    assert doc["peers"]["A"]["failure"]["timedOut"] is True
    assert doc["peers"]["A"]["failure"]["fallbacks"] == []
    assert f"- Peer A (claude) session: {handle} — UNVERIFIED (timeout)" in doc["recordText"]
    assert "UNVERIFIED — missing position(s): Peer A (claude) at A: timeout" in doc["recordText"]
    assert doc["peers"]["B"]["state"] == "DELIVERED"
    assert len(fakes.calls()) == 2  # a timeout is never re-sent within the call

    # The next call continues from the missing side only, in the kept session.
    fakes.script(
        claude=[position("claude A late"), position("claude B1")],
        grok=[position("grok B1")],
    )
    code, doc = converge(repo, files, "--timeout", "20", host_product="codex")
    assert code == 0, doc
    assert doc["status"] == "converged" and doc["reused"] == 1 and doc["asked"] == 3
    later = fakes.calls()[2:]
    assert [c["product"] for c in later].count("grok") == 1  # grok's A was not re-asked
    claude_a = later[[c["product"] for c in later].index("claude")]
    assert resumed(claude_a) == handle
    assert "did not reach the host" in prompt_of(claude_a)
    assert doc["peers"]["A"]["sessionId"] == handle


def test_timeout_in_round_b_continues_from_the_missing_side(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    fakes.script(
        claude=[position("claude A"), {"mode": "hang"}],
        grok=[position("grok A"), position("grok B1")],
    )
    code, doc = converge(repo, files, "--timeout", "2", host_product="codex")
    assert code == 2 and doc["status"] == "UNVERIFIED" and doc["missingStage"] == "B1"
    session = doc["peers"]["A"]["sessionId"]
    assert doc["peers"]["B"]["state"] == "DELIVERED"
    fakes.script(claude=[position("claude B1")], grok=[position("never asked")])
    before = len(fakes.calls())
    code, doc = converge(repo, files, "--timeout", "20", host_product="codex")
    assert code == 0, doc
    assert doc["status"] == "converged" and doc["asked"] == 1 and doc["reused"] == 3
    (call,) = fakes.calls()[before:]
    assert call["product"] == "claude" and resumed(call) == session
    assert "did not reach the host" in prompt_of(call) and "grok A" in prompt_of(call)


def test_one_fallback_for_two_timeouts_never_answers_both_sides(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    fakes.script(codex=[{"mode": "hang"}], grok=[{"mode": "hang"}], gemini=[position("gemini")])
    code, doc = converge(repo, files, "--fallback", "gemini", "--timeout", "2")
    assert code == 2 and doc["status"] == "UNVERIFIED"
    products = {doc["peers"][s]["product"] for s in ("A", "B")}
    assert "gemini" in products and len(products) == 2  # one side keeps gemini's answer
    voided = [e for e in journal(repo) if e["event"] == "call.void"]
    assert len(voided) == 1 and "collided" in voided[0]["reason"]
    assert "fallback collided" in doc["recordText"]


@pytest.mark.anyio
async def test_interrupted_run_resumes_without_reasking(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    fakes.script(codex=[position("codex A"), position("codex B1")], grok=[{"mode": "hang"}])
    inputs = ConvergeInputs(
        run="task",
        plan=PLAN,
        host_position=HOST,
        host="claude",
        peers=("codex", "grok"),
        timeout_ms=60_000,
    )
    prefs = Prefs.validate({"graceMs": 300})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(run_converge, dispatcher, inputs)
                with anyio.fail_after(30):
                    while not any(
                        e["event"] == "call.end" and e["side"] == "A"
                        for e in (journal(repo) if _journal_exists(repo) else [])
                    ):
                        await anyio.sleep(0.05)
                scope.cancel()
    # grok never answered (the blind reviewer's preflight, alongside round A, may have)
    positions = [e for e in journal(repo) if e["event"] == "call.end" and e["side"] in ("A", "B")]
    assert [e["side"] for e in positions] == ["A"]

    fakes.script(codex=[position("codex B1")], grok=[position("grok A"), position("grok B1")])
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        doc = await run_converge(dispatcher, inputs)
    assert doc["status"] == "converged" and doc["reused"] == 1 and doc["asked"] == 3
    codex_calls = [c for c in fakes.calls() if c["product"] == "codex"]
    assert len(codex_calls) == 2  # A once (before the interruption), B1 once
    assert resumed(codex_calls[1]) == doc["peers"]["A"]["sessionId"]


def _journal_exists(repo: Path) -> bool:
    return (repo / ".review-handoff" / "runtime" / "converge" / "task" / "journal.jsonl").exists()


def test_peer_selection_skips_the_host_always() -> None:
    prefs = Prefs.validate({"skipHost": False})
    assert select_converge_peers(prefs, [], "claude") == ["codex", "grok"]
    assert select_converge_peers(prefs, [], "codex") == ["claude", "grok"]
    assert select_converge_peers(prefs, [], "grok") == ["claude", "codex"]
    assert select_converge_peers(prefs, ["gemini"], "claude") == ["gemini", "codex"]
    assert select_converge_peers(prefs, [], None) == ["claude", "codex"]
    short = Prefs.validate({"order": ["claude", "codex"]})
    assert select_converge_peers(short, [], "claude") == ["codex"]


def test_peer_command_alias_launches_the_peer(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    launcher = fakes.bin / "codex002"
    launcher.write_text(f'#!/bin/sh\nexec "{fakes.bin / "codex"}" "$@"\n')
    launcher.chmod(0o755)
    fakes.script(codex=[position("codex002 A"), position("codex002 B1")], grok=[position("g")])
    code, doc = converge(repo, files, "--peer-command", "codex002")
    assert code == 0, doc
    assert doc["peers"]["A"]["peer"] == "codex002" and doc["peers"]["A"]["product"] == "codex"
    assert "- Peer A (codex) session: " in doc["recordText"]


# -- preflight ---------------------------------------------------------------------------------


def test_preflight_ready(repo: Path, fakes: FakeCLIs) -> None:
    code, doc = rl(repo, "preflight", "--host", "claude", "--run", "task")
    assert code == 0, doc
    assert doc["status"] == "ready"
    assert [(c["role"], c["product"], c["resumable"]) for c in doc["checks"]] == [
        ("Peer A", "codex", True),
        ("Peer B", "grok", True),
        ("Blind reviewer", "claude", True),
    ]


def test_preflight_missing_peer(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = FakeCLIs(tmp_path / "nogrok", products=("claude", "codex", "gemini"))
    env = clis.env(path_only=True)
    for key in ("PATH", "FAKE_AGENT_SCRIPT", "FAKE_AGENT_LOG"):
        monkeypatch.setenv(key, env[key])
    code, doc = rl(repo, "preflight", "--host", "claude", "--run", "task")
    assert code == 2 and doc["ok"] is False
    assert doc["status"] == "MISSING_DEPENDENCIES"
    assert len(doc["missing"]) == 1
    assert doc["missing"][0].startswith("Peer B (grok): no real round trip — NOT_SUBMITTED")
    block = doc["block"]
    assert block.startswith("Task Completion Result\n- Result: MISSING_DEPENDENCIES\n")
    assert "- Missing: Peer B (grok): no real round trip" in block
    assert "- Work started: no\n" in block
    assert {c["product"] for c in clis.calls()} == {"codex", "claude"}  # nothing stood in
    code, shown = rl(repo, "ledger", "show", "--run", "task")
    assert shown["ledger"]["preflight"]["ready"] is False
    # no discussion starts after a failed preflight
    plan = tmp_path / "plan.md"
    plan.write_text(PLAN)
    calls = len(clis.calls())
    code, doc = rl(
        repo,
        "converge",
        "--plan",
        str(plan),
        "--host-position",
        str(plan),
        "--host",
        "claude",
        "--run",
        "task",
    )
    assert code == 2 and doc["status"] == "MISSING_DEPENDENCIES"
    assert doc["block"].startswith("Task Completion Result\n- Result: MISSING_DEPENDENCIES")
    assert len(clis.calls()) == calls


# -- blind review ---------------------------------------------------------------------------------

FIX_REVIEW = """## Findings

| ID | Class | Title | Evidence | Required fix |
|---|---|---|---|---|
| B1 | Fix | empty list still crashes | app.py:2 indexes x[0] | return None for [] |
| B2 | Backlog | no type hints | app.py:1 | add hints later |
| B3 | Reject | naming | f is fine in context | none |

Verdict: FIX"""
CLEAN_REVIEW = "## Findings\n\nNone\n\nVerdict: CLEAN"


def test_blind_review_finds_a_fix_then_clean(
    repo: Path, fakes: FakeCLIs, files: tuple[Path, Path]
) -> None:
    fakes.script(codex=[position("codex")], grok=[position("grok")])
    converge(repo, files)
    converge_calls = len(fakes.calls())  # its claude call: the blind reviewer's preflight
    (repo / "app.py").write_text("def f(x):\n    return x[0] if len(x) else 0\n")
    fakes.script(claude=[{"mode": "ok", "text": FIX_REVIEW}, {"mode": "ok", "text": CLEAN_REVIEW}])
    code, doc = rl(repo, "blind-review", "--run", "task")
    assert code == 0, doc
    assert doc["verdict"] == "FIX" and doc["round"] == 1
    assert (doc["fix"], doc["backlog"], doc["reject"]) == (["B1"], ["B2"], ["B3"])
    evidence = doc["evidence"]
    assert evidence["baseSha"] == git(repo, "rev-parse", "HEAD").strip()
    claude_calls = [c for c in fakes.calls()[converge_calls:] if c["product"] == "claude"]
    assert len(claude_calls) == 1
    prompt = claude_calls[0]["stdin"]
    assert resumed(claude_calls[0]) is None  # a fresh session
    assert evidence["digest"] in prompt and "len(x)" in prompt  # only the final evidence
    assert "app.py owns the guard" not in prompt and "codex" not in prompt  # no position
    # ... and nothing on disk shows one: it ran in a copy without .review-handoff/
    assert claude_calls[0]["cwd"] != str(repo)
    assert ".review-handoff" not in claude_calls[0]["cwd_entries"]
    assert "app.py" in claude_calls[0]["cwd_entries"]
    # the same evidence is never reviewed twice
    code, again = rl(repo, "blind-review", "--run", "task")
    assert again["reused"] is True and again["verdict"] == "FIX"
    assert len([c for c in fakes.calls()[converge_calls:] if c["product"] == "claude"]) == 1
    # fixed: a new evidence id, a second (last) round
    (repo / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    code, second = rl(repo, "blind-review", "--run", "task")
    assert code == 0 and second["verdict"] == "CLEAN" and second["round"] == 2
    assert second["evidence"]["digest"] != evidence["digest"]
    # every blind review is a fresh session: the second never resumes the first
    claude_calls = [c for c in fakes.calls()[converge_calls:] if c["product"] == "claude"]
    assert len(claude_calls) == 2
    assert resumed(claude_calls[1]) is None
    assert second["reviewer"]["fresh"] is True
    assert second["reviewer"]["sessionId"] != doc["reviewer"]["sessionId"]
    (repo / "app.py").write_text("def f(x):\n    return None\n")
    code, third = rl(repo, "blind-review", "--run", "task")
    assert code == 2 and third["status"] == "budget_exhausted"


def test_blind_review_malformed_is_unverified(repo: Path, fakes: FakeCLIs) -> None:
    (repo / "app.py").write_text("def f(x):\n    return 1\n")
    fakes.script(claude=[{"mode": "ok", "text": "## Findings\n\nNone\n\nVerdict: FIX"}])
    code, doc = rl(repo, "blind-review", "--run", "task")
    assert code == 2
    assert doc["status"] == "malformed_reviewer_output" and doc["result"] == "UNVERIFIED"
