"""The entry of one job's process: ``review-loop ARGS``, ended when its server dies.

``python -m review_loop.orchestrator.mcp.job_main OWNER_PID ARGS...`` runs exactly what
``review-loop ARGS`` runs (the same :func:`~review_loop.orchestrator.cli.main`). Its one
addition: a watcher thread that sends this process ``SIGTERM`` as soon as its parent is no
longer ``OWNER_PID`` (the server was killed, even with ``kill -9``). For a command that runs
reviewers ``SIGTERM`` is cancellation (``docs/process-ownership.md``): every reviewer is
ended, every record finished as ``interrupted``. So no job outlives its server by more than
one poll and one cleanup.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

OWNER_POLL_S = 0.25


def _watch_owner(owner: int) -> None:
    while os.getppid() == owner:
        time.sleep(OWNER_POLL_S)
    # Nobody reads our stdout and stderr any more: a write there would raise
    # BrokenPipeError in the middle of the cleanup. They go to /dev/null instead.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> None:
    """Start the owner watcher, then run the command as the console script does."""
    owner = int(sys.argv[1])
    threading.Thread(target=_watch_owner, args=(owner,), daemon=True).start()
    from review_loop.orchestrator.cli import main as cli_main

    sys.argv = ["review-loop", *sys.argv[2:]]
    cli_main()


if __name__ == "__main__":
    main()
