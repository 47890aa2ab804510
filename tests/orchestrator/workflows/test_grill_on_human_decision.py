"""Process tests: a user-owned decision makes ``grill-with-docs`` required (T7).

Seed 004, Capability Preflight: "Only when the user explicitly requires grill-with-docs, or
preflight finds product/domain decisions still owned by the user, require and invoke
grill-with-docs". A ``HUMAN_DECISION`` item in the run's ledger is such a decision: the
preflight (and converge standing in for it) then requires the skill. Real ``review-loop``
processes against fake reviewer CLIs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_skills import SEED, home, install_skills, preflight, repo

__all__ = ["home", "repo"]


def ledger_set(repo: Path, fakes: FakeCLIs, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "review_loop", "ledger", "set", "--repo", str(repo), *args],
        check=True,
        capture_output=True,
        env=fakes.env(path_only=True),
        timeout=120,
    )


def test_a_human_decision_in_the_ledger_requires_grill_with_docs(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    install_skills(home / ".claude" / "skills", SEED)
    code, doc, _ = preflight(repo, home, fakes, "--host", "claude", "--run", "t7")
    assert code == 0 and doc["status"] == "ready", doc  # not required yet
    ledger_set(repo, fakes, "--run", "t7", "--id", "D1", "--status", "HUMAN_DECISION",
               "--title", "raise or clamp a negative quantity")  # fmt: skip
    code, doc, _ = preflight(repo, home, fakes, "--host", "claude", "--run", "t7")
    assert code == 2 and doc["status"] == "MISSING_DEPENDENCIES", doc
    assert [m.split(":")[0] for m in doc["missing"]] == ["skill grill-with-docs"]
    install_skills(home / ".claude" / "skills", ["grill-with-docs"])
    code, doc, _ = preflight(repo, home, fakes, "--host", "claude", "--run", "t7")
    assert code == 0 and "grill-with-docs" in [s["name"] for s in doc["skills"]]
