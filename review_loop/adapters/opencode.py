"""opencode (``opencode run`` 1.18): JSON events on stdout, the prompt on stdin.

Read-only by construction, in two layers set through the environment (opencode has no flag
for either; docs/cli-adapters.md §5):

- ``OPENCODE_PERMISSION`` (:data:`PERMISSION`): every tool denied but ``read``, ``glob``,
  ``grep`` and ``list``. opencode merges it after every configuration file, and a denied
  tool is not even offered to the model (a call to it ends as "unavailable tool").
- a dedicated agent, :data:`AGENT`, defined in ``OPENCODE_CONFIG_CONTENT`` with the same
  rules and selected with ``--agent``: a per-agent permission in the user's own config
  (``agent.build.permission.bash = "allow"``) beats the top-level one, so the run must not
  use an agent the user can loosen. ``"*": "deny"`` also removes ``task`` (a subagent runs
  its own tools) and every MCP tool.

Nothing from the repository runs: ``OPENCODE_DISABLE_PROJECT_CONFIG=1`` stops its
``opencode.json`` (MCP servers, providers, the ``npm install`` opencode runs in each
config directory) and ``.opencode/`` configs; opencode 1.18's second config loader still
imports the plugins of ``.opencode/`` and ``opencode.json`` without looking at that flag,
so those paths are hidden from the CLI too (:data:`HIDDEN_PATHS`). opencode caches a
project id in ``.git/opencode`` on its first run in a repository, so the orchestrator
binds the repository read-only around it (``Invocation.read_only_repository``).

The session id (``ses_…``) is issued by the CLI and arrives in every event; a resume passes
``--session <id>``. Sessions live in opencode's SQLite database, which a session store
cannot read by its first bytes, so ``sessions`` lists them from review-loop's own records.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from review_loop.adapters._common import (
    SESSION_ID,
    ResumeForms,
    as_dict,
    as_float,
    as_int,
    as_str,
    checked_session_id,
    no_answer,
    prompt_bytes,
    require_command,
    stdout_or_failure,
    unknown,
    version_in,
)
from review_loop.adapters.base import (
    LoginState,
    RequiredFlag,
    SessionFile,
    SessionStore,
    detail_of,
    flag_requirements,
    json_lines,
)
from review_loop.adapters.openai_compatible import (
    SESSION_NOT_FOUND,
    api_error,
    startup_refusal,
)
from review_loop.adapters.refusals import refuse_too_old
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
        Usage,
    )

PRODUCT: Final = "opencode"

OLDEST_VERSION: Final = (1, 18, 0)
"""The oldest opencode line whose permission variables and project-config switch were
proven here (1.18.33, ``tests/e2e``); an older ``opencode --version`` is refused
``cli_too_old``."""

AGENT: Final = "review-loop-reader"
"""The agent every run uses, defined by review-loop (:data:`CONFIG_CONTENT`)."""

PERMISSION: Final = json.dumps(
    {"*": "deny", "read": "allow", "glob": "allow", "grep": "allow", "list": "allow"},
    separators=(",", ":"),
)
"""Every tool denied but the four that only read (``list`` is not offered by 1.18)."""

CONFIG_CONTENT: Final = json.dumps(
    {
        "agent": {
            AGENT: {
                "mode": "primary",
                "description": "the read-only reviewer of review-loop",
                "permission": json.loads(PERMISSION),
            }
        },
        "snapshot": False,
        "share": "disabled",
        "autoupdate": False,
    },
    separators=(",", ":"),
)
"""Merged after the user's configuration: the read-only agent, and no snapshot (a second
git tree of the repository in opencode's data directory), sharing or self-update."""

READ_ONLY_ENV: Final = {
    "OPENCODE_PERMISSION": PERMISSION,
    "OPENCODE_CONFIG_CONTENT": CONFIG_CONTENT,
}
"""Set for every run and carried by the read-only resume commands."""

