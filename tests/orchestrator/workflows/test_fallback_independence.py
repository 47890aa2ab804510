"""Contract tests: an explicit ``--fallback`` never names the other Peer's product (T22).

Seed 004: "the script switches according to --fallback to an installed product not used by
either Peer or the host … Do not substitute the product of the other Peer". ``auto`` already
leaves them out; a product named explicitly that is the host's, this call's peer's, or (the
host given) a standard peer of the host is refused naming ``--fallback`` and what is
accepted, before anything is asked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator import cli
from review_loop.orchestrator.workflows.consult import resolve_fallbacks
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import fakes, repo

__all__ = ["fakes", "repo"]


@pytest.mark.parametrize(
    ("fallback", "peers", "why"),
    [
        ("grok", ["codex"], "Peer A or Peer B for host claude"),  # the other standard peer
        ("codex", ["codex"], "a peer of this call"),
        ("claude", ["codex"], "the host"),
    ],
)
def test_an_explicit_fallback_of_a_peer_or_the_host_is_refused(
    fallback: str, peers: list[str], why: str
) -> None:
    with pytest.raises(InputError) as refused:
        resolve_fallbacks(Prefs(), [fallback], host="claude", peers=peers)
    assert refused.value.field == "--fallback"
    assert why in str(refused.value)
    assert "neither peer nor the host uses" in str(refused.value)


def test_an_unused_product_is_kept() -> None:
    assert resolve_fallbacks(Prefs(), ["gemini"], host="claude", peers=["codex"]) == ("gemini",)


def test_consult_refuses_the_other_peer_as_fallback_before_asking(
    repo: Path, fakes: FakeCLIs, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["consult", "--repo", str(repo), "--peer", "codex", "--host", "claude"]
    code = cli.run([*argv, "--fallback", "grok", "--question", "Q"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and document["ok"] is False
    assert document["error"].startswith("--fallback: 'grok' is Peer A or Peer B for host claude")
    assert fakes.calls() == []
