"""The stop contract around the matrix: repeated signals, nohup, other commands, Ctrl-C.

- Process: a second signal while the reviewers are being ended is reported on stderr and
  does not cut the cleanup short (one document, the first signal's exit code).
- Process: review-loop catches TERM, HUP and INT while reviewers run, and a signal
  ignored when it started (``nohup``) stays ignored.
- Process: ``review-loop run`` (one reviewer, no consult document of its own) is
  cancelled the same way: the dispatcher's outcomes make its document.
- Contract: a signal noted before the event loop runs cancels the command at once.
- Contract: Ctrl-C to a command that runs no reviewer exits 130 with no traceback.
- Contract: a command's own error comes out of the signal plumbing unwrapped.
"""

from __future__ import annotations

import os
import signal
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator import cli
from review_loop.orchestrator.cli import stops
from tests.fakes import FakeCLIs
from tests.faults.harness import (
    MODES,
    PEER_A,
    PEER_B,
    Scanner,
    consult_args,
    finish,
    launch,
    one_document,
    record_of,
    row_is_set_up,
    script_row,
    signal_mask,
    stopped_on_failure,
    unfinished,
    wait_until,
    write_prefs,
)

HANG = next(m for m in MODES if m.name == "hang")
STUBBORN = next(m for m in MODES if m.name == "sigterm-ignoring")


def test_process_second_signal_during_cleanup_is_reported_not_fatal(
    repo: Path,
    fakes: FakeCLIs,
    env: dict[str, str],
    scanner: Scanner,
    user_state: Path,
    tmp_path: Path,
) -> None:
    write_prefs(user_state, grace_ms=3000)  # SIGTERM-ignoring reviewers: cleanup takes 3 s
    script_row(fakes, STUBBORN)
    stderr_path = tmp_path / "stderr"
    with stderr_path.open("w") as stderr_file:
        proc = launch(consult_args(repo, PEER_A, PEER_B), env, stderr=stderr_file)
        with stopped_on_failure(proc):
            wait_until("both reviewers", lambda: row_is_set_up(fakes, repo, scanner, STUBBORN))
            proc.send_signal(signal.SIGTERM)
            wait_until("the stop to begin", lambda: "SIGTERM: stopping" in stderr_path.read_text())
            proc.send_signal(signal.SIGINT)
            wait_until("the second signal", lambda: "SIGINT again" in stderr_path.read_text())
            proc.send_signal(signal.SIGHUP)
        stdout, _ = finish(proc)
    stderr = stderr_path.read_text()
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "SIGHUP again: already stopping" in stderr
    assert "Traceback" not in stderr
    document = one_document(stdout)
    assert document["signal"] == "SIGTERM" and document["interrupted"] == [PEER_A, PEER_B]
    assert unfinished(repo) == []
    assert scanner.survivors() == []


@pytest.mark.parametrize("nohup", [False, True], ids=["plain", "nohup"])
def test_process_signals_are_caught_and_an_ignored_hup_stays_ignored(
    nohup: bool, repo: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    script_row(fakes, HANG)
    ignored = (signal.SIGHUP,) if nohup else ()
    proc = launch(consult_args(repo, PEER_A, PEER_B), env, ignored=ignored)
    with stopped_on_failure(proc):
        wait_until("both reviewers", lambda: row_is_set_up(fakes, repo, scanner, HANG))
        caught = signal_mask(proc.pid, "SigCgt")
        assert {signal.SIGTERM, signal.SIGINT} <= caught
        assert (signal.SIGHUP in caught) is not nohup
        assert (signal.SIGHUP in signal_mask(proc.pid, "SigIgn")) is nohup
    proc.send_signal(signal.SIGINT)
    stdout, stderr = finish(proc)
    assert proc.returncode == 128 + signal.SIGINT, stderr[-2000:]
    assert one_document(stdout)["signal"] == "SIGINT"
    assert scanner.survivors() == []


def test_process_review_run_is_cancelled_by_a_signal(
    repo: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    (repo / "a.txt").write_text("changed\n")  # something to review
    proc = launch(["run", "--repo", str(repo), "--reviewer", "codex"], env)
    with stopped_on_failure(proc):
        wait_until(
            "the reviewer to run",
            lambda: (record_of(repo, "codex") or {}).get("status") == "running",
        )
    proc.send_signal(signal.SIGHUP)
    stdout, stderr = finish(proc)
    assert proc.returncode == 128 + signal.SIGHUP, stderr[-2000:]
    assert "Traceback" not in stderr
    document = one_document(stdout)
    assert document["ok"] is False and document["status"] == "interrupted"
    assert document["signal"] == "SIGHUP" and document["interrupted"] == ["codex"]
    [result] = document["results"]
    assert result["code"] == "interrupted"
    assert (record_of(repo, "codex") or {}).get("status") == "interrupted"
    assert unfinished(repo) == []
    assert scanner.survivors() == []


@pytest.mark.timeout(30)  # not cancelled: the body sleeps an hour
def test_contract_a_signal_before_the_loop_cancels_the_command_at_once() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stop = stops.install()
    started = False
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # noted by the handler, while no loop runs

        async def body(_: stops.Stop) -> Mapping[str, Any]:
            nonlocal started
            started = True
            await anyio.sleep(3600)
            raise AssertionError("not cancelled")

        document = stops.run_cancellable(body)
    finally:
        stops.uninstall(stop)
    assert signal.getsignal(signal.SIGTERM) is before
    assert started
    assert document["ok"] is False and document["signal"] == "SIGTERM"
    assert document["interrupted"] == [] and document["results"] == []
    assert stop.exit_code == 128 + signal.SIGTERM


def test_contract_ctrl_c_to_a_command_without_reviewers_prints_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def execute(args: object) -> Mapping[str, Any]:
        raise KeyboardInterrupt

    command = types.SimpleNamespace(
        USAGE=[], OUTPUT="json", configure=lambda parser: None, execute=execute
    )
    monkeypatch.setattr(cli, "load_command", lambda name: command)
    monkeypatch.setattr("sys.argv", ["review-loop", "sessions"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 128 + signal.SIGINT
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_contract_an_error_of_the_command_is_raised_as_it_was() -> None:
    """The signal listener runs beside the command in a task group; the command's own
    error must still reach the CLI as itself (its message, exit 1), not wrapped in an
    ExceptionGroup ("unhandled errors in a TaskGroup")."""

    async def body(_: stops.Stop) -> Mapping[str, Any]:
        await anyio.sleep(0)
        raise InputError("--continue", "no Fix Completion yet", "a Fix Completion section")

    stop = stops.install()
    try:
        with pytest.raises(InputError, match="no Fix Completion yet"):
            stops.run_cancellable(body)
    finally:
        stops.uninstall(stop)
    assert stop.exit_code is None