READ_ONLY_FLAGS: Final = ("--agent", AGENT)
"""Present in every argv ``build`` returns (the agent :data:`READ_ONLY_ENV` defines)."""

TITLE: Final = "review-loop"
"""Every session's title: given, opencode sends no title-generation request (which would
carry the whole prompt to its small model a second time), and the prompt stays off argv."""

ENV: Final = {
    **READ_ONLY_ENV,
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    # opencode also reads Claude Code's files (CLAUDE.md, ~/.claude/skills): not its own.
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
}

HIDDEN_PATHS: Final = (".opencode", "opencode.json", "opencode.jsonc")
"""The repository's opencode configuration, hidden from every run: 1.18's plugin loader
imports ``{plugin,plugins}/*.{js,ts}`` of ``.opencode/`` and the ``plugin`` entries of
``opencode.json[c]`` whatever ``OPENCODE_DISABLE_PROJECT_CONFIG`` says; proven against the
real CLI by ``tests/e2e/test_hostile_new_clis.py``."""
ANCESTOR_FILES: Final = HIDDEN_PATHS
"""opencode walks up from its working directory for the same names."""

ENV_PASSTHROUGH: Final = EnvPassthrough(prefixes=("OPENCODE_",))
"""opencode's own switches (``OPENCODE_CONFIG``, ``OPENCODE_CONFIG_DIR``, ``OPENCODE_DB``…).
Its logins live in its data directory (``opencode auth login``); a provider key kept in
the environment reaches it when the user's config names it (``{env:NAME}``, read by
:meth:`OpenCodeAdapter.configured_env_names`) or the user adds it (prefs
``envPassthrough``): a provider's key is shared with other tools, never opencode's to take."""

SOURCE: Final = "cli-store"
# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
_ENV_REFERENCE: Final = r"\{env:([^}\s]+)\}"
"""opencode's variable substitution in a config file's text (``"apiKey": "{env:MY_KEY}"``)."""
_COLOUR: Final = r"\x1b\[[0-9;?]*[A-Za-z]"
"""The colour codes ``opencode auth list`` prints even into a pipe."""


def _data_dir(env: Mapping[str, str], home: Path) -> Path:
    base = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
    return base / "opencode"


def _config_dir(env: Mapping[str, str], home: Path) -> Path:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return base / "opencode"


def _session_id(events: Iterable[Mapping[str, Any]]) -> str | None:
    for event in events:
        if found := as_str(event.get("sessionID")):
            return found
    return None


def _answer(events: list[dict[str, Any]]) -> str:
    """The text parts of the last step (after the last ``step_start``)."""
    starts = [i for i, event in enumerate(events) if event.get("type") == "step_start"]
    last_step = events[starts[-1] :] if starts else events
    texts = [
        text
        for event in last_step
        if event.get("type") == "text" and (text := as_str(as_dict(event.get("part")).get("text")))
    ]
    return "\n".join(texts)


def _usage_and_cost(events: list[dict[str, Any]]) -> tuple[Usage | None, float | None]:
    """Token counts and cost summed over every ``step_finish``."""
    from review_loop.agents.models import Usage

    totals: dict[str, int] = {}
    cost: float | None = None
    for event in events:
        if event.get("type") != "step_finish":
            continue
        part = as_dict(event.get("part"))
        tokens = as_dict(part.get("tokens"))
        counts = {
            "input": as_int(tokens.get("input")),
            "output": as_int(tokens.get("output")),
            "cached": as_int(as_dict(tokens.get("cache")).get("read")),
        }
        for key, count in counts.items():
            if count is not None:
                totals[key] = totals.get(key, 0) + count
        if (spent := as_float(part.get("cost"))) is not None:
            cost = (cost or 0.0) + spent
    usage = None
    if totals:
        usage = Usage(
            input_tokens=totals.get("input"),
            output_tokens=totals.get("output"),
            cached_input_tokens=totals.get("cached"),
        )
    return usage, cost


