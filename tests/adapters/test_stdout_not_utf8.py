"""Contract tests: a CLI's stdout that is not UTF-8 is never read as a reply.

Every adapter that reads one JSON document or a JSON stream checks the bytes before any
JSON is looked at (``adapters._common.readable_stdout``, codex its own stream reader):
a stream that is not UTF-8 is ``DELIVERY_UNKNOWN`` ``parse failed`` with the detail
``stdout is not UTF-8``, keeping the session id known before launch, even when the rest
of it would parse.
"""

from __future__ import annotations

import pytest

from review_loop.adapters import get_adapter
from review_loop.agents.models import DeliveryState, Failure, Invocation
from tests.adapters.golden import REPO, finished

SESSION = "0f0e0d0c-0b0a-4908-8706-050403020100"
NOT_UTF8 = b'\xff{"result": "an answer", "response": "an answer", "text": "an answer"}\n'


@pytest.mark.parametrize("product", ["claude", "codex", "gemini", "grok", "opencode", "qwen"])
def test_stdout_that_is_not_utf8_is_not_read(product: str) -> None:
    invocation = Invocation(argv=(product,), cwd=REPO, session_id=SESSION)
    outcome = get_adapter(product).interpret(invocation, finished(NOT_UTF8))
    assert isinstance(outcome, Failure)
    assert outcome.state is DeliveryState.DELIVERY_UNKNOWN
    assert (outcome.reason, outcome.detail) == ("parse failed", "stdout is not UTF-8")
    assert outcome.session_id == SESSION
