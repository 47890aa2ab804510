"""process: a stall is not a deadline.

Through the real dispatcher and process layer, on asyncio and trio, with the fake CLIs: with
prefs ``stallMs`` set, a reviewer that sleeps silently (no output, no CPU time) is ended as
``stalled`` long before its deadline, apart from it (``timedOut`` false), and a fallback
answers in its place; one that prints now and then, or thinks (burns CPU) without printing,
runs past the stall time and answers. With the stall time off (the default), the silent
sleeper is ended by the deadline only.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.errors import PrefsError
from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs

pytestmark = pytest.mark.anyio

STALL_MS = 1_500
LONG_DEADLINE_MS = 120_000
"""Far past the stall time: a stalled run is ended long before it."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    return repo


async def _ask(repo: Path, prefs: dict[str, Any], **request: Any):  # type: ignore[no-untyped-def]
    settings = Prefs.validate({"graceMs": 300, "livenessMs": 600_000, **prefs})
    asked = PeerRequest(
        prompt="Is this right?", record_dir=repo / ".review-handoff" / "t" / "stall", **request
    )
    async with open_dispatcher(repo=repo, prefs=settings, progress=lambda _: None) as d:
        return await d.consult(asked)


async def test_process_a_silent_sleeper_is_ended_as_stalled(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "hang"}])
    delivery = await _ask(repo, {"timeoutMs": LONG_DEADLINE_MS, "stallMs": STALL_MS}, peer="claude")
    assert (delivery.state, delivery.reason) == (DeliveryState.DELIVERY_UNKNOWN, "stalled")
    (attempt,) = delivery.attempts
    assert attempt.timedOut is False  # not the deadline: the stall time ended it
    assert attempt.elapsedMs < LONG_DEADLINE_MS
    assert "no output and no CPU time" in attempt.detail


async def test_process_a_stalled_reviewer_falls_back(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "hang"}], codex=[{"mode": "ok", "text": "codex answered"}])
    delivery = await _ask(
        repo,
        {"timeoutMs": LONG_DEADLINE_MS, "stallMs": STALL_MS},
        peer="claude",
        fallback=("codex",),
    )
    assert delivery.state is DeliveryState.DELIVERED, delivery
    assert delivery.reply is not None and delivery.reply.text == "codex answered"
    assert [(f.from_, f.to, f.reason) for f in delivery.fallbacks] == [
        ("claude", "codex", "stalled")
    ]
    assert [a.reason for a in delivery.attempts] == ["stalled", None]


@pytest.mark.parametrize(
    "step",
    [
        # a line on stderr every 0.1 s for 4 s: more than twice the stall time in all
        pytest.param({"mode": "slow-stream", "lines": 40, "interval": 0.1}, id="prints"),
        # 4 s of CPU and not a byte of output
        pytest.param({"mode": "burn", "seconds": 4}, id="burns-cpu"),
    ],
)
async def test_process_a_slow_but_live_reviewer_is_never_ended_early(
    repo: Path, fakes: FakeCLIs, step: dict[str, Any]
) -> None:
    fakes.script(claude=[{**step, "text": "slow but here"}])
    delivery = await _ask(repo, {"timeoutMs": LONG_DEADLINE_MS, "stallMs": STALL_MS}, peer="claude")
    assert delivery.state is DeliveryState.DELIVERED, delivery
    assert delivery.reply is not None and delivery.reply.text == "slow but here"
    (attempt,) = delivery.attempts
    assert attempt.elapsedMs > STALL_MS  # it ran past the stall time, and was not ended


async def test_process_without_a_stall_time_only_the_deadline_ends_a_sleeper(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(claude=[{"mode": "hang"}])
    delivery = await _ask(repo, {"timeoutMs": 2_500}, peer="claude")  # stallMs: the default
    assert (delivery.state, delivery.reason) == (DeliveryState.DELIVERY_UNKNOWN, "timeout")
    (attempt,) = delivery.attempts
    assert attempt.timedOut is True


@pytest.mark.parametrize("value", [-1, 1, 999, "soon", 86_400_001])
def test_process_stall_ms_outside_its_range_is_refused(value: object) -> None:
    with pytest.raises(PrefsError) as refused:
        Prefs.validate({"stallMs": value})
    assert "stallMs" in str(refused.value)
    assert "0 (off)" in str(refused.value)


def test_process_stall_ms_is_off_by_default_and_accepts_0_and_1_s() -> None:
    assert Prefs().stallMs == 0
    assert Prefs.validate({"stallMs": 0}).stallMs == 0
    assert Prefs.validate({"stallMs": 1_000}).stallMs == 1_000
