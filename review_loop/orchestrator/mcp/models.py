"""The shapes the MCP tools return; their JSON Schemas are the tools' output schemas."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from review_loop.orchestrator.mcp.jobs import Job


class CommandDocument(BaseModel):
    """The command's JSON document, exactly as ``review-loop <command>`` prints it.

    Every command's document has ``ok``; a failed one has ``error`` (naming the field, what
    was wrong and what is accepted, as the CLI says it). The other keys are the command's
    own (``docs/cli.md``) and are passed through unchanged.
    """

    model_config = ConfigDict(extra="allow")

    ok: bool = Field(description="false: the command failed or found problems (see error)")


class JobState(BaseModel):
    """Where a job is: running (with its latest progress) or finished (with its document)."""

    jobId: str = Field(description="what job_wait and job_cancel take")
    command: str = Field(description="the review-loop command the job runs")
    state: Literal["running", "finished"]
    cancelled: bool = Field(description="stopped by job_cancel or by the server's stop")
    exitCode: int | None = Field(description="the command's exit code (0, 2 ok:false, 1 error)")
    progressLines: int = Field(description="stderr lines the command printed so far")
    progress: list[str] = Field(description="the latest of those lines, oldest first")
    document: CommandDocument | None = Field(
        description="the command's JSON document once it finished, exactly as the CLI prints it"
    )


class JobList(BaseModel):
    """Every job this server started, oldest first."""

    jobs: list[JobState]


def job_state(job: Job, *, progress: int = 20) -> JobState:
    """The state of ``job`` with its last ``progress`` lines."""
    lines = list(job.progress)[-progress:] if progress else []
    return JobState(
        jobId=job.id,
        command=job.command,
        state="finished" if job.finished else "running",
        cancelled=job.cancelled,
        exitCode=job.exit_code,
        progressLines=job.lines,
        progress=lines,
        document=None if job.document is None else CommandDocument.model_validate(job.document),
    )
