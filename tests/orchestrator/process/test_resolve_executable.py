"""Contract and collaboration tests: ``process.resolve_executable`` is ``shutil.which``'s
answer on the environment's PATH, a relative answer made absolute where it was found.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from review_loop.agents.models import Invocation
from review_loop.orchestrator.process.run import open_supervisors, resolve_executable, run_process

NAME = "tool"


def executable(path: Path) -> None:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Directories that each hold ``tool`` in a different way, by what they hold."""
    kinds: dict[str, str] = {}
    for kind in ("exec", "plain", "dir", "link", "dangling", "none", "missing", "cwd"):
        directory = tmp_path / kind
        kinds[kind] = str(directory)
        if kind == "missing":
            continue
        directory.mkdir()
        target = directory / NAME
        if kind in ("exec", "cwd"):
            executable(target)
        elif kind == "plain":
            target.write_text("not executable\n")
        elif kind == "dir":
            target.mkdir()
        elif kind == "link":
            executable(directory / "real")
            target.symlink_to(directory / "real")
        elif kind == "dangling":
            target.symlink_to(directory / "gone")
    monkeypatch.chdir(kinds["cwd"])  # where an empty or relative entry finds a `tool`
    kinds["relative"] = "."
    kinds["relative-missing"] = "no-such-dir"
    kinds["empty"] = ""
    return kinds


def test_contract_a_path_with_a_directory_part_is_checked_where_it_points(
    places: dict[str, str],
) -> None:
    """Unchanged: a name with a ``/`` is that file, if it is one and executable."""
    assert resolve_executable(f"{places['exec']}/{NAME}", {}) == f"{places['exec']}/{NAME}"
    assert resolve_executable(f"./{NAME}", {"PATH": places["none"]}) == f"{places['cwd']}/./{NAME}"
    for kind in ("plain", "dir", "dangling", "missing"):
        assert resolve_executable(f"{places[kind]}/{NAME}", {}) is None, kind


def test_contract_a_relative_answer_is_anchored_where_it_was_found(
    places: dict[str, str],
) -> None:
    """Found through an empty or relative PATH entry (or named ``./tool``), the answer is
    the file found here, as an absolute path: the CLI is started in its session's own
    directory, where the relative name would be another file, or none."""
    here = os.path.join(places["cwd"], NAME)
    for path in (f"{os.pathsep}{places['exec']}", ".", f"no-such-dir{os.pathsep}."):
        answer = resolve_executable(NAME, {"PATH": path})
        assert answer is not None and os.path.isabs(answer), (path, answer)
        assert os.path.samefile(answer, here), (path, answer)
    answer = resolve_executable(f"./{NAME}", {"PATH": places["none"]})
    assert answer is not None and os.path.isabs(answer) and os.path.samefile(answer, here)


@pytest.mark.anyio
async def test_collaboration_a_cli_found_through_a_relative_entry_runs_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose CLI is found through an empty PATH entry (in this process's
    directory) and that runs in another directory runs that CLI, supervised or not
    (its relative name was executed in the session's directory: not found)."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    cli = here / "relcli"
    cli.write_text(f"#!{sys.executable}\nimport os\nprint('ran in', os.getcwd())\n")
    cli.chmod(0o755)
    monkeypatch.chdir(here)
    monkeypatch.setenv("PATH", f"{os.pathsep}{os.environ['PATH']}")
    invocation = Invocation(argv=("relcli",), stdin=None, cwd=there)
    async with open_supervisors() as supervisors:
        for pool in (supervisors, None):
            done = await run_process(invocation, deadline=30, grace=0.5, supervisors=pool)
            assert done.returncode == 0, done
            assert done.stdout.decode() == f"ran in {there}\n"
