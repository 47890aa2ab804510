"""Process tests: one supervised subprocess, run for real through fake CLIs.

Each test runs on asyncio and trio; the autouse fixture in tests/conftest.py fails any
test that leaves a process (child, grandchild, or a setsid'd grandchild) behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import psutil
import pytest

from review_loop.agents.models import Invocation
from review_loop.orchestrator.process.run import Started, run_process
from tests.fakes import FakeCLIs

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[3]

GRACE = 0.5


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    fakes = FakeCLIs(tmp_path / "fakes")
    for key, value in fakes.env().items():
        monkeypatch.setenv(key, value)
    return fakes


def claude(tmp_path: Path, prompt: str = "hello") -> Invocation:
    return Invocation(argv=("claude", "-p"), stdin=prompt.encode(), cwd=tmp_path)


async def test_ok_returns_output_and_exit_code(fakes: FakeCLIs, tmp_path: Path) -> None:
    done = await run_process(claude(tmp_path, "what now"), deadline=30, grace=GRACE)
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"] == "FAKE-ANSWER from claude: what now"
    assert not done.timed_out and not done.stopped
    assert fakes.calls()[0]["stdin"] == "what now"


async def test_started_callback_runs_before_stdin_is_written(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    seen: list[Started] = []

    async def on_started(info: Started) -> None:
        seen.append(info)
        assert psutil.Process(info.pid).is_running()
        assert os.getpgid(info.pid) == info.pid  # its own process group
        assert fakes.calls() == []  # the fake logs only after it read stdin

    await run_process(claude(tmp_path), deadline=30, grace=GRACE, on_started=on_started)
    assert len(seen) == 1


async def test_missing_executable_is_a_spawn_error(tmp_path: Path) -> None:
    inv = Invocation(argv=("no-such-cli-xyz",), cwd=tmp_path)
    done = await run_process(inv, deadline=5, grace=GRACE)
    assert done.spawn_error == "executable not found: no-such-cli-xyz"
    assert done.returncode is None


async def test_hang_is_stopped_at_the_deadline(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "hang"}])
    # The fake never ends on its own: only the deadline ends it (pytest-timeout catches a
    # run it does not end; no bound in seconds here, which a loaded machine would decide)
    done = await run_process(claude(tmp_path), deadline=1.0, grace=GRACE)
    assert done.timed_out
    assert done.returncode is not None and done.returncode < 0


async def test_stubborn_child_is_killed_after_grace(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "stubborn"}])
    done = await run_process(claude(tmp_path), deadline=1.0, grace=GRACE)
    assert done.timed_out
    assert done.returncode == -9


async def test_grandchild_in_the_group_does_not_survive(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "grandchild", "text": "answered"}])
    done = await run_process(claude(tmp_path), deadline=30, grace=GRACE)
    assert done.returncode == 0
    assert json.loads(done.stdout.splitlines()[0])["result"] == "answered"
    # the autouse fixture proves the sleeping grandchild is gone


async def test_setsid_grandchild_holding_the_pipe_is_ended(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "setsid-grandchild"}])
    # the grandchild holds the pipe forever: without its end the run would never return
    done = await run_process(claude(tmp_path), deadline=1.5, grace=GRACE)
    assert done.timed_out


async def test_stop_file_stops_the_child(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "hang"}])
    stop = tmp_path / "STOP"

    async def on_started(info: Started) -> None:
        stop.write_text("")

    done = await run_process(
        claude(tmp_path), deadline=30, grace=GRACE, stop_files=[stop], on_started=on_started
    )
    assert done.stopped and not done.timed_out


async def test_huge_output_keeps_memory_bounded(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "huge", "bytes": 20 * 1024 * 1024}])
    done = await run_process(
        claude(tmp_path),
        deadline=60,
        grace=GRACE,
        spill_dir=tmp_path / "spill",
        head_cap=1024 * 1024,
        tail_cap=1024 * 1024,
        output_cap=8 * 1024 * 1024,
    )
    assert done.returncode == 0
    assert done.stdout_truncated
    assert len(done.stdout) == 2 * 1024 * 1024
    assert done.stdout_bytes >= 19 * 1024 * 1024
    assert done.stdout_dropped == done.stdout_bytes - 2 * 1024 * 1024
    assert list((tmp_path / "spill").iterdir()) == []  # the spill went past the cap


async def test_slow_stream_is_not_killed_for_silence(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "slow-stream", "lines": 4, "interval": 0.3, "text": "late"}])
    done = await run_process(claude(tmp_path), deadline=30, grace=GRACE)
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"] == "late"
    assert done.stderr.count(b"progress") == 4


async def test_cancellation_ends_the_tree_and_reraises(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "setsid-grandchild"}])
    with anyio.move_on_after(1.0) as scope:
        await run_process(claude(tmp_path), deadline=None, grace=GRACE)
    assert scope.cancelled_caught


async def test_garbage_and_non_utf8_come_back_as_bytes(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "non-utf8"}])
    done = await run_process(claude(tmp_path), deadline=30, grace=GRACE)
    assert done.returncode == 0
    assert b"\xff\xfe" in done.stdout


async def test_escalation_to_sigkill_is_reported(fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[{"mode": "stubborn"}])
    done = await run_process(claude(tmp_path), deadline=0.5, grace=GRACE)
    assert done.killed_after_grace
    fakes.script(claude=[{"mode": "hang"}])
    done = await run_process(claude(tmp_path), deadline=0.5, grace=GRACE)
    assert not done.killed_after_grace


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="elsewhere psutil answers")
def test_the_process_layer_does_not_import_psutil_on_linux() -> None:
    """Contract: on Linux the process layer reads ``/proc`` itself (``procfs``); importing
    psutil would cost every reviewer command 10-15 ms of start-up."""
    code = "import sys, review_loop.orchestrator.process.run; print('psutil' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "False", done.stderr
