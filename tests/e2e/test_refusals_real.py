"""end-to-end: every refusal named, against the real CLIs.

``review-loop consult`` as a process, each real CLI from npm underneath, the fake model API
answering the provider's own refusal (:mod:`tests.fakes.refusals`: its status and body in
that API's shape). The consult document's ``code`` is the named reason; where the run proves
the provider processed nothing (claude: no token counted; codex: no item before
``turn.failed``) the delivery is ``NOT_SUBMITTED`` and not re-sent, and ``--fallback``
answers with another product; the same refusal after a tool call stays ``DELIVERY_UNKNOWN``.
Gemini 0.61's error document and grok 0.0.34's transcript carry nothing that proves it (the
grok CLI prints the prompt and the error alone even after a tool round: measured here by
the after-a-tool case), so their refusals are named and ``DELIVERY_UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.adapters.refusals import too_old, version_tuple
from tests.e2e.helpers import run
from tests.e2e.test_consult_real import (
    PeerFor,
    assert_nothing_left,
    assert_only_handoff_added,
)
from tests.e2e.test_consult_real import peer_for as peer_for  # the fixture, shared
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env

CliBin = Callable[[str], Path]

NOT_SUBMITTED = "NOT_SUBMITTED"
UNKNOWN = "DELIVERY_UNKNOWN"

CASES = [
    ("claude", "rate_limit", "rate_limited", NOT_SUBMITTED),
    ("claude", "quota", "quota_exhausted", NOT_SUBMITTED),  # 400 "credit balance is too low"
    ("claude", "billing", "quota_exhausted", NOT_SUBMITTED),  # 402 billing_error
    ("claude", "auth", "auth_failed", NOT_SUBMITTED),
    ("claude", "expired", "auth_failed", NOT_SUBMITTED),
    ("claude", "model", "model_unavailable", NOT_SUBMITTED),
    ("codex", "rate_limit", "rate_limited", NOT_SUBMITTED),
    ("codex", "quota", "quota_exhausted", NOT_SUBMITTED),  # 429 insufficient_quota
    ("codex", "usage_limit", "quota_exhausted", NOT_SUBMITTED),  # 429 usage_limit_reached
    ("codex", "billing", "quota_exhausted", NOT_SUBMITTED),  # 402
    ("codex", "auth", "auth_failed", NOT_SUBMITTED),
    ("codex", "expired", "auth_failed", NOT_SUBMITTED),
    ("codex", "model", "model_unavailable", NOT_SUBMITTED),
    ("grok", "rate_limit", "rate_limited", UNKNOWN),
    ("grok", "quota", "quota_exhausted", UNKNOWN),  # xAI 403: credits used up
    ("grok", "billing", "quota_exhausted", UNKNOWN),
    ("grok", "auth", "auth_failed", UNKNOWN),  # xAI 400 "Incorrect API key provided"
    ("grok", "expired", "auth_failed", UNKNOWN),
    ("grok", "model", "model_unavailable", UNKNOWN),
    ("gemini", "auth", "auth_failed", UNKNOWN),  # Google 400 API_KEY_INVALID
    ("gemini", "expired", "auth_failed", UNKNOWN),
    ("gemini", "billing", "quota_exhausted", UNKNOWN),
]
"""(product, the provider's refusal, the named reason, the delivery). Gemini's 429s and
404 are in ``test_gemini_refusals_real.py``, which also proves they end at once: left to
its defaults 0.61 would retry and fall back between models until the deadline."""


@pytest.mark.parametrize(
    ("product", "kind", "reason", "state"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_a_refusal_is_named(
    product: str, kind: str, reason: str, state: str, peer_for: PeerFor
) -> None:
    peer = peer_for(product)
    peer.api.default = Reply.refuse(kind)  # type: ignore[arg-type]

    ran, doc = peer.consult("anything")

    assert ran.returncode == 2, ran.describe()
    assert (doc["ok"], doc["delivery"], doc["code"]) == (False, state, reason), doc
    assert len(doc["attempts"]) == 1, doc["attempts"]  # a refusal is not re-sent as it was
    turns = peer.api.turns()
    assert turns and all(t.reply == f"refusal {kind}" for t in turns), [t.reply for t in turns]
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


READ_TOOLS = {
    "claude": ("Read", {"file_path": "README.md"}),
    "codex": ("exec_command", {"cmd": "ls"}),
    "grok": ("view_file", {"path": "README.md"}),
}


@pytest.mark.parametrize("product", sorted(READ_TOOLS))
def test_a_refusal_after_work_was_done_stays_delivery_unknown(
    product: str, peer_for: PeerFor
) -> None:
    peer = peer_for(product)
    name, arguments = READ_TOOLS[product]
    # the first request is answered (a tool call), the next ones refused
    peer.api.script(Reply.tool(name, arguments), *[Reply.refuse("quota")] * 3)

    ran, doc = peer.consult("Read README.md, please")

    assert ran.returncode == 2, ran.describe()
    assert (doc["delivery"], doc["code"]) == (UNKNOWN, "quota_exhausted"), doc
    assert peer.api.turns()[0].reply == "tool"
    assert_nothing_left(peer)


def test_a_refusal_that_processed_nothing_falls_back(peer_for: PeerFor) -> None:
    peer = peer_for("claude")
    codex_env = cli_env("codex", peer.api, peer.home)  # codex set up in the same HOME
    peer.env.update({name: codex_env[name] for name in ("CODEX_HOME", "FAKE_API_KEY")})
    peer.api.by_api["anthropic"] = Reply.refuse("quota")  # claude's account is out of credit
    peer.api.script("codex answered instead")  # codex's request is a turn of its own

    ran, doc = peer.consult("anything", "--fallback", "codex")

    assert ran.returncode == 0, ran.describe()
    assert (doc["ok"], doc["product"], doc["text"]) == (True, "codex", "codex answered instead")
    assert doc["fallbacks"] == [{"from": "claude", "to": "codex", "reason": "quota_exhausted"}]
    assert [t.api for t in peer.api.turns()] == ["anthropic", "responses"]
    assert_nothing_left(peer)


@pytest.mark.parametrize("product", ["claude", "codex", "gemini"])
def test_cli_too_old_is_read_from_the_real_version_probe(
    product: str, cli_bin: CliBin, cli_home: Path, git_repo: Path, model_api: FakeModelAPI
) -> None:
    # What the real CLI prints for the adapter's own probe, read by the adapter: the pinned
    # version is not too old; were the oldest supported one newer than it, it would be.
    adapter = get_adapter(product)
    ran = run(
        [cli_bin(product), *(adapter.probe_args() or ())],
        env=cli_env(product, model_api, cli_home),
        cwd=git_repo,
    )
    assert ran.returncode == 0, ran.describe()
    version = adapter.capabilities(ran.stdout + "\n" + ran.stderr).version
    oldest = import_module(f"review_loop.adapters.{product}").OLDEST_VERSION
    probed = version_tuple(version)
    assert probed is not None and probed >= oldest, (version, oldest)
    assert not too_old(version, oldest)
    assert too_old(version, (probed[0], probed[1], probed[2] + 1))
