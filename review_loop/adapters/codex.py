"""Codex CLI (``codex exec`` 0.17x): JSONL events on stdout, the prompt on stdin.

Read-only by construction: ``-s read-only`` plus the same policy as config overrides
(``sandbox_mode``, ``approval_policy``), so a profile or ``config.toml`` cannot widen it.
``codex exec resume`` rejects ``-s``, so every exec-level flag goes before ``resume``
(docs/cli-adapters.md §2). ``--disable unbounded_connection_retries`` makes an offline run fail
instead of reconnecting forever.

The thread id (= session id) is only known from the first event, ``thread.started``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, final

from review_loop.adapters._common import (
    SESSION_ID,
    ResumeForms,
    as_dict,
    as_str,
    checked_session_id,
    directory_argument,
    exit_reason,
    iso_utc,
    last_json_lines,
    missing_credential,
    no_answer,
    not_submitted,
    prompt_bytes,
    require_command,
    same_path,
    string_field,
    text_of,
    unknown,
    usage_of,
    version_in,
)
from review_loop.adapters.base import (
    LoginState,
    RequiredFlag,
    SessionFile,
    SessionStore,
    decode_utf8,
    detail_of,
    flag_requirements,
    generic_failure,
    json_lines,
    json_object,
)
from review_loop.adapters.refusals import refusal_in, refuse_too_old, refused
from review_loop.agents.constants import ENV_NAME_PATTERN
from review_loop.agents.env_passthrough import EnvPassthrough
from review_loop.agents.listing_vocabulary import ResumeCommands, StoredSession

if TYPE_CHECKING:
    # the run vocabulary: imported where a run is built or read (agents/models.py)
    from review_loop.adapters.base import Adapter
    from review_loop.agents.models import (
        AgentRequest,
        Capabilities,
        Completed,
        Failure,
        Invocation,
        Outcome,
    )

PRODUCT: Final = "codex"

OLDEST_VERSION: Final = (0, 171, 0)
"""The oldest Codex the read-only sandbox, ``--disable unbounded_connection_retries`` and
the event stream were proven with here (``tests/e2e``). An older ``codex --version`` is
refused ``cli_too_old``."""

READ_ONLY_FLAGS: Final = (
    "-s",
    "read-only",
    "-c",
    'sandbox_mode="read-only"',
    "-c",
    'approval_policy="never"',
)
"""Present in every argv ``build`` returns, before any subcommand."""

HELP_ARGS: Final = ("exec", "--help")
"""The help page that lists the flags of ``codex exec``, which every run is."""

NO_PROJECT_CODE_FLAGS: Final = ("--ignore-rules",)
"""Present in every argv ``build`` returns: the repository's execpolicy ``.rules`` (which
can allow commands) are not loaded. With :func:`untrusted_project`, which follows them."""


def untrusted_project(cwd: Path) -> tuple[str, str]:
    """``-c projects={"<cwd>"={trust_level="untrusted"}}``: the repository is untrusted.

    Codex loads a project's ``.codex/config.toml`` (MCP servers, hooks, ``notify``) only for
    a project the user marked trusted in their own ``config.toml``; this override makes the
    reviewed repository untrusted for this run whatever that file says, and Codex prints
    "Untrusted project-local configuration is disabled" (proven by
    ``tests/e2e/test_hostile_repo.py`` with the project trusted). Measured: the dotted form
    ``-c projects."<repo>".trust_level=...`` and ``-c mcp_servers={}`` do not do this.
    The path is a TOML basic string (JSON escapes are valid TOML escapes without
    ``ensure_ascii``).
    """
    key = json.dumps(directory_argument(PRODUCT, cwd), ensure_ascii=False)
    return ("-c", f'projects={{{key}={{trust_level="untrusted"}}}}')


ENV_PASSTHROUGH: Final = EnvPassthrough(prefixes=("CODEX_", "OPENAI_"))
"""Codex's home and credentials (``CODEX_HOME``, ``CODEX_API_KEY``, ``OPENAI_API_KEY``,
``OPENAI_BASE_URL``). A custom provider's ``env_key`` (e.g. ``AZURE_OPENAI_API_KEY``) and
``env_http_headers`` are read from the user's own configuration
(:meth:`CodexAdapter.configured_env_names`)."""

CONFIG_NAME: Final = "config.toml"
PROFILE_GLOB: Final = "*.config.toml"
"""Profiles since codex 0.134: ``$CODEX_HOME/<name>.config.toml``, loaded with
``--profile <name>`` (a user's peer-command alias may pass it)."""

SOURCE: Final = "cli-store"

# Refusals that happen before any request: a missing credential is detected when the
# provider is set up; clap rejects arguments (rc 2); the trust check runs before the turn.
_MISSING_KEY = "Missing environment variable"
_UNTRUSTED = "Not inside a trusted directory"
_NOT_FOUND = "no rollout found for thread id"
# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
_CLAP_ERROR = r"(?m)^error: "
_ROLLOUT_ID = r"-([0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12})\.jsonl$"


class _Events(NamedTuple):
    """What a run's JSONL says, for classification."""

    thread_id: str | None
    answer: str | None
    usage: Mapping[str, Any] | None
    turn_failed: str | None
    model_items: bool
    """Any item other than a warning: proof that the model was reached."""
    errors: tuple[str, ...]


def _events(text: str, *, kept: bytes | None) -> _Events:
    thread_id: str | None = None
    answer: str | None = None
    usage: Mapping[str, Any] | None = None
    turn_failed: str | None = None
    model_items = False
    errors: list[str] = []
    for event in json_lines(text):
        kind = event.get("type")
        item = as_dict(event.get("item"))
        if kind == "thread.started" and thread_id is None:
            thread_id = as_str(event.get("thread_id"))
        elif kind == "item.completed" and item.get("type") == "agent_message":
            answer = as_str(item.get("text"))
            model_items = True
        elif kind in ("item.started", "item.updated", "item.completed"):
            if item.get("type") == "error":
                errors.append(as_str(item.get("message")) or "")
            else:
                model_items = True
        elif kind == "turn.completed":
            usage = as_dict(event.get("usage"))
        elif kind == "turn.failed":
            turn_failed = as_str(as_dict(event.get("error")).get("message")) or "turn failed"
        elif kind == "error":
            errors.append(as_str(event.get("message")) or "")
    if kept is not None:
        answer = _tail_answer(kept)
    return _Events(thread_id, answer, usage, turn_failed, model_items, tuple(errors))


def _thread_id(stdout: bytes) -> str | None:
    """The id of the first ``thread.started`` event (the first line; lenient decode)."""
    for event in json_lines(text_of(stdout)):
        if event.get("type") == "thread.started":
            return as_str(event.get("thread_id"))
    return None


def _tail_answer(kept: bytes) -> str | None:
    """The answer of a stream whose middle was cut out, or ``None`` if it is not provable.

    Only a run that ended normally qualifies: the last two events must be the final
    ``agent_message`` and ``turn.completed``, both wholly inside the kept tail.
    """
    lines = last_json_lines(kept, 2)
    if lines is None:
        return None
    message, last = lines
    item = as_dict(message.get("item"))
    if last.get("type") != "turn.completed" or message.get("type") != "item.completed":
        return None
    return as_str(item.get("text")) if item.get("type") == "agent_message" else None


def _refusal(stderr: str, events: _Events, returncode: int | None) -> Failure | None:
    """A failure that proves no request reached the model, or ``None``."""
    if events.model_items:
        return None
    said = "\n".join([stderr, events.turn_failed or "", *events.errors])
    if _NOT_FOUND in said:
        return not_submitted("session not found", stderr or said, session_not_found=True)
    if _MISSING_KEY in said:
        named = re.search(_MISSING_KEY + r": [`'\"]?([A-Za-z_][A-Za-z0-9_]*)", said)
        return missing_credential(named.group(1) if named else None, said.strip())
    if _UNTRUSTED in said:
        return not_submitted("untrusted directory", said.strip())
    if returncode == 2 and events.thread_id is None and re.search(_CLAP_ERROR, stderr):
        return not_submitted("argument error", stderr)
    return None


_STATUS = r"\b(?:unexpected status|last status:)\s+(\d{3})\b"


def _status_in(said: str) -> int | None:
    """The HTTP status codex quotes in a failure (``unexpected status 401 Unauthorized``,
    ``exceeded retry limit, last status: 429``); ``None`` for its own words (``Quota
    exceeded. ...``), which :func:`refusal_in` reads by themselves."""
    found = re.search(_STATUS, said)
    return int(found.group(1)) if found else None


def _provider_names(provider: Mapping[str, Any]) -> list[str]:
    """The variable names one provider table reads: ``env_key``, ``env_http_headers``."""
    names = [provider["env_key"]] if isinstance(provider.get("env_key"), str) else []
    headers = as_dict(provider.get("env_http_headers")).values()
    return names + [value for value in headers if isinstance(value, str)]


@final
class CodexAdapter:
    """``codex exec --json`` in the read-only sandbox, resuming with ``exec … resume``."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = PRODUCT
    default_executable: str = "codex"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH

    def user_config_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """The user's own configuration, which may name credential variables:
        ``$CODEX_HOME/config.toml`` (default ``~/.codex``) and its profile files (a last
        component with ``*`` is a pattern). Never the repository's ``.codex/``."""
        root = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return (root / CONFIG_NAME, root / PROFILE_GLOB)

    def configured_env_names(self, texts: Mapping[str, str]) -> tuple[str, ...]:
        """The variables the user's configuration names for credentials: every
        ``model_providers.<id>.env_key`` and ``env_http_headers`` value, at the top level
        and in legacy ``[profiles.<name>]`` tables. ``texts``: file name -> TOML text;
        a file that is not TOML names nothing (codex reports it itself)."""
        import tomllib

        names: list[str] = []
        for text in texts.values():
            if "env_key" not in text and "env_http_headers" not in text:
                continue  # the usual file: no TOML parse
            try:
                document = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                continue
            profiles = as_dict(document.get("profiles")).values()
            for table in (document, *(as_dict(p) for p in profiles)):
                for provider in as_dict(table.get("model_providers")).values():
                    names.extend(_provider_names(as_dict(provider)))
        return tuple(dict.fromkeys(n for n in names if re.fullmatch(ENV_NAME_PATTERN, n)))

    def probe_args(self) -> tuple[str, ...] | None:
        """``codex --version`` prints ``codex-cli 0.171.0`` (after a warning, sometimes)."""
        return ("--version",)

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Every supported version is read-only and resumable; only the version is read."""
        from review_loop.agents.models import Capabilities

        found = re.search(r"codex-cli\s+(\S+)", probe_output or "")
        return Capabilities(version=found.group(1) if found else version_in(probe_output))

    def required_flags(self, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
        """:data:`READ_ONLY_FLAGS` (read-only) and :data:`NO_PROJECT_CODE_FLAGS` (lockdown;
        the untrusted-project override is a ``-c``, already required), as ``codex exec
        --help`` lists them: they are ``exec``'s flags."""
        return (
            *flag_requirements(READ_ONLY_FLAGS, "read-only", HELP_ARGS),
            *flag_requirements(NO_PROJECT_CODE_FLAGS, "lockdown", HELP_ARGS),
        )

    def login_args(self) -> tuple[str, ...] | None:
        """``codex login status`` reads the stored login (``auth.json``); no model call."""
        return ("login", "status")

    def login_state(self, output: str, returncode: int | None) -> LoginState:
        """``Logged in using …`` (exit 0) or ``Not logged in`` (exit 1). A key in the
        environment, or a custom provider's ``env_key``, works without a stored login."""
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        said = next((line for line in lines if "logged in" in line.lower()), "")
        if returncode == 0 and said.lower().startswith("logged in"):
            return LoginState("logged-in", said[:200])
        if said.lower().startswith("not logged in"):
            return LoginState(
                "logged-out",
                f"{said}: no stored login (an API key in the environment or a custom "
                "provider's env_key works without one)",
            )
        return LoginState("unknown", (lines[-1] if lines else "")[:200])

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """``codex exec --json <read-only> … -C <cwd> [resume <id>] -``; prompt on stdin."""
        from review_loop.agents.models import Invocation

        refuse_too_old(PRODUCT, capabilities.version, OLDEST_VERSION)
        argv = [*require_command(PRODUCT, command), "exec", "--json", *READ_ONLY_FLAGS]
        argv += ["--skip-git-repo-check", "--disable", "unbounded_connection_retries"]
        argv += [*NO_PROJECT_CODE_FLAGS, *untrusted_project(request.cwd)]
        argv += ["-C", directory_argument(PRODUCT, request.cwd)]
        session_id: str | None = None
        if request.resume_session_id is not None:
            session_id = checked_session_id(PRODUCT, request.resume_session_id)
            argv += ["resume", session_id]
        argv.append("-")
        return Invocation(
            argv=tuple(argv),
            stdin=prompt_bytes(PRODUCT, request.prompt),
            cwd=request.cwd,
            session_id=session_id,
        )

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Read the event stream; warnings (``error`` items and events) are not failures.

        A run ended by a timeout, a STOP or a cancellation keeps the thread id it printed
        (``thread.started`` comes before the request): the session exists, and resuming it
        is the only way to learn whether the model got the prompt.
        """
        import dataclasses

        from review_loop.agents.models import DeliveryState, Reply

        failure = generic_failure(completed)
        if failure is not None:
            if failure.state is DeliveryState.DELIVERY_UNKNOWN and failure.session_id is None:
                thread_id = _thread_id(completed.stdout) or invocation.session_id
                failure = dataclasses.replace(failure, session_id=thread_id)
            return failure
        if completed.stdout_truncated:
            stdout = text_of(completed.stdout)  # the cut may split a character
        else:
            decoded = decode_utf8(completed.stdout)
            if decoded is None:
                return unknown(
                    "parse failed", "stdout is not UTF-8", session_id=invocation.session_id
                )
            stdout = decoded
        events = _events(stdout, kept=completed.stdout if completed.stdout_truncated else None)
        session_id = events.thread_id or invocation.session_id
        stderr = text_of(completed.stderr)
        if events.turn_failed is not None or completed.returncode != 0 or events.answer is None:
            refusal = _refusal(stderr, events, completed.returncode)
            if refusal is not None:
                return refusal
        if events.turn_failed is not None:
            said = events.turn_failed
            named = refusal_in(_status_in(said), said)
            if named is not None:  # a model item (or a cut stream) means work was done
                nothing = not events.model_items and not completed.stdout_truncated
                return refused(named, said, processed_nothing=nothing, session_id=session_id)
            return unknown("turn failed", said, session_id=session_id)
        if completed.returncode != 0:
            return unknown(exit_reason(completed), detail_of(completed), session_id=session_id)
        if events.answer is None:
            if completed.stdout_truncated:
                return unknown("output too large", detail_of(completed), session_id=session_id)
            if events.thread_id is not None:
                return unknown("empty output", detail_of(completed), session_id=session_id)
            return no_answer(completed, stdout, session_id=session_id)
        if not events.answer.strip():
            return unknown("empty output", detail_of(completed), session_id=session_id)
        return Reply(
            text=events.answer,
            session_id=session_id,
            usage=usage_of(
                events.usage,
                input_key="input_tokens",
                output_key="output_tokens",
                cached_key="cached_input_tokens",
            ),
        )

    def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
        """Complete once the last event is ``turn.completed`` or ``turn.failed``: ``codex
        exec`` runs one turn and prints nothing after its end. Past the output cap, only
        a last line wholly inside the kept tail counts."""
        if completed.stdout_truncated:
            lines = last_json_lines(completed.stdout, 1)
            last = lines[0] if lines else None
        else:
            stdout = decode_utf8(completed.stdout)
            events = list(json_lines(stdout)) if stdout is not None else []
            ends_with_event = stdout is not None and stdout.rstrip().endswith("}")
            last = events[-1] if events and ends_with_event else None
        return last is not None and last.get("type") in ("turn.completed", "turn.failed")

    def own_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where Codex keeps its login (``auth.json``), configuration and sessions:
        ``${CODEX_HOME:-~/.codex}``. Visible to a codex reviewer, hidden from every other."""
        return (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex",)

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """``${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-*.jsonl`` (all repos).

        Line 1 (``session_meta``) can be ~30 KB; its ``id`` and ``cwd`` come first, so
        8 KiB is enough even when the line is cut.
        """
        root = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return [SessionStore(root=root, pattern="sessions/*/*/*/rollout-*.jsonl", head_bytes=8192)]

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Line 1's ``payload.id`` and ``payload.cwd``; only sessions of ``repo``."""
        raw = text_of(file.head)
        first = raw.split("\n", 1)[0]
        session_id: str | None = None
        cwd: str | None = None
        meta = json_object(first)
        if meta is not None:
            if meta.get("type") != "session_meta":
                return None
            payload = as_dict(meta.get("payload"))
            session_id = as_str(payload.get("id"))
            cwd = as_str(payload.get("cwd"))
        else:  # line 1 longer than the head: read the leading fields from the raw text
            if '"session_meta"' not in first:
                return None
            start = first.find('"payload"')
            if start < 0:
                return None
            session_id = string_field(first, "id", start=start)
            cwd = string_field(first, "cwd", start=start)
        if session_id is None:
            found = re.search(_ROLLOUT_ID, file.path.name)
            session_id = found.group(1) if found else None
        if session_id is None or cwd is None or not same_path(cwd, repo):
            return None
        return StoredSession(
            product=PRODUCT,
            session_id=session_id,
            cwd=cwd,
            updated=iso_utc(file.mtime),
            title=None,
            source=SOURCE,
        )

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """``codex resume <id>`` and ``codex exec resume <id> "<prompt>"``.

        Read-only: ``codex resume <id> <read-only flags>`` and ``codex exec <read-only flags>
        resume <id> "<prompt>"`` (``codex exec resume`` rejects ``-s``, so the flags go before
        ``resume`` there, as in :meth:`build`).
        """
        return _RESUME.commands(session_id, command, self.default_executable)


_RESUME: Final = ResumeForms(
    ("resume", SESSION_ID),
    ("exec", "resume", SESSION_ID),
    read_only=(
        ("resume", SESSION_ID, *READ_ONLY_FLAGS),
        ("exec", *READ_ONLY_FLAGS, "resume", SESSION_ID),
    ),
)


ADAPTER: Final = CodexAdapter()
"""The instance the registry loads."""

if TYPE_CHECKING:
    _conforms: Adapter = ADAPTER
