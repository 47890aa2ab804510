"""Whether an installed reviewer CLI still lists the flags that keep it read-only.

CLIs change: a release can drop or rename a flag review-loop relies on (one once silently
ignored its sandbox flag for two releases). Each adapter declares those flags and the help
page that lists them (``required_flags``, :mod:`review_loop.adapters.base`); this module
runs the help pages and says which are missing. The dispatcher refuses a product with a
missing flag (``NOT_SUBMITTED``, naming it) before anything is asked, and ``review-loop
doctor`` reports it.

What a probe prints is cached in the user's state (``probes.json``, with the version
probe's answers) per executable: its real path, its size and its mtime. A consult pays for
a help page once per installed version; afterwards the check is a PATH search, a ``stat``
and the read of that small file (measured in ``docs/reviewer-lockdown.md``, "Flags a CLI
version must have").
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from review_loop.adapters.base import RequiredFlag, help_pages, missing_flags, required_flags

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from review_loop.agents.models import Capabilities, Completed, EnvPassthrough

    RunProcess = Callable[..., Awaitable[Completed]]
    """How a probe is run: ``run(invocation, deadline=..., grace=...)`` (a dispatcher's
    runner's ``run``, or :func:`~..process.run.run_process`)."""

NEUTRAL_CWD = Path("/")
"""Where a help page runs by default, and the dispatcher's version probe: a directory no
repository (and no other user) can plant a CLI's project settings in, and where a probe
finds nothing to read."""
PROBE_DEADLINE_S = 15.0
"""How long a version probe may run."""
HELP_DEADLINE_S = 60.0
"""How long a help page may take: once per installed version, and a slow start (a loaded
machine, a Node CLI's first run) must not read as a missing flag."""


def cache_path() -> Path:
    """The probe cache: ``$REVIEW_LOOP_HOME/probes.json``."""
    from review_loop.prefs.home import state_home

    return state_home() / "probes.json"


def executable_of(command: Sequence[str]) -> str | None:
    """The path ``command[0]`` runs as on this process's PATH, or ``None``."""
    from review_loop.orchestrator.process.run import resolve_executable

    return resolve_executable(command[0], dict(os.environ))


def _lookup(
    command: Sequence[str], args: Sequence[str]
) -> tuple[str, list[int], dict[str, object]] | None:
    """The cache key and stamp of an executable, and the cache; ``None`` if not on PATH."""
    executable = executable_of(command)
    if executable is None:
        return None
    stat = os.stat(executable)
    key = json.dumps([os.path.realpath(executable), *command[1:], *args])
    try:
        cache = json.loads(cache_path().read_bytes())
    except (OSError, ValueError):
        cache = {}
    return key, [stat.st_size, stat.st_mtime_ns], cache if isinstance(cache, dict) else {}


async def cached_output(
    command: Sequence[str],
    args: Sequence[str],
    *,
    cwd: Path,
    pass_env: EnvPassthrough,
    run: RunProcess | None = None,
) -> str | None:
    """What ``[*command, *args]`` prints (stdout, then stderr), cached per executable
    (path, size, mtime); ``None`` when ``command`` is not on PATH (:func:`cached_probe`)."""
    probed = await cached_probe(command, args, cwd=cwd, pass_env=pass_env, run=run)
    return None if probed is None else probed.output


class Probe(NamedTuple):
    """What one probe printed, and whether it ran to a clean end (exit 0 in time)."""

    output: str
    ok: bool
    failure: str = ""
    """Why it did not (``timed out after 60 s``, ``exit 1``)."""


async def cached_probe(
    command: Sequence[str],
    args: Sequence[str],
    *,
    cwd: Path,
    pass_env: EnvPassthrough,
    deadline: float = PROBE_DEADLINE_S,
    run: RunProcess | None = None,
) -> Probe | None:
    """Run ``[*command, *args]`` (or read its cached answer); ``None`` when ``command`` is
    not on PATH. ``run`` runs the probe (the dispatcher's runner; default
    :func:`~..process.run.run_process`).

    Only an answer that exited 0 is kept: a probe that failed or timed out is run again
    next time. The lookup runs in the event loop's thread: cheaper than a hop to a worker
    thread and back.
    """
    import anyio

    from review_loop.agents.models import Invocation
    from review_loop.orchestrator.process.run import run_process

    lookup = _lookup(command, args)
    if lookup is None:
        return None
    key, stamp, cache = lookup
    hit = cache.get(key)
    if isinstance(hit, dict) and hit.get("stamp") == stamp:
        return Probe(str(hit.get("output", "")), ok=True)
    probe = Invocation(argv=(*command, *args), cwd=cwd, pass_env=pass_env)
    done = await (run or run_process)(probe, deadline=deadline, grace=1.0)
    output = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
    if done.returncode == 0 and not done.timed_out:
        entry: dict[str, object] = {"stamp": stamp, "output": output}
        with suppress(OSError):  # a cache: never half-written, but not worth an fsync
            await anyio.to_thread.run_sync(_store, key, entry)
        return Probe(output, ok=True)
    failure = f"timed out after {deadline:g} s" if done.timed_out else f"exit {done.returncode}"
    return Probe(output, ok=False, failure=failure)


def _store(key: str, entry: dict[str, object]) -> None:
    """Add one answer to the cache: read, update and replace it under an exclusive lock,
    so that probes finishing together (a fan-out, ``doctor``) all keep their answers."""
    import fcntl

    from review_loop.orchestrator.handoff.files import atomic_write_json

    path = cache_path()
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            cache = json.loads(path.read_bytes())
        except (OSError, ValueError):
            cache = {}
        cache = cache if isinstance(cache, dict) else {}
        cache[key] = entry
        atomic_write_json(path, cache, durable=False)


class FlagCheck(NamedTuple):
    """What the help pages of one executable say of the flags its adapter requires.

    Attributes:
        required: every flag the adapter requires for these capabilities.
        missing: those its help page does not list (empty: all there).
        checked: ``False`` when the executable is not on PATH (nothing was probed; the
            attempt itself reports the missing executable).
    """

    required: tuple[RequiredFlag, ...]
    missing: tuple[RequiredFlag, ...]
    checked: bool
    unread: tuple[str, ...] = ()
    """The help pages that could not be read, each with why (``gemini --help: timed out
    after 60 s``): every flag on them is in ``missing``."""


async def check_flags(
    adapter: object,
    command: Sequence[str],
    capabilities: Capabilities,
    *,
    cwd: Path | None = None,
    pass_env: EnvPassthrough,
    run: RunProcess | None = None,
) -> FlagCheck:
    """Run (or read from the cache) each help page ``adapter``'s required flags are listed
    on, and say which flags are missing. A help page that cannot be run lists nothing:
    every flag on it is missing (fail closed).

    ``cwd`` (default :data:`NEUTRAL_CWD`) is where the help runs: never the reviewed
    repository, whose project settings a CLI might read at start, even for ``--help``.
    """
    required = required_flags(adapter, capabilities)
    cwd = NEUTRAL_CWD if cwd is None else cwd
    texts: dict[tuple[str, ...], str | None] = {}
    unread: list[str] = []
    for args in help_pages(required):
        probed = await cached_probe(
            command, args, cwd=cwd, pass_env=pass_env, deadline=HELP_DEADLINE_S, run=run
        )
        if probed is None:
            return FlagCheck(required, (), checked=False)
        texts[args] = probed.output if probed.ok else None
        if not probed.ok:
            unread.append(f"`{' '.join([Path(command[0]).name, *args])}`: {probed.failure}")
    return FlagCheck(required, missing_flags(required, texts), True, tuple(unread))
