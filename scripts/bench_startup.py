"""Start-up benchmark: each quick command as a whole process, against the original when present.

    .venv/bin/python scripts/bench_startup.py [--quick] [--rounds N] [--original PATH]
        [--ours PATH] [--only NAME ...] [--long]

``--original`` (or ``$REVIEW_LOOP_ORIGINAL``) is the original Node tool's
``review-loop.mjs``, run with ``node``; without either, the copy ``scripts/fetch-original``
puts in ``.bench/original/`` is used when it is there. Ours is the installed
``review-loop`` console script. Each round runs every command, ours and the original's
alternately (the order flips each round), so both see the same machine load; the ratio
printed is the median of the per-round ratios (ours / original). Without the original the
ratios are against baselines measured in the same run: ``python -c pass`` (the floor) and
``python -c "from pydantic import BaseModel"`` (what importing pydantic alone costs).

The original's equivalents: ``help``, ``sessions`` and ``consult`` are its own commands.
It has no ``prefs``, ``ledger`` or ``evidence`` command: ``prefs show`` and ``ledger show``
are compared with its ``help`` (its cheapest whole process: every module loaded, nothing
read), ``evidence`` with its own evidence code run as a process (``resolveBaseSha`` and
``freezeRoundEvidence`` of ``review-loop/evidence.mjs`` on the same change).

The fake reviewer CLIs are instant shell scripts (one ``printf``), so that consult measures
the interpreter and the tool, not a review: it is printed as information. The target row is
``consult, CLI answering in 1 s``: the same fake codex after ``sleep 1``, the reviewer a user
actually waits on (at most 1.05x the original); ``--long`` adds the same consult against a
CLI answering after 10 s, as information (the same fixed cost on a longer review, about 20 s
a round). The last row is a floor, not a command: a Python program that only runs the fake
CLI once under ``anyio.run``, what any consult built on anyio pays before its own work.
Nothing here is a test: it prints figures, it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = ROOT / ".venv" / "bin" / "review-loop"
"""Ours by default: this checkout's console script (``--ours`` measures another build)."""
PYTHON = ROOT / ".venv" / "bin" / "python"
FETCHED = ROOT / ".bench/original/skills/agentic-review-handoff/scripts/review-loop.mjs"
"""Where ``scripts/fetch-original`` puts the original."""
SESSIONS = 2_000
FLOOR_CASE = "floor: anyio + the fake CLI"
# ``codex exec --json`` as the real CLI prints it; ``--version`` answers the probe, ``exec
# --help`` lists the flags review-loop requires (orchestrator/sandbox/flags.py).
INSTANT_CODEX = r"""#!/bin/sh
case "$1" in --version) echo "codex-cli 0.171.0"; exit 0;; esac
case "$1 $2" in "exec --help") printf '  -s  x\n  -c  x\n  --ignore-rules  x\n'; exit 0;; esac
cat >/dev/null
id=$(cat /proc/sys/kernel/random/uuid)
printf '{"type":"thread.started","thread_id":"%s"}\n' "$id"
printf '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"ok"}}\n'
printf '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}\n'
"""
ORIGINAL_EVIDENCE = """
import { resolveBaseSha, freezeRoundEvidence } from %s;
const repoRoot = process.argv[2];
const baseSha = resolveBaseSha(repoRoot, "HEAD");
const e = freezeRoundEvidence({ repoRoot, packetId: "bench/evidence", baseSha, round: 1 });
process.stdout.write(JSON.stringify({ ok: true, baseSha, lineCount: e.lineCount }) + "\\n");
"""


@dataclass(frozen=True)
class Case:
    """One quick command: our argv and the original's equivalent (``None``: none)."""

    name: str
    ours: list[str]
    original: list[str] | None
    equivalent: str


FLOOR = """
import sys, anyio
async def main():
    done = await anyio.run_process(["codex", "exec", "--json", "-"], input=b"q")
    sys.stdout.write(done.stdout.decode())
anyio.run(main)
"""
"""The least any consult built on anyio can cost: the interpreter, ``anyio.run`` (which
imports asyncio and anyio's backend) and one run of the instant fake reviewer."""


CONSULT_1S = "consult, CLI answering in 1 s"
CONSULT_10S = "consult, CLI answering in 10 s"
"""With ``--long`` only (about 20 s a round): the same fixed cost against a longer review."""


