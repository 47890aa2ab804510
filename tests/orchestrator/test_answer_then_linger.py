"""A complete answer is an answer: a CLI that prints it, lets go of stdout and lingers.

Process tests through the real dispatcher and process layer, on asyncio and trio, for
each product's format: the fake prints its whole answer, closes stdout and stderr and
sleeps for an hour. The session is ``DELIVERED`` with its text, not timed out, and the
lingering process is ended (counted in ``/proc`` by this test's token). The control: the
same answer cut short of its format's end is still a timeout, ``DELIVERY_UNKNOWN``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from tests.conftest import TOKEN_ENV
from tests.fakes import FakeCLIs

pytestmark = pytest.mark.anyio
PRODUCTS = ("claude", "codex", "gemini", "grok")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    return repo


def _with_token() -> list[int]:
    """Live (not zombie) processes carrying this test's token, read from ``/proc``."""
    token = f"{TOKEN_ENV}={os.environ[TOKEN_ENV]}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in environ.split(b"\0") and state != "Z":
            found.append(int(name))
    return found


def _prefs(timeout_ms: int) -> Prefs:
    return Prefs.validate({"timeoutMs": timeout_ms, "graceMs": 300, "livenessMs": 60_000})


async def _ask(repo: Path, peer: str, timeout_ms: int):  # type: ignore[no-untyped-def]
    request = PeerRequest(
        peer=peer, prompt="Is this right?", record_dir=repo / ".review-handoff" / "t" / peer
    )
    async with open_dispatcher(repo=repo, prefs=_prefs(timeout_ms), progress=lambda _: None) as d:
        return await d.consult(request)


@pytest.mark.parametrize("peer", PRODUCTS)
async def test_process_an_answer_then_a_lingering_cli_is_delivered(
    repo: Path, fakes: FakeCLIs, peer: str
) -> None:
    fakes.script(**{peer: [{"mode": "answer-then-linger", "text": f"ANSWER-{peer}"}]})
    assert _with_token() == []
    delivery = await _ask(repo, peer, timeout_ms=20_000)
    assert delivery.state is DeliveryState.DELIVERED, delivery
    assert delivery.reply is not None and delivery.reply.text == f"ANSWER-{peer}"
    (attempt,) = delivery.attempts
    assert not attempt.timedOut and attempt.reason is None
    assert len(fakes.calls()) == 1  # asked once
    assert _with_token() == []  # the lingering CLI was ended, and nothing it started lives
    record = json.loads(Path(delivery.recordPath or "").read_text())
    assert record["status"] == "finished" and record["state"] == "DELIVERED"


@pytest.mark.parametrize("peer", PRODUCTS)
async def test_process_an_incomplete_answer_then_a_lingering_cli_is_a_timeout(
    repo: Path, fakes: FakeCLIs, peer: str
) -> None:
    fakes.script(**{peer: [{"mode": "partial-then-linger", "text": f"ANSWER-{peer}"}]})
    delivery = await _ask(repo, peer, timeout_ms=1500)
    assert delivery.state is DeliveryState.DELIVERY_UNKNOWN and delivery.reason == "timeout"
    assert delivery.attempts[-1].timedOut
    assert _with_token() == []


@pytest.mark.parametrize("peer", ["claude", "codex"])
async def test_process_a_20_mb_answer_then_a_lingering_cli_is_delivered_whole(
    repo: Path, fakes: FakeCLIs, peer: str
) -> None:
    """Past the in-memory head the answer is spilled; at end-of-file it is read back whole
    and judged complete, and the lingering CLI is ended."""
    fakes.script(**{peer: [{"mode": "answer-then-linger", "bytes": 20_000_000}]})
    delivery = await _ask(repo, peer, timeout_ms=30_000)
    assert delivery.state is DeliveryState.DELIVERED, delivery
    assert delivery.reply is not None and delivery.reply.text == "z" * 20_000_000
    assert not delivery.attempts[-1].timedOut and _with_token() == []
