"""process: a CLI older than the adapter supports is refused before it runs, and falls back.

Through the real dispatcher, its version probe and the process layer, on asyncio and trio,
with the fake CLIs printing an old ``--version``: the claude reviewer is ``NOT_SUBMITTED``
``cli_too_old`` (the probe ran, the CLI was never asked), no retry with the same
parameters, and ``--fallback grok`` answers with the remaining budget.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs

pytestmark = pytest.mark.anyio


async def test_process_an_old_cli_is_refused_and_the_fallback_answers(
    tmp_path: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.setenv("FAKE_AGENT_VERSION", "1.0.0")  # claude 1.0.0: older than 2.1
    fakes.script(grok=[{"mode": "ok", "text": "grok answered"}])
    request = PeerRequest(
        peer="claude",
        prompt="Is this right?",
        record_dir=repo / ".review-handoff" / "t" / "old",
        fallback=("grok",),
    )
    prefs = Prefs.validate({"graceMs": 300, "livenessMs": 600_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
        delivery = await d.consult(request)

    assert delivery.state is DeliveryState.DELIVERED, delivery
    assert delivery.reply is not None and delivery.reply.text == "grok answered"
    first, second = delivery.attempts
    assert (first.product, first.state, first.reason) == (
        "claude",
        DeliveryState.NOT_SUBMITTED,
        "cli_too_old",
    )
    assert "claude 1.0.0 is older than 2.1.0" in first.detail
    assert second.product == "grok"
    assert [(f.from_, f.to, f.reason) for f in delivery.fallbacks] == [
        ("claude", "grok", "cli_too_old")
    ]
    asked = [call["product"] for call in fakes.calls()]
    assert asked == ["grok"]  # claude was probed, never asked
