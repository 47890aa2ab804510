"""Process tests: ``review-loop shim spx --dir DIR`` puts an opt-in ``spx`` on PATH.

The launcher is a real executable run as a real process: the seed skills' literal command
line (``spx -C <root> verification run ...``) records a run through review-loop. The shim is
never written over a file and never shadows another ``spx`` on PATH unless asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.test_cli_verification import Repo, write


def review_loop(*argv: str, path: str) -> tuple[int, dict[str, object]]:
    env = {**os.environ, "PATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", *argv], env=env, capture_output=True, text=True
    )
    document: dict[str, object] = json.loads(done.stdout)
    return done.returncode, document


def fake_spx(folder: Path) -> Path:
    folder.mkdir()
    real = folder / "spx"
    real.write_text("#!/bin/sh\necho real spx\n")
    real.chmod(0o755)
    return real


def test_process_the_shim_runs_the_seed_command_line(tmp_path: Path) -> None:
    shims = tmp_path / "bin"
    shims.mkdir()
    system = os.environ["PATH"]
    code, doc = review_loop("shim", "spx", "--dir", str(shims), path=system)
    assert code == 0 and doc["status"] == "installed" and doc["onPath"] is False
    launcher = shims / "spx"
    assert doc["path"] == str(launcher) and os.access(launcher, os.X_OK)
    repo = Repo(tmp_path / "repo")
    source = write(tmp_path / "in.json", {"changed_paths": ["keep.py"]})
    done = subprocess.run(
        [
            "spx",
            *("-C", str(repo.root), "verification", "run", "start"),
            *("--verification-type", "audit", "--scope-type", "changeset", "--scope", repo.scope),
            *("--input", source),
        ],
        env={**os.environ, "PATH": f"{shims}{os.pathsep}{system}"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    started = json.loads(done.stdout)
    assert started["runToken"]


def test_process_the_shim_never_replaces_a_file(tmp_path: Path) -> None:
    real = fake_spx(tmp_path / "bin")
    code, doc = review_loop("shim", "spx", "--dir", str(real.parent), path=os.environ["PATH"])
    assert code == 1 and "already exists" in str(doc["error"])
    assert real.read_text() == "#!/bin/sh\necho real spx\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["spx"]  # no temp file left


def test_process_the_shim_never_shadows_another_spx_unasked(tmp_path: Path) -> None:
    real = fake_spx(tmp_path / "real")
    shims = tmp_path / "bin"
    shims.mkdir()
    path = os.pathsep.join([str(shims), str(real.parent), os.environ["PATH"]])
    code, doc = review_loop("shim", "spx", "--dir", str(shims), path=path)
    assert code == 1 and "would shadow" in str(doc["error"]) and str(real) in str(doc["error"])
    assert list(shims.iterdir()) == []
    code, doc = review_loop("shim", "spx", "--dir", str(shims), "--allow-shadow", path=path)
    assert code == 0 and doc["otherSpx"] == [str(real)] and doc["onPath"] is True


def test_process_a_shim_after_the_real_spx_is_allowed(tmp_path: Path) -> None:
    real = fake_spx(tmp_path / "real")
    shims = tmp_path / "bin"
    shims.mkdir()
    path = os.pathsep.join([str(real.parent), str(shims), os.environ["PATH"]])
    code, doc = review_loop("shim", "spx", "--dir", str(shims), path=path)
    assert code == 0 and doc["otherSpx"] == [str(real)]


def test_contract_only_spx_and_an_existing_directory(tmp_path: Path) -> None:
    code, doc = review_loop("shim", "git", "--dir", str(tmp_path), path=os.environ["PATH"])
    assert code == 1 and "'git' is not a shim" in str(doc["error"])
    code, doc = review_loop("shim", "spx", "--dir", str(tmp_path / "no"), path=os.environ["PATH"])
    assert code == 1 and "is not a directory" in str(doc["error"])
    assert list(tmp_path.iterdir()) == []
