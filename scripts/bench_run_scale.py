"""Benchmark ``review-loop run`` against ``review-loop evidence`` on a tree of N untracked files.

Run: ``.venv/bin/python scripts/bench_run_scale.py [--files N] [--runs R] [--quick]``.
Builds one throw-away repository with N small untracked files (100,000 by default; 20,000
with ``--quick``) and prints medians, as ratios to ``evidence`` on the same tree measured
in this run (the machine is shared: absolute numbers drift, ratios less):

(a) in-process: ``run_review`` up to the moment it calls the reviewer (evidence frozen,
    diff view and prompt built, round recorded) vs ``compute_evidence`` alone;
(b) command line: a whole ``review-loop run --reviewer simulated`` (the offline reviewer,
    which answers at once: the rest is review-loop's own work, prompt and answer) vs
    ``review-loop evidence``.

Target: ``run`` costs at most a small multiple of ``evidence`` (2x): building the diff view
and the prompt is linear in the number of changed paths.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from review_loop.agents.outcomes import Delivery  # noqa: E402
from review_loop.orchestrator.dispatcher import Dispatcher, PeerRequest  # noqa: E402

TARGET = 2.0


class _Asked(Exception):
    """Raised in place of the reviewer call: what was measured ends there."""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)


def make_repo(path: Path, files: int) -> Path:
    """A committed README and ``files`` untracked one-line files in 1,000 folders."""
    path.mkdir()
    git(path, "init", "-q")
    (path / "README.md").write_text("# bench\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    for i in range(files):
        folder = path / "vendor" / f"d{i % 1000:03}"
        if i < 1000:
            folder.mkdir(parents=True)
        (folder / f"f{i}.txt").write_text(f"generated line {i}\n")
    return path


def medians(runs: int, named: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median seconds of each candidate, interleaved run by run so drift hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(runs):
        for name, fn in named.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def run_until_asked(repo: Path) -> float:
    """Seconds ``run_review`` takes up to its reviewer call (the call itself is refused)."""
    from review_loop.orchestrator.cli.common import load_user_prefs
    from review_loop.orchestrator.dispatcher import open_dispatcher
    from review_loop.orchestrator.workflows.review_run import RunPlan, run_review

    asked: list[float] = []

    async def refuse(self: Dispatcher, request: PeerRequest) -> Delivery:
        asked.append(time.perf_counter())
        raise _Asked

    async def main() -> None:
        async with open_dispatcher(
            repo=repo, prefs=load_user_prefs(), progress=lambda line: None
        ) as d:
            original = Dispatcher.consult
            Dispatcher.consult = refuse  # type: ignore[method-assign]
            try:
                await run_review(d, RunPlan(reviewer="simulated"))
            except _Asked:
                pass
            finally:
                Dispatcher.consult = original  # type: ignore[method-assign]

    start = time.perf_counter()
    anyio.run(main)
    if not asked:
        raise SystemExit("run_review ended before it called the reviewer")
    # The packet was left mid-round: the next measurement starts from a clean checkout.
    shutil.rmtree(repo / ".review-handoff")
    return asked[0] - start


def cli(*args: str) -> dict[str, Any]:
    import json

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", *args], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"review-loop {args[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout))


def bench(repo: Path, runs: int) -> None:
    from review_loop.orchestrator.workflows.evidence import compute_evidence

    compute_evidence(repo)  # warm-up: imports, and the tree in the page cache
    until: list[float] = []
    inproc = medians(
        runs,
        {
            "compute_evidence": lambda: compute_evidence(repo),
            "run up to the reviewer call": lambda: until.append(run_until_asked(repo)),
        },
    )
    inproc["run up to the reviewer call"] = statistics.median(until)
    doc: dict[str, Any] = {}
    whole = medians(
        runs,
        {
            "review-loop evidence": lambda: cli("evidence", "--repo", str(repo)),
            "review-loop run (simulated)": lambda: doc.update(
                cli("run", "--repo", str(repo), "--reviewer", "simulated")
            ),
        },
    )
    verdicts = []
    for label, result, base in (
        ("(a) in-process", inproc, "compute_evidence"),
        ("(b) command line", whole, "review-loop evidence"),
    ):
        print(label)
        for name, seconds in result.items():
            ratio = "" if name == base else f"  {seconds / result[base]:.2f}x evidence"
            print(f"    {name:<32} {seconds:8.3f} s{ratio}")
        verdicts.append(max(result.values()) / result[base])
    print(f"    run answered: verdict {doc.get('verdict')}, {doc.get('warning', '')[:90]}")
    worst = max(verdicts)
    print(f"target <= {TARGET}x evidence: {worst:.2f}x, {'met' if worst <= TARGET else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000, help="untracked files (100,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument(
        "--dir",
        default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None,
        help="where to build the repository (default: /dev/shm when writable)",
    )
    parser.add_argument("--quick", action="store_true", help="20,000 files, 1 run")
    args = parser.parse_args()
    # Line by line: a slow run (the quadratic build took minutes) shows where it is.
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.quick:
        args.files, args.runs = min(args.files, 20_000), 1
    print(f"run vs evidence: {args.files:,} untracked files, median of {args.runs} runs")
    with tempfile.TemporaryDirectory(prefix="bench-run-scale-", dir=args.dir) as tmp:
        config = Path(tmp) / "gitconfig"
        config.write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n")
        os.environ["GIT_CONFIG_GLOBAL"] = str(config)
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        os.environ["REVIEW_LOOP_HOME"] = str(Path(tmp) / "home")
        os.environ.setdefault("GIT_OPTIONAL_LOCKS", "0")
        started = time.perf_counter()
        repo = make_repo(Path(tmp) / "repo", args.files)
        print(f"    repository built in {time.perf_counter() - started:.1f} s")
        bench(repo, args.runs)
        print(f"total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
