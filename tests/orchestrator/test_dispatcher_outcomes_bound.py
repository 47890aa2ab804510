"""Contract and process tests: a long-lived dispatcher holds bounded memory.

1,000 consults each answering 100 KB, the caller keeping nothing: what the dispatcher keeps
is measured structurally (every container it holds, counted; the answer text it holds, in
bytes), not by RSS. It keeps the newest ``keep_outcomes`` deliveries and nothing that grows
per call. The contract test runs them over the fake runner (``tests/fakes/runner.py``), in
this process, in the inner loop; the process test runs the same 1,000 through the real
process layer, an instant shell CLI answering each (2,000 processes: the process tier).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator.dispatcher import (
    OUTCOMES_KEPT,
    Dispatcher,
    PeerRequest,
    open_dispatcher,
)
from review_loop.orchestrator.handoff.git import Checkout
from review_loop.orchestrator.runner import Runner
from review_loop.prefs import Prefs
from tests.fakes.fake_agent import HELP
from tests.fakes.runner import FakeRunner, Script
from tests.gitrepo import committed_repo

pytestmark = pytest.mark.anyio

ANSWER_BYTES = 100_000
CONSULTS = 1_000
BATCH = 10


@pytest.fixture
def instant_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``claude`` on PATH that reads its prompt and prints one 100 KB result at once."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "x" * ANSWER_BYTES,
        "session_id": "0b5e8f5e-2d7c-4c55-9d3b-7f1c1f3a9e10",
        "total_cost_usd": 0,
    }
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(result) + "\n")
    help_page = tmp_path / "help.txt"  # --help lists the flags that keep it read-only
    help_page.write_text(HELP["claude"])
    exe = bin_dir / "claude"
    exe.write_text(
        f"#!/bin/sh\n[ \"$1\" = --help ] && exec cat '{help_page}'\n"
        f"cat >/dev/null\ncat '{answer}'\n"
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return exe


def _held(dispatcher: Dispatcher) -> dict[str, Any]:
    """Every container the dispatcher holds, with its size, and the answer text it keeps."""
    sizes = {
        name: len(value)
        for name, value in vars(dispatcher).items()
        if isinstance(value, list | dict | set | tuple)
    }
    text = sum(len(d.reply.text) for d in dispatcher.outcomes if d.reply is not None)
    return {"sizes": sizes, "text_bytes": text}


async def _thousand_consults(
    repo: Path | Checkout, runner: Runner | None = None, ran: FakeRunner | None = None
) -> None:
    """1,000 consults, BATCH at once as a service would make them, the caller keeping
    nothing; what the dispatcher holds at 500 and at 1,000 is the same, and bounded."""
    prefs = Prefs.validate({"livenessMs": 600_000})
    held: list[dict[str, Any]] = []
    last: list[tuple[PeerRequest, str | None]] = []

    async def consult(dispatcher: Dispatcher, number: int) -> None:
        request = PeerRequest(peer="claude", prompt=f"question {number}")
        delivery = await dispatcher.consult(request)
        assert delivery.ok, delivery.detail
        assert delivery.reply is not None and len(delivery.reply.text) == ANSWER_BYTES
        last.append((request, delivery.recordPath))

    async with open_dispatcher(
        repo=repo, prefs=prefs, progress=lambda _: None, runner=runner
    ) as dispatcher:
        assert dispatcher.keep_outcomes == OUTCOMES_KEPT
        for batch in range(CONSULTS // BATCH):
            async with anyio.create_task_group() as group:
                for number in range(batch * BATCH, (batch + 1) * BATCH):
                    group.start_soon(consult, dispatcher, number)
            if ran is not None:
                ran.runs.clear()  # the test's own log of runs, not the dispatcher's memory
            if (batch + 1) * BATCH in (CONSULTS // 2, CONSULTS):
                held.append(_held(dispatcher))
        # the newest is there, for outcome_of after a cancelled call
        request, path = last[-1]
        assert dispatcher.outcome_of(request).recordPath == path
        assert dispatcher.outcomes[-1].recordPath == path
    assert len(last) == CONSULTS
    halfway, end = held
    assert halfway == end  # nothing grew between 500 and 1,000 consults
    assert end["sizes"]["outcomes"] == OUTCOMES_KEPT
    assert max(end["sizes"].values()) <= OUTCOMES_KEPT, end
    assert end["text_bytes"] == OUTCOMES_KEPT * ANSWER_BYTES


@pytest.fixture
def memory_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory in memory (``/dev/shm``) where there is one, else ``tmp_path``.

    The contract test measures the dispatcher's memory, not the disk: its 1,000 consults
    write 3,000 fsynced records, which on a disk are most of the test's time.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="review-loop-test-") as made:
        yield Path(made)


async def test_contract_a_thousand_consults_keep_only_the_newest_outcomes(
    tmp_path: Path, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the fake runner: the dispatcher's own memory, without a process."""

    def refuse(self: subprocess.Popen[bytes], args: object, *rest: object) -> NoReturn:
        raise AssertionError(f"the contract test started a process: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    repo = memory_dir / "repo"
    (repo / ".git").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "claude"  # found on PATH, never run: a run would fail the test
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    runner = FakeRunner(Script(claude=[{"mode": "ok", "text": "x" * ANSWER_BYTES}]))
    await _thousand_consults(Checkout(repo, repo / ".git"), runner, runner)


@pytest.mark.timeout(900)  # a hang bound for 1,000 real processes on a loaded machine
async def test_process_a_thousand_consults_keep_only_the_newest_outcomes(
    tmp_path: Path, instant_claude: Path
) -> None:
    """Through the real process layer: the same bound with the process runner's sessions."""
    await _thousand_consults(committed_repo(tmp_path / "repo", {"a.txt": "hello\n"}))


async def test_contract_keep_outcomes_is_the_bound_and_is_validated(
    tmp_path: Path, instant_claude: Path
) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    prefs = Prefs.validate({"livenessMs": 600_000})
    async with open_dispatcher(
        repo=repo, prefs=prefs, progress=lambda _: None, keep_outcomes=2
    ) as d:
        asked = [PeerRequest(peer="claude", prompt=f"question {n}") for n in range(3)]
        answered = [await d.consult(request) for request in asked]
        assert [o.recordPath for o in d.outcomes] == [a.recordPath for a in answered[1:]]
        assert max(_held(d)["sizes"].values()) <= 2
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InputError) as refused:
            async with open_dispatcher(repo=repo, prefs=prefs, keep_outcomes=bad):  # type: ignore[arg-type]
                pass
        assert refused.value.field == "keep_outcomes"
