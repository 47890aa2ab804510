"""The e2e tier: the real CLIs from npm against the fake model API on 127.0.0.1.

- Every test in this folder is marked ``e2e`` (``-m "not e2e"`` leaves the tier out).
- The CLIs come from ``.clis/node_modules/.bin`` (``scripts/install-clis``) or from the folder in
  ``REVIEW_LOOP_E2E_BIN``. When one is missing the test FAILS and says to run
  ``scripts/install-clis``; only ``REVIEW_LOOP_SKIP_E2E=1`` skips the tier, and only explicitly.
- Each test gets a fresh fake model API, a throw-away HOME and a temp git repo to run in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.model_api import FakeModelAPI, serve_model_api

E2E_DIR = Path(__file__).resolve().parent
ROOT = E2E_DIR.parents[1]
BIN_ENV = "REVIEW_LOOP_E2E_BIN"
SKIP_ENV = "REVIEW_LOOP_SKIP_E2E"
DEFAULT_BIN = ROOT / ".clis" / "node_modules" / ".bin"
PRODUCT_BINARIES = {
    "claude": "claude",
    "codex": "codex",
    "gemini": "gemini",
    "grok": "grok",
    "opencode": "opencode",
    "qwen": "qwen",
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = os.environ.get(SKIP_ENV) == "1"
    for item in items:
        if E2E_DIR in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            if skip:
                item.add_marker(pytest.mark.skip(reason=f"{SKIP_ENV}=1: e2e tier skipped"))


def bin_dir() -> Path:
    return Path(os.environ.get(BIN_ENV) or DEFAULT_BIN)


@pytest.fixture
def cli_bin() -> Callable[[str], Path]:
    """``cli_bin("claude")`` → path of the real binary; fails the test when it is missing."""

    def find(product: str) -> Path:
        path = bin_dir() / PRODUCT_BINARIES[product]
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(
                f"the real `{product}` CLI is not installed at {path}. "
                f"Run scripts/install-clis (or point {BIN_ENV} at a folder holding "
                f"claude/codex/gemini/grok/opencode/qwen); set {SKIP_ENV}=1 to skip the e2e "
                "tier on purpose.",
                pytrace=False,
            )
        if shutil.which("node") is None:
            pytest.fail("node is not on PATH; the e2e tier needs Node >= 20", pytrace=False)
        return path

    return find


@pytest.fixture
def model_api() -> Iterator[FakeModelAPI]:
    """A fresh fake model API for this test; shut down (threads joined) afterwards."""
    with serve_model_api() as api:
        yield api


@pytest.fixture
def cli_home(tmp_path: Path) -> Path:
    """A throw-away HOME for the CLI under test."""
    home = tmp_path / "home"
    home.mkdir()
    return home


GIT_ENV = {
    "GIT_AUTHOR_NAME": "e2e",
    "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
    "GIT_COMMITTER_NAME": "e2e",
    "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A temp git repo with one commit (README.md) for the CLI to run in."""
    return init_git_repo(tmp_path / "repo")


def init_git_repo(repo: Path) -> Path:
    """Create ``repo`` (parents too) as a git repo with one commit (README.md)."""
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("# demo\n\nhello from the e2e repo\n")
    env = {**os.environ, **GIT_ENV}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "README.md"],
        ["commit", "-q", "-m", "initial"],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=30)
    return repo
