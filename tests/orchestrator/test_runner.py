"""Process tests: the process runner keeps the runner contract (orchestrator/runner.py).

A run that is no reviewer session (``confine=None``, a CLI describing itself) runs as it is
and leaves the warm spare for the next session; a confined run takes that spare; a missing
CLI and a throw-away copy that no namespace can hold are refused before anything starts
(``LaunchRefusedError``). The policy over a runner is tested on a fake one:
test_dispatcher_policy.py. Every test runs on asyncio and trio.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.agents.models import Invocation
from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.runner import (
    Confinement,
    LaunchRefusedError,
    Started,
    open_process_runner,
)
from review_loop.orchestrator.sandbox import reviewer as sandbox

pytestmark = pytest.mark.anyio

PRINT_CWD = (sys.executable, "-c", "import os; print(os.getcwd())")


def confine(repo: Path, product: str = "claude", **kw: bool) -> Confinement:
    return Confinement(
        adapter=get_adapter(product),
        repo=repo,
        whole_filesystem=kw.get("whole_filesystem", False),
        allow_unprotected=True,
    )


async def test_an_unconfined_run_runs_as_it_is_and_leaves_the_spare(tmp_path: Path) -> None:
    if not subreaper.available():
        pytest.skip("no session supervisor on this platform")
    async with open_process_runner() as runner:
        assert runner.supervisors is not None
        spare = runner.supervisors.spare_pid
        assert spare is not None
        done = await runner.run(Invocation(argv=PRINT_CWD, cwd=tmp_path), deadline=30, grace=1)
        assert (done.returncode, done.stdout) == (0, f"{tmp_path}\n".encode())
        assert runner.supervisors.spare_pid == spare  # kept for the first session


async def test_a_confined_run_starts_under_the_warm_spare(tmp_path: Path) -> None:
    if not subreaper.available():
        pytest.skip("no session supervisor on this platform")
    started: list[Started] = []

    async def on_started(info: Started) -> None:
        started.append(info)

    async with open_process_runner() as runner:
        assert runner.supervisors is not None
        # The once-per-process sandbox check runs on the first spare and starts the next
        # (test_probe_on_spare.py): the session's spare is the one ready after it.
        await sandbox.unavailable(runner.supervisors)
        spare = runner.supervisors.spare_pid
        done = await runner.run(
            Invocation(argv=PRINT_CWD, cwd=tmp_path),
            deadline=30,
            grace=1,
            on_started=on_started,
            confine=confine(tmp_path),
        )
    assert done.returncode == 0 and not done.timed_out
    assert [info.pid for info in started] == [spare]


async def test_a_missing_cli_is_refused_before_anything_starts(tmp_path: Path) -> None:
    started: list[Started] = []

    async def on_started(info: Started) -> None:
        started.append(info)

    missing = Invocation(argv=("no-such-reviewer-cli",), cwd=tmp_path)
    async with open_process_runner() as runner:
        with pytest.raises(LaunchRefusedError) as refused:
            await runner.run(
                missing, deadline=30, grace=1, on_started=on_started, confine=confine(tmp_path)
            )
    assert (refused.value.reason, refused.value.detail) == (
        "spawn failed",
        "executable not found: no-such-reviewer-cli",
    )
    assert refused.value.completed is None and started == []


async def test_a_copy_no_namespace_can_hold_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from review_loop.orchestrator.sandbox import isolation

    monkeypatch.setattr(isolation, "_available", False)
    copy = Invocation(argv=PRINT_CWD, cwd=tmp_path, isolate_in_copy=True)
    async with open_process_runner() as runner:
        with pytest.raises(LaunchRefusedError) as refused:
            await runner.run(copy, deadline=30, grace=1, confine=confine(tmp_path, "grok"))
    assert refused.value.reason == "refused"
    assert "no read-only mount namespace can be made here" in refused.value.detail
