"""Fixtures of the fault-injection tier: a per-test tag, the survivor scanner, a repo.

Each test gets a unique :data:`~tests.faults.harness.TAG_ENV` value in the environment
that every process it starts inherits. After the test the scanner counts the tagged
processes still alive (the figure the summary reports), kills them by pid, and fails the
test if there were any — so a survivor is both reported and never left running.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import TAG_ENV, TALLY, Scanner, write_prefs
from tests.gitrepo import committed_repo

PASSTHROUGH_ENV = "REVIEW_LOOP_ENV_PASSTHROUGH"


@pytest.fixture
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scanner]:
    """This test's tag in the environment, and the scanner that finds what carries it.

    Reviewers get an allow-listed environment; the tag (and the fakes' script and log) is
    added to it through ``REVIEW_LOOP_ENV_PASSTHROUGH``, as a user would.
    """
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG_ENV, tag)
    passed = os.environ.get(PASSTHROUGH_ENV, "").split(",")
    names = [n for n in passed if n] + [TAG_ENV, "FAKE_AGENT_SCRIPT", "FAKE_AGENT_LOG"]
    monkeypatch.setenv(PASSTHROUGH_ENV, ",".join(dict.fromkeys(names)))
    found = Scanner(tag)
    yield found
    callspec = getattr(request.node, "callspec", None)
    row = callspec is not None and "mode" in callspec.params  # a row of the matrix
    survivors = found.kill_survivors(request.node.name, count=row)
    if survivors:
        pytest.fail(f"{len(survivors)} processes survived (now killed): {survivors}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository to review (the consult only reads it)."""
    return committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    """Fake CLIs on a temporary PATH."""
    return FakeCLIs(tmp_path / "fakes")


@pytest.fixture
def env(fakes: FakeCLIs, user_state: Path, scanner: Scanner) -> dict[str, str]:
    """The environment of a ``review-loop`` process: fakes on PATH, small grace, the tag."""
    write_prefs(user_state)
    environment = fakes.env(path_only=True)
    environment.pop("REVIEW_LOOP_TIMEOUT_MS", None)
    return environment


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The tier's figures: rows run and processes that survived them."""
    if TALLY.rows:
        terminalreporter.write_line(
            f"fault tier: {TALLY.rows} rows, {TALLY.survivors} surviving processes"
            + (f" (in {', '.join(TALLY.rows_with_survivors)})" if TALLY.survivors else "")
        )
