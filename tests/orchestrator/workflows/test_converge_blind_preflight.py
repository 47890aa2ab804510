"""Collaboration tests: round A standing in for preflight proves the blind reviewer too (N-1).

Seed 004, Capability Preflight: "Every Peer must be launchable under the adapter's read-only
control; likewise for the Claude used for blind review"; a missing capability gives
``MISSING_DEPENDENCIES`` with the stop point "before discussion, Goal activation, and
source changes". So ``converge`` with no preflight recorded checks the blind reviewer as
``preflight`` does (a real round trip, its session listed by ``sessions``): its CLI not on
PATH stops before any peer is asked; a round trip that fails stops before round B. Fake
CLIs on PATH through the real process layer; the real signed journal and ledger.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.converge import preflight_prompt
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import files, position, repo, rl

__all__ = ["files", "repo"]  # fixtures shared with test_converge
PEERS_AGREE = [position("position")]


def use_fakes(clis: FakeCLIs, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    env = clis.env(path_only=True)
    for key in ("PATH", "FAKE_AGENT_SCRIPT", "FAKE_AGENT_LOG"):
        monkeypatch.setenv(key, env[key])
    return clis


def round_a(repo: Path, plan: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    return rl(repo, "converge", "--plan", str(plan), "--host", "claude", "--run", "t12", *extra)


def ledger_preflight(repo: Path) -> dict[str, Any] | None:
    _, shown = rl(repo, "ledger", "show", "--run", "t12")
    found: dict[str, Any] | None = shown["ledger"]["preflight"]
    return found


def preflight_calls(clis: FakeCLIs) -> list[dict[str, Any]]:
    return [c for c in clis.calls() if preflight_prompt().strip() in str(c["stdin"])]


def test_no_claude_on_path_stops_before_any_peer_is_asked(
    repo: Path, files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = use_fakes(FakeCLIs(tmp_path / "fakes", ("codex", "grok", "gemini")), monkeypatch)
    clis.script(any_=PEERS_AGREE)
    plan, _ = files
    code, doc = round_a(repo, plan)
    assert code == 2, doc
    assert (doc["status"], doc["result"], doc["asked"]) == (
        "MISSING_DEPENDENCIES",
        "MISSING_DEPENDENCIES",
        0,
    )
    assert any(m.startswith("Blind reviewer (claude):") for m in doc["missing"]), doc
    assert "- Stop point: before discussion, Goal activation, and source changes" in doc["block"]
    assert clis.calls() == []  # no discussion started


def test_a_failing_blind_reviewer_stops_before_round_b(
    repo: Path, files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = use_fakes(FakeCLIs(tmp_path / "fakes"), monkeypatch)
    clis.script(any_=PEERS_AGREE, claude=[{"mode": "not-logged-in"}])
    plan, host = files
    code, doc = round_a(repo, plan)
    assert code == 2 and doc["status"] == "MISSING_DEPENDENCIES", doc
    [problem] = [m for m in doc["missing"] if m.startswith("Blind reviewer (claude):")]
    assert "no real round trip" in problem
    assert doc["blindReviewer"]["ok"] is False
    assert ledger_preflight(repo) is not None
    assert ledger_preflight(repo)["ready"] is False  # type: ignore[index]
    asked = len(clis.calls())
    code, again = round_a(repo, plan, "--host-position", str(host))
    assert code == 2 and again["status"] == "MISSING_DEPENDENCIES"
    assert len(clis.calls()) == asked  # no round B, nobody asked again


def test_a_working_blind_reviewer_is_proven_alongside_round_a(
    repo: Path, files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = use_fakes(FakeCLIs(tmp_path / "fakes"), monkeypatch)
    clis.script(any_=PEERS_AGREE, claude=[{"mode": "ok", "text": "PREFLIGHT OK"}])
    plan, _ = files
    code, doc = round_a(repo, plan)
    assert code == 0 and doc["status"] == "awaiting_host_position", doc
    assert doc["asked"] == 2  # the two positions; the blind reviewer's check is not one
    assert (doc["preflight"]["ready"], doc["preflight"]["via"]) == (True, "round A")
    [check] = preflight_calls(clis)
    assert check["product"] == "claude"
    assert sorted(c["product"] for c in clis.calls()) == ["claude", "codex", "grok"]
    journal = repo / ".review-handoff" / "runtime" / "converge" / "t12" / "journal.jsonl"
    ends = [json.loads(line) for line in journal.read_text().splitlines()]
    [blind] = [e for e in ends if e["event"] == "call.end" and e["stage"] == "preflight"]
    assert (blind["side"], blind["product"], blind["state"]) == (
        "Blind reviewer",
        "claude",
        "DELIVERED",
    )


def test_claude_as_a_peer_serves_as_the_blind_reviewer_check(
    repo: Path, files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = use_fakes(FakeCLIs(tmp_path / "fakes"), monkeypatch)
    clis.script(any_=PEERS_AGREE)
    plan, _ = files
    code, doc = rl(repo, "converge", "--plan", str(plan), "--host", "codex", "--run", "t12")
    assert code == 0 and doc["status"] == "awaiting_host_position", doc
    assert doc["peers"]["A"]["product"] == "claude"
    assert (doc["preflight"]["ready"], doc["preflight"]["via"]) == (True, "round A")
    assert preflight_calls(clis) == []  # its round A answer is the blind reviewer's proof
    assert sorted(c["product"] for c in clis.calls()) == ["claude", "grok"]


def test_a_recorded_preflight_is_not_proven_again(
    repo: Path, files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = use_fakes(FakeCLIs(tmp_path / "fakes"), monkeypatch)
    clis.script(any_=[{"mode": "ok", "text": "PREFLIGHT OK"}])
    code, doc = rl(repo, "preflight", "--host", "claude", "--run", "t12")
    assert code == 0 and doc["status"] == "ready", doc
    before = len(clis.calls())
    assert len(preflight_calls(clis)) == before == 3  # the preflight command's own three
    clis.script(any_=PEERS_AGREE)
    plan, _ = files
    code, doc = round_a(repo, plan)
    assert code == 0 and doc["status"] == "awaiting_host_position", doc
    assert len(preflight_calls(clis)) == before  # nothing proven again
    assert sorted(c["product"] for c in clis.calls()[before:]) == ["codex", "grok"]
