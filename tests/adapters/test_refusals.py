"""contract: reading a CLI's refusal into a named reason, and proving nothing was processed.

The table of :func:`refusal_in` (the providers' and the CLIs' own words, as measured), the
per-adapter proof that decides ``NOT_SUBMITTED`` (a refusal after the model read the prompt
and ran a tool is ``DELIVERY_UNKNOWN``), and ``cli_too_old`` from the version probe.
"""

from __future__ import annotations

import json

import pytest

from review_loop.adapters import get_adapter
from review_loop.adapters.refusals import refusal_in, too_old
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.models import AgentRequest, Completed, DeliveryState, Failure
from review_loop.agents.refusals import ADVICE, REFUSALS, Refusal
from tests.adapters.golden import PROMPT, REPO, VIBE, sample

R = Refusal
MODEL = Refusal.MODEL_UNAVAILABLE


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        (429, "This request would exceed the rate limit for your organization", R.RATE_LIMITED),
        (None, "exceeded retry limit, last status: 429 Too Many Requests", R.RATE_LIMITED),
        (429, "You exceeded your current quota [...PerMinutePerProject...]", R.RATE_LIMITED),
        (429, "You exceeded your current quota, please check your plan", R.QUOTA_EXHAUSTED),
        (None, "Quota exceeded. Check your plan and billing details.", R.QUOTA_EXHAUSTED),
        (None, "You\u2019ve hit your usage limit. Try again later.", R.QUOTA_EXHAUSTED),
        (400, "Credit balance is too low", R.QUOTA_EXHAUSTED),
        (402, "anything at all", R.QUOTA_EXHAUSTED),
        (403, '"Your team has either used all available credits"', R.QUOTA_EXHAUSTED),
        (401, "Invalid API key · Fix external API key", R.AUTH_FAILED),
        (400, "API key not valid. Please pass a valid API key.", R.AUTH_FAILED),
        (400, '"Incorrect API key provided: sk***00."', R.AUTH_FAILED),
        (None, "unexpected status 401 Unauthorized: token expired", R.AUTH_FAILED),
        (404, "There's an issue with the selected model (x). It may not exist", MODEL),
        (None, "The model `m` does not exist or you do not have access to it.", MODEL),
        (404, '"The model grok-x does not exist or your team has no access to it"', MODEL),
        (500, "rate limit quota credit 401", None),  # a server error is no refusal
        (None, "Connection failed: error sending request", None),
        (404, "no route POST /v2/messages", None),  # a wrong endpoint, not a model
        (400, "messages: text content blocks must be non-empty", None),
    ],
)  # fmt: skip
def test_refusal_in_names_what_the_cli_said(
    status: int | None, text: str, expected: Refusal | None
) -> None:
    assert refusal_in(status, text) is expected


def test_every_refusal_has_advice_and_a_snake_case_name() -> None:
    assert set(ADVICE) == REFUSALS == set(Refusal)
    assert all(r.value == r.value.lower() and " " not in r.value for r in Refusal)


def _interpret(product: str, stdout: bytes, returncode: int, probe: str | None = None):  # type: ignore[no-untyped-def]
    adapter = get_adapter(product)
    capabilities = adapter.capabilities(probe)
    invocation = adapter.build(
        AgentRequest(prompt=PROMPT, cwd=REPO), command=(product,), capabilities=capabilities
    )
    return adapter.interpret(invocation, Completed(returncode=returncode, stdout=stdout))


def test_claude_refusal_after_counted_tokens_is_delivery_unknown() -> None:
    data = json.loads(sample("claude", "refused-quota.json"))
    first = _interpret("claude", json.dumps(data).encode(), 1)
    data["usage"]["input_tokens"] = 10  # the model had read the prompt
    data["modelUsage"] = {"claude-x": {"inputTokens": 10}}
    later = _interpret("claude", json.dumps(data).encode(), 1)
    assert isinstance(first, Failure) and isinstance(later, Failure)
    assert (first.state, first.reason) == (DeliveryState.NOT_SUBMITTED, "quota_exhausted")
    assert (later.state, later.reason) == (DeliveryState.DELIVERY_UNKNOWN, "quota_exhausted")


def test_codex_refusal_after_a_command_is_delivery_unknown() -> None:
    lines = sample("codex", "refused-quota.jsonl").decode().splitlines()
    item = {"id": "item_1", "type": "command_execution", "command": "ls", "status": "completed"}
    worked = [*lines[:3], json.dumps({"type": "item.completed", "item": item}), *lines[3:]]
    outcome = _interpret("codex", "\n".join(worked).encode(), 1)
    assert isinstance(outcome, Failure)
    assert (outcome.state, outcome.reason) == (DeliveryState.DELIVERY_UNKNOWN, "quota_exhausted")


def test_grok_refusal_is_never_proven_first() -> None:
    # 0.0.34 prints the prompt and the error alone even after a tool round (measured by
    # tests/e2e/test_refusals_real.py), so even this bare transcript proves nothing.
    probe = sample("grok", VIBE).decode()
    outcome = _interpret("grok", sample("grok", "vibe-refused-quota.jsonl"), 0, probe)
    assert isinstance(outcome, Failure)
    assert (outcome.state, outcome.reason) == (DeliveryState.DELIVERY_UNKNOWN, "quota_exhausted")


@pytest.mark.parametrize(
    ("product", "old", "current"),
    [
        ("claude", "2.0.99 (Claude Code)", "2.1.197 (Claude Code)"),
        ("codex", "codex-cli 0.170.9", "codex-cli 0.171.0"),
        ("gemini", "0.60.2", "0.61.0"),
        ("opencode", "1.17.9", "1.18.33"),
        ("qwen", "0.23.1", "0.24.4"),
    ],
)
def test_a_cli_older_than_the_proven_version_is_refused_before_anything_runs(
    product: str, old: str, current: str
) -> None:
    adapter = get_adapter(product)
    request = AgentRequest(prompt=PROMPT, cwd=REPO)
    with pytest.raises(AdapterRefusalError) as refused:
        adapter.build(request, command=(product,), capabilities=adapter.capabilities(old))
    assert refused.value.code == "cli_too_old"
    assert old.split()[-1 if product == "codex" else 0] in str(refused.value)
    built = adapter.build(request, command=(product,), capabilities=adapter.capabilities(current))
    assert built.argv[0] == product
    # an unreadable version is not proven old: the CLI runs
    adapter.build(request, command=(product,), capabilities=adapter.capabilities(None))


def test_too_old_compares_numerically() -> None:
    assert too_old("0.99.0", (0, 171, 0)) and not too_old("0.1000.0", (0, 171, 0))
    assert not too_old("garbage", (9, 9, 9)) and not too_old(None, (9, 9, 9))
