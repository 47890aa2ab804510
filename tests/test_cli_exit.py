"""Process test: a command's process ends without a last garbage collection over everything.

``cli.main`` freezes the objects the process built before it exits (``gc.freeze``), so the
interpreter's final collections do not walk every module's objects (docs/startup.md). The
exit still runs atexit handlers and the whole document still reaches stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.gitrepo import committed_repo

# As ``python -m review_loop`` does; at exit, says how many objects were frozen.
HARNESS = """
import atexit, gc, sys
from review_loop.orchestrator.cli import main
atexit.register(lambda: sys.stderr.write(f"frozen={gc.get_freeze_count()}"))
sys.argv = ["review-loop", *sys.argv[1:]]
main()
"""


def test_process_a_command_exits_frozen_with_its_whole_document(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, "sessions", "--repo", str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["ok"] is True  # flushed whole
    frozen = int(done.stderr.rsplit("frozen=", 1)[1])
    assert frozen > 10_000  # the modules' objects, frozen before the exit
