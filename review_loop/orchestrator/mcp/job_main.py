"""The entry of one job's process: ``review-loop ARGS``, ended when its server dies.

``python -m review_loop.orchestrator.mcp.job_main OWNER_PID`` reads ``{"command": C,
"argv": [...]}`` from its stdin (to its end; the server writes it and closes the pipe), then
runs exactly what ``review-loop C ARGV...`` runs (the same
:func:`~review_loop.orchestrator.cli.main`) with ``/dev/null`` as stdin. The arguments
never pass through a command line, so one of any size reaches the command. Its one other
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


def _arguments() -> list[str]:
    """The command and its arguments, read from stdin; stdin is ``/dev/null`` afterwards."""
    import json

    chunks = []
    while chunk := os.read(0, 1 << 20):
        chunks.append(chunk)
    document = json.loads(b"".join(chunks))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return [str(document["command"]), *(str(word) for word in document["argv"])]


def main() -> None:
    """Start the owner watcher, then run the command as the console script does."""
    owner = int(sys.argv[1])
    threading.Thread(target=_watch_owner, args=(owner,), daemon=True).start()
    arguments = _arguments()
    from review_loop.orchestrator.cli import main as cli_main

    sys.argv = ["review-loop", *arguments]
    cli_main()


if __name__ == "__main__":
    main()