def _error(event: Mapping[str, Any]) -> tuple[int | None, str]:
    """(HTTP status, message) of an ``error`` event (``error.data`` of an ``APIError``)."""
    error = as_dict(event.get("error"))
    data = as_dict(error.get("data"))
    message = as_str(data.get("message")) or as_str(error.get("name")) or "error"
    return as_int(data.get("statusCode")), message


def _processed_nothing(events: list[dict[str, Any]]) -> bool:
    """Whether the run's events are its errors alone: opencode emits ``step_start`` when a
    response begins to stream (and ``text``, ``tool_use``, ``step_finish`` after it), so a
    run with none saw every request it sent (its retries of the first one) refused."""
    return all(event.get("type") == "error" for event in events)


_STARTUP: Final = (
    (r"Session not found", SESSION_NOT_FOUND),
    # yargs validation, printed with the usage text and exit 1 before anything runs.
    (
        (
            r"Unknown arguments?:|Not enough arguments following|Invalid values:"
            r"|Missing required argument"
        ),
        "argument error",
    ),
)


def _startup_refusal(stderr: str, stdout: str, returncode: int | None) -> Failure | None:
    return startup_refusal(stderr, stdout, returncode, _STARTUP)


def _assignments(env: Mapping[str, str]) -> list[str]:
    """``NAME=value`` words a POSIX shell reads as variable assignments."""
    return [f"{name}={shlex.quote(value)}" for name, value in env.items()]


