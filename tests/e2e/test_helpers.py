"""The e2e runner itself: a child that outlives its timeout is killed with its whole group."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.helpers import run


def test_run_returns_output_and_status(tmp_path: Path):
    ran = run(["sh", "-c", "cat; echo err >&2; exit 3"], env=os.environ, cwd=tmp_path, stdin="in")
    assert (ran.returncode, ran.stdout, ran.stderr) == (3, "in", "err\n")


def test_timeout_kills_the_whole_process_group(tmp_path: Path):
    # A grandchild in the same group must die too (the autouse guard checks nothing survives).
    script = "sleep 30 & echo started; wait"
    with pytest.raises(pytest.fail.Exception, match=r"timed out after 0.5s; process group killed"):
        run(["sh", "-c", script], env=os.environ, cwd=tmp_path, timeout=0.5)
