"""process: the version probe runs outside the reviewed repository, as the help probes do.

A CLI may load its project configuration from its working directory at start, even for
``--version``; the repository is hostile input, so the probe that reads the version for the
``cli_too_old`` floor runs in the same neutral directory as the ``--help`` probes. Through
the real dispatcher and process layer, on asyncio and trio, with fake CLIs that log where
each probe ran.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.sandbox.flags import NEUTRAL_CWD
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs

pytestmark = pytest.mark.anyio


async def test_process_the_version_probe_runs_in_the_neutral_directory(
    tmp_path: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    probes = tmp_path / "probes.jsonl"
    monkeypatch.setenv("FAKE_AGENT_PROBE_LOG", str(probes))
    fakes.script(claude=[{"mode": "ok", "text": "looked"}])
    request = PeerRequest(
        peer="claude", prompt="Is this right?", record_dir=repo / ".review-handoff" / "t" / "v"
    )
    prefs = Prefs.validate({"graceMs": 300, "livenessMs": 600_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
        delivery = await d.consult(request)

    assert delivery.state is DeliveryState.DELIVERED, delivery
    logged = [json.loads(line) for line in probes.read_text().splitlines()]
    versions = [p for p in logged if "--version" in p["argv"]]
    helps = [p for p in logged if "--help" in p["argv"]]
    assert versions and helps, logged  # both kinds of probe ran (no cache yet)
    assert {p["cwd"] for p in logged} == {str(NEUTRAL_CWD)}, logged
    (call,) = fakes.calls()
    assert call["cwd"] == str(repo)  # the review itself runs in the repository
