"""Process tests: a flooding reviewer or a huge answer on a small disk loses nothing.

The disks are real tmpfs mounts (``tests/tmpfs.py``; skipped where this machine cannot
mount one). Either the repository is on a 30 MiB disk (the records and the answer file
cannot all be written) or review-loop's temp directory is (the output spill cannot be).
Whatever fills: one JSON document, every session record finished (never ``running``), the
answer returned whole or the output reported truncated (``outputTruncated``,
``outputDroppedBytes``), no spill file in the repository or left in the temp directory,
and the disk as full as it was before. Through the embedding path on asyncio and trio, and
once through the ``review-loop consult`` command itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.orchestrator.process import capture
from review_loop.orchestrator.workflows.consult import ConsultPlan, run_consult
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo
from tests.tmpfs import small_disk, used_bytes

ANSWER_BYTES = 50_000_000
SLACK = 1024 * 1024
FLOOD = {"mode": "flood", "bytes": 72 * 1024 * 1024}
"""Past the 64 MiB kept per stream, then stuck silent until the deadline: a fixed size, so
that whether the output was truncated does not depend on how fast the machine prints."""
FLOOD_DEADLINE_MS = 10_000
"""What the records themselves may take on the repository's disk (a few small files)."""


def _nothing_spilled(*places: Path) -> None:
    for place in places:
        assert list(place.rglob("*.spill")) == [], place
        assert list(place.rglob(f"{capture.OUTPUT_PREFIX}*")) == [], place


def _records(repo: Path) -> list[dict[str, Any]]:
    sessions = repo / ".review-handoff" / "runtime" / "consult-sessions"
    return [json.loads(p.read_text()) for p in sessions.glob("*/reviewer-session.json")]


async def _consult(repo: Path, peer: str, timeout_ms: int) -> dict[str, Any]:
    prefs = Prefs.validate({"timeoutMs": timeout_ms, "graceMs": 300, "livenessMs": 60_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        return await run_consult(dispatcher, ConsultPlan(peers=(peer,), question="Q"))


async def _consult_watching(disk: Path, *args: Any) -> tuple[dict[str, Any], int]:
    """:func:`_consult`, and the most of ``disk`` seen in use while it ran."""
    done: list[dict[str, Any]] = []
    most = used_bytes(disk)

    async def ask() -> None:
        done.append(await _consult(*args))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        while not done:
            most = max(most, used_bytes(disk))
            await anyio.sleep(0.01)
    return done[0], most


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """review-loop's temp directory for this test (a plain one unless a test mounts it)."""
    place = tmp_path / "tmp"
    place.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(place))
    return place


@pytest.mark.anyio
async def test_process_a_flood_with_the_repository_on_a_small_disk(
    tmp_path: Path, fakes: FakeCLIs, temp: Path
) -> None:
    fakes.script(codex=[FLOOD])
    with small_disk(tmp_path / "disk", "30m") as disk:
        repo = committed_repo(disk / "repo", {"a.txt": "hello\n"})
        before = used_bytes(disk)
        doc, most = await _consult_watching(disk, repo, "codex", FLOOD_DEADLINE_MS)
        assert most - before < SLACK  # the output never went to the repository's disk
        assert used_bytes(disk) - before < SLACK
        _nothing_spilled(disk, temp)
        records = _records(repo)
    assert doc["ok"] is False and doc["code"] == "timeout", doc
    assert doc["outputTruncated"] is True and doc["outputDroppedBytes"] > 0
    assert [r["status"] for r in records] == ["finished"]


@pytest.mark.anyio
async def test_process_a_50_mb_answer_with_the_repository_on_a_small_disk(
    tmp_path: Path, fakes: FakeCLIs, temp: Path
) -> None:
    fakes.script(codex=[{"mode": "big-answer", "bytes": ANSWER_BYTES}])
    with small_disk(tmp_path / "disk", "30m") as disk:
        repo = committed_repo(disk / "repo", {"a.txt": "hello\n"})
        before = used_bytes(disk)
        doc = await _consult(repo, "codex", timeout_ms=60_000)
        assert used_bytes(disk) - before < SLACK  # the answer file that failed is gone
        _nothing_spilled(disk, temp)
        records = _records(repo)
    assert doc["ok"] is True and doc["text"] == "z" * ANSWER_BYTES
    assert doc["recordError"]["errno"] == "ENOSPC" and doc["recordPath"] is None
    assert "outputTruncated" not in doc
    assert [r["status"] for r in records] == ["finished"]


@pytest.mark.anyio
async def test_process_a_50_mb_answer_with_the_temp_directory_on_a_small_disk(
    tmp_path: Path, fakes: FakeCLIs, temp: Path
) -> None:
    fakes.script(claude=[{"mode": "big-answer", "bytes": ANSWER_BYTES}])
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    with small_disk(temp, "30m"):
        before = used_bytes(temp)
        doc = await _consult(repo, "claude", timeout_ms=60_000)
        assert used_bytes(temp) == before
        _nothing_spilled(temp, repo)
    assert doc["ok"] is True and doc["text"] == "z" * ANSWER_BYTES
    assert "outputTruncated" not in doc and "recordError" not in doc
    assert [r["status"] for r in _records(repo)] == ["finished"]


@pytest.mark.anyio
async def test_process_a_flood_with_the_temp_directory_on_a_small_disk(
    tmp_path: Path, fakes: FakeCLIs, temp: Path
) -> None:
    fakes.script(codex=[FLOOD])
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    with small_disk(temp, "30m"):
        before = used_bytes(temp)
        doc = await _consult(repo, "codex", timeout_ms=FLOOD_DEADLINE_MS)
        assert used_bytes(temp) == before
        _nothing_spilled(temp, repo)
    assert doc["ok"] is False and doc["code"] == "timeout", doc
    assert doc["outputTruncated"] is True and doc["outputDroppedBytes"] > 0
    assert [r["status"] for r in _records(repo)] == ["finished"]


def test_process_the_consult_command_floods_a_repository_on_a_small_disk(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    """``review-loop consult`` itself: one JSON document on stdout, exit 2, the record
    finished, nothing spilled (the case that ended in "unhandled errors in a TaskGroup")."""
    fakes.script(codex=[FLOOD])
    temp = tmp_path / "tmp"
    temp.mkdir()
    with small_disk(tmp_path / "disk", "30m") as disk:
        repo = committed_repo(disk / "repo", {"a.txt": "hello\n"})
        before = used_bytes(disk)
        argv = ["consult", "--repo", str(repo), "--peer", "codex", "--question", "hi"]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "review_loop",
                *argv,
                "--timeout",
                str(FLOOD_DEADLINE_MS // 1000),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "TMPDIR": str(temp)},
            timeout=120,
        )
        assert used_bytes(disk) - before < SLACK
        _nothing_spilled(disk, temp)
        records = _records(repo)
    doc = json.loads(done.stdout)  # one document, nothing else
    assert done.returncode == 2 and doc["code"] == "timeout", done.stderr
    assert doc["outputTruncated"] is True
    assert [r["status"] for r in records] == ["finished"]
