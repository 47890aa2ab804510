"""The adapter contract: how to talk to one product CLI, as pure translation.

An adapter does no I/O and imports neither anyio nor subprocess. The orchestrator asks it
for an :class:`~review_loop.agents.models.Invocation`, runs that, and hands back what the
process left (:class:`~review_loop.agents.models.Completed`) to be interpreted. Every
adapter is read-only by construction: no argument of ``build`` can turn that off.

Third-party adapters need not inherit anything; they satisfy :class:`Adapter` and register
an instance (or a zero-argument factory) under the entry-point group
``review_loop.adapters``. ``tests/adapters/test_contract.py`` holds the behaviour every
adapter must show.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:  # the run vocabulary is loaded when a CLI is run (agents/models.py)
    from review_loop.agents.env_passthrough import EnvPassthrough
    from review_loop.agents.listing_vocabulary import ResumeCommands, StoredSession
    from review_loop.agents.models import (
        AgentRequest,
        Capabilities,
        Completed,
        Failure,
        Invocation,
        Outcome,
    )


class SessionStore(NamedTuple):
    """Where a CLI keeps its sessions, for ``sessions`` to scan.

    Attributes:
        root: the directory to search under.
        pattern: a glob relative to ``root`` (``projects/-work-repo/*.jsonl``).
        head_bytes: how much of each file the orchestrator reads for ``parse_session``.
        sidecars: files, relative to the matched file's directory, read whole and passed
            along (Gemini keeps the project root beside its chats).
    """

    root: Path
    pattern: str
    head_bytes: int = 8192
    sidecars: tuple[str, ...] = ()


class SessionFile(NamedTuple):
    """One session file as the orchestrator read it: path, first bytes, mtime."""

    path: Path
    head: bytes
    mtime: float
    sidecars: Mapping[str, bytes] = MappingProxyType({})
    """Read-only; the default is one shared empty mapping."""


@runtime_checkable
class Adapter(Protocol):
    """Translate between an :class:`AgentRequest` and one product's CLI.

    Attributes:
        name: the product name users type (``claude``); unique in the registry.
        default_executable: the command looked up on ``PATH`` when no alias is given.
        env_passthrough: what of the caller's environment the CLI may see.

    An adapter may also declare ``short_names: tuple[str, ...]``, the short forms a user's
    account launchers start with besides the product name (``cc`` for claude: the seed's
    ``cc002``). It is optional data, not part of the protocol, so adapters written before
    it still satisfy it. So are ``own_files(env, home) -> tuple[Path, ...]`` (where the
    product keeps its login and settings: visible to its own reviewers, hidden from every
    other product's; none declared means none kept visible), ``ancestor_files`` (files, by
    name, its CLI loads from every directory above its working directory: hidden there from
    every reviewer) and ``reads_only_its_prompt``
    (``True`` only for review-loop's own stand-in, which then runs without the reviewer
    sandbox), both read by the orchestrator's sandbox.

    Likewise optional, and read by ``review-loop doctor`` and by every consult:
    ``required_flags(capabilities) -> tuple[RequiredFlag, ...]``, every flag that keeps this
    product read-only or locked down (the ones :meth:`build` passes), each with the help
    page that lists it (``("exec", "--help")``). The orchestrator runs each help page once
    per executable (cached by path, size and mtime), and refuses the product
    (``NOT_SUBMITTED``, naming the flag) when a flag is not listed there
    (:func:`missing_flags`): a CLI version that dropped a read-only flag is never run
    without it. None declared means none checked (review-loop's own stand-in). And
    ``login_args() -> tuple[str, ...] | None`` with ``login_state(output, returncode) ->
    LoginState``: the command that tells, without a model call, whether the CLI is logged
    in (``("auth", "status")``), and its reading; without them the state is ``unknown``.
    A CLI with no such command may instead declare ``login_files(env, home) -> tuple[Path,
    ...]``, the user's own files where it keeps its key or its choice of login, with
    ``login_from(env, texts, capabilities) -> LoginState``: the same reading made from the
    environment the CLI would get and those files' text (``{path: text}``, the ones that
    exist), as the CLI itself decides before it asks a model (:func:`login_from`).

    Likewise optional: ``user_config_files(env, home) -> tuple[Path, ...]``, the user's own
    (home-directory) configuration files of the CLI that may name the variables it reads
    credentials from (a last component holding ``*`` is a pattern), and
    ``configured_env_names(texts) -> tuple[str, ...]``, those names, parsed from the files'
    text (``{file name: text}``) that the orchestrator read. Such names pass the
    environment allow-list like ``env_passthrough``'s.

    An adapter may also define ``output_complete(invocation, completed) -> bool``: whether
    what the CLI printed so far (``completed.stdout``, the process still running) is
    complete by the product's own format (its final result event or document). It is
    asked once, when stdout reaches end-of-file; ``True`` makes the orchestrator end a CLI
    that lingers after answering and read its answer (:func:`answered`), instead of
    waiting for the deadline. Pure, optional (:func:`output_complete`): without it a
    lingering CLI is waited for, as before.

    For a CLI whose ``probe_args`` output names no version (or a wrong one), an adapter
    may define ``package_file(executable) -> Path | None``, the file of its installed
    package that holds the version, from the executable's real path (links resolved; path
    arithmetic only), and ``package_version(text) -> str | None``, the version read from
    that file's text, ``None`` when the text is not its package's (:func:`package_file`,
    :func:`package_version`). ``doctor`` reads the file when the probe told no version.
    """

    # Read-only properties, so frozen dataclasses and plain attributes both satisfy them.
    @property
    def name(self) -> str: ...

    @property
    def default_executable(self) -> str: ...

    @property
    def env_passthrough(self) -> EnvPassthrough:
        """The variables of the caller's environment this CLI needs: its auth and config.

        Nothing else of the caller's environment reaches the CLI, besides the
        orchestrator's product-neutral basics (PATH, HOME, locale, proxies, CA bundles)
        and the names the user adds (prefs ``envPassthrough``). Declare exact names, and
        a prefix only when every variable under it belongs to this product.
        """
        ...

    def probe_args(self) -> tuple[str, ...] | None:
        """Arguments that make the CLI describe itself (``("--version",)``), or ``None``.

        The orchestrator runs ``[*command, *probe_args()]`` once per executable and passes
        what it printed to :meth:`capabilities`.
        """
        ...

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Read the probe's output (``None`` when no probe ran) into capabilities."""
        ...

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """Build the exact argv/env/stdin for ``request``.

        Args:
            request: what to ask, where, and which session to continue.
            command: the executable or launcher prefix (``("codex",)`` or an alias's argv).
            capabilities: what :meth:`capabilities` found for this executable.

        Raises:
            AdapterRefusalError: the request cannot be made safe (read-only) with this CLI.
        """
        ...

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Turn what the process left into a :class:`Reply` or a classified :class:`Failure`.

        MUST return ``NOT_SUBMITTED`` only for failures that prove no request left this
        machine, and MUST NOT return a reply for a timed-out, stopped or cancelled run.
        """
        ...

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """Where this CLI's own sessions for ``repo`` may be, given the environment."""
        ...

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Read one session file; ``None`` when it is not a session of ``repo``."""
        ...

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """Copy-ready shell commands that resume ``session_id`` (interactive, headless)."""
        ...


class RequiredFlag(NamedTuple):
    """A flag that keeps a product read-only or locked down, and where its help lists it.

    Attributes:
        flag: the flag as :meth:`Adapter.build` passes it and the help lists it (``-s``,
            ``--permission-mode``).
        purpose: ``"read-only"`` (what the reviewer may do) or ``"lockdown"`` (nothing the
            repository provides runs: its settings, hooks, MCP servers, rules).
        help_args: the arguments that print the help page listing it.
    """

    flag: str
    purpose: str
    help_args: tuple[str, ...] = ("--help",)


class LoginState(NamedTuple):
    """What a CLI says of its login, asked without a model call.

    Attributes:
        state: ``"logged-in"``, ``"logged-out"`` or ``"unknown"``.
        detail: what it said, in a line (``api_key from ANTHROPIC_API_KEY``).
    """

    state: str
    detail: str = ""


UNKNOWN_LOGIN = LoginState("unknown", "this CLI cannot tell without a model call")


def required_flags(adapter: object, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
    """The adapter's ``required_flags(capabilities)``; ``()`` for an adapter without one."""
    declared = getattr(adapter, "required_flags", None)
    return tuple(declared(capabilities)) if callable(declared) else ()


def flag_requirements(
    words: Sequence[str], purpose: str, help_args: tuple[str, ...] = ("--help",)
) -> tuple[RequiredFlag, ...]:
    """A :class:`RequiredFlag` for each flag (a word starting with ``-``) of ``words``, an
    argv fragment like an adapter's ``READ_ONLY_FLAGS`` (its values are skipped)."""
    flags = dict.fromkeys(word for word in words if word.startswith("-"))
    return tuple(RequiredFlag(flag, purpose, help_args) for flag in flags)


def help_pages(flags: Sequence[RequiredFlag]) -> tuple[tuple[str, ...], ...]:
    """The distinct help pages ``flags`` are listed on, in first-use order."""
    return tuple(dict.fromkeys(flag.help_args for flag in flags))


_OPTION_INDENT = 8
"""The deepest indentation of an option line in the help of commander (2), yargs (2) and
clap (2 or 6); descriptions continue at 10 columns or more."""


def listed_flags(help_text: str) -> frozenset[str]:
    """Every flag a help page defines: the words starting with ``-`` in the option column
    of each line that starts (after indentation) with ``-``.

    The option column ends at the first run of two spaces (commander, yargs) or at the end
    of the line (clap's long help puts the description below). A flag only named in the
    prose of another flag (``--settings`` in claude's ``--bare`` description, on a
    continuation line of its own) is not listed: an option line is indented at most
    :data:`_OPTION_INDENT` columns, a description's continuation much further.
    """
    import re

    found: set[str] = set()
    for line in help_text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("-") or len(line) - len(line.lstrip()) > _OPTION_INDENT:
            continue
        column = re.split(r"\s{2,}", stripped, maxsplit=1)[0]
        for word in re.split(r"[\s,=\[<]+", column):
            if re.fullmatch(r"--?[A-Za-z0-9][\w-]*", word):
                found.add(word)
    return frozenset(found)


def missing_flags(
    flags: Sequence[RequiredFlag], help_texts: Mapping[tuple[str, ...], str | None]
) -> tuple[RequiredFlag, ...]:
    """The flags of ``flags`` that their help page (``help_texts[flag.help_args]``, what
    the CLI printed; ``None`` when it could not be run) does not list. Pure."""
    listed = {args: listed_flags(text) for args, text in help_texts.items() if text is not None}
    return tuple(flag for flag in flags if flag.flag not in listed.get(flag.help_args, ()))


def describe_missing(
    product: str,
    version: str | None,
    missing: Sequence[RequiredFlag],
    *,
    unread: Sequence[str] = (),
) -> str:
    """Why a product is refused: ``codex 0.99.0 lacks -s (read-only; codex exec --help)``;
    ``unread`` names help pages that could not be read (why each flag on them counts as
    missing)."""
    if unread:
        return (
            f"this {product} ({version or 'version unknown'}) could not show its help "
            f"({'; '.join(unread)}), so the flags that keep it read-only "
            f"({', '.join(flag.flag for flag in missing)}) are unproven: review-loop does not "
            "run it unproven; ask again (the help is read again), or run review-loop doctor"
        )
    named = ", ".join(
        f"{flag.flag} ({flag.purpose}; not in `{product} {' '.join(flag.help_args)}`)"
        for flag in missing
    )
    return (
        f"this {product} ({version or 'version unknown'}) lacks {named}: review-loop never "
        f"runs it without the flags that keep it read-only; install a version that has them "
        f"(review-loop doctor lists what each product needs)"
    )


def login_state(adapter: object, output: str, returncode: int | None) -> LoginState:
    """The adapter's reading of its ``login_args`` command; unknown when it has none or
    fails to tell."""
    read = getattr(adapter, "login_state", None)
    if not callable(read):
        return UNKNOWN_LOGIN
    try:
        state = read(output, returncode)
    except Exception:
        return UNKNOWN_LOGIN
    return state if isinstance(state, LoginState) else UNKNOWN_LOGIN


def login_from(
    adapter: object,
    env: Mapping[str, str],
    texts: Mapping[str, str],
    capabilities: Capabilities,
) -> LoginState:
    """The adapter's ``login_from`` reading of ``env`` (what its CLI would get) and
    ``texts`` (its ``login_files`` that exist); unknown when it has none or fails to tell."""
    read = getattr(adapter, "login_from", None)
    if not callable(read):
        return UNKNOWN_LOGIN
    try:
        state = read(env, texts, capabilities)
    except Exception:
        return UNKNOWN_LOGIN
    return state if isinstance(state, LoginState) else UNKNOWN_LOGIN


def package_file(adapter: object, executable: Path) -> Path | None:
    """The adapter's ``package_file``: the file of the CLI's installed package that holds
    its version, given the executable's real path (links resolved); ``None`` when it has
    none or fails to tell. For a CLI whose own ``--version`` does not say which release is
    installed."""
    where = getattr(adapter, "package_file", None)
    if not callable(where):
        return None
    try:
        found = where(executable)
    except Exception:
        return None
    return found if isinstance(found, Path) else None


def package_version(adapter: object, text: str) -> str | None:
    """The adapter's ``package_version`` reading of its :func:`package_file`'s text;
    ``None`` when it has none, or the text is not its package's."""
    read = getattr(adapter, "package_version", None)
    if not callable(read):
        return None
    try:
        version = read(text)
    except Exception:
        return None
    return version if isinstance(version, str) and version else None


def output_complete(adapter: object, invocation: Invocation, completed: Completed) -> bool:
    """The adapter's ``output_complete`` answer; ``False`` for an adapter without one, or
    one that fails to tell (an adapter's bug must not end a session early, nor at all)."""
    complete = getattr(adapter, "output_complete", None)
    if not callable(complete):
        return False
    try:
        return bool(complete(invocation, completed))
    except Exception:
        return False


def answered(completed: Completed) -> Completed:
    """``completed`` as the adapter reads it: a CLI ended by the orchestrator after its
    output was complete (``output_complete``) is read as one that exited 0 (its exit
    status is the orchestrator's signal, and says nothing about the answer)."""
    if not completed.output_complete:
        return completed
    import dataclasses

    return dataclasses.replace(completed, returncode=0)


# -- helpers shared by the built-in adapters -------------------------------------------------

DETAIL_LIMIT = 2000


def detail_of(completed: Completed) -> str:
    """The first 2000 characters of stderr, else of stdout (as the original tool reports)."""
    for stream in (completed.stderr, completed.stdout):
        text = stream.decode("utf-8", "replace").strip()
        if text:
            return text[:DETAIL_LIMIT]
    return ""


def generic_failure(completed: Completed) -> Failure | None:
    """The failures every adapter classifies the same way, or ``None`` to go on parsing.

    A missing executable is proven not submitted. A timeout, a stall, a STOP, a
    cancellation or a truncated stream leaves delivery unknown, whatever the output says.
    """
    from review_loop.agents.models import DeliveryState, Failure

    if completed.spawn_error is not None:
        return Failure(
            state=DeliveryState.NOT_SUBMITTED,
            reason="spawn failed",
            detail=completed.spawn_error,
        )
    if completed.timed_out:
        return Failure(
            state=DeliveryState.DELIVERY_UNKNOWN,
            reason="timeout",
            detail=f"timeout after {completed.elapsed_ms}ms",
        )
    if completed.stalled:  # ended by the orchestrator: whatever it printed is cut short
        from review_loop.agents.refusals import STALLED

        return Failure(
            state=DeliveryState.DELIVERY_UNKNOWN,
            reason=STALLED,
            detail=f"no output and no CPU time for the stall time; ended after "
            f"{completed.elapsed_ms}ms",
        )
    if completed.stopped:
        return Failure(
            state=DeliveryState.DELIVERY_UNKNOWN,
            reason="STOP interrupt",
            detail=detail_of(completed),
        )
    if completed.cancelled:
        return Failure(
            state=DeliveryState.DELIVERY_UNKNOWN, reason="cancelled", detail=detail_of(completed)
        )
    return None


def decode_utf8(data: bytes) -> str | None:
    """Strict UTF-8 decode; ``None`` for bytes that are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as one JSON object; ``None`` for anything else (not JSON, another JSON
    value, or nested too deep for the parser)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    return value if isinstance(value, dict) else None


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """Yield each line of ``text`` that is a JSON object; skip everything else."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and (value := json_object(line)) is not None:
            yield value
