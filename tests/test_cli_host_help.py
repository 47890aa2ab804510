"""Collaboration tests: the ``--host`` and ``--fallback`` help say what the tools do (N-2, N-4).

With default prefs (``skipHost`` false) ``consult --host codex`` may ask codex itself (a
fresh session), as the seed's prefs semantics say; the help says so instead of "never".
``--skip-host`` leaves it out. Fake CLIs through the real process layer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from review_loop.orchestrator import cli
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_converge import fakes, repo

__all__ = ["fakes", "repo"]


def test_the_host_help_names_skip_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["consult", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "never asked to review itself" not in text
    assert "consult leaves it out of the peers it chooses only when skipHost is true" in text


def test_consult_with_default_prefs_may_ask_the_hosts_product(
    repo: Path, fakes: FakeCLIs, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes.script(any_=[{"mode": "ok", "text": "fine"}])
    argv = ["consult", "--repo", str(repo), "--host", "codex", "--question", "Q"]
    assert cli.run(argv) == 0, capsys.readouterr()
    capsys.readouterr()
    assert sorted(c["product"] for c in fakes.calls()) == ["claude", "codex"]  # the help's word
    assert cli.run([*argv, "--skip-host", "true"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert sorted(c["product"] for c in fakes.calls()[2:]) == ["claude", "grok"]


def test_the_fallback_help_names_the_seeds_trigger(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["converge", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "when a peer times out or could not be asked" in text  # N-4: the seed's trigger
    assert "F may not be the host's or a peer's product" in text
