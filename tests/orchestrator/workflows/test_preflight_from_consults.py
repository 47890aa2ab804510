"""Collaboration tests: the seed's own preflight recipe is preflight evidence (seed 004).

"for each Peer use … review-loop consult --repo <root> --peer <product> … to complete one
real round trip, and use review-loop sessions --repo <root> --product=<product> to retrieve
the resumable handle … likewise for the Claude used for blind review". Each answered
consult keeps a signed round trip; ``ledger result`` of any run then finds the preflight
(``via: consult + sessions``) once two peers and the blind reviewer's Claude answered and
their sessions are listed. A planted round-trip line (no valid MAC), one copied from
another checkout, or one older than the freshness window proves nothing. Fake
CLIs through the real process layer; the real signed journal and ledger.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.handoff.files import iso_utc
from review_loop.orchestrator.workflows.converge_store import (
    JOURNAL_PURPOSE,
    ROUND_TRIP_FRESH_SECONDS,
)
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo
from tests.orchestrator.workflows.test_converge import fakes, repo, rl

__all__ = ["fakes", "repo"]


def reasons(repo: Path) -> list[str]:
    _, result = rl(repo, "ledger", "result", "--run", "loop1")
    return list(result["reasons"])


def consult(repo: Path, peer: str) -> None:
    code, doc = rl(repo, "consult", "--peer", peer, "--question", "Preflight: answer OK.")
    assert code == 0, doc
    code, listed = rl(repo, "sessions", f"--product={peer}")
    assert code == 0 and doc["sessionId"] in str(listed)


def test_consult_then_sessions_for_both_peers_and_claude_records_the_preflight(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(any_=[{"mode": "ok", "text": "OK"}])
    assert rl(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--run", "loop1")[0] == 0
    assert "no preflight recorded" in reasons(repo)
    consult(repo, "codex")
    consult(repo, "grok")
    assert "no preflight recorded" in reasons(repo)  # the blind reviewer's Claude: not yet
    consult(repo, "claude")
    assert "no preflight recorded" not in reasons(repo)
    _, shown = rl(repo, "ledger", "show", "--run", "loop1")
    preflight = shown["ledger"]["preflight"]
    assert (preflight["ready"], preflight["via"]) == (True, "consult + sessions")


def test_a_planted_round_trip_proves_nothing(repo: Path, fakes: FakeCLIs) -> None:
    planted = repo / ".review-handoff" / "runtime" / "converge" / "consult-round-trips"
    planted.mkdir(parents=True)
    lines = [
        f'{{"seq": {i}, "event": "consult.round-trip", "product": "{p}", "sessionId": "s{i}"}}'
        for i, p in enumerate(("codex", "grok", "claude"), start=1)
    ]
    (planted / "journal.jsonl").write_text("\n".join(lines) + "\n")
    assert rl(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--run", "loop1")[0] == 0
    assert "no preflight recorded" in reasons(repo)


def test_round_trips_copied_from_another_checkout_prove_nothing(
    repo: Path, tmp_path: Path, fakes: FakeCLIs
) -> None:
    """The kept lines name the root they were asked in: copied (with their sessions) to
    another checkout of the user, they are not that checkout's preflight."""
    fakes.script(any_=[{"mode": "ok", "text": "OK"}])
    other = committed_repo(tmp_path / "other", {"app.py": "def f(x):\n    return x[0]\n"})
    for peer in ("codex", "grok", "claude"):
        consult(other, peer)
    assert rl(other, "ledger", "set", "--id", "T1", "--status", "PENDING", "--run", "loop1")[0] == 0
    assert rl(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--run", "loop1")[0] == 0
    runtime = Path(".review-handoff") / "runtime"
    for part in ("consult-sessions", "converge/consult-round-trips"):
        shutil.copytree(other / runtime / part, repo / runtime / part)
    assert "no preflight recorded" in reasons(repo)
    assert "no preflight recorded" not in reasons(other)  # where they were asked, they count


def test_a_round_trip_older_than_the_window_proves_nothing(repo: Path, fakes: FakeCLIs) -> None:
    """A line this user's review-loop signed, but longer ago than the freshness window."""
    fakes.script(any_=[{"mode": "ok", "text": "OK"}])
    for peer in ("codex", "grok", "claude"):
        consult(repo, peer)
    journal = repo / ".review-handoff" / "runtime" / "converge" / "consult-round-trips"
    lines = [json.loads(line) for line in (journal / "journal.jsonl").read_text().splitlines()]
    claude = next(i for i, line in enumerate(lines) if line["product"] == "claude")
    then = time.time() - ROUND_TRIP_FRESH_SECONDS - 60
    stale = {**lines[claude], "at": iso_utc(int(then * 1e9))}
    lines[claude] = state_auth.sign(JOURNAL_PURPOSE, stale)
    (journal / "journal.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert rl(repo, "ledger", "set", "--id", "T1", "--status", "PENDING", "--run", "loop1")[0] == 0
    assert "no preflight recorded" in reasons(repo)  # the blind reviewer's line is too old
    consult(repo, "claude")  # a fresh round trip of the same product counts again
    assert "no preflight recorded" not in reasons(repo)
