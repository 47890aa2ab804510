"""Collaboration tests through the command line: a link under ``.review-handoff/`` is refused.

``.review-handoff`` (planted, or committed and cloned), ``runtime/``, ``consult-sessions/``,
``active/``, a packet file or ``events.jsonl`` pointing outside the repository: each command
(``consult``, ``run``, ``fix-completion``, ``run --continue``, ``close``, ``converge``) fails
with a message naming the link, writes nothing outside (a snapshot of the outside directory
is compared before and after), leaves a victim file as it was and asks no reviewer.
``--peer-command`` and the other names that become part of a path are refused before
anything is written. Driven in-process through ``review_loop.orchestrator.cli.run`` with
the fake CLIs on PATH, so parsing, the workflows, the dispatcher and the disk are real.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.review import branch_slug
from review_loop.orchestrator.cli import run as cli_run
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo, git, guarded_change
from tests.orchestrator.handoff.test_files_writes import snapshot

HANDOFF = ".review-handoff"
HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
BLOCKED = {
    "mode": "ok",
    "text": "## Findings\n\n"
    + HEADER
    + "\n| F1 | [阻塞] | crash on empty input | app.py:2 | app.py | guard it | test passes |"
    + "\n\nVerdict: BLOCKED\n",
}
FIX = (
    "# Fix Completion\n\n## Fix Conclusion\nGuarded.\n## Original Findings Snapshot\nF1\n"
    "## Finding Status\nF1 fixed\n## Verification\npytest -q\n## Re-review Instructions\n"
    "Check app.py.\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return guarded_change(tmp_path / "repo")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "victim.txt").write_text("victim original content\n")
    return out


def rl(repo: Path, *argv: str) -> tuple[int, dict[str, Any], str]:
    """Run one command; returns the exit code, the document and its raw text."""
    out: list[str] = []
    code = cli_run([argv[0], "--repo", str(repo), *argv[1:]], stdout=out.append)
    assert len(out) == 1
    return code, json.loads(out[0]), out[0]


def plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=target.is_dir())
    return link


def assert_refused(code: int, raw: str, link: Path) -> None:
    """Exit 1, and the one document names the link (the user can find and remove it)."""
    assert code == 1, raw
    assert str(link) in raw and "symbolic link" in raw, raw


# -- consult -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [HANDOFF, f"{HANDOFF}/runtime", f"{HANDOFF}/runtime/consult-sessions"],
    ids=["handoff", "runtime", "consult-sessions"],
)
def test_consult_refuses_a_linked_directory(
    repo: Path, outside: Path, fakes: FakeCLIs, where: str
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    link = plant(repo / where, outside)
    before = snapshot(outside)
    code, _, raw = rl(repo, "consult", "--peer", "codex", "--question", "q")
    assert_refused(code, raw, link)
    assert snapshot(outside) == before
    assert fakes.calls() == []


def test_a_committed_handoff_link_is_refused_in_a_fresh_clone(
    tmp_path: Path, outside: Path, fakes: FakeCLIs
) -> None:
    """The link is in the repository's history: ``git clone`` recreates it."""
    origin = committed_repo(tmp_path / "origin", {"a.txt": "a\n"})
    (origin / HANDOFF).symlink_to(outside, target_is_directory=True)
    git(origin, "add", HANDOFF)
    git(origin, "commit", "-qm", "a handoff link")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    assert (clone / HANDOFF).is_symlink()
    (clone / "a.txt").write_text("changed\n")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    before = snapshot(outside)
    code, _, raw = rl(clone, "consult", "--peer", "codex", "--question", "q")
    assert_refused(code, raw, clone / HANDOFF)
    code, _, raw = rl(clone, "run", "--reviewer", "codex")
    assert_refused(code, raw, clone / HANDOFF)
    assert snapshot(outside) == before
    assert fakes.calls() == []


