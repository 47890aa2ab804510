"""The MCP server: one tool per ``review-loop`` command, each run as a job (:mod:`.jobs`).

Tools that run reviewers (``consult``, ``run``, ``preflight``, ``converge``) start a job and
wait for it up to ``wait_seconds`` (bounded); a job still running is then polled with
``job_wait`` (again bounded per call) or stopped with ``job_cancel``. The other tools
(``sessions``, ``evidence``, ``fix_completion``, ``close``) run their command to its end.
Every tool's arguments become the command's flags, and the command checks them: a value the
CLI refuses is refused with the CLI's message, in the CLI's document.

The server's own rules, on top of the CLI's:

- ``repo`` is an absolute path to a directory (a relative one would mean the server's
  working directory, which the client does not choose); the job runs there.
- A file argument (``packet``, ``plan``, ``host_position``) resolves inside ``repo``: the
  server reads and writes nothing outside the repository it is asked about.
- It keeps no state on disk: jobs live in its memory, named by random ids, and die with it.
- Every call's arguments are checked before any is used (:mod:`.arguments`): an unknown
  argument, a NUL, a lone surrogate or an oversized string is a tool error naming it.
- A job's arguments reach it on its stdin, never on a command line (no size limit of
  ``execve`` applies, and nothing of them shows in ``ps``).
- Each tool carries MCP annotations (:data:`ANNOTATIONS`) saying what it changes.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from review_loop.agents.errors import InputError
from review_loop.orchestrator.mcp.arguments import check_arguments
from review_loop.orchestrator.mcp.jobs import Job, JobTable
from review_loop.orchestrator.mcp.models import CommandDocument, JobList, JobState, job_state

Ctx = Context[Any, Any, Any]
MAX_WAIT_S = 120.0
"""The longest one tool call waits for a job (hosts time tool calls out; a job does not)."""

Repo = Annotated[str, Field(description="absolute path of the git repository to work on")]
Wait = Annotated[
    float,
    Field(
        ge=0,
        le=MAX_WAIT_S,
        description="seconds to wait for the job before returning its state (it keeps running)",
    ),
]
Peers = Annotated[list[str], Field(description="reviewer peers (products or prefs aliases)")]
Seconds = Annotated[float | None, Field(gt=0, description="the reviewers' deadline in seconds")]


def repo_dir(repo: str) -> Path:
    """``repo`` as an absolute directory, or the refusal naming the field."""
    path = Path(repo)
    if not path.is_absolute():
        raise InputError("repo", f"{repo!r} is a relative path", "an absolute path")
    if not path.is_dir():
        raise InputError("repo", f"{repo} is not a directory", "a git repository's directory")
    return path


def inside(repo: Path, value: str, field: str) -> str:
    """``value``, unchanged, when it resolves inside ``repo`` (relative to it, or absolute).

    Unchanged: the job runs in ``repo``, so a relative path means the same to the command,
    and a packet id stays an id (the command's own message names it as given).
    """
    target = (repo / value).resolve()
    root = repo.resolve()
    if target != root and root not in target.parents:
        raise InputError(field, f"{value} is outside the repository {root}", "a path inside it")
    return value


def flags(**values: str | float | bool | list[str] | None) -> list[str]:
    """``--name=value`` for each given value (``=`` keeps a value that starts with ``-``)."""
    argv: list[str] = []
    for name, value in values.items():
        flag = "--" + name.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv += [f"{flag}={item}" for item in value]
        else:
            argv.append(f"{flag}={value}")
    return argv


def _hints(
    *, read_only: bool, destructive: bool = False, idempotent: bool, open_world: bool
) -> ToolAnnotations:
    return ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=destructive,
        idempotentHint=idempotent,
        openWorldHint=open_world,
    )


ANNOTATIONS: dict[str, ToolAnnotations] = {
    # Read-only: changes no file of the working tree, no git state, no packet. It writes
    # only its own session records (under .review-handoff/runtime/, excluded from git, as a
    # server writes an access log); its reviewers run read-only. Open world: they call their
    # model services. Not idempotent: each call asks again (a new session, new costs).
    "consult": _hints(read_only=True, idempotent=False, open_world=True),
    "job_wait": _hints(read_only=True, idempotent=True, open_world=False),
    # Stops a job: its reviewers are ended and what they had not answered is lost.
    "job_cancel": _hints(read_only=False, destructive=True, idempotent=True, open_world=False),
    "jobs": _hints(read_only=True, idempotent=True, open_world=False),
    "sessions": _hints(read_only=True, idempotent=True, open_world=False),
    "evidence": _hints(read_only=True, idempotent=True, open_world=False),
    # Writes a review packet and its rounds under .review-handoff/ (additive).
    "run": _hints(read_only=False, idempotent=False, open_world=True),
    "fix_completion": _hints(read_only=False, idempotent=False, open_world=False),
    # Changes a packet's state for good (closed with a decision): not additive.
    "close": _hints(read_only=False, destructive=True, idempotent=False, open_world=False),
    # Write their run's records (preflight may commit to git unless no_git_writes).
    "preflight": _hints(read_only=False, idempotent=False, open_world=True),
    "converge": _hints(read_only=False, idempotent=False, open_world=True),
}
"""Each tool's MCP annotations: what a host may assume about calling it."""


def server_version() -> str:
    """review-loop's version (the installed distribution's), which the server reports."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("review-loop")
    except PackageNotFoundError:  # a source tree never installed
        return "unknown (not installed)"


class CheckedServer(FastMCP):
    """FastMCP that checks every call's arguments (:mod:`.arguments`) before the SDK sees
    them: the SDK ignores unknown ones and takes any string."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's result, or a tool error naming the argument that was refused."""
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            try:
                check_arguments(tool.parameters, arguments if isinstance(arguments, dict) else {})
            except InputError as error:
                raise ToolError(str(error)) from None
        return await super().call_tool(name, arguments)


def build(table: JobTable) -> FastMCP:
    """The server with every tool, running its jobs in ``table``."""
    app = CheckedServer(
        "review-loop",
        log_level="WARNING",  # its stderr is the user's; one line per request is noise
        instructions=(
            "Independent AI reviewers for your work, read-only. consult/run/preflight/converge "
            "start a job and wait up to wait_seconds; poll a running job with job_wait, stop "
            "it with job_cancel. Every result is the review-loop CLI's JSON document."
        ),
    )
    tools = Tools(table)
    for tool in (
        tools.consult,
        tools.job_wait,
        tools.job_cancel,
        tools.jobs,
        tools.sessions,
        tools.evidence,
        tools.run,
        tools.fix_completion,
        tools.close,
        tools.preflight,
        tools.converge,
    ):
        app.tool(annotations=ANNOTATIONS[tool.__name__])(tool)
    app._mcp_server.version = server_version()
    return app


class Tools:
    """The tools, one method each, over the jobs of one server's ``table``.

    Every public method is a tool, registered by :func:`build` in the order clients list
    them. Methods rather than module-level functions because FastMCP sends a tool's
    docstring as written, indentation included, as its description.
    """

    def __init__(self, table: JobTable) -> None:
        self.table = table

    async def _started(
        self, command: str, repo: str, argv: list[str], wait: float, ctx: Ctx
    ) -> JobState:
        job = self.table.start(command, [f"--repo={repo}", *argv], Path(repo))
        return await follow(job, wait, ctx)

    async def _quick(self, command: str, repo: Path, argv: list[str]) -> CommandDocument:
        job = self.table.start(command, [f"--repo={repo}", *argv], repo)
        try:
            await job.done()
        finally:
            if not job.finished:  # the call was cancelled: the command stops too
                job.request_stop()
        assert job.document is not None
        return CommandDocument.model_validate(job.document)

    async def consult(
        self,
        repo: Repo,
        question: Annotated[str, Field(description="the question for the reviewers")],
        ctx: Ctx,
        peers: Peers | None = None,
        fallback: Annotated[list[str] | None, Field(description="fallback peers or auto")] = None,
        host: Annotated[str | None, Field(description="the host product asking")] = None,
        skip_host: Annotated[bool | None, Field(description="never ask the host")] = None,
        timeout_seconds: Seconds = None,
        resume: Annotated[str | None, Field(description="a session id to resume")] = None,
        wait_seconds: Wait = 5.0,
    ) -> JobState:
        """Ask one or more reviewers a question (``review-loop consult``), read-only.

        Starts a job and waits up to wait_seconds; poll it with job_wait.
        """
        path = _repo_or_error(repo)
        skip = None if skip_host is None else str(skip_host).lower()
        argv = flags(question=question, peer=peers, fallback=fallback, host=host)
        argv += flags(skip_host=skip, timeout=timeout_seconds, resume=resume)
        return await self._started("consult", str(path), argv, wait_seconds, ctx)

    async def job_wait(
        self,
        job_id: Annotated[str, Field(description="the jobId a tool returned")],
        ctx: Ctx,
        wait_seconds: Wait = 30.0,
    ) -> JobState:
        """Wait up to wait_seconds for a job; its state (and document once finished)."""
        return await follow(_job(self.table, job_id), wait_seconds, ctx)

    async def job_cancel(
        self,
        job_id: Annotated[str, Field(description="the jobId a tool returned")],
        ctx: Ctx,
    ) -> JobState:
        """Stop a job: every reviewer is ended and recorded ``interrupted``; its document."""
        job = _job(self.table, job_id)
        if not job.finished:
            job.request_stop()
            await job.done()
        return job_state(job)

    async def jobs(self) -> JobList:
        """Every job this server started, oldest first."""
        return JobList(jobs=[job_state(job, progress=0) for job in self.table.jobs.values()])

    async def sessions(
        self,
        repo: Repo,
        product: Annotated[str | None, Field(description="only this product's")] = None,
    ) -> CommandDocument:
        """The reviewers' sessions recorded for the repository (``review-loop sessions``)."""
        return await self._quick("sessions", _repo_or_error(repo), flags(product=product))

    async def evidence(
        self,
        repo: Repo,
        base: Annotated[str, Field(description="the commit the diff is taken from")] = "HEAD",
        paths: Annotated[list[str] | None, Field(description="only these paths")] = None,
    ) -> CommandDocument:
        """Attest the working tree's diff against base (``review-loop evidence``)."""
        argv = flags(base=base, paths=",".join(paths) if paths else None)
        return await self._quick("evidence", _repo_or_error(repo), argv)

    async def run(
        self,
        repo: Repo,
        ctx: Ctx,
        reviewer: Annotated[str | None, Field(description="the reviewer product")] = None,
        host: Annotated[str | None, Field(description="the host product")] = None,
        completion: Annotated[
            str | None,
            Field(
                description="review (the default: PASS_WITH_CONCERNS waits for the user) or pass"
            ),
        ] = None,
        base: Annotated[str | None, Field(description="the base ref")] = None,
        rounds: Annotated[str | None, Field(description="N or +N")] = None,
        continue_packet: Annotated[bool, Field(description="--continue: the open packet")] = False,
        scope: Annotated[str | None, Field(description="the scope slug")] = None,
        packet: Annotated[str | None, Field(description="a packet path in the repo")] = None,
        paths: Annotated[list[str] | None, Field(description="only these paths")] = None,
        intake: Annotated[bool, Field(description="intake review")] = False,
        timeout_seconds: Seconds = None,
        wait_seconds: Wait = 5.0,
    ) -> JobState:
        """Run the review loop (``review-loop run``) as a job; poll it with job_wait."""
        path = _repo_or_error(repo)
        argv = flags(reviewer=reviewer, host=host, completion=completion, base=base)
        argv += flags(rounds=rounds, scope=scope, paths=paths, timeout=timeout_seconds)
        argv += flags(packet=_inside_or_error(path, packet, "packet"))
        argv += ["--continue=true"] if continue_packet else []
        argv += ["--intake=true"] if intake else []
        return await self._started("run", str(path), argv, wait_seconds, ctx)

    async def fix_completion(
        self,
        repo: Repo,
        packet: Annotated[str, Field(description="the packet path (in the repo) or id")],
        body: Annotated[str, Field(description="the fix-completion body")],
    ) -> CommandDocument:
        """Append a fix completion to a packet (``review-loop fix-completion``)."""
        path = _repo_or_error(repo)
        argv = flags(packet=_inside_or_error(path, packet, "packet"), body=body)
        return await self._quick("fix-completion", path, argv)

    async def close(
        self,
        repo: Repo,
        packet: Annotated[str, Field(description="the packet path (in the repo) or id")],
        reason: Annotated[str, Field(description="accept-concerns")],
    ) -> CommandDocument:
        """Close a packet with a decision (``review-loop close``)."""
        path = _repo_or_error(repo)
        argv = flags(packet=_inside_or_error(path, packet, "packet"), reason=reason)
        return await self._quick("close", path, argv)

    async def preflight(
        self,
        repo: Repo,
        ctx: Ctx,
        host: Annotated[str | None, Field(description="the host product")] = None,
        peers: Peers | None = None,
        blind_reviewer: Annotated[str | None, Field(description="the blind reviewer")] = None,
        run_name: Annotated[str | None, Field(description="the run's name")] = None,
        timeout_seconds: Seconds = None,
        no_git_writes: Annotated[bool, Field(description="write nothing to git")] = False,
        require_skills: Annotated[list[str] | None, Field(description="skills needed")] = None,
        wait_seconds: Wait = 5.0,
    ) -> JobState:
        """Preflight a plan with blind and peer reviewers (``review-loop preflight``)."""
        path = _repo_or_error(repo)
        argv = flags(host=host, peer=peers, blind_reviewer=blind_reviewer, run=run_name)
        argv += flags(timeout=timeout_seconds, no_git_writes=no_git_writes)
        argv += flags(require_skill=require_skills)
        return await self._started("preflight", str(path), argv, wait_seconds, ctx)

    async def converge(
        self,
        repo: Repo,
        plan: Annotated[str, Field(description="the plan file (in the repo)")],
        ctx: Ctx,
        host_position: Annotated[str | None, Field(description="host position file")] = None,
        host: Annotated[str | None, Field(description="the host product")] = None,
        peers: Peers | None = None,
        fallback: Annotated[list[str] | None, Field(description="fallback peers or auto")] = None,
        run_name: Annotated[str | None, Field(description="the run's name")] = None,
        timeout_seconds: Seconds = None,
        require_skills: Annotated[list[str] | None, Field(description="skills needed")] = None,
        wait_seconds: Wait = 5.0,
    ) -> JobState:
        """Converge a plan with the peers (``review-loop converge``) as a job."""
        path = _repo_or_error(repo)
        argv = flags(plan=_inside_or_error(path, plan, "plan"), host=host, peer=peers)
        argv += flags(host_position=_inside_or_error(path, host_position, "host_position"))
        argv += flags(fallback=fallback, run=run_name, timeout=timeout_seconds)
        argv += flags(require_skill=require_skills)
        return await self._started("converge", str(path), argv, wait_seconds, ctx)


def _repo_or_error(repo: str) -> Path:
    try:
        return repo_dir(repo)
    except InputError as error:
        raise ToolError(str(error)) from None


def _inside_or_error(repo: Path, value: str | None, field: str) -> str | None:
    if value is None:
        return None
    try:
        return inside(repo, value, field)
    except InputError as error:
        raise ToolError(str(error)) from None


def _job(table: JobTable, job_id: str) -> Job:
    job = table.get(job_id)
    if job is None:
        raise ToolError(
            str(InputError("job_id", f"no job {job_id!r} on this server", "a jobId it returned"))
        )
    return job


async def follow(job: Job, wait: float, ctx: Ctx) -> JobState:
    """Wait up to ``wait`` seconds for ``job``, relaying each new stderr line as progress."""
    deadline = anyio.current_time() + min(wait, MAX_WAIT_S)
    sent = job.lines
    while not job.finished and anyio.current_time() < deadline:
        await job.changed(deadline - anyio.current_time())
        fresh = job.lines - sent
        for line in list(job.progress)[-fresh:] if fresh > 0 else []:
            sent += 1
            await ctx.report_progress(sent, None, line)
        sent = job.lines
    return job_state(job)


async def serve_stdio(protocol_out: int) -> None:
    """Serve on stdin and on the descriptor ``protocol_out`` until stdin closes.

    Then (or when cancelled: a signal, the CLI's stop) every job is stopped before this
    returns.
    """
    from io import TextIOWrapper

    from mcp.server.stdio import stdio_server

    from review_loop.orchestrator.std_streams import OutputLostError

    table = JobTable()
    app = build(table)
    server = app._mcp_server
    file = anyio.wrap_file(TextIOWrapper(os.fdopen(protocol_out, "wb"), encoding="utf-8"))
    async with anyio.create_task_group() as group:
        out: Any = ProtocolOut(file, group.cancel_scope)  # the SDK writes it as an AsyncFile
        await table.serve(group)
        lines: Any = StdinLines(0, out.send_line)  # the SDK iterates it as an AsyncFile
        async with stdio_server(stdin=lines, stdout=out) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()  # the client is gone: stop every job
    if out.failure is not None:
        raise OutputLostError(
            f"the MCP client's end of stdout failed ({out.failure}); every job was stopped"
        )


class ProtocolOut:
    """The protocol's output stream: a write that fails (the client's end of the pipe is
    gone, a full device) stops the server as a closed stdin does — every job stopped —
    instead of escaping the SDK's task group as an error of its own."""

    def __init__(self, file: Any, scope: anyio.CancelScope) -> None:
        self.file = file
        self.scope = scope
        self.failure: str | None = None
        self.lock = anyio.Lock()  # the SDK's writer and StdinLines' refusals: whole lines

    async def write(self, text: str) -> None:
        """Write ``text``, unless the stream already failed."""
        async with self.lock:
            await self._do(self.file.write, text)

    async def send_line(self, text: str) -> None:
        """Write ``text`` (a whole protocol line) and flush it."""
        await self.write(text)
        await self.flush()

    async def flush(self) -> None:
        """Flush, unless the stream already failed."""
        await self._do(self.file.flush)

    async def _do(self, call: Any, *args: Any) -> None:
        if self.failure is not None:
            return
        try:
            await call(*args)
        except (OSError, ValueError) as error:
            self.failure = getattr(error, "strerror", None) or str(error) or type(error).__name__
            self.scope.cancel()


class StdinLines:
    """The protocol's input lines, read from descriptor ``fd`` without blocking a thread.

    The SDK's own stdin reads lines in a worker thread, which a cancellation (a signal
    stopping the server) has to wait for until the client sends a line: the server would
    not exit. Here the wait is ``anyio.wait_readable``, which cancellation ends at once. A
    descriptor that cannot be polled (a regular file) is read in a thread abandoned on
    cancellation.
    """

    def __init__(self, fd: int, reply: Callable[[str], Awaitable[None]]) -> None:
        self.fd = fd
        self.reply = reply
        self.pending = b""
        self.eof = False

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._line()
            refusal = refusal_of(line)
            if refusal is None:
                return line
            await self.reply(refusal)  # answered here: the SDK would only log it

    async def _line(self) -> str:
        while b"\n" not in self.pending and not self.eof:
            chunk = await self._read()
            self.eof = not chunk
            self.pending += chunk
        if not self.pending:
            raise StopAsyncIteration
        line, sep, self.pending = self.pending.partition(b"\n")
        return (line + sep).decode("utf-8", "replace")

    async def _read(self) -> bytes:
        try:
            await anyio.wait_readable(self.fd)
        except OSError:  # not pollable (a regular file): a thread, abandoned if cancelled
            return await anyio.to_thread.run_sync(os.read, self.fd, 65536, abandon_on_cancel=True)
        return os.read(self.fd, 65536)


def refusal_of(line: str) -> str | None:
    """The JSON-RPC error answering ``line``, for a line the SDK cannot read; else ``None``.

    The SDK answers a message it cannot parse with no response at all (a log notification
    only), so a client waits for ever. Here: not JSON is ``-32700`` (parse error, id
    ``null``); a request with an id whose string holds a lone surrogate (a ``\\ud800``
    escape: valid JSON, not text) is ``-32602``, naming where; any other request with an
    id that is not a JSON-RPC message (``params`` an array, ...) is ``-32600``. A message
    without an id is a notification: nothing may answer it.
    """
    from mcp.types import JSONRPCMessage
    from pydantic import ValidationError

    if not line.strip():
        return None
    try:
        JSONRPCMessage.model_validate_json(line)
    except ValidationError as error:
        invalid = error
    else:
        return None
    import json

    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, -32700, "parse error: the line is not one JSON document")
    ident = message.get("id") if isinstance(message, dict) else None
    if not isinstance(ident, (str, int)) or isinstance(ident, bool):
        return None  # a notification, or an id no answer could name
    where = _surrogate_at(message, "")
    if where is not None:
        why = f"invalid params: {where.lstrip('.')} holds a lone surrogate, which is not text"
        return _error(ident, -32602, f"{why} (accepted: valid Unicode text)")
    first = invalid.errors()[0]
    at = ".".join(str(part) for part in first["loc"][1:]) or "the message"
    why = f"invalid request: {at}: {first['msg']}"
    return _error(ident, -32600, f"{why} (accepted: a JSON-RPC 2.0 request)")


def _surrogate_at(value: object, path: str) -> str | None:
    """The path (``.params.arguments.question``) of the first string or key in ``value``
    that holds a lone surrogate, else ``None``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "."
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{ascii(key)[1:-1]}"  # escaped: a key may be the hostile part
            found = _surrogate_at(key, f"{name} (its name)") or _surrogate_at(item, name)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_at(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _error(ident: str | int | None, code: int, message: str) -> str:
    import json

    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}) + "\n"