@final
class OpenCodeAdapter:
    """``opencode run --format json --agent review-loop-reader`` with the prompt on stdin."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = PRODUCT
    default_executable: str = "opencode"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH

    def user_config_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """The user's own config, ``${XDG_CONFIG_HOME:-~/.config}/opencode/opencode.json[c]``
        (and ``$OPENCODE_CONFIG``): its values may name variables. Never the repository's."""
        directory = _config_dir(env, home)
        named = (Path(env["OPENCODE_CONFIG"]),) if env.get("OPENCODE_CONFIG") else ()
        return (directory / "opencode.json", directory / "opencode.jsonc", *named)

    def configured_env_names(self, texts: Mapping[str, str]) -> tuple[str, ...]:
        """The variables the user's config substitutes (``{env:NAME}``, which opencode
        replaces in the file's text when it loads it: a provider's ``apiKey``)."""
        names = (m.group(1) for text in texts.values() for m in re.finditer(_ENV_REFERENCE, text))
        return tuple(dict.fromkeys(n for n in names if re.fullmatch(ENV_NAME_PATTERN, n)))

    def probe_args(self) -> tuple[str, ...] | None:
        """``opencode --version`` prints ``1.18.33``."""
        return ("--version",)

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Every supported version is read-only and resumable; only the version is read."""
        from review_loop.agents.models import Capabilities

        return Capabilities(version=version_in(probe_output))

    def required_flags(self, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
        """``--agent`` (the read-only agent :data:`READ_ONLY_ENV` defines), as ``opencode
        run --help`` lists it. The rest of its lockdown is environment variables, which no
        help page lists."""
        return flag_requirements(READ_ONLY_FLAGS, "read-only", ("run", "--help"))

    def login_args(self) -> tuple[str, ...] | None:
        """``opencode auth list`` lists the stored credentials (``auth.json`` of its data
        directory) and the provider keys in its environment; it asks no model."""
        return ("auth", "list")

    def login_state(self, output: str, returncode: int | None) -> LoginState:
        """Logged in when it lists a stored credential or a provider key in the
        environment it was given (the one a reviewer gets); ``0 credentials`` and no
        environment variable is logged out."""
        text = re.sub(_COLOUR, "", output)
        stored = re.search(r"(\d+)\s+credentials?\b", text)
        from_env = re.search(r"(\d+)\s+environment variables?\b", text)
        if returncode != 0 or stored is None:
            last = [line.strip() for line in text.splitlines() if line.strip()]
            return LoginState("unknown", (last[-1] if last else "")[:200])
        counts = [(int(stored[1]), "stored credential(s)")]
        if from_env is not None:
            counts.append((int(from_env[1]), "provider key(s) in its environment"))
        said = ", ".join(f"{count} {what}" for count, what in counts)
        if any(count for count, _ in counts):
            return LoginState("logged-in", f"opencode auth list: {said}")
        return LoginState(
            "logged-out",
            f"opencode auth list: {said} (log in with: opencode auth login)",
        )

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """``opencode run --format json --agent <reader> --title review-loop [--session <id>]``.

        A preassigned ``session_id`` is ignored: opencode issues its own (``ses_…``).

        Raises:
            AdapterRefusalError: a resume id that is not a plain token; an empty prompt.
        """
        from review_loop.agents.models import Invocation

        refuse_too_old(PRODUCT, capabilities.version, OLDEST_VERSION)
        argv = [*require_command(PRODUCT, command), "run", "--format", "json", *READ_ONLY_FLAGS]
        session_id = None
        if request.resume_session_id is not None:
            session_id = checked_session_id(PRODUCT, request.resume_session_id)
            argv += ["--session", session_id]
        else:
            argv += ["--title", TITLE]
        return Invocation(
            argv=tuple(argv),
            env=dict(ENV),
            stdin=prompt_bytes(PRODUCT, request.prompt),
            cwd=request.cwd,
            session_id=session_id,
            hidden_paths=HIDDEN_PATHS,
            read_only_repository=True,
        )

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Read the JSON events: the last step's text, the session id, tokens and cost."""
        from review_loop.agents.models import Reply

        stdout = stdout_or_failure(invocation, completed, _startup_refusal)
        if not isinstance(stdout, str):
            return stdout
        events = list(json_lines(stdout))
        session_id = _session_id(events) or invocation.session_id
        errors = [event for event in events if event.get("type") == "error"]
        if errors:
            status, message = _error(errors[-1])
            nothing = _processed_nothing(events)
            return api_error(status, message, processed_nothing=nothing, session_id=session_id)
        if completed.returncode != 0 or not events:
            return no_answer(completed, stdout, session_id=session_id)
        text = _answer(events)
        if not text.strip():
            return unknown("empty output", detail_of(completed), session_id=session_id)
        usage, cost = _usage_and_cost(events)
        return Reply(text=text, session_id=session_id, usage=usage, cost_usd=cost)

    def own_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where opencode keeps its logins (``auth.json``), sessions and settings: its data
        directory, ``${XDG_CONFIG_HOME:-~/.config}/opencode`` and ``~/.opencode``. Visible to
        an opencode reviewer, hidden from every other."""
        return (_data_dir(env, home), _config_dir(env, home), home / ".opencode")

    @property
    def ancestor_files(self) -> tuple[str, ...]:
        """What opencode loads from every directory above its working directory (its
        plugin loader walks up for them). The sandbox hides them from every reviewer."""
        return ANCESTOR_FILES

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """None: opencode keeps sessions in SQLite (``opencode.db``), not in files a head
        read can parse; review-loop's own records list them."""
        return []

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Never called (no session store)."""
        return None

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """``opencode --session <id>`` and ``opencode run --session <id> "<prompt>"``.

        Read-only: the same with :data:`READ_ONLY_ENV` as variable assignments in front
        (opencode takes its permission rules and agents from the environment only) and
        ``--agent review-loop-reader``.
        """
        return _RESUME.commands(session_id, command, self.default_executable)


_RESUME: Final = ResumeForms(
    ("--session", SESSION_ID),
    ("run", "--session", SESSION_ID),
    read_only=(
        ("--session", SESSION_ID, *READ_ONLY_FLAGS),
        ("run", "--session", SESSION_ID, *READ_ONLY_FLAGS),
    ),
    read_only_lead=" ".join(_assignments(READ_ONLY_ENV)),
)


ADAPTER: Final = OpenCodeAdapter()
"""The instance the registry loads."""

if TYPE_CHECKING:
    _conforms: Adapter = ADAPTER
