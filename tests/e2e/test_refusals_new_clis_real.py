"""end-to-end: opencode's and Qwen Code's refusals named, against the real CLIs.

``review-loop consult`` as a process, the real ``opencode`` 1.18.33 and ``qwen`` 0.24.4
underneath, the fake model API answering their OpenAI-compatible chat completions with
the refusal an OpenAI-compatible server really sends (:mod:`tests.fakes.refusals`:
OpenAI's own 429 ``rate_limit_exceeded``, 429 ``insufficient_quota`` and 404
``model_not_found``; OpenRouter's 402; vLLM's 404, whose message qwen loses). What each
CLI does, measured here:

- opencode retries a 429 (the rate limit and the exhausted quota alike: its ``isRetryable``)
  five times with backoff (its fixed ``RETRY_MAX_RETRIES``, 2 s doubling, about 70 s), then
  prints one ``error`` event with the status and the provider's message and exits 1; a 402
  or 404 is not retried. With no ``step_start`` before the error no response began, so
  nothing was processed: ``NOT_SUBMITTED``, and ``--fallback`` answers.
- qwen retries a 429 seven times inside one attempt (fixed, about 80 s), then would start
  the attempt again after ``retryInitialDelayMs`` (60 s) for
  ``model.generationConfig.maxRetries`` attempts (10 by default, up to 5 minutes apart: past
  the deadline). Review-loop's own system defaults for qwen (``qwen_defaults.json``, the
  lowest settings tier) set ``maxRetries`` to 0, so with the user's settings as they are
  (the test HOME sets no retry) a 429 ends after the seven tries with its name; a 404 is
  not retried. ``QWEN_CODE_UNATTENDED_RETRY`` in the caller's environment (unlimited 429
  retries) does not reach qwen. Its result quotes ``[API Error: <status> <message>]``; with
  no tool result and no other assistant content before it, nothing was processed:
  ``NOT_SUBMITTED``.

The same refusal after a tool round stays ``DELIVERY_UNKNOWN`` for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    Peer,
    PeerFor,
    assert_nothing_left,
    assert_only_handoff_added,
    peer_for,
)
from tests.fakes.model_api import Reply, cli_env

pytestmark = pytest.mark.timeout(900)
"""opencode takes a minute to start on a loaded machine, and both back off on a 429 for
more than a minute before they give up."""

NOT_SUBMITTED = "NOT_SUBMITTED"
UNKNOWN = "DELIVERY_UNKNOWN"

CASES = [
    ("opencode", "rate_limit", "openai", "rate_limited", NOT_SUBMITTED),  # 429, 5 retries
    ("opencode", "quota", "openai", "quota_exhausted", NOT_SUBMITTED),  # 429, retried too
    ("opencode", "model", "openai", "model_unavailable", NOT_SUBMITTED),  # 404 model_not_found
    ("opencode", "quota", "openrouter", "quota_exhausted", NOT_SUBMITTED),  # 402 {"code": 402}
    ("opencode", "model", "vllm", "model_unavailable", NOT_SUBMITTED),  # "Not Found: The model…"
    ("qwen", "rate_limit", "openai", "rate_limited", NOT_SUBMITTED),  # 429, 7 tries, no restart
    ("qwen", "quota", "openai", "quota_exhausted", NOT_SUBMITTED),  # insufficient_quota: the same
    ("qwen", "model", "openai", "model_unavailable", NOT_SUBMITTED),  # 404 model_not_found
    ("qwen", "quota", "openrouter", "quota_exhausted", NOT_SUBMITTED),  # 402, not retried
    # qwen's OpenAI SDK reads only a body's "error": vLLM's top-level message is lost ("404
    # status code (no body)"), and a bare 404 may as well be a wrong base URL: not named.
    ("qwen", "model", "vllm", "api error 404", UNKNOWN),
]  # fmt: skip
"""(product, the provider's refusal, whose body, the named reason, the delivery)."""


QWEN_TRIES = 7
"""qwen 0.24's fixed tries of one request on a 429 (``DEFAULT_RETRY_OPTIONS.maxAttempts``);
OpenAI's rate limit and ``insufficient_quota`` are both 429s, the other refusals are tried
once."""
QWEN_DEADLINE = "160"
"""Seconds: the seven tries end in about 80 s; one more attempt (60 s later, 80 s more)
does not fit, so unbounded retries end as ``timeout`` here, before ``RUN_TIMEOUT``."""
QWEN_DEFAULTS = Path(__file__).parents[2] / "review_loop" / "adapters" / "qwen_defaults.json"


@pytest.mark.parametrize(
    ("product", "kind", "shape", "reason", "state"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES],
)
def test_a_refusal_of_the_first_request_is_named_and_not_submitted(
    product: str,
    kind: Any,
    shape: Any,
    reason: str,
    state: str,
    peer_for: PeerFor,  # noqa: F811
) -> None:
    peer = peer_for(product)
    settings = (peer.home / ".qwen" / "settings.json").read_bytes() if product == "qwen" else b""
    shipped = QWEN_DEFAULTS.read_bytes()
    extra: tuple[str, ...] = ()
    if product == "qwen":
        extra = ("--timeout", QWEN_DEADLINE)
        # qwen's own switch for retrying a 429 without a count, set in the caller's shell
        peer.env["QWEN_CODE_UNATTENDED_RETRY"] = "true"
    peer.api.default = Reply.refuse(kind, shape=shape)

    ran, doc = peer.consult("anything", *extra)

    assert ran.returncode == 2, ran.describe()
    assert (doc["ok"], doc["delivery"], doc["code"]) == (False, state, reason), doc
    assert len(doc["attempts"]) == 1, doc["attempts"]  # a refusal is not re-sent as it was
    turns = peer.api.turns()
    assert turns and all(t.reply == f"refusal {kind}" for t in turns), [t.reply for t in turns]
    if product == "qwen":
        # one attempt, never started again: the seven tries of a 429, one try of the rest
        assert len(turns) == (QWEN_TRIES if shape == "openai" and kind != "model" else 1), turns
        # the user's settings and review-loop's defaults, both as they were
        assert (peer.home / ".qwen" / "settings.json").read_bytes() == settings
        assert QWEN_DEFAULTS.read_bytes() == shipped
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


READ_TOOL = {
    "opencode": ("read", "filePath"),
    "qwen": ("read_file", "file_path"),
}


@pytest.mark.parametrize("product", sorted(READ_TOOL))
def test_a_refusal_after_a_tool_round_stays_delivery_unknown(
    product: str,
    peer_for: PeerFor,  # noqa: F811
) -> None:
    peer = peer_for(product)
    tool, key = READ_TOOL[product]
    # the first request is answered (a tool call), the next ones refused
    refusals = [Reply.refuse("model", shape="openai")] * 3
    peer.api.script(Reply.tool(tool, {key: str(peer.repo / "README.md")}), *refusals)

    ran, doc = peer.consult("Read README.md, please")

    assert ran.returncode == 2, ran.describe()
    assert (doc["delivery"], doc["code"]) == (UNKNOWN, "model_unavailable"), doc
    replies = [t.reply for t in peer.api.turns()]
    assert replies[0] == "tool" and replies[1:] and set(replies[1:]) == {"refusal model"}
    assert_nothing_left(peer)


@pytest.mark.parametrize("product", sorted(READ_TOOL))
def test_a_refusal_that_processed_nothing_falls_back(
    product: str,
    peer_for: PeerFor,  # noqa: F811
) -> None:
    peer = peer_for(product)
    codex_env = cli_env("codex", peer.api, peer.home)  # codex set up in the same HOME
    peer.env.update({name: codex_env[name] for name in ("CODEX_HOME", "FAKE_API_KEY")})
    peer.api.by_api["chat"] = Reply.refuse("model", shape="openai")  # no such model
    peer.api.script("codex answered instead")  # codex's request is a turn of its own

    ran, doc = peer.consult("anything", "--fallback", "codex")

    assert ran.returncode == 0, ran.describe()
    assert (doc["ok"], doc["product"], doc["text"]) == (True, "codex", "codex answered instead")
    assert doc["fallbacks"] == [{"from": product, "to": "codex", "reason": "model_unavailable"}]
    apis = [t.api for t in peer.api.turns()]
    assert apis[-1] == "responses" and set(apis[:-1]) == {"chat"}, apis
    assert_nothing_left(peer)
