"""Process tests: ``preflight``, ``converge``, ``blind-review`` and ``ledger`` run as processes.

The contract a skill parses: one JSON document on stdout, exit 0 / 2 (``ok: false``) / 1
(bad input, naming the field), and bad input leaves nothing behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.test_cli import git_repo, run_cli

AGREE = "## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def test_help_lists_the_commands() -> None:
    code, doc, _ = run_cli("help")
    assert code == 0
    for name in ("preflight", "converge", "blind-review", "ledger"):
        assert name in doc["commands"]
    assert any(u.startswith("review-loop converge [--repo DIR] --plan FILE") for u in doc["usage"])
    assert any(u.startswith("review-loop ledger result") for u in doc["usage"])


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["converge"], "--plan: is required"),
        (["converge", "--plan", "{empty}", "--host-position", "{plan}"], "--plan: "),
        (["converge", "--plan", "{plan}", "--host-position", "{empty}"], "--host-position: "),
        (
            [
                "converge",
                "--plan",
                "{plan}",
                "--host-position",
                "{plan}",
                "--host",
                "codex",
                "--peer",
                "codex",
            ],
            "--peer: the host product 'codex' cannot be a peer",
        ),
        (
            [
                "converge",
                "--plan",
                "{plan}",
                "--host-position",
                "{plan}",
                "--peer",
                "codex",
                "--peer",
                "grok",
                "--peer",
                "claude",
            ],
            "--peer: at most two peers",
        ),
        (
            ["converge", "--plan", "{plan}", "--host-position", "{plan}", "--host", "nobody"],
            "--host: unknown",
        ),
        (
            ["converge", "--plan", "{plan}", "--host-position", "{plan}", "--fallback", "x"],
            "--fallback: unknown",
        ),
        (
            ["converge", "--plan", "{plan}", "--host-position", "{plan}", "--timeout", "-1"],
            "--timeout: ",
        ),
        (["converge", "--plan", "{plan}", "--host-position", "{plan}", "--run", "../x"], "--run: "),
        (["preflight", "--blind-reviewer", "codex"], "no product stands in"),
        (["blind-review", "--reviewer", "grok"], "no product stands in"),
        (["blind-review", "--base", "nope"], "--base: 'nope' does not name a commit"),
        (["ledger", "set", "--id", "T1", "--status", "VERIFIED_DONE"], "--evidence: "),
        (["ledger", "set", "--id", "T1", "--status", "DONE"], "--status: 'DONE'"),
        (["ledger", "set", "--id", "bad id", "--status", "PENDING"], "--id: "),
        (["ledger", "set", "--status", "PENDING"], "--id: is required"),
        (["ledger", "gate", "--gate", "lint", "--result", "PASS"], "--gate: 'lint'"),
        (["ledger", "gate", "--gate", "blind-review", "--result", "CLEAN"], "`blind-review`"),
        (["ledger", "meta", "--goal", "done"], "--goal: "),
        (["ledger", "meta"], "nothing to set"),
        (["ledger", "wipe"], "unknown ledger action"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    repo: Path, tmp_path: Path, fakes: FakeCLIs, argv: list[str], field: str
) -> None:
    plan = tmp_path / "plan.md"
    plan.write_text("# Plan\n")
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    args = [a.format(plan=plan, empty=empty) for a in argv]
    code, doc, _ = run_cli(*args, "--repo", str(repo), fakes=fakes)
    assert code == 1, doc
    assert doc["ok"] is False and field in doc["error"]
    assert not (repo / ".review-handoff").exists()
    assert fakes.calls() == []


def test_converge_and_preflight_as_processes(repo: Path, tmp_path: Path, fakes: FakeCLIs) -> None:
    plan, host = tmp_path / "plan.md", tmp_path / "host.md"
    plan.write_text("# Plan\n- T1\n")
    host.write_text("## Scope\nT1\n\n" + AGREE + "\n")
    code, pre, _ = run_cli("preflight", "--repo", str(repo), "--host", "grok", fakes=fakes)
    assert code == 0 and pre["status"] == "ready"
    assert [c["product"] for c in pre["checks"]] == ["claude", "codex", "claude"]
    fakes.script(any_=[{"mode": "ok", "text": "position\n\n" + AGREE}])
    converge = ["converge", "--repo", str(repo), "--plan", str(plan)]
    converge += ["--host-position", str(host), "--host", "grok"]
    code, doc, stderr = run_cli(*converge, fakes=fakes)
    assert code == 0, stderr
    assert doc["status"] == "converged" and doc["rounds"] == 1
    assert (doc["peers"]["A"]["product"], doc["peers"]["B"]["product"]) == ("claude", "codex")
    assert "[review-loop] reviewer=claude status=active" in stderr
    journal = Path(doc["journalPath"]).read_text().splitlines()
    seqs = [json.loads(line)["seq"] for line in journal]
    assert seqs == list(range(1, len(seqs) + 1))  # preflight and converge share one journal
    # the same run again: nothing is asked twice
    before = len(fakes.calls())
    code, again, _ = run_cli(*converge, fakes=fakes)
    assert code == 0 and again["asked"] == 0 and again["reused"] == 4
    assert len(fakes.calls()) == before
    code, shown, _ = run_cli("ledger", "--repo", str(repo), fakes=fakes)
    assert code == 0 and shown["ledger"]["convergence"]["status"] == "converged"


def test_preflight_with_git_writes_forbidden_stops_at_human_gate(
    repo: Path, fakes: FakeCLIs
) -> None:
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes() if exclude.exists() else None
    code, doc, _ = run_cli("preflight", "--repo", str(repo), "--no-git-writes", fakes=fakes)
    assert code == 0 and doc["result"] == "HUMAN_GATE"
    assert not (repo / ".review-handoff").exists() and fakes.calls() == []
    assert (exclude.read_bytes() if exclude.exists() else None) == before
