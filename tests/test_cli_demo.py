"""Contract, process and end-to-end tests of ``review-loop demo``, the offline round trip a
person can run right after ``pipx install .``.

Contract: the demo's scripted answers are a valid replies file whose verdicts make the round
trip (BLOCKED, then PASS_WITH_CONCERNS); its steps are the loop in order, each with the
status the loop promises; a step that gives anything else fails the demo, naming it; the
sessions it prints carry no resume command into the removed directory.

Process: ``review-loop demo`` run from an unrelated directory prints ONE JSON document on
stdout (every step's document in it) and each command on stderr; it removes its throw-away
directory (made under ``TMPDIR``) on success, on a crash (no git on PATH) and when a signal
stops it (exit 128 + N, an ``interrupted`` document, the running step ended first);
``--keep`` keeps it and says where.

End-to-end: installed by pipx from a copy of the checkout into a fresh ``PIPX_HOME``, with
only pipx's bin directory (and the system's) on PATH, ``review-loop demo`` runs the whole
loop.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from review_loop.orchestrator.cli import demo_loop as demo
from review_loop.simulated_replies import parse_replies

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
WAIT_S = 120.0  # hang-catching bound, never a claim about speed
LOOP = ["advisory", "blocked", "fix_recorded", "awaiting_user_decision", "archived",
        "converged", None]  # fmt: skip


def test_contract_the_scripted_answers_block_then_pass_with_a_concern() -> None:
    answers = parse_replies(json.dumps(list(demo.REPLIES)).encode(), source="demo")
    assert [answer.rsplit("Verdict: ", 1)[1] for answer in answers] == [
        "BLOCKED", "PASS_WITH_CONCERNS",
    ]  # fmt: skip


def test_contract_the_steps_are_the_loop_in_order_with_the_status_each_promises() -> None:
    steps = demo.STEPS
    assert [step.name for step in steps] == [
        "consult", "run", "fix-completion", "run", "close", "verify-diff", "sessions",
    ]  # fmt: skip
    assert [step.expect for step in steps] == LOOP
    # only the two review rounds read the scripted answers
    assert [step.scripted for step in steps] == [False, True, False, True, False, False, False]
    packet = [{"packetPath": "/d/repo/.review-handoff/active/p.md"}]
    assert steps[2].args(Path("/d"), packet)[-4:] == [
        "--packet", "/d/repo/.review-handoff/active/p.md", "--body-file", "/d/fix.md",
    ]  # fmt: skip


def test_contract_a_step_that_breaks_the_loop_fails_the_demo_naming_it() -> None:
    run = demo.STEPS[1]
    assert demo._failure(run, 0, {"ok": True, "status": "blocked"}) is None
    assert demo._failure(run, 0, {"ok": True, "status": "archived"}) == (
        "step `run` gave status 'archived', where the loop gives 'blocked'"
    )
    assert demo._failure(run, 2, {"ok": False, "error": "boom"}) == "step `run` exited 2: boom"
    assert demo._failure(run, 1, {}) == "step `run` exited 1: no document"


def test_contract_a_recorded_fix_reads_as_awaiting_re_review_not_as_open() -> None:
    # fix-completion's document: F1 still in openBlocking (only the re-review resolves it)
    recorded = {"status": "fix_recorded", "lastAnchor": "fix_completion", "openBlocking": ["F1"]}
    assert demo._outcome(0, recorded) == "exit 0, status fix_recorded, F1 fixed, awaiting re-review"
    blocked = {"status": "blocked", "lastAnchor": "fix_handoff", "openBlocking": ["F1", "F3"]}
    assert demo._outcome(0, blocked) == "exit 0, status blocked, open blocking F1,F3"


def test_contract_the_sessions_printed_carry_no_resume_command() -> None:
    keys = {"resume": "x", "resumeInShell": "cd /d && x", "resumeReadOnly": {}}
    listed = {"ok": True, "sessions": [{"sessionId": "s1", **keys}]}
    stripped = demo._without_resume(listed)
    assert stripped["sessions"] == [{"sessionId": "s1"}]
    assert "--keep" in stripped["note"]


def _env(tmp: Path, path: str | None = None) -> dict[str, str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("REVIEW_LOOP_SIMULATED_REPLIES", None)
    if path is not None:
        env["PATH"] = path
    return env


def _demo(
    tmp_path: Path, *args: str, path: str | None = None, command: str | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = [command or str(VENV_BIN / "review-loop"), "demo", *args]
    done = subprocess.run(
        argv, cwd=elsewhere, env=_env(scratch, path), capture_output=True, text=True,
        timeout=WAIT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done, scratch


def _assert_the_loop(document: dict[str, Any]) -> None:
    assert document["ok"] is True and document["status"] == "completed"
    assert [step["status"] for step in document["steps"]] == LOOP
    assert [step["exitCode"] for step in document["steps"]] == [0] * 7
    assert [step["document"].get("verdict") for step in document["steps"][1:4:2]] == [
        "BLOCKED", "PASS_WITH_CONCERNS",
    ]  # fmt: skip


def test_process_the_demo_prints_one_document_and_removes_its_directory(
    tmp_path: Path,
) -> None:
    done, scratch = _demo(tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # ONE document: a second would not parse
    _assert_the_loop(document)
    assert document["kept"] is False
    sessions = document["steps"][-1]["document"]["sessions"]
    assert sessions and all(not set(s) & set(demo._RESUME_KEYS) for s in sessions)
    # a person sees each command as typed and what came of it
    assert "\n$ review-loop run --repo repo --reviewer simulated" in done.stderr
    assert "-> exit 0, status blocked, verdict BLOCKED, open blocking F1" in done.stderr
    # after fix-completion F1 is still open (the re-review resolves it): said as it is
    assert "-> exit 0, status fix_recorded, F1 fixed, awaiting re-review\n" in done.stderr
    assert "status fix_recorded, open blocking" not in done.stderr
    assert "(no model was asked)" in done.stderr
    assert list(scratch.iterdir()) == []


def test_process_keep_keeps_the_directory_and_says_where(tmp_path: Path) -> None:
    done, scratch = _demo(tmp_path, "--keep")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    kept = Path(document["directory"])
    assert document["kept"] is True and kept.parent == scratch.resolve()
    assert (kept / "repo" / "test_calc.py").is_file()
    assert f"demo: kept {kept}" in done.stderr
    assert "resume" in document["steps"][-1]["document"]["sessions"][0]
    shutil.rmtree(kept)


def test_process_a_demo_that_cannot_run_git_still_removes_its_directory(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()  # PATH with no git on it: the first git command fails
    done, scratch = _demo(tmp_path, path=str(bare), command=str(VENV_BIN / "review-loop"))
    assert done.returncode == 1
    assert json.loads(done.stdout)["ok"] is False
    assert list(scratch.iterdir()) == []


def _start_demo(scratch: Path, cwd: Path, *, stdout: int) -> subprocess.Popen[bytes]:
    """``review-loop demo`` in a session of its own (its group can be signalled), its
    temporary directory made under ``scratch``."""
    return subprocess.Popen(
        [str(VENV_BIN / "review-loop"), "demo"], env=_env(scratch), cwd=cwd,
        stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def _running_step(process: psutil.Process) -> psutil.Process:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for child in process.children():
            try:
                if child.cmdline()[1:4] == ["-m", "review_loop", "run"]:
                    return child
            except (psutil.NoSuchProcess, IndexError):
                continue
        time.sleep(0.005)
    raise AssertionError("the demo never started its run step")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_process_a_signal_ends_the_step_prints_interrupted_and_removes_the_directory(
    tmp_path: Path, sig: signal.Signals
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _start_demo(scratch, tmp_path, stdout=subprocess.PIPE)
    try:
        step = _running_step(psutil.Process(proc.pid))
        proc.send_signal(sig)  # to the demo alone: it must end its step itself
        out, _ = proc.communicate(timeout=WAIT_S)
        assert not step.is_running() or step.status() == psutil.STATUS_ZOMBIE
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=WAIT_S)
    assert proc.returncode == 128 + sig
    document = json.loads(out)
    assert document["ok"] is False and document["status"] == "interrupted"
    assert document["signal"] == sig.name and document["stoppedStep"] == "run"
    assert [step["step"] for step in document["steps"]] == ["consult"]
    assert list(scratch.iterdir()) == []


def test_process_a_killed_demos_directory_is_removed_by_the_next_consult(tmp_path: Path) -> None:
    """SIGKILL leaves the demo no moment to clean up: its directory, named for its pid and
    start time, is swept by the next review-loop that opens a dispatcher."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _start_demo(scratch, tmp_path, stdout=subprocess.DEVNULL)
    try:
        _running_step(psutil.Process(proc.pid))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the demo and its step, as `kill -9 -PGID`
        proc.wait(timeout=WAIT_S)
    [left] = scratch.iterdir()
    assert left.name.startswith(f"review-loop-demo-{proc.pid}-")
    elsewhere = tmp_path / "elsewhere"
    subprocess.run(["git", "init", "-q", str(elsewhere)], check=True)
    done = subprocess.run(
        [str(VENV_BIN / "review-loop"), "consult", "--repo", str(elsewhere), "--peer",
         "simulated", "--question", "?"],
        env=_env(scratch), capture_output=True, text=True, timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(scratch.iterdir()) == []


def _reviewer_of_the_run_step(process: psutil.Process) -> psutil.Process:
    step = _running_step(process)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for child in step.children(recursive=True):
            try:
                if "review_loop.simulated" in child.cmdline():
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.005)
    raise AssertionError("the run step never started its reviewer")


