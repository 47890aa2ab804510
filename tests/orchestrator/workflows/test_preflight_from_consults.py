"""Collaboration tests: the seed's own preflight recipe is preflight evidence (seed 004).

"for each Peer use … review-loop consult --repo <root> --peer <product> … to complete one
real round trip, and use review-loop sessions --repo <root> --product=<product> to retrieve
the resumable handle … likewise for the Claude used for blind review". Each answered
consult keeps a signed round trip; ``ledger result`` of any run then finds the preflight
(``via: consult + sessions``) once two peers and the blind reviewer's Claude answered and
their sessions are listed. A planted round-trip line (no valid MAC) proves nothing. Fake
CLIs through the real process layer; the real signed journal and ledger.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes import FakeCLIs
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
