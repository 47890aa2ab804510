"""Process tests of the sandbox's once-per-process checks on the warm supervisor pool.

``sandbox.reviewer.unavailable`` and ``sandbox.isolation.namespace_available`` each run
the real sandbox setup once per process, before the first session. Given the pool
(``process.Supervisors``) they run on its warm spare, not on a supervisor started on the
spot, and start the next spare at once, so that the session after them finds one whose
interpreter started while the check ran; the check is no session, so it does not make
the pool start a spare after a single session (``Supervisors.refill``). Real supervisors,
real ``unshare`` (skipped where there is none), asyncio and trio.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from review_loop.agents.models import Invocation
from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.process.run import (
    Started,
    Supervisors,
    open_supervisors,
    run_process,
)
from review_loop.orchestrator.sandbox import isolation
from review_loop.orchestrator.sandbox import reviewer as sandbox

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _fresh_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        pytest.skip("no mount namespaces on this system")
    if not subreaper.available():
        pytest.skip("no session supervisors on this system")
    monkeypatch.setattr(sandbox, "_probed", {})
    monkeypatch.setattr(isolation, "_available", None)


async def _reviewer_check(supervisors: Supervisors) -> bool:
    return await sandbox.unavailable(supervisors) is None


async def _isolation_check(supervisors: Supervisors) -> bool:
    return await isolation.namespace_available(supervisors)


CHECKS = [
    pytest.param(_reviewer_check, id="reviewer-protection"),
    pytest.param(_isolation_check, id="whole-filesystem-isolation"),
]


@pytest.mark.parametrize("check", CHECKS)
async def test_the_check_runs_on_the_spare_and_a_new_spare_is_ready_for_the_session(
    check: Callable[[Supervisors], Awaitable[bool]],
) -> None:
    async with open_supervisors() as supervisors:
        before = supervisors.spare_pid
        assert before is not None
        assert await check(supervisors)  # the check passes here, on the spare
        after = supervisors.spare_pid
        assert after is not None  # a spare is waiting for the session
        assert after != before  # the check spent the first one: it ran there


@pytest.mark.parametrize("check", CHECKS)
async def test_the_check_is_no_session_for_the_pools_refill(
    check: Callable[[Supervisors], Awaitable[bool]], tmp_path: Path
) -> None:
    async with open_supervisors() as supervisors:
        assert await check(supervisors)
        done = await run_process(
            Invocation(argv=("true",), cwd=tmp_path), deadline=20, grace=1, supervisors=supervisors
        )
        assert done.returncode == 0
        await supervisors.refill()  # as after the session: the pool's first session
        assert supervisors.spare_pid is None  # one session (a consult's): no spare for nothing


def _counted_replacements(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    replaced: list[int] = []
    real = Supervisors.replace

    async def counted(self: Supervisors, started: Started | None = None) -> None:
        replaced.append(1)
        await real(self, started)

    monkeypatch.setattr(Supervisors, "replace", counted)
    return replaced


async def _confined_true(tmp_path: Path, *, allow_unprotected: bool) -> tuple[int, int | None]:
    """A confined ``true`` through a fresh runner: its exit code, and whether its session ran
    in the pool's first spare (that spare's pid, else ``None``)."""
    from review_loop.adapters import get_adapter
    from review_loop.orchestrator.runner import Confinement, open_process_runner

    confine = Confinement(
        adapter=get_adapter("claude"),
        repo=tmp_path,
        whole_filesystem=False,
        allow_unprotected=allow_unprotected,
    )
    started: list[int] = []

    async def on_started(info: Started) -> None:
        started.append(info.pid)

    async with open_process_runner() as runner:
        assert runner.supervisors is not None
        first = runner.supervisors.spare_pid
        done = await runner.run(
            Invocation(argv=("true",), cwd=tmp_path),
            deadline=20,
            grace=1,
            confine=confine,
            on_started=on_started,
        )
    assert done.returncode is not None
    return done.returncode, first if started == [first] else None


async def test_a_confined_runs_check_goes_through_the_runners_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Allowed to run unprotected, a reviewer needs the answer before its launch."""
    replaced = _counted_replacements(monkeypatch)

    code, _ = await _confined_true(tmp_path, allow_unprotected=True)

    assert code == 0
    assert replaced == [1]  # the check ran on the pool's spare, and replaced it once


async def test_a_confined_run_that_would_be_refused_runs_no_check_before_its_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not allowed to run unprotected, a reviewer is launched in the sandbox at once: its
    launch is the check (a failed ``unshare`` is a refusal, ``test_reviewer.py``), so
    the session runs in the pool's first spare and no other supervisor is started."""
    replaced = _counted_replacements(monkeypatch)

    code, spare = await _confined_true(tmp_path, allow_unprotected=False)

    assert code == 0
    assert spare is not None  # the session ran in the spare started at open
    assert replaced == [] and sandbox._probed == {}  # no check ran
