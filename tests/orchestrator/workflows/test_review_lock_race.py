"""Process tests: processes racing for one packet lock, fresh and stale.

Whatever the interleaving, at most one process holds the lock at a time, and a stale lock
(its owner dead) is reclaimed by exactly one of the racers.

Each holder reports when it took and released the lock. On a loaded machine a racer can
start after the winner has already released (it then takes a free lock, legitimately), so
the promise checked is the real one: no two holding intervals overlap.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from review_loop.orchestrator.workflows.review_store import LOCK_DIR

ROOT = Path(__file__).resolve().parents[3]
RACER = """
import sys, time
from pathlib import Path
from review_loop.agents.errors import StateError
from review_loop.orchestrator.workflows.review_store import packet_lock
runtime, start = Path(sys.argv[1]), float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
try:
    with packet_lock(runtime):
        taken = time.time()
        time.sleep(1.5)
        released = time.time()
    print("held", taken, released, flush=True)
except StateError as error:
    print("refused", error.code, flush=True)
"""


def race(runtime: Path, racers: int) -> list[str]:
    start = time.time() + 1.0
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(runtime), str(start)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(racers)
    ]
    return [p.communicate(timeout=60)[0].strip() for p in procs]


@pytest.mark.parametrize("stale", [False, True], ids=["free", "stale"])
def test_exactly_one_racer_holds_the_lock(tmp_path: Path, stale: bool) -> None:
    runtime = tmp_path / "runtime"
    if stale:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        lock = runtime / LOCK_DIR
        lock.mkdir(parents=True)
        (lock / "owner").write_text(f"old-token\n{dead.pid}\n")
    results = race(runtime, 8)
    held = sorted(
        (float(parts[1]), float(parts[2]))
        for parts in (r.split() for r in results)
        if parts[0] == "held"
    )
    assert held, results
    for (_, released), (taken, _) in itertools.pairwise(held):
        assert released <= taken, f"two processes held the lock at once: {results}"
    assert all(r.startswith("held ") or r == "refused PACKET_LOCK_HELD" for r in results)
    # released by the winner; only the reclaimers' turn-taking file may remain
    assert [p.name for p in runtime.iterdir()] in ([], [f"{LOCK_DIR}.reclaim"])