_CANCELLED = {128 + signal.SIGTERM}
# Ctrl-C reaches the step too; which of its SIGINT and the demo's SIGTERM it acts on first
# is the kernel's and the interpreter's choice: either is a cancellation.
_CANCELLED_BY_EITHER = {128 + signal.SIGINT, 128 + signal.SIGTERM}


@pytest.mark.parametrize(
    ("sig", "group", "step_exits"),
    [(signal.SIGTERM, False, _CANCELLED), (signal.SIGINT, True, _CANCELLED_BY_EITHER)],
    ids=["SIGTERM-demo-alone", "SIGINT-process-group"],
)
def test_process_a_signal_during_a_waiting_step_cancels_that_step_not_waits_for_it(
    tmp_path: Path, sig: signal.Signals, group: bool, step_exits: set[int]
) -> None:
    """The scripted answers' file held locked (the simulated reviewer waits for its lock):
    the run step cannot end on its own before its 60 s deadline (then it would exit 2), so
    only the stop the demo passes on (or the group's own signal) ends it: cancelled, exit
    128 + N."""
    import fcntl

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _start_demo(scratch, tmp_path, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + WAIT_S
        while not (found := list(scratch.glob("review-loop-demo-*/replies.json"))):
            assert time.monotonic() < deadline, "the demo never wrote its replies"
            time.sleep(0.005)
        with found[0].open("rb") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            _reviewer_of_the_run_step(psutil.Process(proc.pid))
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
            out, _ = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=WAIT_S)
    assert proc.returncode == 128 + sig
    document = json.loads(out)
    assert document["stoppedStep"] == "run"
    assert document["stoppedStepExitCode"] in step_exits
    assert list(scratch.iterdir()) == []


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_end_to_end_after_a_pipx_install_the_demo_runs_the_loop(tmp_path: Path) -> None:
    from tests.test_install_tools import _copy_checkout, _install

    checkout = _copy_checkout(tmp_path / "checkout")
    bin_dir, _, env = _install("pipx", checkout, tmp_path / "home")
    system = [p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(ROOT))]
    path = os.pathsep.join([str(bin_dir), *system])
    assert shutil.which("review-loop", path=path) == str(bin_dir / "review-loop")
    done, scratch = _demo(tmp_path, path=path, command="review-loop")
    assert done.returncode == 0, done.stderr
    _assert_the_loop(json.loads(done.stdout))
    assert list(scratch.iterdir()) == []
