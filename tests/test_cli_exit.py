"""Process test: a command's process ends without a last garbage collection over everything.

``cli.main`` freezes the objects the process built before it exits (``gc.freeze``), so the
interpreter's final collections do not walk every module's objects (docs/performance.md). The
exit still runs atexit handlers and the whole document still reaches stdout.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.gitrepo import committed_repo

# As ``python -m review_loop`` does; at exit, says how many objects were frozen and whether
# the collector was on.
HARNESS = """
import atexit, gc, sys
from review_loop.orchestrator.cli import main
atexit.register(lambda: sys.stderr.write(f"frozen={gc.get_freeze_count()} {gc.isenabled()}"))
sys.argv = ["review-loop", *sys.argv[1:]]
main()
"""


def _sessions_at_exit(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], int, str]:
    """One whole ``sessions`` process: its result, frozen objects and collector at exit."""
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, "sessions", "--repo", str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    frozen, enabled = done.stderr.rsplit("frozen=", 1)[1].split()
    return done, int(frozen), enabled


def test_process_a_command_exits_frozen_with_its_whole_document(tmp_path: Path) -> None:
    done, frozen, _ = _sessions_at_exit(tmp_path)
    assert json.loads(done.stdout)["ok"] is True  # flushed whole
    assert frozen > 10_000  # the modules' objects, frozen before the exit


def test_process_a_quick_command_runs_without_collections(tmp_path: Path) -> None:
    # ``main`` holds the collector during start-up; a quick command ends before turning it on
    _, _, enabled = _sessions_at_exit(tmp_path)
    assert enabled == "False"


def _collector_seen_by_a_reviewer_command() -> tuple[bool, int]:
    from review_loop.orchestrator.cli import stops

    async def body(stop: stops.Stop) -> dict[str, object]:
        return {"ok": True, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}

    document = stops.run_cancellable(body)
    return bool(document["enabled"]), int(str(document["frozen"]))


def test_contract_a_reviewer_command_collects_again_once_it_runs() -> None:
    # main() disabled the collector for start-up: the command's body runs with it on, and
    # what start-up built is frozen (a command may run for hours: its garbage is collected).
    gc.disable()
    try:
        enabled, frozen = _collector_seen_by_a_reviewer_command()
    finally:
        gc.unfreeze()
        gc.enable()
    assert enabled
    assert frozen > 0


def test_contract_an_embedding_programs_collector_is_left_alone() -> None:
    assert gc.isenabled()
    before = gc.get_freeze_count()
    enabled, frozen = _collector_seen_by_a_reviewer_command()
    assert enabled
    assert frozen == before  # nothing of the host's frozen


# What the console script and ``python -m review_loop`` run: ``main``, then the interpreter's
# ordinary exit. stdout buffered as a user's is (PYTHONUNBUFFERED, if this environment sets
# it, would hide a missing flush).
def _module(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-m", "review_loop", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_process_the_console_script_flushes_a_large_document_whole(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    runtime = repo / ".review-handoff" / "runtime" / "many"
    for index in range(400):  # a document larger than a pipe's buffer
        record = runtime / f"s{index:04d}" / "reviewer-session.json"
        record.parent.mkdir(parents=True)
        record.write_text(
            json.dumps(
                {
                    "product": "codex",
                    "sessionId": f"00000000-0000-0000-0000-{index:012d}",
                    "updated": "2026-12-01T05:00:00.000Z",
                    "cwd": str(repo),
                    "peer": "codex",
                    "status": "finished",
                    "state": "DELIVERED",
                    "ownerPid": 1,
                    "startedAt": "2026-12-01T05:00:00.000Z",
                }
            )
        )
    done = _module("sessions", "--repo", str(repo), "--product", "codex")
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout) > 65_536
    assert json.loads(done.stdout)["count"] == 400  # flushed whole


def test_process_the_console_script_keeps_every_exit_code(tmp_path: Path) -> None:
    usage = _module("consult", "--bogus")
    assert usage.returncode == 1
    assert json.loads(usage.stdout)["ok"] is False
    refused = _module("consult", "--repo", str(tmp_path), "--peer", "codex", "--question", "q")
    assert refused.returncode == 1  # bad input: not inside a git checkout
    refusal = json.loads(refused.stdout)
    assert refusal["ok"] is False and "not inside a git checkout" in refusal["error"]
    assert _module("help").returncode == 0


def test_contract_the_console_script_and_module_run_main() -> None:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'review-loop = "review_loop.orchestrator.cli:main"' in pyproject
    main_module = Path(__file__).resolve().parents[1] / "review_loop" / "__main__.py"
    assert "main()" in main_module.read_text()
