"""Jobs: ``review-loop`` commands run by the MCP server as child processes it owns.

A job is one ``review-loop <command> ...`` process (:mod:`.job_main`), started in its own
session so that only the server decides when it stops. The server keeps, per job, the
command's stderr lines (its progress, relayed as MCP progress notifications) and, once it
exited, its one JSON document and exit code. A job belongs to the server, not to the tool
call that started it: a client whose tool call times out (and cancels it) finds the job
still running on its next ``job_wait``.

Stopping a job is the CLI's own cancellation: ``SIGTERM`` to its process, which ends every
reviewer (TERM, grace, KILL), finishes their records as ``interrupted`` and prints the
``interrupted`` document (``docs/process-ownership.md``). The server waits for that, bounded by
:data:`STOP_BOUND_S`; a job still alive after it is killed with its whole group. When the
server stops (signal, client gone) every job is stopped this way before it exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

PROGRESS_KEPT = 200
"""How many of a job's latest stderr lines are kept (and returned by ``job_wait``)."""
STOP_BOUND_S = 60.0
"""How long a stopped job may take to end its reviewers before its group is killed.

The CLI's own cleanup is bounded by the reviewers' ``graceMs`` (default 5 s); this bound
only catches a job that hangs."""
PIPE_GRACE_S = 5.0
DOCUMENT_CAP = 64 * 1024 * 1024


@dataclass
class Job:
    """One command run by the server.

    Attributes:
        id: the job's id (random; what ``job_wait`` and ``job_cancel`` take).
        command: the ``review-loop`` command (``consult``, ``run``, ...).
        argv: the command's arguments after its name.
        progress: the latest stderr lines of the command, oldest first.
        lines: how many stderr lines arrived in all (the progress counter).
        exit_code: the command's exit code once it exited, else ``None``.
        document: the command's JSON document once it exited.
        cancelled: whether the job was stopped by ``job_cancel`` or the server's stop.
    """

    id: str
    command: str
    argv: tuple[str, ...]
    progress: deque[str] = field(default_factory=lambda: deque(maxlen=PROGRESS_KEPT))
    lines: int = 0
    exit_code: int | None = None
    document: dict[str, Any] | None = None
    cancelled: bool = False
    pid: int | None = None
    _changed: anyio.Event = field(default_factory=anyio.Event)
    _done: anyio.Event = field(default_factory=anyio.Event)
    _stop: anyio.Event = field(default_factory=anyio.Event)

    @property
    def finished(self) -> bool:
        """Whether the command has exited and its document is in."""
        return self._done.is_set()

    async def changed(self, timeout: float) -> None:
        """Return when a progress line arrives or the job finishes, or after ``timeout``."""
        with anyio.move_on_after(timeout):
            await self._changed.wait()

    async def done(self) -> None:
        """Return once the job has finished."""
        await self._done.wait()

    def request_stop(self) -> None:
        """Ask the job to stop (the runner sends ``SIGTERM`` and waits)."""
        self.cancelled = True
        self._stop.set()

    def _notify(self) -> None:
        event, self._changed = self._changed, anyio.Event()
        event.set()


class JobTable:
    """The server's jobs, run in the task group given to :meth:`serve`."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self._group: anyio.abc.TaskGroup | None = None

    async def serve(self, group: anyio.abc.TaskGroup) -> None:
        """Use ``group`` for the jobs (cancelling it stops every job)."""
        self._group = group

    def start(self, command: str, argv: Sequence[str], cwd: Path) -> Job:
        """Start ``review-loop COMMAND ARGV`` in ``cwd`` as a new job."""
        if self._group is None:
            raise RuntimeError("the job table is not serving")
        job = Job(id=uuid.uuid4().hex, command=command, argv=tuple(argv))
        self.jobs[job.id] = job
        self._group.start_soon(_run_job, job, cwd)
        return job

    def get(self, job_id: str) -> Job | None:
        """The job of that id, if this server started it."""
        return self.jobs.get(job_id)


async def _run_job(job: Job, cwd: Path) -> None:
    """Run the job's process to its end; on cancellation or stop, the CLI's own stop.

    The command and its arguments go to the job on its stdin (:mod:`.job_main`), never on
    its command line: an argument of any size passes (``execve`` caps one at 128 KiB).
    """
    args = [sys.executable, "-m", "review_loop.orchestrator.mcp.job_main", str(os.getpid())]
    try:
        process = await anyio.open_process(
            args,
            cwd=cwd,
            stdin=subprocess.PIPE,  # the arguments, then end of file
            start_new_session=True,  # only the server stops it: no terminal or group signal
        )
    except (OSError, ValueError) as error:  # ValueError: a NUL in cwd, never a crash
        _finish(job, 1, {"ok": False, "error": f"the job could not start: {error}"})
        return
    job.pid = process.pid
    out = bytearray()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_stop_on_request, process, job)
            group.start_soon(_send_arguments, process, job)
            async with anyio.create_task_group() as readers:
                readers.start_soon(_read_stdout, process, out)
                readers.start_soon(_read_stderr, process, job)
                await process.wait()
                # A stray descendant holding a pipe must not hold the job open.
                readers.cancel_scope.deadline = anyio.current_time() + PIPE_GRACE_S
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:  # the server is stopping: the CLI's own stop
                job.cancelled = True
                await _stop(process)
            _finish(job, process.returncode, _document(bytes(out)))


async def _send_arguments(process: anyio.abc.Process, job: Job) -> None:
    """The job's command and arguments as one JSON document on its stdin, then its end.

    A job that exits before reading them all (it was stopped) closes the pipe: not an error
    of the server's.
    """
    assert process.stdin is not None
    payload = json.dumps({"command": job.command, "argv": list(job.argv)}).encode()
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async with process.stdin:
            await process.stdin.send(payload)


async def _read_stdout(process: anyio.abc.Process, out: bytearray) -> None:
    assert process.stdout is not None
    async for chunk in process.stdout:
        if len(out) < DOCUMENT_CAP:
            out.extend(chunk)


async def _read_stderr(process: anyio.abc.Process, job: Job) -> None:
    assert process.stderr is not None
    pending = b""
    async for chunk in process.stderr:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                job.progress.append(text)
                job.lines += 1
                job._notify()


async def _stop_on_request(process: anyio.abc.Process, job: Job) -> None:
    await job._stop.wait()
    with anyio.CancelScope(shield=True):
        await _stop(process)


async def _stop(process: anyio.abc.Process) -> None:
    """SIGTERM (the CLI's cancellation), wait up to :data:`STOP_BOUND_S`, then KILL the group."""
    with suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    with anyio.move_on_after(STOP_BOUND_S):
        await process.wait()
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def _document(out: bytes) -> dict[str, Any] | None:
    text = out.decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return {"ok": False, "error": f"the command printed no JSON document: {text[:500]}"}
    return document if isinstance(document, dict) else {"ok": False, "error": text[:500]}


def _finish(job: Job, code: int | None, document: Mapping[str, Any] | None) -> None:
    job.exit_code = code
    if document is None:
        document = {
            "ok": False,
            "error": f"review-loop {job.command} exited with {code} and printed no document",
        }
    job.document = dict(document)
    job._done.set()
    job._notify()
