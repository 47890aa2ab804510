"""Contract tests: each adapter says, purely, when a CLI's output is complete by its format.

What each fake CLI prints for an answer (``tests/fakes/fake_agent.py``, in the product's
own format) is complete; the same output cut short, nothing at all, or a stream whose
middle was dropped without its end provably kept, is not. An adapter without the optional
method is never complete (the orchestrator then waits for the CLI, as before).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.adapters.base import answered, output_complete
from review_loop.agents.models import AgentRequest, Completed, Invocation
from tests.fakes import fake_agent

PRODUCTS = ("claude", "codex", "gemini", "grok")


def _printed(product: str, text: str = "the answer") -> bytes:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fake_agent._ok(product, "0b8a6a2e-1f6c-4d0e-9c55-3f1c1b2f8f10", text, "build")
    return out.getvalue().encode()


def _invocation(product: str, tmp_path: Path) -> Invocation:
    adapter = get_adapter(product)
    probe = fake_agent.GROK_BUILD_HELP if product == "grok" else f"{product} 9.9.9"
    capabilities = adapter.capabilities(probe)  # grok: the Grok Build CLI
    return adapter.build(
        AgentRequest(prompt="q", cwd=tmp_path), command=(product,), capabilities=capabilities
    )


def _so_far(stdout: bytes, *, truncated: bool = False) -> Completed:
    return Completed(returncode=None, stdout=stdout, stdout_truncated=truncated)


@pytest.mark.parametrize("product", PRODUCTS)
def test_contract_a_whole_answer_is_complete_and_a_cut_one_is_not(
    product: str, tmp_path: Path
) -> None:
    adapter, invocation = get_adapter(product), _invocation(product, tmp_path)
    whole = _printed(product)
    assert output_complete(adapter, invocation, _so_far(whole))
    assert not output_complete(adapter, invocation, _so_far(whole.rstrip()[:-3]))
    assert not output_complete(adapter, invocation, _so_far(b""))
    assert not output_complete(adapter, invocation, _so_far(b"\xff\xfe not utf-8"))


def test_contract_codex_past_the_cap_is_complete_only_with_its_end_in_the_tail(
    tmp_path: Path,
) -> None:
    adapter, invocation = get_adapter("codex"), _invocation("codex", tmp_path)
    ending = _printed("codex").split(b"\n")[-3:]  # agent_message, turn.completed, ""
    kept = b"x" * 4096 + b"\n" + b"\n".join(ending)
    assert output_complete(adapter, invocation, _so_far(kept, truncated=True))
    cut = b"x" * 64 + json.dumps({"type": "turn.completed"}).encode()  # glued at the junction
    assert not output_complete(adapter, invocation, _so_far(cut, truncated=True))


def test_contract_grok_without_read_only_is_never_complete_before_it_exits(
    tmp_path: Path,
) -> None:
    invocation = Invocation(argv=("grok",), cwd=tmp_path, isolate_in_copy=True)
    chat = b'{"role": "assistant", "content": "the answer"}\n'
    assert not output_complete(get_adapter("grok"), invocation, _so_far(chat))


def test_contract_an_adapter_without_the_method_is_never_complete(tmp_path: Path) -> None:
    invocation = Invocation(argv=("x",), cwd=tmp_path)
    assert not output_complete(object(), invocation, _so_far(_printed("claude")))


def test_contract_a_run_ended_after_its_answer_is_read_as_exited_zero() -> None:
    ended = Completed(returncode=-15, stdout=b"{}", output_complete=True)
    assert answered(ended).returncode == 0 and answered(ended).stdout == b"{}"
    killed = Completed(returncode=-15)
    assert answered(killed) is killed


def test_contract_an_adapter_that_fails_to_tell_is_never_complete(tmp_path: Path) -> None:
    class Broken:
        def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
            raise ValueError("an adapter's bug")

    invocation = Invocation(argv=("x",), cwd=tmp_path)
    assert not output_complete(Broken(), invocation, _so_far(_printed("claude")))
