"""Process and contract tests: a root of the reviewer's own holds its root files.

- process: the wrapper's ``--root-file`` run for real, as this user and (when this user is
  root) as ``nobody`` in a user namespace, on a file whose directories a user owns and
  others may write (a clone under ``/tmp``, a user's own install): in the CLI's namespace
  the copy passes gemini 0.61's own rule for a system file (the file and every directory
  above it owned by uid 0, writable by neither group nor others), where the file itself
  does not; every other path is as it was (covers included) and the new root takes no
  write;
- contract: :func:`~review_loop.orchestrator.sandbox.reviewer.protect` passes each of
  ``Invocation.root_files`` to the wrapper and points its variable at the copy.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from review_loop.adapters import get_adapter
from review_loop.agents.models import Invocation
from review_loop.orchestrator.sandbox import isolation, reviewer
from review_loop.orchestrator.sandbox.wrapper import ROOT_FILES_DIR, root_file_path
from tests.orchestrator.sandbox.as_nobody import NOBODY, nobody_launcher, wrapper_copy

# gemini's isFileAndDirectorySecureSync (bundle chunk-5FZXKDXH.js), for what it decides
_PROBE = r"""
import json, os, stat, sys
def secure(path):
    chain = [path]
    while chain[-1] != "/":
        chain.append(os.path.dirname(chain[-1]))
    for each in reversed(chain):  # from / down, as the first failing one is named
        info = os.stat(each)
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{each} is not root-only"
    return "secure"
placed, source, hidden, top = sys.argv[1:5]
try:
    open("/written-by-the-cli", "w").close()
    root_write = "ok"
except OSError as error:
    root_write = error.strerror
print(json.dumps({
    "placed": secure(placed), "source": secure(os.path.realpath(source)),
    "content": open(placed).read(), "hidden": os.listdir(hidden),
    "top": sorted(os.listdir(top)), "root": sorted(os.listdir("/")),
    "cwd": os.getcwd(), "root_write": root_write,
}))
"""


@pytest.fixture
def world() -> Iterator[Path]:
    """A tree outside pytest's (0700) temp root, traversable by anyone, writable by
    others as ``/tmp`` is (the install gemini skips)."""
    root = Path(tempfile.mkdtemp(prefix="review-loop-root-files-test-"))
    root.chmod(0o1777)
    (root / "install").mkdir(mode=0o777)
    (root / "install").chmod(0o777)
    (root / "install" / "defaults.json").write_text('{"general": {"maxAttempts": 2}}')
    (root / "install" / "defaults.json").chmod(0o644)
    (root / "secret").mkdir(mode=0o755)
    (root / "secret" / "key").write_text("not for the CLI")
    yield root
    shutil.rmtree(root)


def _run(prefix: list[str], python: str, wrapper: Path, world: Path) -> dict[str, Any]:
    source = world / "install" / "defaults.json"
    argv = [
        *prefix, python, "-I", "-S", str(wrapper),
        "--hide", str(world / "secret"), "--root-file", str(source), "--",
        python, "-I", "-c", _PROBE, root_file_path(str(source)), str(source),
        str(world / "secret"), str(world),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=world)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _expected(world: Path) -> dict[str, Any]:
    return {
        "placed": "secure",
        "content": '{"general": {"maxAttempts": 2}}',
        "hidden": [],  # the cover came along into the new root
        "top": sorted(os.listdir(world)),
        "root": sorted([*os.listdir("/"), ROOT_FILES_DIR.lstrip("/")]),
        "cwd": str(world),
        "root_write": "Read-only file system",
    }


def _unshare_prefix() -> list[str]:
    wrapper = [sys.executable, "-I", "-S", str(isolation.WRAPPER), "--"]
    return list(reviewer.wrapped_argv([], [])[: -len(wrapper)])


def test_a_root_file_passes_gemini_s_rule_in_the_namespace_process(world: Path) -> None:
    source = str(world / "install" / "defaults.json")
    results = _run(_unshare_prefix(), sys.executable, isolation.WRAPPER, world)

    # gemini skips the file itself: the world (as /tmp) is writable by others
    assert results.pop("source").endswith(" is not root-only")
    assert results == _expected(world)
    assert not Path("/written-by-the-cli").exists()
    assert Path(source).read_text() == '{"general": {"maxAttempts": 2}}'


def test_a_root_file_passes_without_root_in_a_user_namespace_process(world: Path) -> None:
    prefix, python = nobody_launcher()
    wrapper = wrapper_copy(world)
    source = world / "install" / "defaults.json"
    os.chown(source.parent, NOBODY, NOBODY)  # the user's own install
    os.chown(source, NOBODY, NOBODY)

    results = _run(prefix, python, wrapper, world)

    # nobody's own install under a directory others may write (as /tmp): skipped
    assert results.pop("source").endswith(" is not root-only")
    assert results == _expected(world)
    assert stat.S_IMODE(os.stat(source).st_mode) == 0o644  # the install itself untouched


@pytest.mark.anyio
async def test_protect_places_each_root_file_and_points_its_variable_at_it_contract(
    tmp_path: Path,
) -> None:
    adapter = get_adapter("gemini")
    invocation = Invocation(
        argv=("/bin/true",),
        env={"KEEP": "1", "DEFAULTS": "/install/defaults.json"},
        cwd=tmp_path,
        root_files=(("DEFAULTS", "/install/defaults.json"),),
    )
    protected = await reviewer.protect(invocation, adapter, repo=tmp_path, allow_unprotected=False)

    assert isinstance(protected, Invocation), protected
    argv = list(protected.argv)
    assert argv[argv.index("--root-file") + 1] == "/install/defaults.json"
    assert argv.index("--root-file") < argv.index("--")
    assert protected.env == {"KEEP": "1", "DEFAULTS": f"{ROOT_FILES_DIR}/defaults.json"}
