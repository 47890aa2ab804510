"""Contract tests: the dispatcher's policy over a fake runner, without a process.

Retry only a proven NOT_SUBMITTED, fallback on a timeout or a proven non-submission with a
full budget of its own, never re-send DELIVERY_UNKNOWN, the narrow resume fallback,
fan-out, STOP files, cancellation and the callbacks, each asserted on what the runner was
asked (``tests/fakes/runner.py``). The real adapters read what the fake CLI would print.
Every test runs on asyncio and trio; a test that started a process fails. The process
layer's own tests (``test_process*.py``) and ``test_dispatcher.py`` cover real processes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest

from review_loop.agents.models import Completed, DeliveryState, Invocation
from review_loop.orchestrator import dispatcher as dispatcher_module
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.handoff.git import Checkout
from review_loop.orchestrator.runner import LaunchRefusedError
from review_loop.prefs import Prefs
from tests.fakes.runner import FakeRunner, Script, printed

pytestmark = pytest.mark.anyio

SID = "11111111-2222-3333-4444-555555555555"
PRODUCTS = ("claude", "codex", "gemini", "grok")


@pytest.fixture(autouse=True)
def no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy test that starts a process (both backends spawn through Popen) fails."""

    def refuse(self: subprocess.Popen[bytes], args: object, *rest: object) -> NoReturn:
        raise AssertionError(f"a policy test started a process: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)


def describes_itself(invocation: Invocation) -> bool:
    """A probe of the CLI (``--version``, or the ``--help`` read for its read-only flags)."""
    return bool({"--version", "--help"} & set(invocation.argv[1:]))


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Checkout:
    """A checkout as git would locate it, and the four CLIs "installed" (on PATH)."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for product in PRODUCTS:  # found on PATH, never run: a run would fail the test
        stub = bin_dir / product
        stub.write_text("#!/bin/sh\nexit 99\n")
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return Checkout(repo, repo / ".git")


def prefs(**changes: object) -> Prefs:
    base: dict[str, object] = {"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000}
    base.update(changes)
    return Prefs.validate(base)


def request(checkout: Checkout, peer: str = "claude", **kw: Any) -> PeerRequest:
    record_dir = checkout.root / ".review-handoff" / "runtime" / "t" / peer
    return PeerRequest(peer=peer, prompt="Is this right?", record_dir=record_dir, **kw)


async def consult(checkout: Checkout, runner: FakeRunner, req: PeerRequest, **kw: Any) -> Any:
    async with open_dispatcher(
        repo=checkout, prefs=prefs(**kw), progress=lambda _: None, runner=runner, reap=False
    ) as d:
        return await d.consult(req)


def record_of(path: str | None) -> dict[str, Any]:
    return dict(json.loads(Path(path or "").read_text()))


async def test_a_reply_is_delivered_and_its_record_finished(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=[{"mode": "ok", "text": "looks right"}]))
    delivery = await consult(checkout, runner, request(checkout))
    assert delivery.state is DeliveryState.DELIVERED
    assert delivery.reply is not None and delivery.reply.text == "looks right"
    assert delivery.cost == 0.0125
    record = record_of(delivery.recordPath)
    assert record["status"] == "finished" and record["state"] == "DELIVERED"
    assert record["sessionId"] == delivery.sessionId
    (session,) = runner.sessions
    assert delivery.sessionId in session.invocation.argv  # chosen before the launch
    assert session.deadline == 20.0 and session.grace == 0.3
    assert session.confine is not None and session.confine.repo == checkout.root


async def test_the_record_holds_the_pid_before_the_runner_answers(checkout: Checkout) -> None:
    seen: list[dict[str, Any]] = []
    req = request(checkout)

    async def handler(invocation: Invocation) -> Completed:
        if describes_itself(invocation):
            return printed(invocation)
        seen.append(json.loads((req.directory / "reviewer-session.json").read_text()))
        return printed(invocation, "ok")

    delivery = await consult(checkout, FakeRunner(handler), req)
    assert delivery.ok
    (running,) = seen
    assert running["status"] == "running" and running["pid"] is not None
    assert running["sessionId"] == delivery.sessionId


async def test_the_probe_runs_through_the_runner_unconfined_and_is_cached(
    checkout: Checkout,
) -> None:
    runner = FakeRunner(Script())
    await consult(checkout, runner, request(checkout))
    probe, help_page, session = runner.runs
    assert probe.invocation.argv == ("claude", "--version") and probe.confine is None
    # its help, read for the flags that keep it read-only, outside the repository
    assert help_page.invocation.argv == ("claude", "--help") and help_page.confine is None
    assert help_page.invocation.cwd != checkout.root
    assert session.confine is not None
    again = FakeRunner(Script())
    await consult(checkout, again, request(checkout))
    assert len(again.runs) == 1  # the executable did not change: no probe, no help page


async def test_not_submitted_is_retried_once_then_reported(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["not-logged-in"]))
    delivery = await consult(checkout, runner, request(checkout))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert len(delivery.attempts) == len(runner.sessions) == 2
    first, second = runner.sessions
    assert first.invocation.argv == second.invocation.argv[:1] + first.invocation.argv[1:]


async def test_not_submitted_then_an_answer_on_the_retry(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["not-logged-in", {"mode": "ok", "text": "second"}]))
    delivery = await consult(checkout, runner, request(checkout))
    assert delivery.state is DeliveryState.DELIVERED
    assert [a.state for a in delivery.attempts] == ["NOT_SUBMITTED", "DELIVERED"]
    assert delivery.reply is not None and delivery.reply.text == "second"


async def test_delivery_unknown_is_never_resent_nor_a_reason_to_fall_back(
    checkout: Checkout,
) -> None:
    runner = FakeRunner(Script(claude=["fail"], codex=["ok"]))
    delivery = await consult(checkout, runner, request(checkout, fallback=("codex",)))
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    assert [s.product for s in runner.sessions] == ["claude"]
    assert delivery.fallbacks == []


async def test_unparseable_output_is_delivery_unknown(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["garbage"]))
    delivery = await consult(checkout, runner, request(checkout))
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    assert delivery.reply is None and len(runner.sessions) == 1


async def test_a_spent_deadline_is_delivery_unknown_never_an_answer(checkout: Checkout) -> None:
    """The CLI would answer, but only after its deadline: no answer is reported."""
    late = {"mode": "ok", "text": "too late", "delay": 3600}
    runner = FakeRunner(Script(claude=[late]))
    delivery = await consult(checkout, runner, request(checkout, timeout_ms=20))
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    assert delivery.reason == "timeout" and not delivery.ok
    assert delivery.reply is None and delivery.cost is None
    assert delivery.attempts[0].timedOut
    (session,) = runner.sessions  # never re-sent
    assert session.deadline == 0.02
    assert record_of(delivery.recordPath)["state"] == "DELIVERY_UNKNOWN"


async def test_a_timeout_falls_back_with_a_full_budget_of_its_own(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["hang"], codex=[{"mode": "ok", "text": "B"}]))
    delivery = await consult(
        checkout, runner, request(checkout, timeout_ms=30, fallback=("codex",))
    )
    assert delivery.state is DeliveryState.DELIVERED and delivery.product == "codex"
    assert [f.document() for f in delivery.fallbacks] == [
        {"from": "claude", "to": "codex", "reason": "timeout"}
    ]
    first, second = runner.sessions
    assert (first.product, second.product) == ("claude", "codex")
    assert first.ended_at is not None and first.ended_at <= second.started_at  # dead first
    assert first.deadline == second.deadline == 0.03  # not what the first one left


async def test_a_proven_non_submission_falls_back_after_its_retry(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["not-logged-in"], codex=[{"mode": "ok", "text": "B"}]))
    delivery = await consult(checkout, runner, request(checkout, fallback=("codex",)))
    assert delivery.ok and delivery.product == "codex"
    assert [s.product for s in runner.sessions] == ["claude", "claude", "codex"]
    assert [f.reason for f in delivery.fallbacks] == ["not_submitted"]
    assert [a.state for a in delivery.attempts] == ["NOT_SUBMITTED", "NOT_SUBMITTED", "DELIVERED"]


async def test_a_launch_the_runner_refused_is_not_submitted(checkout: Checkout) -> None:
    """LaunchRefusedError: the CLI provably never ran (retried once, then a fallback)."""

    async def handler(invocation: Invocation) -> Completed:
        if describes_itself(invocation) or invocation.argv[0] == "codex":
            return printed(invocation)
        raise LaunchRefusedError("refused", "no sandbox can be made here")

    runner = FakeRunner(handler)
    delivery = await consult(checkout, runner, request(checkout, fallback=("codex",)))
    assert delivery.ok and delivery.product == "codex"
    refused = delivery.attempts[0]
    assert (refused.state, refused.reason) == ("NOT_SUBMITTED", "refused")
    assert refused.detail == "no sandbox can be made here" and refused.exitCode is None
    assert [s.product for s in runner.sessions] == ["claude", "claude", "codex"]


async def test_a_fallback_is_never_an_avoided_or_missing_product(
    checkout: Checkout, tmp_path: Path
) -> None:
    (tmp_path / "bin" / "gemini").unlink()  # not installed
    runner = FakeRunner(Script(claude=["hang"]))
    req = request(checkout, timeout_ms=20, fallback=("gemini", "codex"), avoid=("codex",))
    delivery = await consult(checkout, runner, req)
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN  # nobody to swap in
    assert delivery.fallbacks == [] and [s.product for s in runner.sessions] == ["claude"]


async def test_a_resume_passes_the_session_and_keeps_it(checkout: Checkout) -> None:
    runner = FakeRunner(Script())
    delivery = await consult(checkout, runner, request(checkout, resume_session_id=SID))
    assert delivery.sessionId == SID and not delivery.degraded
    argv = runner.sessions[0].invocation.argv
    assert argv[argv.index("--resume") + 1] == SID


async def test_a_session_not_found_at_once_starts_a_new_session(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["session-not-found", {"mode": "ok", "text": "fresh"}]))
    delivery = await consult(checkout, runner, request(checkout, resume_session_id=SID))
    assert delivery.ok and delivery.sessionId != SID
    assert delivery.degraded and delivery.degradedReason == "session_not_found"
    assert "--resume" not in runner.sessions[1].invocation.argv


async def test_a_late_session_not_found_keeps_the_resume(
    checkout: Checkout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dispatcher_module, "RESUME_NOT_FOUND_WINDOW_MS", 10)
    late = {"mode": "session-not-found", "delay": 0.05}
    runner = FakeRunner(Script(claude=[late, {"mode": "ok"}]))
    delivery = await consult(checkout, runner, request(checkout, resume_session_id=SID))
    assert not delivery.degraded and delivery.degradedReason is None
    assert len(runner.sessions) == 2
    for session in runner.sessions:
        argv = session.invocation.argv
        assert argv[argv.index("--resume") + 1] == SID


async def test_fan_out_runs_the_peers_at_once_in_request_order(checkout: Checkout) -> None:
    both_started = anyio.Event()
    started: list[str] = []

    async def handler(invocation: Invocation) -> Completed:
        if describes_itself(invocation):
            return printed(invocation)
        started.append(invocation.argv[0])
        if len(started) == 2:
            both_started.set()
        await both_started.wait()  # neither answers before the other has started
        return printed(invocation, "ok", text=invocation.argv[0])

    async with open_dispatcher(
        repo=checkout,
        prefs=prefs(),
        progress=lambda _: None,
        runner=FakeRunner(handler),
        reap=False,
    ) as d:
        a, b = await d.fan_out([request(checkout, "codex"), request(checkout, "claude")])
    assert (a.product, b.product) == ("codex", "claude")
    assert a.reply is not None and a.reply.text == "codex"
    assert b.reply is not None and b.reply.text == "claude"


async def test_fan_out_never_gives_two_peers_the_same_fallback(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["hang"], codex=["hang"], gemini=[{"mode": "ok"}]))
    async with open_dispatcher(
        repo=checkout, prefs=prefs(), progress=lambda _: None, runner=runner, reap=False
    ) as d:
        a, b = await d.fan_out(
            [
                request(checkout, "claude", timeout_ms=20, fallback=("gemini",)),
                request(checkout, "codex", timeout_ms=20, fallback=("gemini",)),
            ]
        )
    assert [a.product, b.product].count("gemini") == 1
    assert [s.product for s in runner.sessions].count("gemini") == 1
    other = b if a.product == "gemini" else a
    assert other.state is DeliveryState.DELIVERY_UNKNOWN and other.fallbacks == []


async def test_a_stop_file_before_the_launch_runs_nothing(checkout: Checkout) -> None:
    (checkout.root / ".review-handoff").mkdir()
    (checkout.root / ".review-handoff" / "STOP").write_text("")
    runner = FakeRunner(Script())
    delivery = await consult(checkout, runner, request(checkout))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert delivery.reason == "STOP interrupt (pre-spawn)"
    assert runner.sessions == []


async def test_a_stop_file_during_the_run_is_delivery_unknown(checkout: Checkout) -> None:
    stop = checkout.root / "run-STOP"

    async def handler(invocation: Invocation) -> Completed:
        if describes_itself(invocation):
            return printed(invocation)
        stop.write_text("")
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = FakeRunner(handler)
    delivery = await consult(checkout, runner, request(checkout, stop_files=(stop,)))
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    assert delivery.reason == "STOP interrupt"
    (session,) = runner.sessions
    assert stop in session.stop_files and checkout.root / ".review-handoff" / "STOP" in (
        session.stop_files
    )


async def test_a_cancelled_consult_finishes_its_record_interrupted(checkout: Checkout) -> None:
    runner = FakeRunner(Script(claude=["hang"]))
    req = request(checkout)
    async with open_dispatcher(
        repo=checkout, prefs=prefs(), progress=lambda _: None, runner=runner, reap=False
    ) as d:
        async with anyio.create_task_group() as group:
            group.start_soon(d.consult, req)
            # cancelled once the session is launched (not while its CLI is probed)
            while not [run for run in runner.runs if not describes_itself(run.invocation)]:
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
        delivery = d.outcome_of(req)
    assert delivery.interrupted and delivery.reason == "interrupted"
    # the session had been launched: the prompt may have left
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN
    record = record_of(delivery.recordPath)
    assert (record["status"], record["state"]) == ("interrupted", "DELIVERY_UNKNOWN")


async def test_liveness_starts_once_launched_and_progress_ends_with_the_answer(
    checkout: Checkout,
) -> None:
    lines: list[str] = []

    async def handler(invocation: Invocation) -> Completed:
        if not describes_itself(invocation):
            await anyio.sleep(0.01)  # a checkpoint: the liveness task has printed
            assert lines == [
                "[review-loop] reviewer=claude status=active elapsed=00:00 timeout=00:20"
            ]
        return printed(invocation)

    async with open_dispatcher(
        repo=checkout, prefs=prefs(), progress=lines.append, runner=FakeRunner(handler), reap=False
    ) as d:
        assert (await d.consult(request(checkout))).ok
    assert len(lines) == 2 and "answered" in lines[-1]


async def test_a_breaking_progress_callback_ends_the_call_and_is_raised(
    checkout: Checkout,
) -> None:
    """The caller's error, not the session's: the run is ended and the record finished."""

    class Broken(Exception):
        pass

    def progress(line: str) -> None:
        raise Broken(line)

    runner = FakeRunner(Script(claude=["hang"], codex=["hang"]))
    req, other = request(checkout), request(checkout, "codex")
    async with open_dispatcher(
        repo=checkout, prefs=prefs(), progress=progress, runner=runner, reap=False
    ) as d:
        with pytest.raises(Broken):
            await d.fan_out([req, other])
        delivery, ended = d.outcome_of(req), d.outcome_of(other)
    assert delivery.interrupted and ended.interrupted
    assert record_of(delivery.recordPath)["status"] == "interrupted"
    assert record_of(ended.recordPath)["status"] == "interrupted"


async def test_an_embedders_runner_leaves_no_supervisor_pool(checkout: Checkout) -> None:
    async with open_dispatcher(
        repo=checkout,
        prefs=prefs(),
        progress=lambda _: None,
        runner=FakeRunner(Script()),
        reap=False,
    ) as d:
        assert d.supervisors is None
        assert (await d.consult(request(checkout))).ok


async def test_an_embedders_runner_keeps_the_outcome_bound(checkout: Checkout) -> None:
    async with open_dispatcher(
        repo=checkout, prefs=prefs(), progress=lambda _: None, runner=FakeRunner(Script()),
        reap=False, keep_outcomes=1,
    ) as d:  # fmt: skip
        await d.consult(request(checkout))
        await d.consult(request(checkout, "codex"))
        assert [o.product for o in d.outcomes] == ["codex"]


class TestInVirtualTime:
    """Trio only, on its ``MockClock``: deadlines and liveness asserted exactly, in
    milliseconds of the test's time. (The tests above run on both backends.)"""

    @pytest.fixture
    def anyio_backend(self) -> tuple[str, dict[str, object]]:
        from trio.testing import MockClock

        return "trio", {"clock": MockClock(autojump_threshold=0)}

    async def test_a_fallback_after_a_timeout_gets_the_whole_deadline_again(
        self, checkout: Checkout
    ) -> None:
        answer = {"mode": "ok", "text": "B", "delay": 1500 / 1000}
        runner = FakeRunner(Script(claude=["hang"], codex=[answer]))
        req = request(checkout, timeout_ms=2000, fallback=("codex",))
        delivery = await consult(checkout, runner, req)
        assert delivery.ok and delivery.product == "codex"
        assert [a.elapsedMs for a in delivery.attempts] == [2000, 1500]
        assert delivery.elapsedMs == 2000 + 1500
        assert delivery.attempts[0].detail == (
            "timeout after 2000ms (+ grace; the process ended after 2000 ms)"
        )

    async def test_liveness_lines_come_each_interval_until_the_answer(
        self, checkout: Checkout
    ) -> None:
        lines: list[str] = []
        runner = FakeRunner(Script(claude=[{"mode": "ok", "delay": 95}]))
        async with open_dispatcher(
            repo=checkout, prefs=prefs(livenessMs=30_000, timeoutMs=600_000), progress=lines.append,
            runner=runner, reap=False,
        ) as d:  # fmt: skip
            assert (await d.consult(request(checkout))).ok
        active = "[review-loop] reviewer=claude status=active elapsed={} timeout=10:00"
        assert lines == [
            *(active.format(at) for at in ("00:00", "00:30", "01:00", "01:30")),
            "[review-loop] reviewer=claude status=answered elapsed=01:35",
        ]

    async def test_a_run_never_outlives_its_deadline(self, checkout: Checkout) -> None:
        runner = FakeRunner(Script(claude=["hang"]))
        delivery = await consult(checkout, runner, request(checkout), timeoutMs=120_000)
        assert delivery.reason == "timeout" and delivery.reply is None
        (session,) = runner.sessions
        assert session.ended_at is not None
        assert session.ended_at - session.started_at == 120
        assert delivery.elapsedMs == 120_000


async def test_a_consult_cancelled_while_its_cli_is_probed_finishes_its_record(
    checkout: Checkout,
) -> None:
    """Cancelled during the help page read for its read-only flags: nothing was launched,
    and the record says ``interrupted``, not nothing."""
    probing = anyio.Event()

    async def handler(invocation: Invocation) -> Completed:
        if "--help" in invocation.argv:
            probing.set()
            await anyio.sleep_forever()
        return printed(invocation)

    req = request(checkout)
    async with open_dispatcher(
        repo=checkout, prefs=prefs(), progress=lambda _: None, runner=FakeRunner(handler),
        reap=False,
    ) as d:  # fmt: skip
        async with anyio.create_task_group() as group:
            group.start_soon(d.consult, req)
            await probing.wait()
            group.cancel_scope.cancel()
        delivery = d.outcome_of(req)
    assert delivery.interrupted and delivery.state is DeliveryState.NOT_SUBMITTED
    assert record_of(delivery.recordPath)["status"] == "interrupted"
