"""Contract, collaboration and process tests: the variables a CLI's own user configuration
names for credentials reach that CLI.

Contract tests of :mod:`review_loop.orchestrator.sandbox.user_config` on real files in the test's
throw-away HOME, then collaboration tests through the real dispatcher and process layer
with the fake codex (which logs the environment it got), on asyncio and trio: the variable
the user's ``~/.codex/config.toml`` names as ``env_key`` reaches codex; one that only the
reviewed repository's ``.codex/config.toml`` names does not; a missing credential is
reported naming its variable and is not retried.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.sandbox.user_config import configured_names
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

PREFS = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
PROVIDER = '[model_providers.x]\nbase_url = "http://127.0.0.1:9/v1"\nenv_key = "{name}"\n'

REVIEW_LOOP = (sys.executable, "-m", "review_loop")


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])  # the test's throw-away HOME (tests/conftest.py)


def codex_config(root: Path, name: str, file: str = "config.toml") -> None:
    (root / ".codex").mkdir(parents=True, exist_ok=True)
    (root / ".codex" / file).write_text(PROVIDER.format(name=name))


# -- contract --------------------------------------------------------------------------------


def test_contract_the_users_config_and_profiles_are_read(tmp_path: Path, home: Path) -> None:
    codex_config(home, "MY_PROVIDER_KEY")
    codex_config(home, "PROFILE_KEY", "work.config.toml")
    names = configured_names(get_adapter("codex"), os.environ, tmp_path / "repo")
    assert names == ("MY_PROVIDER_KEY", "PROFILE_KEY")


def test_contract_codex_home_is_followed_but_never_into_the_repository(
    tmp_path: Path, home: Path
) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    codex_config(repo, "PLANTED_KEY")
    codex_config(tmp_path / "elsewhere", "ELSEWHERE_KEY")
    codex = get_adapter("codex")
    elsewhere = {**os.environ, "CODEX_HOME": str(tmp_path / "elsewhere" / ".codex")}
    assert configured_names(codex, elsewhere, repo) == ("ELSEWHERE_KEY",)
    inside = {**os.environ, "CODEX_HOME": str(repo / ".codex")}
    assert configured_names(codex, inside, repo) == ()
    assert configured_names(codex, os.environ, repo, home=repo) == ()  # HOME in the repo


def test_contract_a_fifo_or_a_huge_file_names_nothing(tmp_path: Path, home: Path) -> None:
    (home / ".codex").mkdir()
    os.mkfifo(home / ".codex" / "config.toml")  # opening it to read would block
    (home / ".codex" / "big.config.toml").write_text("#" * (2 << 20) + PROVIDER.format(name="B"))
    assert configured_names(get_adapter("codex"), os.environ, tmp_path) == ()


def test_contract_an_edited_config_is_read_again(tmp_path: Path, home: Path) -> None:
    codex_config(home, "FIRST_KEY")
    assert configured_names(get_adapter("codex"), os.environ, tmp_path) == ("FIRST_KEY",)
    (home / ".codex" / "config.toml").write_text(PROVIDER.format(name="SECOND_KEY_LONGER"))
    assert configured_names(get_adapter("codex"), os.environ, tmp_path) == ("SECOND_KEY_LONGER",)


# -- collaboration (fake codex, real dispatcher and process layer) ---------------------------


@pytest.mark.anyio
async def test_the_users_env_key_reaches_codex_and_the_repositorys_does_not(
    tmp_path: Path, home: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    # FAKE_*: the names the fake CLI logs from its environment
    codex_config(home, "FAKE_MY_PROVIDER_KEY")
    codex_config(repo, "FAKE_REPO_PLANTED_KEY")
    secret, planted = "user-" + uuid.uuid4().hex, "repo-" + uuid.uuid4().hex
    monkeypatch.setenv("FAKE_MY_PROVIDER_KEY", secret)
    monkeypatch.setenv("FAKE_REPO_PLANTED_KEY", planted)
    request = PeerRequest(peer="codex", prompt="hi", record_dir=repo / ".review-handoff" / "t")
    async with open_dispatcher(repo=repo, prefs=PREFS, progress=lambda _: None) as d:
        delivery = await d.consult(request)
    assert delivery.state is DeliveryState.DELIVERED
    [call] = fakes.calls()
    assert call["env"].get("FAKE_MY_PROVIDER_KEY") == secret
    assert "FAKE_REPO_PLANTED_KEY" not in call["env"]


@pytest.mark.anyio
async def test_a_missing_credential_is_not_retried(tmp_path: Path, fakes: FakeCLIs) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    fakes.script(codex=[{"mode": "not-logged-in"}, {"mode": "ok", "text": "never asked"}])
    request = PeerRequest(peer="codex", prompt="hi", record_dir=repo / ".review-handoff" / "t")
    async with open_dispatcher(repo=repo, prefs=PREFS, progress=lambda _: None) as d:
        delivery = await d.consult(request)
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    assert delivery.reason == "missing credentials"
    assert len(delivery.attempts) == 1 and len(fakes.calls()) == 1


def test_process_consult_names_the_variable_and_the_prefs_command(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    fakes.script(codex=[{"mode": "not-logged-in"}])  # codex: Missing ... 'FAKE_API_KEY'.
    done = subprocess.run(
        [*REVIEW_LOOP, "consult", "--repo", str(repo), "--peer", "codex", "--question", "hi"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    document = json.loads(done.stdout)
    assert done.returncode == 2, done.stderr
    text = json.dumps(document)
    assert "credential variable not set: FAKE_API_KEY" in text
    assert "review-loop prefs set envPassthrough FAKE_API_KEY" in text
    assert len(fakes.calls()) == 1
