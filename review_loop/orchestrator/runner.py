"""The one-method seam under the dispatcher: a runner runs one invocation to its end.

The dispatcher's policy (retry, fallback, resume, deadlines, fan-out, records) runs over a
:class:`Runner`, as an HTTP client's runs over a transport; :class:`ProcessRunner`, the
default, runs real processes in the reviewer sandbox. The contract, for every runner::

    completed = await runner.run(
        invocation, deadline=..., grace=..., stop_files=..., on_started=..., complete=...,
        spill_dir=..., confine=...,
    )

- ``run`` returns the :class:`~review_loop.agents.models.Completed` of a run that
  started: what it printed, its exit status, ``elapsed_ms``, and ``timed_out`` (the
  ``deadline``, in seconds, passed; the run was then ended) or ``stopped`` (one of
  ``stop_files`` appeared). It never raises for the CLI's own failures: those are in the
  result, for the adapter to read. A CLI that could not be started at all (a missing
  executable) is a ``Completed`` with ``spawn_error``, or a :class:`LaunchRefusedError`.
- ``on_started`` is awaited once the run exists and before a byte of its input is sent (the
  dispatcher records the pid there). An exception it raises ends the run, which is then
  re-raised: nothing was sent when the prompt goes on stdin.
- :class:`LaunchRefusedError` says the runner proved the CLI never ran: it refused to
  start it (a sandbox that cannot be made here) or its own setup failed before the CLI
  started (``completed`` then holds that run). The dispatcher reports it ``NOT_SUBMITTED``.
- Cancelled: the run is ended before the cancellation propagates (for a process: its
  whole tree ended and reaped, shielded); nothing of it outlives ``run``.
- ``grace`` is how long the run may take to end once asked to; ``complete`` says whether
  what it printed is a whole answer in its CLI's format (the run may then be ended at
  once, ``Completed.output_complete``); ``spill_dir`` is where output past its in-memory
  head may be kept; ``stall``: seconds without a sign of life after which the run is ended
  as ``Completed.stalled`` (``None``: never). A runner may ignore ``complete``,
  ``spill_dir`` and ``stall``.
- ``confine``: what the run may see and write (:class:`Confinement`), or ``None`` for a run
  that is no reviewer session (a CLI describing itself, ``--version``), run as it is.

Any object with this method is a runner: ``open_dispatcher(runner=...)`` takes one (a
remote one, or a test's fake); it owns whatever it needs (pools, sandbox) and closes it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio

from review_loop.adapters import Adapter
from review_loop.agents.errors import ReviewLoopError
from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator.process.run import (
    Started,
    Supervisors,
    open_supervisors,
    resolve_executable,
    run_process,
)
from review_loop.orchestrator.sandbox import reviewer as sandbox
from review_loop.orchestrator.sandbox.isolation import (
    isolation_failed,
    make_scratch,
    namespace_available,
    protected_paths,
    read_only_argv,
    sandbox_argv,
    scratch_prefix,
)
from review_loop.orchestrator.sandbox.masking import mask_failed, remove_from_copy

__all__ = [
    "Confinement",
    "LaunchRefusedError",
    "ProcessRunner",
    "Runner",
    "Started",
    "open_process_runner",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    """What one reviewer session may see and write (keywords only).

    Attributes:
        adapter: the product's adapter (what its CLI must not read, its own files).
        repo: the checkout under review; the session sees it read-only.
        whole_filesystem: the CLI has no read-only mode of its own, so a run in a
            throw-away copy (``Invocation.isolate_in_copy``) gets every mount read-only
            but its scratch directory; otherwise only the repository is read-only.
        allow_unprotected: the user accepted running a CLI unprotected where no sandbox
            can be made here (prefs ``allowUnprotected``), instead of refusing it.
    """

    adapter: Adapter
    repo: Path
    whole_filesystem: bool
    allow_unprotected: bool


class LaunchRefusedError(ReviewLoopError):
    """The runner proved the CLI never ran: the dispatcher's ``NOT_SUBMITTED``.

    Attributes:
        reason: the delivery's reason (``"spawn failed"``, ``"refused"``).
        detail: what the user is told: why, and what to do.
        completed: the runner's own setup that failed before the CLI started, if it ran.
    """

    def __init__(self, reason: str, detail: str, completed: Completed | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.completed = completed


class Runner(Protocol):
    """Runs one invocation to its end (this module's docstring is the contract)."""

    async def run(
        self,
        invocation: Invocation,
        *,
        deadline: float | None,
        grace: float,
        stop_files: Sequence[Path] = (),
        on_started: Callable[[Started], Awaitable[None]] | None = None,
        complete: Callable[[Completed], bool] | None = None,
        spill_dir: Path | None = None,
        confine: Confinement | None = None,
        stall: float | None = None,
    ) -> Completed:
        """Run ``invocation``; see the module docstring."""
        ...


class ProcessRunner:
    """The default runner: one supervised process per run, in the reviewer sandbox.

    A confined run takes its session supervisor from ``supervisors`` (a warm spare); its
    CLI is proven present, then wrapped by the sandbox (:mod:`.sandbox.reviewer`) or run
    in a throw-away copy of the repository (:mod:`.sandbox.isolation`), and
    :func:`.process.run.run_process` runs it: spawn, drain, deadline, TERM, grace, KILL,
    reap.
    """

    def __init__(self, supervisors: Supervisors | None = None) -> None:
        self.supervisors = supervisors

    async def run(
        self,
        invocation: Invocation,
        *,
        deadline: float | None,
        grace: float,
        stop_files: Sequence[Path] = (),
        on_started: Callable[[Started], Awaitable[None]] | None = None,
        complete: Callable[[Completed], bool] | None = None,
        spill_dir: Path | None = None,
        confine: Confinement | None = None,
        stall: float | None = None,
    ) -> Completed:
        """Run ``invocation`` as a process (the module docstring is the contract)."""
        if confine is None:  # no session: no sandbox, and the warm spare is left for one
            return await run_process(
                invocation, deadline=deadline, grace=grace, stop_files=stop_files,
                on_started=on_started, complete=complete, spill_dir=spill_dir,
            )  # fmt: skip
        launchable = await _launchable(invocation, confine, self.supervisors)
        async with _isolated(launchable, confine) as runnable:
            completed = await run_process(
                runnable, deadline=deadline, grace=grace, stop_files=stop_files,
                on_started=on_started, complete=complete, spill_dir=spill_dir,
                supervisors=self.supervisors, stall=stall,
            )  # fmt: skip
        if (
            invocation.isolate_in_copy and isolation_failed(completed.returncode, completed.stderr)
        ) or mask_failed(completed.returncode, completed.stderr):
            # A namespace or mask that could not be set up: the CLI never ran, and its
            # adapter is not asked to read the wrapper's error.
            detail = completed.stderr.decode("utf-8", "replace").strip()
            raise LaunchRefusedError("refused", detail, completed)
        refused = sandbox.launch_refusal(completed, confine.adapter, invocation)
        if refused is not None:  # unshare failed before anything of the session ran
            raise LaunchRefusedError("refused", refused, completed)
        return completed


@asynccontextmanager
async def open_process_runner() -> AsyncIterator[ProcessRunner]:
    """A :class:`ProcessRunner` with its pool of session supervisors (a warm spare started
    now, so its interpreter starts while the caller does other work), closed on exit."""
    async with open_supervisors() as supervisors:
        yield ProcessRunner(supervisors)


async def _launchable(
    invocation: Invocation, confine: Confinement, supervisors: Supervisors | None
) -> Invocation:
    """The invocation as it will be spawned, or :class:`LaunchRefusedError`.

    Owns the isolation and masking decisions: a wrapped CLI is first proven present; a
    throw-away copy needs a read-only mount namespace, else the CLI is refused rather
    than run able to write the repository; project files to hide are masked in place
    unless the copy already leaves them out. The sandbox's once-per-process checks run on
    ``supervisors`` (its warm spare, replaced at once for the session).
    """
    adapter = confine.adapter
    if not sandbox.exempt(adapter):
        # The namespace wrapper becomes argv[0]; the CLI itself must still be proven
        # present, or a missing one would look like a crash instead of NOT_SUBMITTED.
        executable = resolve_executable(invocation.argv[0], dict(os.environ))
        if executable is None:
            raise LaunchRefusedError("spawn failed", f"executable not found: {invocation.argv[0]}")
        invocation = dataclasses.replace(invocation, argv=(executable, *invocation.argv[1:]))
    if invocation.isolate_in_copy and not await namespace_available(supervisors):
        raise LaunchRefusedError(
            "refused",
            f"{adapter.name} has no read-only mode here and no read-only mount namespace "
            "can be made here (docs/reviewer-lockdown.md), so it cannot run without being "
            "able to write to the repository",
        )
    protected = await sandbox.protect(  # what it must not read, out of sight
        invocation,
        adapter,
        repo=confine.repo,
        allow_unprotected=confine.allow_unprotected,
        supervisors=supervisors,
    )
    if isinstance(protected, str):
        raise LaunchRefusedError("refused", protected)
    return protected


@asynccontextmanager
async def _isolated(invocation: Invocation, confine: Confinement) -> AsyncIterator[Invocation]:
    """Run ``invocation`` in a throw-away copy of the repository, when it asks for that.

    ``confine.whole_filesystem`` (a CLI without a read-only mode): every mount read-only
    but the scratch directory, which holds the copy, a scratch HOME with the adapter's
    ``home_files`` and a scratch TMPDIR. Otherwise (a read-only CLI kept from earlier
    records): the repository read-only. The scratch directory is removed afterwards. See
    :mod:`~review_loop.orchestrator.sandbox.isolation`; :func:`_launchable` has checked that a
    read-only mount namespace is available.
    """
    if not invocation.isolate_in_copy:
        yield invocation
        return
    import shutil  # here, not at import: only an isolated run makes a scratch copy
    import tempfile

    repo, whole_filesystem = confine.repo, confine.whole_filesystem
    root = Path(tempfile.mkdtemp(prefix=scratch_prefix()))
    source_home = Path(invocation.env.get("HOME") or os.environ.get("HOME") or Path.home())
    home_files = invocation.home_files if whole_filesystem else ()
    try:
        scratch = await anyio.to_thread.run_sync(
            lambda: make_scratch(root, repo, source_home=source_home, home_files=home_files)
        )
        await anyio.to_thread.run_sync(remove_from_copy, scratch.copy, invocation.hidden_paths)
        argv = tuple(
            str(scratch.copy) if word == str(invocation.cwd) else word for word in invocation.argv
        )
        plan = sandbox.exposure(confine.adapter, repo=repo, cwd=scratch.copy, project=())
        placing, env = sandbox.root_files(invocation)  # a file only a root-owned path passes
        hide = [*sandbox.hide_options(plan), *placing]
        if whole_filesystem:
            yield dataclasses.replace(
                invocation,
                cwd=scratch.copy,
                argv=sandbox_argv([root], argv, hide),
                env={**env, **scratch.env()},
            )
        else:
            protected = await protected_paths(repo)
            yield dataclasses.replace(
                invocation, cwd=scratch.copy, argv=read_only_argv(protected, argv, hide), env=env
            )
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(root, ignore_errors=True))
