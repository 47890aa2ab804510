"""Contract test: ``process.resolve_executable`` finds a bare name exactly as ``shutil.which``
(a relative answer made absolute where it was found).

Every session resolves its CLI's name on the PATH its environment gives, now without
importing ``shutil`` (it loads bz2, lzma and zlib: about 1.4 ms of every consult), by
``which``'s own rules and checks. Here both answer for
thousands of PATHs built from directories holding the name as an executable, a file that
is not executable, a directory, a symlink to an executable, a dangling symlink, and a
directory that does not exist, in every order, repeated, and with relative and empty
entries, while the working directory holds an executable of that name.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
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


def anchored(found: str | None) -> str | None:
    """``which``'s answer, made absolute against the working directory if relative."""
    return found if found is None or os.path.isabs(found) else os.path.join(os.getcwd(), found)


def test_contract_a_bare_name_is_found_as_shutil_which_finds_it(places: dict[str, str]) -> None:
    entries = list(places.values())
    paths = {"", ":", os.defpath}
    for size in (1, 2, 3):
        for chosen in itertools.permutations(entries, size):
            paths.add(os.pathsep.join(chosen))
    chance = random.Random(14)
    for _ in range(3000):
        paths.add(os.pathsep.join(chance.choices(entries, k=chance.randint(1, 7))))
    found = set()
    for path in sorted(paths):
        for name in (NAME, "real", "absent", ""):
            answer = resolve_executable(name, {"PATH": path})
            assert answer == anchored(shutil.which(name, path=path)), (name, path)
            found.add(answer)
    assert len(found) > 5, found  # found in several places, and not found: the check is real
    assert resolve_executable(NAME, {}) == shutil.which(NAME, path=os.defpath)


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
