"""The review run through a real reviewer CLI (codex from npm) against the fake model API.

`review-loop run` → BLOCKED, `fix-completion`, `run --continue` → PASS and archived, as a
person would type it. The second round must resume the first round's codex session: the
model sees round 1's prompt again in round 2's request.

Part of the e2e tier (marker ``e2e``; ``REVIEW_LOOP_SKIP_E2E=1`` skips it); the real CLIs
come from ``scripts/install-clis``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import GIT_ENV, SKIP_ENV, cli_bin, cli_home, git_repo, model_api
from tests.e2e.helpers import Ran, run
from tests.fakes.model_api import FakeModelAPI, cli_env

__all__ = ["cli_bin", "cli_home", "git_repo", "model_api"]  # fixtures used below

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1"),
]

HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
ROUND_1 = (
    f"## Findings\n\n{HEADER}\n"
    "| F1 | [阻塞] | greeting lost | README.md:3 removed the greeting | README.md | "
    "restore it | README.md says hello |\n\nVerdict: BLOCKED"
)
ROUND_2 = (
    "## Prior Findings Reassessment\n\n| ID | 状态 | 复核证据 |\n|---|---|---|\n"
    "| F1 | resolved | README.md:3 says hello again |\n\n## New Findings\n\nNone\n\n"
    "## Regression Surface\n\nOnly README.md changed.\n\nVerdict: PASS"
)
FIX = """# Fix Completion

## Fix Conclusion
Restored the greeting.
## Original Findings Snapshot
F1 [阻塞] greeting lost
## Finding Status
F1 fixed
## Verification
grep hello README.md
## Re-review Instructions
Check README.md line 3.
"""


def review_loop(env: dict[str, str], repo: Path, *args: str) -> Ran:
    argv = [sys.executable, "-m", "review_loop", *args, "--repo", str(repo)]
    return run(argv, env=env, cwd=repo, timeout=180)


def test_review_round_trip_through_real_codex(
    cli_bin: object, model_api: FakeModelAPI, cli_home: Path, git_repo: Path, tmp_path: Path
) -> None:
    codex = cli_bin("codex")  # type: ignore[operator]
    env = cli_env("codex", model_api, cli_home)
    env["PATH"] = f"{Path(codex).parent}{os.pathsep}{env['PATH']}"
    env["REVIEW_LOOP_HOME"] = str(tmp_path / "state")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
    env.update(GIT_ENV)
    readme = git_repo / "README.md"
    readme.write_text("# demo\n\nbye\n")
    model_api.script(ROUND_1, ROUND_2)

    first = review_loop(env, git_repo, "run", "--reviewer", "codex")
    doc = first.json()
    assert first.returncode == 0, first.describe()
    assert doc["status"] == "blocked" and doc["openBlocking"] == ["F1"], doc
    session = doc["sessionId"]
    assert session

    readme.write_text("# demo\n\nhello from the e2e repo\n")
    body = tmp_path / "fix.md"
    body.write_text(FIX)
    fixed = review_loop(
        env, git_repo, "fix-completion", "--packet", doc["packetPath"], "--body-file", str(body)
    )
    assert fixed.returncode == 0, fixed.describe()

    second = review_loop(env, git_repo, "run", "--continue")
    out = second.json()
    assert second.returncode == 0, second.describe()
    assert out["status"] == "archived" and out["verdict"] == "PASS" and out["round"] == 2, out
    assert out["sessionId"] == session
    assert Path(out["packetPath"]).is_file()

    turns = model_api.turns()
    assert len(turns) == 2
    assert "round 1, first review" in turns[0].all_text
    # resumed: the second request carries the first round's prompt and answer
    assert "round 1, first review" in turns[1].all_text
    assert "round 2, re-review" in turns[1].all_text
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=git_repo, capture_output=True, text=True, check=True
    ).stdout
    assert ".review-handoff" not in status  # excluded via $GIT_COMMON_DIR/info/exclude
