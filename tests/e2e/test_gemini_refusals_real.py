"""end-to-end: gemini's rate limit, daily quota and unknown model end at once, named.

``review-loop consult`` as a process, the real ``gemini`` 0.61 from npm underneath, the
fake model API answering Google's own refusal (:mod:`tests.fakes.refusals`). Left to its
defaults 0.61 never gives up on these: it retries a 429 with backoff for minutes, and in
plan mode falls back between the two models of its ``auto`` chain without end on a daily
quota or a 404 (thousands of requests a minute), so each met the deadline as ``timeout``.
The system defaults review-loop gives it (``gemini_defaults.json``: ``general.maxAttempts``
2, no model chain) bound it; the adapter names the refusal from gemini's own error class.
Gemini trusts a system file only under directories root owns and no one else may write,
which a clone under ``/tmp`` or a user's own install is not: the sandbox places a copy in
a root of the reviewer's own (``Invocation.root_files``), so these cases run wherever the
checkout lies (``test_gemini_root_file_real.py`` runs gemini as ``nobody``).

The deadline is ten minutes, far past the test's own limit on the run (:data:`RUN_LIMIT`,
inside pytest's): were the bound gone, the run would not end in time, its process group
would be killed and the test would fail. The fake API's count of the requests is the
bound itself. Gemini's error document carries nothing that proves the
refused request was the first (a refusal after a tool round reads the same, measured by
the last case), so each stays ``DELIVERY_UNKNOWN``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import Ran
from tests.e2e.test_consult_real import (
    Peer,
    PeerFor,
    assert_nothing_left,
    assert_only_handoff_added,
)
from tests.e2e.test_consult_real import peer_for as peer_for  # the fixture, shared
from tests.fakes.model_api import Reply

UNKNOWN = "DELIVERY_UNKNOWN"
DEADLINE_S = "600"
RUN_LIMIT = 90.0
"""Seconds the ``review-loop`` run may take before the test kills it and fails: under
pytest's own limit, so an unbounded gemini fails the test rather than stopping pytest."""


def consult(peer: Peer, question: str) -> tuple[Ran, dict[str, Any]]:
    ran = peer.review_loop(
        "consult", "--repo", str(peer.repo), "--peer", "gemini", "--question", question,
        "--timeout", DEADLINE_S, timeout=RUN_LIMIT,
    )  # fmt: skip
    doc = ran.json()
    assert isinstance(doc, dict), ran.describe()
    return ran, doc


CASES = [
    # (refusal, named reason, requests): a 429 is retried once (general.maxAttempts 2);
    # a daily quota and a 404 are not retried, and fall back to no other model.
    ("rate_limit", "rate_limited", 2),  # 429 RESOURCE_EXHAUSTED, a PerMinute quota id
    ("quota", "quota_exhausted", 1),  # 429 RESOURCE_EXHAUSTED, a PerDay quota id
    ("model", "model_unavailable", 1),  # 404 NOT_FOUND "models/... is not found"
]


@pytest.mark.parametrize(("kind", "reason", "requests"), CASES, ids=[c[0] for c in CASES])
def test_a_refusal_ends_at_once_and_is_named(
    kind: str, reason: str, requests: int, peer_for: PeerFor
) -> None:
    peer = peer_for("gemini")
    peer.api.default = Reply.refuse(kind)  # type: ignore[arg-type]

    ran, doc = consult(peer, "anything")

    assert ran.returncode == 2, ran.describe()
    assert (doc["ok"], doc["delivery"], doc["code"]) == (False, UNKNOWN, reason), doc
    assert len(doc["attempts"]) == 1, doc["attempts"]  # a refusal is not re-sent as it was
    turns = peer.api.turns()
    assert [t.reply for t in turns] == [f"refusal {kind}"] * requests, [t.reply for t in turns]
    assert len({t.path for t in turns}) == 1, [t.path for t in turns]  # one model: no fallback
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


def test_a_refusal_after_a_tool_round_reads_the_same(peer_for: PeerFor) -> None:
    peer = peer_for("gemini")
    readme = str(peer.repo / "README.md")
    # the first request is answered (a read), the next refused: the model had the prompt
    peer.api.script(Reply.tool("read_file", {"file_path": readme}), *[Reply.refuse("quota")] * 3)

    ran, doc = consult(peer, "Read README.md, please")

    assert ran.returncode == 2, ran.describe()
    assert (doc["delivery"], doc["code"]) == (UNKNOWN, "quota_exhausted"), doc
    assert [t.reply for t in peer.api.turns()] == ["tool", "refusal quota"]
    assert_nothing_left(peer)
