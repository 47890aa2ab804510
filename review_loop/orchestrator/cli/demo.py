"""``review-loop demo``: the offline review round trip, in a throw-away repository.

What a person who just installed review-loop (``pipx install .``) can run to see it work
with no API key and no reviewer CLI: a repository with one commit and one change is made in
a new temporary directory, and the real command line (``python -m review_loop``, this
installation's) runs each step against the simulated reviewer (review-loop's own offline
stand-in), with its answers scripted by ``REVIEW_LOOP_SIMULATED_REPLIES``:

1. ``consult`` a question;
2. ``run`` — round 1 is BLOCKED on F1;
3. the fix is made and recorded with ``fix-completion``;
4. ``run --continue`` — the re-review resolves F1 and leaves a non-blocking concern, F2
   (PASS_WITH_CONCERNS);
5. ``close --reason accept-concerns``;
6. ``verify-diff`` judges the fix;
7. ``sessions`` lists the resumable handles.

Contract: progress for a person on stderr (each command as typed, its own progress lines,
and what came of it); ONE JSON document on stdout, holding each step's own document. Exit
0 when every step gave what the loop promises (``ok: true``), 2 when one did not (``ok:
false``, ``failedStep``), 128 + N when signal N stopped it. The state of every step lives in
the temporary directory (``REVIEW_LOOP_HOME`` points there), so nothing of the user's is
read or written, and the directory is removed on every exit — success, failure, crash,
SIGINT, SIGTERM, SIGHUP — unless ``--keep`` asks to keep it. After a SIGKILL, which no
process can clean up after, the next review-loop that opens a dispatcher removes it: the
directory is named for the demo's pid and start time (``isolation.scratch_prefix``), as
a reviewer's scratch copy is. A signal ends the running step
first (TERM, then KILL after ``demo_loop.STEP_GRACE_S``), so no step writes into the
directory while it is removed.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from review_loop.orchestrator.cli.stops import Stop

USAGE = ["review-loop demo [--keep]"]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """``--keep``: keep the throw-away directory (its path is printed) to try the resume
    commands afterwards."""
    parser.add_argument("--keep", action="store_true")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Run the demo (see the module docstring); the directory goes unless ``--keep``."""
    from review_loop.orchestrator import explain
    from review_loop.orchestrator.cli import demo_loop
    from review_loop.orchestrator.cli.stops import run_cancellable
    from review_loop.orchestrator.sandbox.isolation import DEMO_PREFIX, scratch_prefix

    # The steps write their own lines to this terminal: no live table is drawn over them.
    explain.set_progress_sink(None)
    demo: Path | None = None
    try:
        demo = Path(tempfile.mkdtemp(prefix=scratch_prefix(DEMO_PREFIX))).resolve()

        async def body(stop: Stop) -> Mapping[str, Any]:
            return await demo_loop.run_demo(demo, keep=args.keep, stop=stop)

        return run_cancellable(body)
    finally:
        if demo is not None and not args.keep:
            shutil.rmtree(demo, ignore_errors=True)
        elif demo is not None:
            demo_loop.say(f"demo: kept {demo} (remove it with: rm -rf {shlex.quote(str(demo))})")