def world(root: Path) -> tuple[dict[str, str], Path, Path]:
    """A temp HOME, state dir and PATH with the instant fakes; a changed repo; a repo
    holding ``SESSIONS`` session records (fields both tools read)."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for product in ("codex", "claude"):
        exe = bin_dir / product
        exe.write_text(INSTANT_CODEX)
        exe.chmod(0o755)
    # The restated target's reviewer: the same codex answering after one second (and, for
    # --long, after ten).
    for seconds in (1, 10):
        slow_dir = root / f"bin-{seconds}s"
        slow_dir.mkdir()
        slow = slow_dir / "codex"
        answering = f"cat >/dev/null\nsleep {seconds}\n"
        slow.write_text(INSTANT_CODEX.replace("cat >/dev/null\n", answering, 1))
        slow.chmod(0o755)
    home = root / "home"
    home.mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(home),
        "REVIEW_LOOP_HOME": str(root / "state"),
        "LANG": "C.UTF-8",
    }
    env.pop("XDG_CONFIG_HOME", None)
    repo = root / "repo"
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "app.py").write_text("print('one')\n")
    subprocess.run([*git, "-C", str(repo), "add", "app.py"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "init"], check=True)
    (repo / "app.py").write_text("print('two')\n")
    many = root / "many"
    subprocess.run([*git, "init", "-q", "-b", "main", str(many)], check=True)
    runtime = many / ".review-handoff" / "runtime" / "main"
    for i in range(SESSIONS):
        record = runtime / f"s{i:05d}" / "reviewer-session.json"
        record.parent.mkdir(parents=True)
        record.write_text(
            json.dumps(
                {
                    "product": "codex",
                    "sessionId": f"00000000-0000-0000-0000-{i:012d}",
                    "updated": f"2026-11-29T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                }
            )
        )
    return env, repo, many


def cases(repo: Path, many: Path, original: Path | None, root: Path, ours: Path) -> list[Case]:
    """The quick commands and the original's equivalents."""
    evidence: list[str] | None = None
    if original is not None:
        module = (original.parent / "review-loop" / "evidence.mjs").as_uri()
        script = root / "original-evidence.mjs"
        script.write_text(ORIGINAL_EVIDENCE % json.dumps(module))
        evidence = ["node", str(script), str(repo)]
    node = ["node", str(original)] if original is not None else None

    def theirs(*args: str) -> list[str] | None:
        return [*node, *args] if node is not None else None

    consult = ("consult", "--repo", str(repo), "--peer", "codex", "--question", "q")

    def answering_after(name: str, seconds: int) -> Case:
        # ``env`` puts the slow codex first on PATH, for both tools alike.
        slow = ["env", f"PATH={root / f'bin-{seconds}s'}:{os.environ['PATH']}"]
        original = theirs(*consult)
        mine = [*slow, str(ours), *consult]
        return Case(name, mine, [*slow, *original] if original else None, "its consult, same CLI")

    return [
        Case("help", [str(ours), "help"], theirs("help"), "its help"),
        Case("prefs show", [str(ours), "prefs", "show"], theirs("help"), "its help (no prefs)"),
        Case(
            "ledger show",
            [str(ours), "ledger", "show", "--repo", str(repo)],
            theirs("help"),
            "its help (no ledger)",
        ),
        Case(
            f"sessions ({SESSIONS:,} records)",
            [str(ours), "sessions", "--repo", str(many)],
            theirs("sessions", "--repo", str(many)),
            "its sessions",
        ),
        Case(
            f"sessions --product=codex ({SESSIONS:,})",
            [str(ours), "sessions", "--repo", str(many), "--product=codex"],
            theirs("sessions", "--repo", str(many), "--product=codex"),
            "its sessions --product=codex",
        ),
        Case(
            "evidence",
            [str(ours), "evidence", "--repo", str(repo)],
            evidence,
            "its evidence.mjs as a process",
        ),
        Case(
            "consult --peer codex",
            [str(ours), "consult", "--repo", str(repo), "--peer", "codex", "--question", "q"],
            theirs("consult", "--repo", str(repo), "--peer", "codex", "--question", "q"),
            "its consult",
        ),
        answering_after(CONSULT_1S, 1),
        Case(
            FLOOR_CASE,
            [str(PYTHON), "-c", FLOOR],
            theirs("consult", "--repo", str(repo), "--peer", "codex", "--question", "q"),
            "its consult",
        ),
        answering_after(CONSULT_10S, 10),
    ]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds one whole process takes; its exit must say it worked (0) or ``ok: false`` (2)."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 2):
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stdout!r} {done.stderr!r}")
    return elapsed


def chosen(all_cases: list[Case], only: list[str] | None) -> list[Case]:
    """The cases whose name starts with one of ``only`` (every case without it)."""
    if not only:
        return all_cases
    picked = [case for case in all_cases if any(case.name.startswith(o) for o in only)]
    if not picked:
        raise SystemExit(f"--only {only}: no case; the cases: {[c.name for c in all_cases]}")
    return picked


