"""Process tests: the installs a Python user expects put ``review-loop`` on PATH with its data.

``pipx install <checkout>``, ``uv tool install <checkout>`` and both from a wheel built from
the checkout, each into a fresh tool home and bin directory under the test's temporary
directory (``PIPX_HOME``/``PIPX_BIN_DIR``, ``UV_TOOL_DIR``/``UV_TOOL_BIN_DIR``), with pipx and
uv from the dev extra. After each install, from an unrelated directory and with only the
bin directory added to PATH:

- ``review-loop`` is found in that bin directory, and ``--version`` prints the version;
- ``consult`` and ``run`` against the simulated reviewer work (they read the prompts that
  ship as package data);
- the installed package holds every data file the checkout's package tracks.

The checkout is copied first (its tracked and not-ignored files), so a build never writes
into the working tree. The installs reach the package index for the dependencies, as a
user's do; they take seconds to a minute each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import git_repo

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"
# Run by the installed interpreter: the package's files that are not Python source.
_DATA_FILES = (
    "import json, pathlib, review_loop; root = pathlib.Path(review_loop.__file__).parent; "
    "print(json.dumps(sorted(p.relative_to(root).as_posix() for p in root.rglob('*') "
    "if p.is_file() and p.suffix not in ('.py', '.pyc'))))"
)

pytestmark = pytest.mark.timeout(900)


def _tracked_data_files() -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "review_loop"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return sorted(name.removeprefix("review_loop/") for name in listed if not name.endswith(".py"))


def _copy_checkout(into: Path) -> Path:
    listed = (
        subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_symlink() or not source.is_file():  # .clis and the like: not the package
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return into


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=800)
    assert done.returncode == 0, (argv, done.stdout[-3000:], done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A copy of the checkout, and a wheel built from it (by uv, in its own copy)."""
    base = tmp_path_factory.mktemp("sources")
    checkout = _copy_checkout(base / "checkout")
    build_copy = _copy_checkout(base / "build-copy")
    dist = base / "dist"
    _run(
        [sys.executable, "-m", "uv", "build", "--wheel", "--out-dir", str(dist), str(build_copy)],
        dict(os.environ),
        base,
    )
    (wheel,) = dist.glob("review_loop-*.whl")
    return {"checkout": checkout, "wheel": wheel}


def _install(tool: str, source: Path, home: Path) -> tuple[Path, Path, dict[str, str]]:
    """Install ``source`` with ``tool`` into ``home``: the bin dir, the tool's python, env."""
    home.mkdir()
    env = dict(os.environ)
    bin_dir = home / "bin"
    if tool == "pipx":
        env.update(
            PIPX_HOME=str(home / "pipx"), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(home / "man")
        )
        argv = [sys.executable, "-m", "pipx", "install", "--python", sys.executable, str(source)]
        python = home / "pipx" / "venvs" / "review-loop" / "bin" / "python"
    else:
        env.update(UV_TOOL_DIR=str(home / "uv-tools"), UV_TOOL_BIN_DIR=str(bin_dir))
        argv = [sys.executable, "-m", "uv", "tool", "install", "--python", sys.executable]
        argv.append(str(source))
        python = home / "uv-tools" / "review-loop" / "bin" / "python"
    _run(argv, env, home)
    return bin_dir, python, env


@pytest.mark.parametrize("source", ["checkout", "wheel"])
@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_process_a_tool_install_puts_review_loop_on_path_with_its_data(
    tool: str, source: str, sources: dict[str, Path], tmp_path: Path
) -> None:
    bin_dir, python, env = _install(tool, sources[source], tmp_path / "home")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Only the tool's bin directory and the system's: not this checkout's .venv.
    system = [p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(ROOT))]
    env["PATH"] = os.pathsep.join([str(bin_dir), *system])
    found = shutil.which("review-loop", path=env["PATH"])
    assert found == str(bin_dir / "review-loop")
    version = _run(["review-loop", "--version"], env, elsewhere)
    assert version.stdout.strip() == f"review-loop {VERSION}"

    repo = git_repo(tmp_path / "repo")
    (repo / "README").write_text("changed\n")
    asked = _run(
        ["review-loop", "consult", "--repo", str(repo), "--peer", "simulated", "--question", "?"],
        env,
        elsewhere,
    )
    assert json.loads(asked.stdout)["ok"] is True
    ran = _run(
        ["review-loop", "run", "--repo", str(repo), "--reviewer", "simulated"], env, elsewhere
    )
    assert json.loads(ran.stdout)["status"] == "archived"

    shipped = json.loads(_run([str(python), "-c", _DATA_FILES], env, elsewhere).stdout)
    assert set(_tracked_data_files()) <= set(shipped)
