"""Process tests: ``kill -9`` of a session's supervisor, its owner alive, leaves nothing.

The supervisor (``subreaper.py``) is what a session's record names; whoever kills it with
SIGKILL (an OOM killer, a careless ``kill -9 PID``) takes away the subreaper that owned
the session's escapers. review-loop, still running, must then end the CLI and the helper
the CLI started in a new session (SIGTERM-ignoring, holding the CLI's stdout): the consult
returns, its record is finished, and no process carrying the session's marker survives.
Each test runs on asyncio and trio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.process import subreaper
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo
from tests.orchestrator.process import ownership
from tests.orchestrator.process.ownership import kill_all, wait_until, with_marker

pytestmark = pytest.mark.anyio


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    made = FakeCLIs(tmp_path / "fakes")
    env = {**made.env(), "REVIEW_LOOP_ENV_PASSTHROUGH": ownership.PASSTHROUGH}
    for key, value in env.items():  # the fakes' script and log reach the reviewer
        monkeypatch.setenv(key, value)
    return made


@pytest.mark.skipif(not subreaper.available(), reason="needs a child subreaper (Linux)")
async def test_a_supervisor_killed_mid_session_leaves_no_process_of_the_session(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    record_dir = tmp_path / "records"
    fakes.script(claude=[{"mode": "stubborn-escape"}])
    prefs = Prefs.validate({"graceMs": 500, "timeoutMs": 120_000})
    delivered: list[Any] = []
    marker = ""
    try:
        with anyio.fail_after(90):  # hang-catching only
            async with (
                open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d,
                anyio.create_task_group() as group,
            ):

                async def consult() -> None:
                    request = PeerRequest(peer="claude", prompt="x", record_dir=record_dir)
                    delivered.append(await d.consult(request))

                group.start_soon(consult)
                record = await anyio.to_thread.run_sync(ownership.running_record, record_dir)
                marker = str(record["marker"])
                # the supervisor, the CLI and its escaper
                assert await anyio.to_thread.run_sync(
                    lambda: wait_until(lambda: len(with_marker(marker)) >= 3)
                )
                supervisor = psutil.Process(int(str(record["pid"])))
                assert "subreaper" in " ".join(supervisor.cmdline())
                supervisor.kill()
        assert delivered and not delivered[0].ok
        final = json.loads((record_dir / "reviewer-session.json").read_text())
        assert final["status"] != "running", final
        assert wait_until(lambda: not with_marker(marker), 10), [
            p.cmdline() for p in with_marker(marker)
        ]
    finally:
        if marker:
            kill_all(with_marker(marker))
