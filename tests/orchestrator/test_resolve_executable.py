"""Contract test: ``process.resolve_executable`` finds a bare name exactly as ``shutil.which``.

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
from pathlib import Path

import pytest

from review_loop.orchestrator.process import resolve_executable

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
            assert answer == shutil.which(name, path=path), (name, path)
            found.add(answer)
    assert len(found) > 5, found  # found in several places, and not found: the check is real
    assert resolve_executable(NAME, {}) == shutil.which(NAME, path=os.defpath)


def test_contract_a_path_with_a_directory_part_is_checked_where_it_points(
    places: dict[str, str],
) -> None:
    """Unchanged: a name with a ``/`` is that file, if it is one and executable."""
    assert resolve_executable(f"{places['exec']}/{NAME}", {}) == f"{places['exec']}/{NAME}"
    assert resolve_executable(f"./{NAME}", {"PATH": places["none"]}) == f"./{NAME}"
    for kind in ("plain", "dir", "dangling", "missing"):
        assert resolve_executable(f"{places[kind]}/{NAME}", {}) is None, kind