@pytest.mark.parametrize(
    "value",
    ["codex-e/../../../outside/codex", "../codex", "..codex", ".codex", "co/dex", "codex\0x"],
)
@pytest.mark.parametrize("command", ["consult", "converge"])
def test_peer_command_that_could_leave_a_directory_is_refused_before_anything_is_written(
    repo: Path, outside: Path, fakes: FakeCLIs, tmp_path: Path, value: str, command: str
) -> None:
    """The F10 traversal: the name would become part of the record directory's path."""
    # a launcher that really exists there, so only the name check can refuse it
    (tmp_path / "codex-e").mkdir()
    launcher = tmp_path / "codex-e" / ".." / "outside" / "codex"
    launcher.write_text(f'#!/bin/sh\nexec {fakes.bin / "codex"} "$@"\n')
    launcher.chmod(0o755)
    plan = tmp_path / "plan.md"
    plan.write_text("the plan\n")
    before = snapshot(outside)
    if command == "consult":
        argv = ["consult", "--peer", "codex", "--question", "q"]
    else:
        argv = ["converge", "--plan", str(plan), "--host-position", str(plan), "--host", "claude"]
    cwd = Path.cwd()
    os.chdir(tmp_path)  # where codex-e/../outside/codex resolves, as in the finding
    try:
        code, doc, _ = rl(repo, *argv, "--peer-command", value)
    finally:
        os.chdir(cwd)
    assert code == 1
    assert doc["error"].startswith("--peer-command: ") and "'/'" in doc["error"]
    assert not (repo / HANDOFF).exists()
    assert snapshot(outside) == before
    assert fakes.calls() == []


# -- the review run ------------------------------------------------------------------------


def first_run(repo: Path, fakes: FakeCLIs) -> dict[str, Any]:
    fakes.script(codex=[BLOCKED])
    code, doc, _ = rl(repo, "run", "--reviewer", "codex")
    assert code == 0 and doc["status"] == "blocked", doc
    return doc


def fix_file(tmp_path: Path) -> str:
    path = tmp_path / "fix.md"
    path.write_text(FIX)
    return str(path)


