"""contract: opencode's and Qwen Code's refusals, read through the shared OpenAI-compatible
reading (``review_loop/adapters/openai_compatible.py``).

A refusal of the run's first request (the recorded samples: only opencode's ``error``
event; only qwen's quote of the API error) is ``NOT_SUBMITTED``; the same refusal after a
step began (opencode's ``step_start``), after a tool result (qwen's ``user`` event) or
after the model's own words stays ``DELIVERY_UNKNOWN``. The words OpenAI-compatible servers
refuse with are named.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from review_loop.adapters import get_adapter
from review_loop.adapters.refusals import refusal_in
from review_loop.agents.models import AgentRequest, Completed, DeliveryState, Failure
from review_loop.agents.refusals import Refusal
from tests.adapters.golden import PROMPT, REPO, sample

NOT_SUBMITTED = DeliveryState.NOT_SUBMITTED
UNKNOWN = DeliveryState.DELIVERY_UNKNOWN


def _interpret(product: str, stdout: bytes, returncode: int = 1) -> Failure:
    adapter = get_adapter(product)
    invocation = adapter.build(
        AgentRequest(prompt=PROMPT, cwd=REPO),
        command=(product,),
        capabilities=adapter.capabilities(None),
    )
    outcome = adapter.interpret(invocation, Completed(returncode=returncode, stdout=stdout))
    assert isinstance(outcome, Failure), outcome
    return outcome


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("rate_limit", "rate_limited"), ("quota", "quota_exhausted"), ("model", "model_unavailable")],
)
def test_opencode_refusal_after_a_step_began_is_delivery_unknown(kind: str, reason: str) -> None:
    refused = sample("opencode", f"refused-{kind}.jsonl").decode().splitlines()
    step_start = sample("opencode", "success.jsonl").decode().splitlines()[0]
    assert json.loads(step_start)["type"] == "step_start"

    first = _interpret("opencode", "\n".join(refused).encode())
    later = _interpret("opencode", "\n".join([step_start, *refused]).encode())

    assert (first.state, first.reason) == (NOT_SUBMITTED, reason)
    assert (later.state, later.reason) == (UNKNOWN, reason)
    assert first.session_id and later.session_id  # kept for a resume


def _qwen_events() -> list[dict[str, Any]]:
    events = json.loads(sample("qwen", "api-401.json"))
    assert [e["type"] for e in events] == ["system", "assistant", "result"]
    return list(events)


def _assistant(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": content}}


TOOL_USE = {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {}}
TOOL_RESULT = {
    "type": "user",
    "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1"}]},
}


@pytest.mark.parametrize(
    "before",
    [
        pytest.param([_assistant([TOOL_USE]), TOOL_RESULT], id="tool-round"),
        pytest.param([TOOL_RESULT], id="tool-result"),
        pytest.param([_assistant([{"type": "text", "text": "Let me look."}])], id="model-text"),
    ],
)
def test_qwen_refusal_after_work_is_delivery_unknown(before: list[dict[str, Any]]) -> None:
    system, error, result = _qwen_events()

    first = _interpret("qwen", json.dumps([system, error, result]).encode())
    later = _interpret("qwen", json.dumps([system, *before, error, result]).encode())

    assert (first.state, first.reason) == (NOT_SUBMITTED, "auth_failed")
    assert (later.state, later.reason) == (UNKNOWN, "auth_failed")


def test_a_failure_that_is_no_refusal_stays_delivery_unknown() -> None:
    # a 500 relayed as the only event: nothing proves more than that the server failed
    events = [json.loads(line) for line in sample("opencode", "refused-model.jsonl").splitlines()]
    events[-1]["error"]["data"].update(statusCode=500, message="upstream failed")
    outcome = _interpret("opencode", "\n".join(map(json.dumps, events)).encode())
    assert (outcome.state, outcome.reason) == (UNKNOWN, "api error 500")


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        (429, "Rate limit exceeded: free-models-per-min.", Refusal.RATE_LIMITED),  # OpenRouter
        (402, "This request requires more credits, or fewer max_tokens.", Refusal.QUOTA_EXHAUSTED),
        (404, "No endpoints found for fake-model.", Refusal.MODEL_UNAVAILABLE),  # OpenRouter
        (404, "No endpoints found that support tool use.", Refusal.MODEL_UNAVAILABLE),
        (404, "The model `fake-model` does not exist.", Refusal.MODEL_UNAVAILABLE),  # vLLM
        (429, "You exceeded your current quota, please check your plan", Refusal.QUOTA_EXHAUSTED),
    ],
)
def test_openai_compatible_servers_words_are_named(
    status: int, text: str, expected: Refusal
) -> None:
    assert refusal_in(status, text) is expected
