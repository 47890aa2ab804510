"""Journal benchmarks (issue 4).

1. 10,000 mutations from 50 concurrent tasks through the single writer (``open_journal``),
   against a naive writer that commits (lock + write + fsync) once per mutation, in the
   same run, on the same disk. Target: the single writer is at least 5x faster.
2. One ``review-loop verification run scope add`` as a whole process, on a fresh run and
   after 5,000 events. Target: at most 110 ms each, and no growth beyond 1.2x.

Usage: ``.venv/bin/python scripts/bench_journal.py [--quick] [--json]``.
Timed processes run with bytecode caching on (as an installed tool runs), after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from review_loop.orchestrator.journal import runs  # noqa: E402
from review_loop.orchestrator.journal.store import Mutation, RunLog  # noqa: E402
from review_loop.orchestrator.journal.writer import open_journal  # noqa: E402


def mutation(key: str) -> Mutation:
    return Mutation(type="item", id=key, key=key, data={"value": key})


async def single_writer(log: RunLog, total: int, tasks: int) -> float:
    per_task = total // tasks
    started = time.perf_counter()
    async with open_journal(log) as journal:

        async def producer(task: int) -> None:
            for index in range(per_task):
                await journal.record(mutation(f"s{task}-{index}"))

        async with anyio.create_task_group() as group:
            for task in range(tasks):
                group.start_soon(producer, task)
    return time.perf_counter() - started


async def naive_writer(log: RunLog, total: int, tasks: int) -> float:
    per_task = total // tasks
    started = time.perf_counter()

    async def producer(task: int) -> None:
        for index in range(per_task):
            await anyio.to_thread.run_sync(log.commit, [mutation(f"n{task}-{index}")])

    async with anyio.create_task_group() as group:
        for task in range(tasks):
            group.start_soon(producer, task)
    return time.perf_counter() - started


def check_contiguous(log: RunLog, expected: int) -> None:
    seqs = [event["seq"] for event in log.read_events()]
    assert seqs == list(range(1, expected + 1)), "sequence has a gap or a duplicate"


def bench_writers(workdir: Path, total: int, tasks: int, backend: str) -> dict[str, Any]:
    single = RunLog(workdir / f"single-{backend}.jsonl")
    naive = RunLog(workdir / f"naive-{backend}.jsonl")
    single.create()
    naive.create()
    single_seconds = anyio.run(single_writer, single, total, tasks, backend=backend)
    naive_seconds = anyio.run(naive_writer, naive, total, tasks, backend=backend)
    check_contiguous(single, total)
    check_contiguous(naive, total)
    return {
        "backend": backend,
        "mutations": total,
        "tasks": tasks,
        "single_writer_s": round(single_seconds, 3),
        "naive_s": round(naive_seconds, 3),
        "speedup": round(naive_seconds / single_seconds, 1),
    }


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def unit(path: str) -> dict[str, Any]:
    who = {
        "producerKind": "skill",
        "agentName": "bench",
        "agentOwningPluginName": "bench",
        "skillName": "audit-python-code",
        "skillOwningPluginName": "python",
        "invocationRole": "leaf-skill",
    }
    return {
        "unitId": f"implementation:python:code:{path}",
        "auditClass": "implementation",
        "auditKind": "code",
        "subject": path,
        "coverageRequirement": "required",
        "coverageStatus": "audited",
        "priorContext": {"changedFilePartition": path, "concernPartition": "code"},
        "expectedProducer": who,
        "recordedByRunDriver": who,
        "producerProvenance": {"agentOwningPluginVersion": "1", "skillOwningPluginVersion": "1"},
    }


def command() -> list[str]:
    script = Path(sys.executable).with_name("review-loop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "review_loop"]


def child_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def time_scope_add(
    repo: Path, scope: str, token: str, label: str, count: int, cpu: list[float]
) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    payloads = repo.parent / "payloads"
    payloads.mkdir(exist_ok=True)
    samples = []
    for index in range(count + 1):  # the first run warms the bytecode cache
        payload = unit(f"{label}/{index}.py")
        path = payloads / f"{label}-{index}.json"
        path.write_text(json.dumps(payload))
        argv = [
            *command(),
            "verification",
            "run",
            "scope",
            "add",
            "-C",
            str(repo),
            "--verification-type",
            "audit",
            "--scope-type",
            "changeset",
            "--scope",
            scope,
            "--run",
            token,
            "--idempotency-key",
            payload["unitId"],
            "--payload",
            str(path),
        ]
        cpu_before = child_cpu_ms()
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        if index:
            samples.append(elapsed * 1000)
            cpu.append(child_cpu_ms() - cpu_before)
    return samples


def time_python(count: int, cpu: list[float]) -> list[float]:
    samples = []
    for _ in range(count):
        cpu_before = child_cpu_ms()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
        cpu.append(child_cpu_ms() - cpu_before)
    return samples


def bench_command(workdir: Path, events: int, count: int) -> dict[str, Any]:
    repo = workdir / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "b@example.com")
    git(repo, "config", "user.name", "bench")
    (repo / "a.py").write_text("a\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "a.py").write_text("b\n")
    git(repo, "commit", "-qam", "head")
    head = git(repo, "rev-parse", "HEAD")
    scope = f"{base}..{head}"
    (workdir / "input.json").write_text('{"changed_paths": ["a.py"]}')
    started = runs.start(
        repo, "audit", "changeset", scope, str(workdir / "input.json"), emit=lambda event: None
    )
    token = started["runToken"]
    baseline_cpu: list[float] = []
    fresh_cpu: list[float] = []
    loaded_cpu: list[float] = []
    baseline = time_python(count, baseline_cpu)
    fresh = time_scope_add(repo, scope, token, "fresh", count, fresh_cpu)
    run = runs.address(repo, "audit", "changeset", scope, token)
    log = run.log
    batch: list[Mutation] = []
    for index in range(events):
        payload = unit(f"filler/{index}.py")
        batch.append(runs.scope_mutation("audit", run.selector, payload["unitId"], payload))
        if len(batch) == 500:
            log.commit(batch)
            batch = []
    if batch:
        log.commit(batch)
    before = log.state().seq
    loaded = time_scope_add(repo, scope, token, "loaded", count, loaded_cpu)
    return {
        "load_average": round(os.getloadavg()[0], 2),
        "python_startup_ms": round(statistics.median(baseline), 1),
        "python_startup_cpu_ms": round(statistics.median(baseline_cpu), 1),
        "scope_add_fresh_cpu_ms": round(statistics.median(fresh_cpu), 1),
        "scope_add_loaded_cpu_ms": round(statistics.median(loaded_cpu), 1),
        "scope_add_fresh_ms": round(statistics.median(fresh), 1),
        "scope_add_fresh_min_ms": round(min(fresh), 1),
        "events_before_loaded": before,
        "scope_add_loaded_ms": round(statistics.median(loaded), 1),
        "scope_add_loaded_min_ms": round(min(loaded), 1),
        "growth": round(statistics.median(loaded) / statistics.median(fresh), 2),
        "samples": count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 mutations, 500 events")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--samples", type=int, default=15)
    options = parser.parse_args()
    total, events = (1000, 500) if options.quick else (10_000, 5_000)
    workdir = Path(tempfile.mkdtemp(prefix="bench-journal-", dir=os.environ.get("BENCH_DIR")))
    try:
        writers = [bench_writers(workdir, total, 50, backend) for backend in ("asyncio", "trio")]
        per_command = bench_command(workdir, events, options.samples)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {"writers": writers, "command": per_command}
    if options.json:
        print(json.dumps(result, indent=2))
        return
    for row in writers:
        print(
            f"{row['mutations']} mutations / {row['tasks']} tasks [{row['backend']}]: "
            f"single writer {row['single_writer_s']} s, naive {row['naive_s']} s, "
            f"{row['speedup']}x"
        )
    c = per_command
    print(f"load average during the run: {c['load_average']}")
    print(
        f"python -c pass: {c['python_startup_ms']} ms wall, {c['python_startup_cpu_ms']} ms cpu "
        f"(medians of {c['samples']})"
    )
    print(
        f"scope add, fresh run: {c['scope_add_fresh_ms']} ms wall median "
        f"({c['scope_add_fresh_min_ms']} min), {c['scope_add_fresh_cpu_ms']} ms cpu"
    )
    print(
        f"scope add after {c['events_before_loaded']} events: {c['scope_add_loaded_ms']} ms "
        f"wall median ({c['scope_add_loaded_min_ms']} min), {c['scope_add_loaded_cpu_ms']} ms "
        f"cpu, growth {c['growth']}x"
    )


if __name__ == "__main__":
    main()