def measure(
    all_cases: list[Case], env: dict[str, str], repo: Path, rounds: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Per case: our samples and the original's (empty without one), alternating."""
    baselines = [
        Case("python -c pass", [str(PYTHON), "-c", "pass"], None, ""),
        Case("import pydantic", [str(PYTHON), "-c", "from pydantic import BaseModel"], None, ""),
    ]
    found: dict[str, tuple[list[float], list[float]]] = {}
    for case in (*baselines, *all_cases):
        found[case.name] = ([], [])
    for case in (*baselines, *all_cases):  # warm the page cache and .pyc files once
        timed(case.ours, env, repo)
        if case.original is not None:
            timed(case.original, env, repo)
    for index in range(rounds):
        for case in (*baselines, *all_cases):
            ours, theirs = found[case.name]
            if case.original is not None and index % 2:
                theirs.append(timed(case.original, env, repo))
            ours.append(timed(case.ours, env, repo))
            if case.original is not None and not index % 2:
                theirs.append(timed(case.original, env, repo))
    return found


def report(all_cases: list[Case], found: dict[str, tuple[list[float], list[float]]]) -> None:
    """Medians in ms, and ratios: against the original, else against the baselines."""
    floor = statistics.median(found["python -c pass"][0]) * 1000
    pydantic = statistics.median(found["import pydantic"][0]) * 1000
    print(f"baselines: python -c pass {floor:.0f} ms; + import pydantic {pydantic:.0f} ms")
    for case in all_cases:
        ours, theirs = found[case.name]
        mine = statistics.median(ours) * 1000
        if theirs:
            ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
            target = "(target <= 1.05)" if case.name == CONSULT_1S else "(target <= 1.00)"
            if case.name == CONSULT_10S:
                target = "(information: the same fixed cost on a longer review)"
            if case.name == "consult --peer codex":
                target = "(information: an instant CLI measures the interpreter)"
            print(
                f"{case.name:<28} {mine:6.0f} ms   original ({case.equivalent}) "
                f"{statistics.median(theirs) * 1000:6.0f} ms   ratio {ratio:.2f} "
                + ("(a floor, not a target)" if case.name.startswith("floor") else target)
            )
        else:
            print(
                f"{case.name:<28} {mine:6.0f} ms   {mine / floor:.2f}x python -c pass, "
                f"{mine / pydantic:.2f}x importing pydantic"
            )
    for name in ("help", "prefs show"):
        if name not in found:
            continue
        mine = statistics.median(found[name][0]) * 1000
        print(f"`{name}` median {mine:.0f} ms (target < 60 ms)")
    if "consult --peer codex" not in found or FLOOR_CASE not in found:
        return
    pairs = list(zip(found["consult --peer codex"][0], found[FLOOR_CASE][0], strict=True))
    extra = statistics.median(a - b for a, b in pairs) * 1000
    over = statistics.median(a / b for a, b in pairs)
    print(
        f"consult over the floor (same rounds): +{extra:.0f} ms, ratio {over:.2f}"
        " (what is ours: everything a consult does beyond running the CLI under anyio)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    fetched = str(FETCHED) if FETCHED.is_file() else None
    parser.add_argument("--original", default=os.environ.get("REVIEW_LOOP_ORIGINAL", fetched))
    parser.add_argument("--ours", default=str(OURS), help="the review-loop executable to time")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="only the cases whose name starts so"
    )
    parser.add_argument("--long", action="store_true", help=f"also time {CONSULT_10S!r}")
    args, _ = parser.parse_known_args()
    rounds = args.rounds or (7 if args.quick else 21)
    original = Path(args.original).resolve() if args.original else None
    if original is not None and not original.is_file():
        raise SystemExit(f"--original: {original} is not a file (the original review-loop.mjs)")
    if original is not None and shutil.which("node") is None:
        print(f"node is not on PATH: {original} cannot run; ratios vs baselines")
        original = None
    if original is None:
        print(
            "original not given (--original, REVIEW_LOOP_ORIGINAL or scripts/fetch-original):"
            " ratios vs baselines"
        )
    # Edited modules would be recompiled on every run where PYTHONDONTWRITEBYTECODE is set
    # (an installed review-loop is byte-compiled): compile them once, as scripts/install does.
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", str(ROOT / "review_loop")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        env, repo, many = world(Path(tmp))
        every = cases(repo, many, original, Path(tmp), Path(args.ours))
        if not args.long:
            every = [case for case in every if case.name != CONSULT_10S]
        all_cases = chosen(every, args.only)
        report(all_cases, measure(all_cases, env, repo, rounds))


if __name__ == "__main__":
    main()
