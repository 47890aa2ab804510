"""Drive ``review-loop mcp`` through the official SDK's own stdio client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from tests.faults.harness import Scanner, wait_until


@asynccontextmanager
async def connected(env: dict[str, str], errlog: Path) -> AsyncIterator[ClientSession]:
    """A client session with ``python -m review_loop mcp`` started in ``env``."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "review_loop", "mcp"], env=env
    )
    with errlog.open("a") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def structured(result: CallToolResult) -> dict[str, Any]:
    """The tool's structured result (fails with the tool's text when it errored)."""
    assert not result.isError, result.content
    assert result.structuredContent is not None
    return dict(result.structuredContent)


def server_process(scanner: Scanner) -> psutil.Process:
    """The ``review-loop mcp`` process of this test (found by its tag and its command)."""

    def find() -> psutil.Process | None:
        for proc in scanner.tagged():
            line = " ".join(proc.cmdline())
            if line.endswith("-m review_loop mcp"):
                return proc
        return None

    found: psutil.Process = wait_until("the MCP server process", find)
    return found