def test_events_link_refuses_fix_completion_and_continue(
    repo: Path, outside: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    """F3: ``events.jsonl`` replaced by a link to a victim between commands."""
    doc = first_run(repo, fakes)
    runtime = repo / HANDOFF / "runtime" / doc["packetId"]
    events = runtime / "events.jsonl"
    events.unlink()
    plant(events, outside / "victim.txt")
    packet = Path(doc["packetPath"])
    packet_before = packet.read_bytes()
    state_before = (runtime / "auto-run-state.json").read_bytes()
    before = snapshot(outside)

    code, _, raw = rl(
        repo, "fix-completion", "--packet", str(packet), "--body-file", fix_file(tmp_path)
    )
    assert_refused(code, raw, events)
    # refused before its first write: the packet and the state are as they were
    assert packet.read_bytes() == packet_before
    assert (runtime / "auto-run-state.json").read_bytes() == state_before

    fakes.script(codex=[BLOCKED])
    code, _, raw = rl(repo, "run", "--continue", "--reviewer", "codex")
    assert_refused(code, raw, events)
    assert snapshot(outside) == before
    assert (outside / "victim.txt").read_text() == "victim original content\n"
    assert len(fakes.calls()) == 1  # only the first round's reviewer


def test_events_link_planted_while_the_reviewer_runs(
    repo: Path, outside: Path, fakes: FakeCLIs
) -> None:
    """The link appears during ``run``: the writes after the answer meet it and stop."""
    fakes.script(codex=[{**BLOCKED, "delay": 1.5}])
    slug = branch_slug("main")
    runtime_root = repo / HANDOFF / "runtime" / slug
    planted: list[Path] = []

    def plant_when_running() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for record in runtime_root.glob("*/reviewer-session.json"):
                try:
                    running = json.loads(record.read_text()).get("status") == "running"
                except (OSError, ValueError):
                    running = False
                if running:
                    events = record.parent / "events.jsonl"
                    # Made aside and renamed over: review-loop may be appending to the
                    # file this instant (unlink, then symlink raced that write).
                    aside = plant(record.parent / "events.jsonl.planting", outside / "victim.txt")
                    os.replace(aside, events)
                    planted.append(events)
                    return
            time.sleep(0.02)

    planter = threading.Thread(target=plant_when_running)
    planter.start()
    before = snapshot(outside)
    try:
        _, _, raw = rl(repo, "run", "--reviewer", "codex")
    finally:
        planter.join()
    assert planted, "the reviewer never ran"
    # The answer arrived, so it is printed (docs/handoff-writes.md); what could not be
    # recorded is named: the link.
    assert str(planted[0]) in raw and "symbolic link" in raw, raw
    assert snapshot(outside) == before
    assert (outside / "victim.txt").read_text() == "victim original content\n"


def test_a_linked_packet_file_is_refused(
    repo: Path, outside: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    """The packet replaced by a link to a copy outside: neither read nor written."""
    doc = first_run(repo, fakes)
    packet = Path(doc["packetPath"])
    copy = outside / packet.name
    copy.write_bytes(packet.read_bytes())
    packet.unlink()
    plant(packet, copy)
    before = snapshot(outside)
    body = fix_file(tmp_path)
    code, out, _ = rl(repo, "fix-completion", "--packet", doc["packetId"], "--body-file", body)
    assert code == 1 and out["error"].startswith("HANDOFF_LINK_REFUSED: "), out
    assert str(packet) in out["error"] and "symbolic link" in out["error"]
    fakes.script(codex=[BLOCKED])
    code, _, raw = rl(repo, "run", "--continue", "--reviewer", "codex")
    assert_refused(code, raw, packet)
    assert snapshot(outside) == before
    assert len(fakes.calls()) == 1  # only the first round's reviewer


@pytest.mark.parametrize("where", ["active", "archive", "runtime"])
def test_run_refuses_a_linked_packet_directory(
    repo: Path, outside: Path, fakes: FakeCLIs, where: str
) -> None:
    """A new packet is never created (nor its runtime made) through a link."""
    fakes.script(codex=[{"mode": "ok", "text": f"## Findings\n\n{HEADER}\n\nVerdict: PASS\n"}])
    slug = branch_slug("main")
    if where == "runtime":
        link = plant(repo / HANDOFF / "runtime" / slug, outside)
    else:
        link = plant(repo / HANDOFF / where, outside)
    before = snapshot(outside)
    code, _, raw = rl(repo, "run", "--reviewer", "codex")
    if where == "archive":  # only a PASS moves the packet there
        assert code == 1 or '"ok": false' in raw, raw
    assert str(link) in raw and "symbolic link" in raw, raw
    assert snapshot(outside) == before


def test_close_refuses_an_events_link(repo: Path, outside: Path, fakes: FakeCLIs) -> None:
    """``close`` takes the packet lock, which looks for links before its first write."""
    doc = first_run(repo, fakes)
    events = repo / HANDOFF / "runtime" / doc["packetId"] / "events.jsonl"
    events.unlink()
    plant(events, outside / "victim.txt")
    before = snapshot(outside)
    code, _, raw = rl(repo, "close", "--packet", doc["packetPath"], "--reason", "accept-concerns")
    assert_refused(code, raw, events)
    assert snapshot(outside) == before


# -- the other workflows -------------------------------------------------------------------


def test_converge_and_verify_diff_refuse_a_linked_handoff(
    repo: Path, outside: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.md"
    plan.write_text("the plan\n")
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(
        json.dumps(
            {
                "scenarios": [
                    {
                        "kind": "median",
                        "title": "t",
                        "description": "d",
                        "checklist": ["[critical] c", "second", "third"],
                    }
                ]
            }
        )
    )
    link = plant(repo / HANDOFF, outside)
    before = snapshot(outside)
    code, _, raw = rl(
        repo,
        "converge",
        "--plan", str(plan),
        "--host-position", str(plan),
        "--host", "claude",
        "--peer", "codex",
        "--peer", "gemini",
    )  # fmt: skip
    assert_refused(code, raw, link)
    code, _, raw = rl(
        repo,
        "verify-diff",
        "--description", "d",
        "--fix-direction", "f",
        "--target", "app.py",
        "--executor", "claude",
        "--scenarios-file", str(scenarios),
    )  # fmt: skip
    assert_refused(code, raw, link)
    assert snapshot(outside) == before
    assert fakes.calls() == []
