"""``review-loop mcp``: serve the commands over the Model Context Protocol on stdio.

Stdout belongs to the protocol. Before the server starts, the protocol takes its own copy
of the stdout descriptor and descriptor 1 is pointed at stderr: nothing else (a stray
print, the command's closing document) can corrupt the protocol stream. The closing
document (``{"ok": true, "status": "stopped", "jobs": N}``) is therefore on stderr.

``TERM``, ``HUP`` and ``INT`` stop the server as they cancel a reviewer command
(:mod:`.stops`; ``mcp`` is one of the CLI's ``REVIEWER_COMMANDS``, whose entry installs the
handlers): every job is stopped with the CLI's own cancellation (its reviewers ended, their
records ``interrupted``) before the server exits 128 + the signal, its ``interrupted``
document on stderr. See ``docs/mcp.md``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop mcp   (an MCP server on stdio; register it with your host)"]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """No options: every tool names its repository."""
    del parser


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Serve until the client closes stdin or a signal stops the server."""
    import os
    import sys

    from review_loop.orchestrator.cli import stops

    del args
    sys.stdout.flush()
    protocol_out = os.dup(1)
    os.dup2(2, 1)  # from here on, anything written to stdout lands on stderr

    async def main(stop: stops.Stop) -> Mapping[str, Any]:
        del stop
        from review_loop.orchestrator.mcp.server import serve_stdio

        await serve_stdio(protocol_out)
        return {"ok": True, "status": "stopped", "reason": "the client closed stdin"}

    # The CLI entry installed the signal handlers (REVIEWER_COMMANDS) and turns a stop by a
    # signal into exit 128 + the signal, as for every command that runs reviewers.
    return stops.run_cancellable(main)
