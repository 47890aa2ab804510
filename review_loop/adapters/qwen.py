"""Qwen Code (``qwen`` 0.24): one JSON array of events on stdout, the prompt on stdin.

Read-only by construction, in two layers (docs/cli-adapters.md §6):

- ``--approval-mode plan`` refuses writes and state-changing commands when a tool runs;
- ``--exclude-tools`` names every tool of 0.24 but ``read_file``, ``grep_search``, ``glob``
  and ``list_directory`` (:data:`EXCLUDED_TOOLS`). Each becomes a deny rule, which beats an
  allow rule in the user's own settings (``permissions.allow: ["write_file"]`` writes
  under plan mode alone) and removes the tool from what the model is offered. Plan mode
  alone also leaves ``enter_worktree`` running (it writes ``.qwen/worktrees/`` and a
  branch into the repository), and ``tool_call`` can call any registered tool.

``--safe-mode`` turns off every customization, the user's too: hooks, extensions, skills,
MCP servers, context files, and the background memory agents that would otherwise write
what a hostile repository says into the user's cross-project ``~/.qwen/memories``.

Nothing from the repository runs: qwen trusts every folder by default and loads its
``.qwen/settings.json`` (MCP servers, 22 hook events, discovery commands, approval mode,
providers), ``.qwen/.env`` or ``.env`` and ``.mcp.json``; it even rewrites the settings
file (adding ``$version``) before any trust check. So those paths are hidden from the CLI
(:data:`HIDDEN_PATHS`), and the repository is mounted read-only around it
(``Invocation.read_only_repository``).

The session id is chosen before launch (``--session-id <uuid>``); a resume passes
``--resume <id>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from review_loop.adapters._common import (
    SESSION_ID,
    ResumeForms,
    as_dict,
    as_str,
    checked_session_id,
    content_text,
    head_objects,
    iso_utc,
    no_answer,
    preassigned_uuid,
    prompt_bytes,
    require_command,
    same_path,
    stdout_or_failure,
    title_of,
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
    )

PRODUCT: Final = "qwen"

OLDEST_VERSION: Final = (0, 24, 0)
"""The oldest Qwen Code line whose plan mode, ``--exclude-tools`` and ``--safe-mode`` were
proven here (0.24.4, ``tests/e2e``); an older ``qwen --version`` is refused
``cli_too_old``."""

READING_TOOLS: Final = ("read_file", "grep_search", "glob", "list_directory")
"""The tools a review may use; every other tool of 0.24 is in :data:`EXCLUDED_TOOLS`."""
EXCLUDED_TOOLS: Final = (
    "exec,edit,write_file,zoom_image,run_shell_command,todo_write,save_memory,agent,skill,"
    "exit_plan_mode,enter_plan_mode,web_fetch,web_search,image_gen,lsp,ask_user_question,"
    "cron_create,cron_list,cron_delete,loop_wakeup,create_sub_session,list_agents,task_stop,"
    "task_create,task_update,task_list,team_create,team_delete,team_plan_approval,"
    "request_shutdown,send_message,structured_output,monitor,notebook_edit,tool_call,"
    "tool_search,read_mcp_resource,enter_worktree,exit_worktree,workflow,artifact,"
    "record_artifact,record_source,report_findings,get_goal,update_goal,"
    "omni_downsample_image,omni_downscale_video,omni_downsample_audio,omni_extract_keyframes,"
    "omni_extract_audio,omni_clip_video,omni_convert_image,omni_transcribe_audio,"
    "omni_clip_image,omni_clip_audio,omni_caption_image,omni_caption_audio,omni_ocr_image,"
    "omni_understand_video_segments,omni_recall_media_memory,propose_goal,display_image"
)
"""Every tool name qwen 0.24 registers (its ``ToolNames``) but :data:`READING_TOOLS`."""

READ_ONLY_FLAGS: Final = ("--approval-mode", "plan", "--exclude-tools", EXCLUDED_TOOLS)
"""Present in every argv ``build`` returns."""

NO_PROJECT_CODE_FLAGS: Final = ("--safe-mode",)
"""Present in every argv ``build`` returns: no hook, extension, skill, MCP server or memory
agent runs, from any source."""

HIDDEN_PATHS: Final = (".qwen", ".env", ".mcp.json")
"""The repository's Qwen Code configuration, hidden from every run; proven against the real
CLI by ``tests/e2e/test_hostile_new_clis.py``."""
ANCESTOR_FILES: Final = (".qwen/.env", ".env")
"""Loaded from the first directory above the working directory that has one."""

RETRY_DEFAULTS: Final = Path(__file__).with_name("qwen_defaults.json")
"""Qwen Code's own setting that bounds a refused request, passed as its system defaults
(``QWEN_CODE_SYSTEM_DEFAULTS_PATH``, the lowest settings tier: the user's own settings and
the administrator's system settings still win; ``QWEN_CODE_SYSTEM_SETTINGS_PATH`` would
replace the administrator's file, so it is not used).

0.24 retries a 429 (a rate limit and OpenAI's ``insufficient_quota`` alike) seven times
inside one attempt, 1.5 s doubling to 30 s (a constant of the CLI, about 80 s), and then
starts the whole attempt again ``model.generationConfig.maxRetries`` times (10 by default)
after ``retryInitialDelayMs`` (60 s) doubling to 5 minutes: past the 20-minute default
deadline, so the refusal ended as ``timeout``. ``maxRetries: 0`` ends it after the seven
tries with its name. A transient 5xx is retried by the same inner loop, which that setting
does not touch (it counts only rate-limit restarts), so it still recovers.

The file carries qwen's settings ``$version`` (4): qwen rewrites a settings file whose
version is missing or older, and this one must stay as shipped. Proven against the real
CLI by ``tests/e2e/test_refusals_new_clis_real.py`` (the file unchanged after a run)."""

ENV: Final = {"QWEN_CODE_SYSTEM_DEFAULTS_PATH": str(RETRY_DEFAULTS)}
UNSET_ENV: Final = ("QWEN_CODE_UNATTENDED_RETRY",)
"""Never passed, though the ``QWEN_`` prefix would: set to ``true``/``1`` it makes qwen retry
a 429 without a count (backing off to 5 minutes, for up to 6 hours), so a rate limit or an
exhausted quota is never named and ``--fallback`` never answers; every such run ends at
the deadline. It is a switch for qwen's own unattended jobs, read from the environment the
user's shell gives every qwen; a user who wants more retries under review-loop says so in
``~/.qwen/settings.json`` (``model.generationConfig.maxRetries``, which still wins)."""

ENV_PASSTHROUGH: Final = EnvPassthrough(
    names=("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY"),
    prefixes=("QWEN_",),
)
"""Qwen Code's OpenAI-compatible credentials and endpoint (what its ``openai`` auth reads),
DashScope's key, and its own switches (``QWEN_HOME``)."""

SOURCE: Final = "cli-store"
# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
_SETTINGS_REFERENCE: Final = r"\$(?:(\w+)|\{([^}]+?)(?::-[^}]*)?\})"
"""A variable reference in a settings string (``$X``, ``${X}``, ``${X:-default}``), which qwen
resolves when it loads a settings file (it inherits gemini-cli's loader)."""
_ENV_KEY: Final = r'"envKey"\s*:\s*"([^"]+)"'
"""``modelProviders`` entries name the variable holding their key."""
_MAX_DIR_LENGTH: Final = 200

_STARTUP: Final = (
    (r"No saved session found with ID", SESSION_NOT_FOUND),
    (r"No auth type is selected|Please set an Auth method", "auth not configured"),
    # yargs validation, printed with the usage text and exit 1 before anything runs.
    (
        (
            r"Unknown arguments?:|Not enough arguments following|Invalid values:"
            r"|Missing required argument|mutually exclusive|Invalid session ID"
            r"|must be a valid UUID|is already in use"
        ),
        "argument error",
    ),
)
_API_ERROR: Final = r"\[API Error: (\d{3})\b"
"""How qwen quotes the provider's error: ``[API Error: 429 <the provider's message>]``."""


def _qwen_home(env: Mapping[str, str], home: Path) -> Path:
    return Path(env["QWEN_HOME"]) if env.get("QWEN_HOME") else home / ".qwen"


def _project_glob(cwd: str) -> str:
    """The store glob for ``cwd``: every non-alphanumeric character becomes ``-``; a long
    name may be cut, so past 200 characters any suffix matches (the file's ``cwd`` decides)."""
    escaped = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(escaped) <= _MAX_DIR_LENGTH:
        return f"projects/{escaped}/chats/*.jsonl"
    return f"projects/{escaped[:_MAX_DIR_LENGTH]}*/chats/*.jsonl"


def _events(stdout: str) -> list[dict[str, Any]] | None:
    """The JSON array ``-o json`` prints, or ``None``."""
    import json

    stripped = stdout.strip()
    start = stripped.find("[")
    if start < 0:
        return None
    try:
        value = json.loads(stripped[start:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    return [event for event in value if isinstance(event, dict)]


def _startup_refusal(stderr: str, stdout: str, returncode: int | None) -> Failure | None:
    return startup_refusal(stderr, stdout, returncode, _STARTUP)


def _processed_nothing(events: list[dict[str, Any]]) -> bool:
    """Whether the provider refused the run's first request: no tool result came back (a
    ``user`` event) and every assistant message is qwen's quote of the API error alone
    (no text, thinking or tool call of the model's)."""
    for event in events:
        if event.get("type") == "user":
            return False
        if event.get("type") != "assistant":
            continue
        content = as_dict(event.get("message")).get("content")
        for part in content if isinstance(content, list) else [content]:
            text = (
                as_str(as_dict(part).get("text")) if as_dict(part).get("type") == "text" else None
            )
            if text is None or not text.startswith("[API Error: "):
                return False
    return True


def _result_error(
    events: list[dict[str, Any]],
    result: dict[str, Any],
    completed: Completed,
    session_id: str | None,
) -> Failure:
    """The failure a ``result`` with ``is_error`` (or a failed exit) reports."""
    error = as_dict(result.get("error"))
    message = as_str(error.get("message")) or as_str(result.get("result")) or ""
    status = re.search(_API_ERROR, message)
    return api_error(
        int(status.group(1)) if status else None,
        message or detail_of(completed),
        processed_nothing=_processed_nothing(events),
        session_id=session_id,
    )


@final
class QwenAdapter:
    """``qwen -o json --approval-mode plan --exclude-tools … --safe-mode`` with the prompt on
    stdin."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = PRODUCT
    default_executable: str = "qwen"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH

    def user_config_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """The user's own settings, ``${QWEN_HOME:-~/.qwen}/settings.json``. Never the
        repository's ``.qwen/``."""
        return (_qwen_home(env, home) / "settings.json",)

    def configured_env_names(self, texts: Mapping[str, str]) -> tuple[str, ...]:
        """The variables the user's settings reference (``$NAME``, ``${NAME}``,
        ``${NAME:-default}``) and every ``modelProviders`` ``envKey``."""
        names = [
            match.group(1) or match.group(2)
            for text in texts.values()
            for match in re.finditer(_SETTINGS_REFERENCE, text)
        ]
        names += [m.group(1) for text in texts.values() for m in re.finditer(_ENV_KEY, text)]
        return tuple(dict.fromkeys(n for n in names if n and re.fullmatch(ENV_NAME_PATTERN, n)))

    def probe_args(self) -> tuple[str, ...] | None:
        """``qwen --version`` prints ``0.24.4``."""
        return ("--version",)

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Every supported version is read-only and resumable; only the version is read."""
        from review_loop.agents.models import Capabilities

        return Capabilities(version=version_in(probe_output))

    def required_flags(self, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
        """:data:`READ_ONLY_FLAGS` (read-only) and :data:`NO_PROJECT_CODE_FLAGS` (lockdown),
        as ``qwen --help`` lists them."""
        return (
            *flag_requirements(READ_ONLY_FLAGS, "read-only"),
            *flag_requirements(NO_PROJECT_CODE_FLAGS, "lockdown"),
        )

    def login_state(self, output: str, returncode: int | None) -> LoginState:
        """Unknown, and why: Qwen Code has no login status command (``qwen auth`` was
        removed; it says so and exits 0), and which provider and key it uses is decided
        only when it starts a request, from settings ``modelProviders``, the selected auth
        type and half a dozen provider variables (``OPENAI_API_KEY`` + ``OPENAI_BASE_URL``
        + ``OPENAI_MODEL``, ``BAILIAN_*``, ...). Guessing would report a login it may not use."""
        return LoginState(
            "unknown",
            "qwen has no login status command (`qwen auth` was removed) and picks its "
            "provider and key only when a request starts (settings modelProviders, the "
            "selected auth type, OPENAI_API_KEY/OPENAI_BASE_URL/OPENAI_MODEL and others)",
        )

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """``qwen -o json <read-only flags> --safe-mode --session-id|--resume <id>``.

        Raises:
            AdapterRefusalError: a resume or preassigned id that is not a safe token or
                UUID; an empty prompt.
        """
        from review_loop.agents.models import Invocation

        refuse_too_old(PRODUCT, capabilities.version, OLDEST_VERSION)
        argv = [*require_command(PRODUCT, command), "-o", "json", *READ_ONLY_FLAGS]
        argv += NO_PROJECT_CODE_FLAGS
        if request.resume_session_id is not None:
            session_id = checked_session_id(PRODUCT, request.resume_session_id)
            argv += ["--resume", session_id]
        else:
            session_id = preassigned_uuid(PRODUCT, request.session_id)
            argv += ["--session-id", session_id]
        return Invocation(
            argv=tuple(argv),
            env=dict(ENV),
            unset_env=UNSET_ENV,
            stdin=prompt_bytes(PRODUCT, request.prompt),
            cwd=request.cwd,
            session_id=session_id,
            hidden_paths=HIDDEN_PATHS,
            read_only_repository=True,
        )

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Read the ``result`` event: its text, session id, usage; classify refusals."""
        from review_loop.agents.models import Reply

        stdout = stdout_or_failure(invocation, completed, _startup_refusal)
        if not isinstance(stdout, str):
            return stdout
        events = _events(stdout) or []
        results = [e for e in events if e.get("type") == "result"]
        if not results:
            return no_answer(completed, stdout, session_id=invocation.session_id)
        result = results[-1]
        session_id = as_str(result.get("session_id")) or invocation.session_id
        if result.get("is_error") is True or completed.returncode != 0:
            # An assistant message quoting "[API Error: …]" comes first: never an answer.
            return _result_error(events, result, completed, session_id)
        text = as_str(result.get("result")) or ""
        if not text.strip():
            return unknown("empty output", detail_of(completed), session_id=session_id)
        usage = usage_of(
            result.get("usage"),
            input_key="input_tokens",
            output_key="output_tokens",
            cached_key="cache_read_input_tokens",
        )
        return Reply(text=text, session_id=session_id, usage=usage)

    def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
        """Complete once stdout is the one JSON array (``-o json``) ending in a ``result``."""
        if completed.stdout_truncated:
            return False
        stdout = decode_utf8(completed.stdout)
        events = _events(stdout) if stdout is not None else None
        return bool(events) and events is not None and events[-1].get("type") == "result"

    @property
    def ancestor_files(self) -> tuple[str, ...]:
        """What Qwen Code loads from a directory above its working directory: the first
        ``.qwen/.env`` or ``.env`` walking up. The sandbox hides them from every reviewer."""
        return ANCESTOR_FILES

    def own_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where Qwen Code keeps its OAuth login, settings and sessions:
        ``${QWEN_HOME:-~/.qwen}``. Visible to a qwen reviewer, hidden from every other."""
        return (_qwen_home(env, home),)

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """``${QWEN_HOME:-~/.qwen}/projects/<escaped repo>/chats/<id>.jsonl``."""
        return [SessionStore(root=_qwen_home(env, home), pattern=_project_glob(str(repo)))]

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Line 1's ``sessionId`` and ``cwd``; the title from the first user message."""
        objects = head_objects(file.head)
        if not objects:
            return None
        first = objects[0]
        session_id = as_str(first.get("sessionId"))
        cwd = as_str(first.get("cwd"))
        if session_id is None or cwd is None or not same_path(cwd, repo):
            return None
        return StoredSession(
            product=PRODUCT,
            session_id=session_id,
            cwd=cwd,
            updated=iso_utc(file.mtime),
            title=_title(objects),
            source=SOURCE,
        )

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """``qwen --resume <id>`` and ``qwen --resume <id> -p "<prompt>"``.

        Read-only: :data:`READ_ONLY_FLAGS` after the id.
        """
        return _RESUME.commands(session_id, command, self.default_executable)


_RESUME: Final = ResumeForms(
    ("--resume", SESSION_ID),
    ("--resume", SESSION_ID, "-p"),
    read_only=(
        ("--resume", SESSION_ID, *READ_ONLY_FLAGS),
        ("--resume", SESSION_ID, *READ_ONLY_FLAGS, "-p"),
    ),
)


def _title(objects: list[dict[str, Any]]) -> str | None:
    """The first user message's text (its ``parts``, as gemini's wire format has them)."""
    for obj in objects:
        if obj.get("type") == "user":
            message = as_dict(obj.get("message"))
            text = content_text(message.get("parts")) or content_text(message.get("content"))
            if text:
                return title_of(text)
    return None


ADAPTER: Final = QwenAdapter()
"""The instance the registry loads."""

if TYPE_CHECKING:
    _conforms: Adapter = ADAPTER
