"""Benchmark ``review-loop evidence`` against git itself and against the original's way.

Run: ``.venv/bin/python scripts/bench_evidence.py [--runs N]``. Builds throw-away
repositories in a temporary directory and prints medians, as ratios measured in this run:

(a) 10,000 modified tracked files: evidence vs a plain ``git diff <base>`` of the same tree
    (target: at most 1.5x), in-process and through the CLI;
(b) 1,000 untracked files: evidence vs the original algorithm, which runs one
    ``git diff --no-index`` per file (target: at least 3x faster), with both digests.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from review_loop.agents.evidence import js_rstrip  # noqa: E402
from review_loop.orchestrator.workflows.evidence import EvidenceSnapshot, snapshot_evidence  # noqa: E402

TRACKED_FILES = 10_000
UNTRACKED_FILES = 1_000


def git(repo: Path, *args: str) -> bytes:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return result.stdout


def original_digest(repo: Path, base: str = "HEAD") -> str:
    """§3.6 the way the original runs it: one git process per step and per untracked file."""

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)

    def names(out: bytes) -> list[str]:
        return [x for x in out.decode("utf-8", "replace").split("\0") if x]

    base_sha = run("rev-parse", base).stdout.decode().strip()
    tracked = names(run("diff", "--name-only", "-z", base_sha, "--").stdout)
    untracked = names(run("ls-files", "--others", "--exclude-standard", "-z").stdout)
    chunks = []
    text = run("diff", base_sha, "--", *tracked).stdout.decode("utf-8", "replace")
    if text.strip():
        chunks.append(js_rstrip(text))
    for name in untracked:
        where = repo / name
        if where.is_symlink() or not where.exists() or where.is_dir():
            raise SystemExit(f"the benchmark makes regular files only: {name}")
        result = run("diff", "--no-index", "--", "/dev/null", name)
        if result.returncode != 0 and result.stdout:
            chunks.append(js_rstrip(result.stdout.decode("utf-8", "replace")))
    diff_text = "\n\n".join(chunks) + "\n" if chunks else ""
    return hashlib.sha256(diff_text.encode()).hexdigest()


def medians(
    runs: int, named: dict[str, tuple[int, Callable[[], object]]]
) -> tuple[dict[str, float], dict[str, object]]:
    """Median seconds and last result of each candidate (``name: (weight, fn)``).

    Candidates are interleaved run by run, so drift hits them alike; a candidate with
    weight 2 runs in every other round only (for the slow baselines).
    """
    samples: dict[str, list[float]] = {name: [] for name in named}
    last: dict[str, object] = {}
    for round_ in range(runs):
        for name, (weight, fn) in named.items():
            if round_ % weight:
                continue
            start = time.perf_counter()
            last[name] = fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}, last


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    return path


def write_tracked(repo: Path, count: int, variant: str) -> None:
    for i in range(count):
        folder = repo / f"pkg{i % 100:02}"
        folder.mkdir(exist_ok=True)
        lines = [f"line {j} of file {i}\n" for j in range(20)]
        lines[5] = f"line 5 of file {i} {variant}\n"
        (folder / f"module_{i}.py").write_text("".join(lines))


def bench_tracked(tmp: Path, runs: int) -> None:
    repo = make_repo(tmp / "tracked")
    write_tracked(repo, TRACKED_FILES, "original")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    write_tracked(repo, TRACKED_FILES, "changed")
    env_cli = {**os.environ, "PYTHONPATH": str(ROOT)}
    diff_size = len(git(repo, "diff", "HEAD"))

    def plain() -> None:
        subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=True)

    def cli() -> None:
        subprocess.run(
            [sys.executable, "-m", "review_loop", "evidence", "--repo", str(repo)],
            capture_output=True,
            check=True,
            env=env_cli,
        )

    result, last = medians(
        runs,
        {
            "git diff <base>": (1, plain),
            "evidence (in-process)": (1, lambda: snapshot_evidence(repo)),
            "review-loop evidence (CLI)": (1, cli),
            "original": (runs, lambda: original_digest(repo)),  # informational: 1 run
        },
    )
    original = result.pop("original")
    snap = last["evidence (in-process)"]
    assert isinstance(snap, EvidenceSnapshot)
    same = snap.evidence.digest == last["original"]
    base = result["git diff <base>"]
    print(f"(a) tracked: {TRACKED_FILES:,} modified files, {diff_size / 1e6:.1f} MB of diff")
    for name, seconds in result.items():
        ratio = "" if name == "git diff <base>" else f"  {seconds / base:.2f}x git diff"
        print(f"    {name:<32} {seconds:7.3f} s{ratio}")
    print(
        f"    {'original (pathspec list, 1 run)':<32} {original:7.3f} s"
        f"  {original / base:.2f}x git diff"
    )
    factor = result["evidence (in-process)"] / base
    verdict = "met" if factor <= 1.5 else "MISSED"
    print(f"    target <= 1.5x git diff (in-process): {factor:.2f}x, {verdict}")
    print(f"    tracked mode: {snap.stats.tracked_mode}; digests equal to the original: {same}")


def bench_untracked(tmp: Path, runs: int) -> None:
    repo = make_repo(tmp / "untracked")
    (repo / "README.md").write_text("# bench\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for i in range(UNTRACKED_FILES):
        folder = repo / "new" / f"d{i % 20:02}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(f"generated line {j} of {i}\n" for j in range(i % 40))
        if i % 50 == 0:
            (folder / f"blob {i}.bin").write_bytes(b"\x00" + os.urandom(64))
        elif i % 7 == 0:
            (folder / f"no_eol_{i}.txt").write_text(body + "tail")
        else:
            (folder / f"file_{i}.txt").write_text(body)
    result, last = medians(
        runs,
        {
            "original (one git per file)": (2, lambda: original_digest(repo)),
            "evidence (in-process)": (1, lambda: snapshot_evidence(repo)),
        },
    )
    snap = last["evidence (in-process)"]
    assert isinstance(snap, EvidenceSnapshot)
    original = last["original (one git per file)"]
    slow, fast = result["original (one git per file)"], result["evidence (in-process)"]
    print(f"(b) untracked: {UNTRACKED_FILES:,} new files (text, no final newline, binary)")
    for name, seconds in result.items():
        print(f"    {name:<32} {seconds:7.3f} s")
    verdict = "met" if slow / fast >= 3 else "MISSED"
    print(f"    speed-up {slow / fast:.1f}x (target >= 3x), {verdict}")
    stats = snap.stats
    print(
        f"    built in Python: {stats.untracked_fast}, through git: {stats.untracked_git}, "
        f"calibration runs: {stats.calibrations}"
    )
    print(f"    digest (evidence) {snap.evidence.digest}")
    print(f"    digest (original) {original}")
    print(f"    digests equal: {snap.evidence.digest == original}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument(
        "--dir",
        default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None,
        help="where to build the repositories (default: /dev/shm when writable, so that "
        "building 10,000 files does not dominate the run)",
    )
    parser.add_argument("--quick", action="store_true", help="3 runs per measurement")
    args = parser.parse_args()
    if args.quick:
        args.runs = min(args.runs, 3)
    version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"evidence benchmark: {version}, median of {args.runs} runs, in {args.dir or 'TMPDIR'}")
    with tempfile.TemporaryDirectory(prefix="bench-evidence-", dir=args.dir) as tmp:
        config = Path(tmp) / "gitconfig"
        config.write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n")
        os.environ["GIT_CONFIG_GLOBAL"] = str(config)
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        os.environ.setdefault("GIT_OPTIONAL_LOCKS", "0")
        started = time.perf_counter()
        bench_tracked(Path(tmp), args.runs)
        bench_untracked(Path(tmp), args.runs)
        print(f"total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
