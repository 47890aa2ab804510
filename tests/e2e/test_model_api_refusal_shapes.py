"""contract: the fake model API's chat-completions refusals in the shape a test chooses.

Over plain HTTP (urllib): ``Reply.refuse(kind, shape=...)`` answers ``/v1/chat/completions``
with the status and body of OpenAI, OpenRouter or vLLM (:mod:`tests.fakes.refusals`), and
without a shape with xAI's, as before; a shape a server never sends is refused early.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.test_model_api import CHAT, post
from tests.fakes.model_api import FakeModelAPI, Reply
from tests.fakes.refusals import refusal_response

BODY = {"model": "m-1", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def refused(api: FakeModelAPI, reply: Reply) -> tuple[int, dict[str, Any]]:
    api.default = reply
    status, _, raw = post(api, CHAT, BODY)
    (turn,) = api.turns()
    assert turn.reply == f"refusal {reply.message}"
    return status, json.loads(raw)


@pytest.mark.parametrize(
    ("kind", "status", "code"),
    [
        ("rate_limit", 429, "rate_limit_exceeded"),
        ("quota", 429, "insufficient_quota"),
        ("model", 404, "model_not_found"),
    ],
)
def test_openai_shape(model_api: FakeModelAPI, kind: Any, status: int, code: str) -> None:
    got, body = refused(model_api, Reply.refuse(kind, shape="openai"))
    assert got == status
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code
    if kind == "model":
        assert "`m-1` does not exist" in body["error"]["message"]


@pytest.mark.parametrize(("kind", "status"), [("rate_limit", 429), ("quota", 402), ("model", 404)])
def test_openrouter_shape(model_api: FakeModelAPI, kind: Any, status: int) -> None:
    got, body = refused(model_api, Reply.refuse(kind, shape="openrouter"))
    assert got == status == body["error"]["code"]  # a number, the HTTP status
    if kind == "model":
        assert body["error"]["message"] == "No endpoints found for m-1."


def test_vllm_shape(model_api: FakeModelAPI) -> None:
    got, body = refused(model_api, Reply.refuse("model", shape="vllm"))
    assert got == 404
    assert (body["object"], body["type"], body["code"]) == ("error", "NotFoundError", 404)
    assert "error" not in body  # at the top level: an OpenAI client finds no error object


def test_without_a_shape_chat_refuses_as_xai(model_api: FakeModelAPI) -> None:
    got, body = refused(model_api, Reply.refuse("quota"))
    assert got == 403 and set(body) == {"code", "error"} and "credits" in body["error"]


def test_a_shape_or_kind_no_server_sends_is_refused() -> None:
    with pytest.raises(ValueError, match="refusal shape 'azure'"):
        Reply.refuse("quota", shape="azure")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="vLLM has no rate or quota"):
        refusal_response("vllm", "rate_limit", "m-1")
