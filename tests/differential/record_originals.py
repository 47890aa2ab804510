"""Record the original Node ``review-loop``'s real outputs as golden files (run by hand).

    python -m tests.differential.record_originals /path/to/review-loop.mjs

The original is ``skills/agentic-review-handoff/scripts/review-loop.mjs`` of
Adonis0123/adonis-skills at e2acfae790e9 (``git archive e2acfae790e9
skills/agentic-review-handoff/scripts``), run with ``node`` (20 was used). Each scenario of
:mod:`tests.differential.scenarios` runs in a fresh git repository with its own ``HOME``, the
fake reviewer CLIs (``tests/fakes``) first on ``PATH``. Exit codes and stdout documents are
written, normalised (paths, uuids, times, digests), to ``golden/rl/<scenario>.json``, plus
the session records the original wrote (``golden/rl/records/``). CI never runs this: the
tests compare review-loop against the files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.differential import scenarios as sc
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

ORIGIN = (
    "Adonis0123/adonis-skills@e2acfae790e9 skills/agentic-review-handoff/scripts/review-loop.mjs"
)


def _record(script: Path, scenario: sc.Scenario, work: Path) -> dict[str, Any]:
    repo = committed_repo(work / "repo", sc.BASE_FILES)
    (repo / "app.py").write_text(sc.CHANGED)
    home = work / "home"
    home.mkdir()
    fakes = FakeCLIs(work / "fakes")
    fakes.script(**scenario.script)
    env = fakes.env({"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"})
    fix = work / "fix.md"
    fix.write_text(sc.FIX)
    question = work / "question.md"
    question.write_text("Ship it?\n")
    values = {"repo": str(repo), "packet": "", "fix": str(fix), "question": str(question)}
    paths = {
        str(repo): "<repo>",
        str(home): "<home>",
        str(fix): "<fix>",
        str(script.parent): "<scripts>",
    }
    steps = []
    for step in scenario.steps:
        argv = sc.expand(step.argv, values)
        done = subprocess.run(
            ["node", str(script), *argv],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        document = json.loads(done.stdout)
        if isinstance(document.get("packetPath"), str):
            values["packet"] = document["packetPath"]
        steps.append(
            {
                "argv": list(step.argv),
                "exit": done.returncode,
                "stdout": sc.normalise(document, paths),
            }
        )
    records = sc.normalise(
        {
            str(path.relative_to(repo)): json.loads(path.read_text())
            for path in sorted(
                (repo / ".review-handoff" / "runtime").glob("*/*/reviewer-session.json")
            )
        },
        paths,
    )
    return {"original": ORIGIN, "node": _node_version(), "steps": steps, "records": records}


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


def main(argv: list[str]) -> int:
    """Record every scenario against the original at ``argv[0]``."""
    script = Path(argv[0]).resolve()
    out = sc.GOLDEN / "rl"
    out.mkdir(parents=True, exist_ok=True)
    for scenario in sc.SCENARIOS:
        with tempfile.TemporaryDirectory() as work:
            recorded = _record(script, scenario, Path(work))
        path = out / f"{scenario.name}.json"
        path.write_text(json.dumps(recorded, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
        print(path, [step["exit"] for step in recorded["steps"]], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
