"""The vocabulary every layer speaks: requests, invocations, finished processes, outcomes.

These are pure data, immutable once built. Building or reading them performs no I/O, so
adapters can be tested without spawning anything and the orchestrator can journal them.
They are built by this code base alone (the adapters, the process layer, the dispatcher),
never from untrusted input, so they are not validated at run time: ``mypy --strict`` is
their check.

- **The run vocabulary** (:class:`AgentRequest`, :class:`Capabilities`,
  :class:`Invocation`, :class:`Completed`, :class:`Usage`, :class:`Reply`,
  :class:`Failure`, :data:`Outcome`): frozen, slotted, keyword-only stdlib dataclasses,
  because the run path changes them with ``dataclasses.replace`` (the dispatcher, masking,
  the codex adapter) and pydantic validates and describes ``Reply`` and ``Usage`` inside the
  public ``Delivery`` (it reads stdlib dataclasses natively and emits their JSON Schemas).
- **The listing vocabulary** (:class:`StoredSession`, :class:`ResumeCommands`,
  :class:`ReadOnlyResume`, defined in :mod:`review_loop.agents.listing_vocabulary`) and
  :class:`EnvPassthrough` (:mod:`review_loop.agents.env_passthrough`), which every adapter
  declares at import, are named here too; their own modules let ``sessions`` load every
  adapter without this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Final, Literal

from review_loop.agents.constants import ENV_NAME_PATTERN as ENV_NAME_PATTERN
from review_loop.agents.env_passthrough import EnvPassthrough as EnvPassthrough
from review_loop.agents.listing_vocabulary import ReadOnlyResume as ReadOnlyResume
from review_loop.agents.listing_vocabulary import ResumeCommands as ResumeCommands
from review_loop.agents.listing_vocabulary import StoredSession as StoredSession


class DeliveryState(StrEnum):
    """What we can prove about whether a request reached the model.

    - ``DELIVERED``: a reply was parsed.
    - ``NOT_SUBMITTED``: proven that nothing left this machine (executable missing,
      STOP before spawn, the CLI refused its arguments or credentials up front).
      Only this state may be retried, once, with the same parameters.
    - ``DELIVERY_UNKNOWN``: everything else (timeout, killed, crash mid-run, empty or
      unparseable output). Never silently re-sent to the same product.
    """

    DELIVERED = "DELIVERED"
    NOT_SUBMITTED = "NOT_SUBMITTED"
    DELIVERY_UNKNOWN = "DELIVERY_UNKNOWN"


_NOTHING_PASSED: Final = EnvPassthrough()
"""``Invocation.pass_env``'s default: nothing of the caller's environment (an immutable
value, so one instance serves every invocation)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRequest:
    """One question for one product, independent of how that product is launched.

    Attributes:
        prompt: the full prompt text. It never passes through a shell.
        cwd: the directory the agent runs in (the repository root).
        resume_session_id: continue this stored session instead of starting a new one.
        session_id: a session id chosen in advance, used by CLIs that accept one
            (``claude --session-id``), so the record holds the handle before launch.
    """

    prompt: str
    cwd: Path
    resume_session_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What an installed CLI can do, as read from its ``--version``/``--help``."""

    variant: str = "default"
    version: str | None = None
    read_only: bool = True
    resumable: bool = True
    isolate_in_copy: bool = False
    """Run in a throw-away copy of ``cwd`` because the CLI has no read-only mode."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """Everything needed to start one CLI. Building it performs no I/O.

    Attributes:
        argv: the exact argument vector; ``argv[0]`` is the executable or launcher.
        env: variables set for the CLI (they win over anything passed through).
        unset_env: variables never passed through, even when ``pass_env`` allows them.
        pass_env: which variables of the caller's environment may reach the CLI, besides
            the orchestrator's product-neutral basics (PATH, HOME, locale, proxies, ...).
            Everything else of the caller's environment is dropped.
        hidden_paths: paths relative to ``cwd`` that hold this CLI's project configuration
            (settings, hooks, MCP servers, ``.env``), which the CLI must not see: covered
            (empty, read-only) in a private mount namespace, or left out of a copy.
        stdin: bytes written to stdin before it is closed; ``None`` means DEVNULL.
        cwd: the working directory.
        session_id: the session handle known before launch, if any.
        isolate_in_copy: the orchestrator must run this in a throw-away copy of ``cwd``.
        home_files: for a CLI without a read-only mode (which runs with a scratch HOME,
            the real one read-only): files, relative to the real HOME, copied into the
            scratch HOME when they exist (its credentials and settings).
        read_only_repository: the CLI writes into the repository on its own, whatever its
            tools may do (opencode caches a project id in ``.git/``): the repository and
            its git directories are mounted read-only in the reviewer's namespace, and
            where no namespace can be made the run is refused.
        root_files: ``(variable, file)`` pairs: a file the CLI trusts only where it and
            every directory above it are owned by root and writable by no one else
            (gemini's system settings), named to the CLI by ``variable``, which ``env``
            sets to ``file`` itself. In the reviewer's namespace a copy is placed in a
            root directory of its own (owned by its root, read-only) and ``variable`` names
            the copy, so the CLI trusts it whoever owns the install.
    """

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    unset_env: tuple[str, ...] = ()
    pass_env: EnvPassthrough = _NOTHING_PASSED
    hidden_paths: tuple[str, ...] = ()
    stdin: bytes | None = None
    cwd: Path
    session_id: str | None = None
    isolate_in_copy: bool = False
    home_files: tuple[str, ...] = ()
    read_only_repository: bool = False
    root_files: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Completed:
    """What a finished (or stopped) process left behind.

    ``stdout`` holds the whole output when ``stdout_truncated`` is false (up to the
    orchestrator's output cap). Past the cap, or when its spill could not be written (a
    full disk: ``stdout_spill_error`` names the errno), it holds the first and the last
    part joined, and ``stdout_dropped`` counts the bytes of the middle that were dropped.
    ``stderr`` holds at most its first and last 256 KiB.

    ``output_complete``: stdout closed on output complete by the adapter's own format
    while the CLI still ran, and the orchestrator then ended it (``returncode`` is that
    signal's): the CLI had answered. An adapter reads such a run as one that exited 0.
    """

    returncode: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stdout_bytes: int = 0
    stdout_dropped: int = 0
    stdout_spill_error: str | None = None
    output_complete: bool = False
    elapsed_ms: int = 0
    timed_out: bool = False
    stopped: bool = False
    cancelled: bool = False
    stalled: bool = False
    """Ended for showing no sign of life (no output, no CPU time) for the stall time."""
    killed_after_grace: bool = False
    """The process tree ignored SIGTERM for the whole grace period and got SIGKILL."""
    spawn_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts where the CLI reports them."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A parsed answer: the only thing that makes an attempt ``DELIVERED``."""

    kind: Literal["reply"] = "reply"
    text: str
    session_id: str | None = None
    cost_usd: float | None = None
    usage: Usage | None = None


_FAILURE_STATES: Final = frozenset({DeliveryState.NOT_SUBMITTED, DeliveryState.DELIVERY_UNKNOWN})


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A classified failure. ``state`` is never ``DELIVERED``.

    Attributes:
        state: ``NOT_SUBMITTED`` only when the adapter can prove nothing was sent.
        reason: a short machine-readable cause (``timeout``, ``auth``, ``parse failed``…).
        detail: a human-readable excerpt (first 2000 chars of stderr or stdout).
        session_id: a session handle seen before the failure, kept for resume.
        session_not_found: the CLI said the resumed session does not exist.
    """

    kind: Literal["failure"] = "failure"
    state: Literal[DeliveryState.NOT_SUBMITTED, DeliveryState.DELIVERY_UNKNOWN]
    reason: str
    detail: str = ""
    session_id: str | None = None
    session_not_found: bool = False

    def __post_init__(self) -> None:
        # The rule mypy cannot hold for a third-party adapter, kept as the pydantic model
        # this replaced kept it: a failure that said DELIVERED would make a delivery with
        # no reply (only a parsed Reply is DELIVERED). The state's value is taken as its
        # member, as the model took it, so ``state is DeliveryState.X`` holds.
        if not isinstance(self.state, str) or self.state not in _FAILURE_STATES:
            raise ValueError(
                f"Failure.state: {self.state!r} is not a failure's state "
                "(accepted: DeliveryState.NOT_SUBMITTED, DeliveryState.DELIVERY_UNKNOWN)"
            )
        if type(self.state) is not DeliveryState:
            object.__setattr__(self, "state", DeliveryState(self.state))


Outcome = Reply | Failure
"""What an attempt ended with, told apart by ``kind`` (or ``isinstance``)."""
