"""Shared fixtures: both async backends, isolated user state, and the no-orphan guarantee.

Every test runs with a unique ``REVIEW_LOOP_TEST_TOKEN`` in the environment. Every
process a test starts inherits it, including grandchildren that called ``setsid`` to leave
the group, so after the test we can find any survivor by that token alone and fail loudly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests import gitrepo
from tests.fakes import FAKE_ENV_NAMES, PASSTHROUGH_ENV, FakeCLIs
from tests.fakes.skills import install_skills
from tests.tiers import mark_tiers

TOKEN_ENV = "REVIEW_LOOP_TEST_TOKEN"


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test gets its tier markers (tests/tiers.py), so ``-m`` selects by tier."""
    mark_tiers(items)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on asyncio and on trio."""
    return str(request.param)


def processes_with_token(token: str) -> list[psutil.Process]:
    """Live processes whose environment carries ``token`` (zombies excluded).

    Every test runs this after it ends, so the scan of every process is one raw read of
    each ``/proc/<pid>/environ`` for the token's bytes (a tenth of psutil's cost per
    process); only a process whose environment holds them is looked at through psutil,
    which decides as before: not a zombie, and ``TOKEN_ENV`` is exactly ``token``.
    """
    needle = f"\0{TOKEN_ENV}={token}\0".encode()
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if needle not in b"\0" + environ.read() + b"\0":
                    continue
            proc = psutil.Process(int(entry.name))
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(TOKEN_ENV) == token:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.fixture(autouse=True)
def no_process_left_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Fail the test if any process it started outlives it (checked by env token)."""
    token = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_ENV, token)
    # Reviewers get an allow-listed environment: the harness lists what must reach them
    # (this token, and what the fake CLIs read), as a user would with envPassthrough.
    monkeypatch.setenv(PASSTHROUGH_ENV, " ".join([TOKEN_ENV, *FAKE_ENV_NAMES]))
    yield token
    deadline = time.monotonic() + 3.0
    survivors = processes_with_token(token)
    while survivors and time.monotonic() < deadline:
        time.sleep(0.05)
        survivors = processes_with_token(token)
    if survivors:
        described = [(p.pid, " ".join(p.cmdline())[:120]) for p in survivors]
        for proc in survivors:  # only processes this test started: they carry its token
            with contextlib.suppress(psutil.Error):
                proc.kill()
        pytest.fail(f"processes outlived the test: {described}")


@pytest.fixture(scope="session", autouse=True)
def repository_templates(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where ``tests.gitrepo.committed_repo`` keeps the repositories it copies."""
    gitrepo.TEMPLATES[:] = [tmp_path_factory.mktemp("repository-templates")]


@pytest.fixture(scope="session")
def seed_skills(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The skills preflight resolves (seed 004), written once per test process: tests read
    them and none writes there (a test of skill resolution builds its own directories with
    ``install_skills``); written for each test, their 12 files and directories cost about
    a millisecond of CPU a test."""
    return install_skills(tmp_path_factory.mktemp("skills"))


@pytest.fixture(scope="session")
def users(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory the tests' fresh users are made in (one per test, ``user_state``).

    Not pytest's own numbered directories: each of those lists every directory made
    before it to find its number, a cost that grows with each test (3 ms of CPU a test,
    late in a run, for a test's two).
    """
    return tmp_path_factory.mktemp("users")


@pytest.fixture(autouse=True)
def user_state(users: Path, monkeypatch: pytest.MonkeyPatch, seed_skills: Path) -> Path:
    """Point all user state (prefs, records) at a fresh directory."""
    user = Path(tempfile.mkdtemp(prefix="user-", dir=users))
    home = user / "review-loop-home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("REVIEW_LOOP_HOME", str(home))
    # Never the real $HOME: a CLI's --version, git, or a scan of the CLIs' session stores
    # under ~ sees a throw-away home. git's identity came from ~/.gitconfig: keep commits
    # working without it.
    (user / "home").mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(user / "home"))
    for name, value in (
        ("GIT_AUTHOR_NAME", "review-loop tests"),
        ("GIT_AUTHOR_EMAIL", "tests@review-loop.invalid"),
        ("GIT_COMMITTER_NAME", "review-loop tests"),
        ("GIT_COMMITTER_EMAIL", "tests@review-loop.invalid"),
    ):
        if name not in os.environ:
            monkeypatch.setenv(name, value)
    # The skills preflight resolves (seed 004) are installed for every test's user; tests of
    # skill resolution remove this and build their own host directories.
    monkeypatch.setenv("REVIEW_LOOP_SKILL_DIRS", str(seed_skills))
    monkeypatch.delenv("REVIEW_LOOP_TIMEOUT_MS", raising=False)
    return home


@pytest.fixture(autouse=True)
def review_loop_logging_restored() -> Iterator[None]:
    """Give every test the ``review_loop`` logger, structlog and ``logging.disable`` as the
    test before it found them: logging state is process-global, so a test that changes it
    (``to_stderr``, a level, ``structlog.configure``) would otherwise decide what a later
    test in the same worker sees, and a test's outcome would depend on the order.

    Restoring ends with ``setLevel``, which also empties every logger's ``isEnabledFor``
    cache: an event logged while INFO was off caches "off", and a level set later by plain
    assignment (``logger.level = ...``) would not be seen by that cache.
    """
    logger = logging.getLogger("review_loop")
    saved = (list(logger.handlers), logger.level, logger.propagate, logger.disabled)
    disabled_below = logging.root.manager.disable
    structlog = sys.modules.get("structlog")
    structlog_was_configured = structlog is not None and structlog.is_configured()
    cli_stderr = getattr(sys.modules.get("review_loop.orchestrator.log"), "_cli_stderr", False)
    yield
    logger.handlers[:], _, logger.propagate, logger.disabled = saved
    logging.disable(disabled_below)
    logger.setLevel(saved[1])
    log = sys.modules.get("review_loop.orchestrator.log")
    if log is not None:
        log._cli_stderr = cli_stderr  # to_stderr() is the command line's, not a leftover
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured() and not structlog_was_configured:
        structlog.reset_defaults()


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """The fake CLIs, alone on this test's PATH with the system directories (no real CLI
    can answer), their script and log variables set for every process the test starts."""
    clis = FakeCLIs(tmp_path / "fakes")
    for key, value in clis.env(path_only=True).items():
        monkeypatch.setenv(key, value)
    return clis
