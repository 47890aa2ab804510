"""Process tests: ``scripts/demo`` (``review-loop demo``) stopped mid-way leaves no
throw-away directory behind.

The demo runs with ``TMPDIR`` on a directory of the test's own. As soon as its first
``review-loop`` step runs, the demo gets SIGTERM or SIGINT, either alone (``kill PID``)
or with its whole process group (Ctrl-C, ``kill -- -PGID``). The demo must exit only
after its step has (its cleanup raced the step's last writes: ``rm: ... Directory not
empty`` left the directory behind), and once both have exited the directory it made must
be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

DEMO = Path(__file__).resolve().parents[1] / "scripts" / "demo"
WAIT_S = 60.0  # hang-catching bound, never a claim about speed


def _first_step(demo: psutil.Process) -> psutil.Process:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for child in demo.children():
            try:
                # a step is `python -m review_loop COMMAND` (the git commands come first)
                if "review_loop" in child.cmdline():
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.005)
    raise AssertionError("the demo never started a review-loop step")


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# SIGINT to the shell alone is not a stop: bash lets a step that did not die of it finish
# and goes on, as it should (Ctrl-C reaches the whole foreground group).
@pytest.mark.parametrize(
    ("sig", "group"),
    [(signal.SIGTERM, False), (signal.SIGTERM, True), (signal.SIGINT, True)],
    ids=["SIGTERM-demo-alone", "SIGTERM-process-group", "SIGINT-process-group"],
)
def test_process_a_stopped_demo_removes_its_directory(
    tmp_path: Path, sig: signal.Signals, group: bool
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    env.pop("DEMO_KEEP", None)
    proc = subprocess.Popen(
        [str(DEMO)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        step = _first_step(psutil.Process(proc.pid))
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        proc.wait(timeout=WAIT_S)
        assert not _alive(step), "the demo exited (and removed its directory) under its step"
        psutil.wait_procs([step], timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=WAIT_S)
    assert proc.returncode != 0  # stopped, not finished
    assert list(scratch.iterdir()) == []
