"""Claude Code (``claude`` 2.1.x): one JSON result on stdout, the prompt on stdin.

Read-only by construction, in three independent layers (measured in docs/cli-adapters.md §1):
``--permission-mode plan`` denies writes when a tool runs, ``--tools Read,Grep,Glob`` sends
only reading tools to the model, and ``--disallowedTools`` removes the writing ones even
if a settings file would allow them. ``build`` always emits all three.

Nothing from the repository runs: its settings files, hooks and MCP servers are not
loaded (:data:`NO_PROJECT_CODE_FLAGS`), and only :data:`ENV_PASSTHROUGH` of the caller's
environment reaches the CLI besides the orchestrator's basics.

The session id is chosen before launch (``--session-id <uuid>``) so the record holds the
handle before anything runs; a resume passes ``--resume <id>`` instead.
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
    as_float,
    as_int,
    as_str,
    checked_session_id,
    content_text,
    exit_reason,
    head_objects,
    is_uuid,
    iso_utc,
    no_answer,
    not_submitted,
    parse_json_object,
    preassigned_uuid,
    prompt_bytes,
    require_command,
    same_path,
    stdout_or_failure,
    string_field,
    text_of,
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
from review_loop.adapters.refusals import refusal_in, refuse_too_old, refused
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

PRODUCT: Final = "claude"

OLDEST_VERSION: Final = (2, 1, 0)
"""The oldest Claude Code line whose read-only and no-project-code flags were proven here
(2.1.197, ``tests/e2e``): ``--setting-sources``, ``--strict-mcp-config`` and ``--tools`` are
not in every older release. An older ``claude --version`` is refused ``cli_too_old``."""

READ_ONLY_FLAGS: Final = (
    "--permission-mode",
    "plan",
    "--tools",
    "Read,Grep,Glob",
    "--disallowedTools",
    "Write,Edit,NotebookEdit,Bash,Agent,WebFetch,WebSearch",
)
"""Present in every argv ``build`` returns. (2.1 has no ``MultiEdit`` tool; naming it made
Claude warn ``Permission deny rule "MultiEdit" matches no known tool`` on every run.)"""

NO_PROJECT_CODE_FLAGS: Final = (
    "--setting-sources",
    "user",
    "--strict-mcp-config",
    "--mcp-config",
    '{"mcpServers":{}}',
    "--settings",
    '{"disableAllHooks":true}',
)
"""Present in every argv ``build`` returns: nothing the repository provides runs.

``-p`` skips Claude's workspace-trust dialog, so the repository's ``.claude/settings.json``
and ``settings.local.json`` (hooks, ``apiKeyHelper``, ``env``, MCP approvals) and its
``.mcp.json`` would otherwise load and run. ``--setting-sources user`` loads the user's
settings only; ``--strict-mcp-config`` with an empty ``--mcp-config`` starts no MCP
server at all; ``disableAllHooks`` turns off hooks from every source, the user's too (a
user hook could write to the tree). Proven against the real CLI by
``tests/e2e/test_hostile_repo.py``."""

ENV: Final = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
ENV_PASSTHROUGH: Final = EnvPassthrough(
    names=(
        "CLAUDE_CONFIG_DIR",
        "CLOUD_ML_REGION",
        "API_TIMEOUT_MS",
        "MAX_THINKING_TOKENS",
        "DISABLE_TELEMETRY",
        "DISABLE_ERROR_REPORTING",
        "DISABLE_PROMPT_CACHING",
        "DO_NOT_TRACK",
    ),
    prefixes=("ANTHROPIC_", "CLAUDE_CODE_"),
)
"""Claude's credentials (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``), endpoint, model
and behaviour switches. Bedrock/Vertex credentials (``AWS_*``, ``GOOGLE_APPLICATION_
CREDENTIALS``) are shared with other tools, so they pass only when the user adds them."""
UNSET_ENV: Final = ("CLAUDECODE",)
"""``CLAUDECODE`` is set inside a Claude Code session and blocks nested launches."""

SOURCE: Final = "cli-store"

# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
# Refusals printed before any request is made (plain text on stderr, rc 1). Commander's
# own parse errors start with a lowercase "error: "; the rest are Claude's checks of
# --session-id / --resume / --print, which run before the first API call.
_ARGUMENT_ERROR = (
    r"(?m)^(?:error: |Error: Invalid session ID|Error: Session ID .* is already in use"
    r"|Error: --resume requires a valid session ID|Error: When using --print"
    r"|Error: Input must be provided)"
)
_NOT_FOUND = "No conversation found with session ID"
_NOT_LOGGED_IN = "Not logged in"
_MAX_DIR_LENGTH = 200


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit integer."""
    value = 0
    data = text.encode("utf-16-le")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if number == 0:
        return "0"
    out = []
    while number:
        number, rest = divmod(number, 36)
        out.append(digits[rest])
    return "".join(reversed(out))


def project_dir_name(cwd: str) -> str:
    """Claude's directory name for a project: every non-alphanumeric becomes ``-``.

    Past 200 characters the name is cut to 200 and ``-<base36(|javaHash(cwd)|)>`` added
    (docs/cli-adapters.md §1, read from the binary's strings).
    """
    escaped = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(escaped) <= _MAX_DIR_LENGTH:
        return escaped
    return f"{escaped[:_MAX_DIR_LENGTH]}-{_base36(abs(_java_string_hash(cwd)))}"


def _project_glob(cwd: str) -> str:
    """The store glob for ``cwd``: exact name, or any hash suffix for long paths.

    The hash suffix differs between runtimes (a Bun build may use its own hash), so for
    long paths any suffix matches and :meth:`ClaudeAdapter.parse_session` keeps only files
    whose recorded ``cwd`` is the repository.
    """
    escaped = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(escaped) <= _MAX_DIR_LENGTH:
        return f"projects/{escaped}/*.jsonl"
    return f"projects/{escaped[:_MAX_DIR_LENGTH]}-*/*.jsonl"


def _refusal(text: str) -> Failure | None:
    """A failure that proves nothing was sent, read from plain-text output."""
    if _NOT_FOUND in text:
        return not_submitted("session not found", text, session_not_found=True)
    if text.lstrip().startswith(_NOT_LOGGED_IN):
        return not_submitted("not logged in", text)
    if re.search(_ARGUMENT_ERROR, text):
        return not_submitted("argument error", text)
    return None


def _processed_nothing(data: Mapping[str, Any]) -> bool:
    """Whether a failed result proves the API did no work for this run: no token counted
    (``usage``), no model billed (``modelUsage`` empty, no cost) and no tool run or denied.
    A run whose first request was answered (and a later one refused) counts its tokens."""
    usage = as_dict(data.get("usage"))
    counted = any(
        as_int(usage.get(key)) not in (0, None)
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens")
    )
    return (
        "usage" in data
        and not counted
        and data.get("modelUsage") == {}
        and as_float(data.get("total_cost_usd")) in (0.0, None)
        and data.get("permission_denials") in ([], None)
    )


def _is_result(data: Mapping[str, Any]) -> bool:
    return data.get("type") == "result" or "result" in data or "is_error" in data


@final
class ClaudeAdapter:
    """Claude Code in ``-p`` mode with JSON output, plan mode and read-only tools."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = PRODUCT
    default_executable: str = "claude"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH
    # The seed names a second Claude Code account ``cc002`` (Capability Preflight 2).
    short_names: tuple[str, ...] = ("cc",)

    def probe_args(self) -> tuple[str, ...] | None:
        """``claude --version`` prints ``2.1.197 (Claude Code)``."""
        return ("--version",)

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Every supported version is read-only and resumable; only the version is read."""
        from review_loop.agents.models import Capabilities

        return Capabilities(version=version_in(probe_output))

    def required_flags(self, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
        """:data:`READ_ONLY_FLAGS` (read-only) and :data:`NO_PROJECT_CODE_FLAGS`
        (lockdown), as ``claude --help`` lists them."""
        return (
            *flag_requirements(READ_ONLY_FLAGS, "read-only"),
            *flag_requirements(NO_PROJECT_CODE_FLAGS, "lockdown"),
        )

    def login_args(self) -> tuple[str, ...] | None:
        """``claude auth status`` prints JSON (``loggedIn``, ``authMethod``) from the local
        credentials and exits 1 when logged out; it asks no model."""
        return ("auth", "status")

    def login_state(self, output: str, returncode: int | None) -> LoginState:
        """``loggedIn`` of its JSON, with the method and the key's source as the detail."""
        import json

        start = output.find("{")
        try:
            status = json.loads(output[start:]) if start >= 0 else None
        except ValueError:
            status = None
        if not isinstance(status, dict) or not isinstance(status.get("loggedIn"), bool):
            return LoginState("unknown", output.strip()[:200])
        if not status["loggedIn"]:
            return LoginState("logged-out", "claude auth status: not logged in")
        words = (status.get("authMethod"), status.get("apiKeySource"))
        return LoginState("logged-in", " from ".join(w for w in words if isinstance(w, str)))

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """``claude -p --output-format json``, both flag sets, ``--session-id|--resume <id>``."""
        from review_loop.agents.models import Invocation

        refuse_too_old(PRODUCT, capabilities.version, OLDEST_VERSION)
        argv = [*require_command(PRODUCT, command), "-p", "--output-format", "json"]
        argv += READ_ONLY_FLAGS
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
        )

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Read the JSON result; classify refusals, API errors and unreadable output."""
        stdout = stdout_or_failure(invocation, completed)
        if not isinstance(stdout, str):
            return stdout
        known_id = invocation.session_id
        data = parse_json_object(stdout)
        if data is None or not _is_result(data):
            if completed.returncode != 0:
                refusal = _refusal(f"{stdout}\n{text_of(completed.stderr)}".strip())
                if refusal is not None:
                    return refusal
            return no_answer(completed, stdout, session_id=known_id)
        return self._from_result(data, completed, known_id)

    def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
        """Complete once stdout is the one JSON result document (``--output-format json``)."""
        if completed.stdout_truncated:
            return False
        stdout = decode_utf8(completed.stdout)
        data = parse_json_object(stdout) if stdout is not None else None
        return data is not None and _is_result(data)

    def _from_result(
        self, data: Mapping[str, Any], completed: Completed, known_id: str | None
    ) -> Outcome:
        from review_loop.agents.models import Reply

        text = as_str(data.get("result")) or ""
        session_id = as_str(data.get("session_id")) or known_id
        if data.get("is_error") is True or completed.returncode != 0:
            status = data.get("api_error_status")
            detail = text or detail_of(completed)
            if status is None:
                refusal = _refusal(f"{text}\n{text_of(completed.stderr)}".strip())
                if refusal is not None:
                    return refusal
            named = refusal_in(as_int(status), text)
            if named is not None:
                return refused(
                    named,
                    detail,
                    processed_nothing=_processed_nothing(data),
                    session_id=session_id,
                )
            if status is not None:
                reason = f"api error {status}"
            elif "Unable to connect to API" in text:
                reason = "connection failed"
            elif data.get("is_error") is True:
                reason = "api error"
            else:
                reason = exit_reason(completed)
            return unknown(reason, detail, session_id=session_id)
        if not text.strip():
            return unknown("empty output", detail_of(completed), session_id=session_id)
        return Reply(
            text=text,
            session_id=session_id,
            cost_usd=as_float(data.get("total_cost_usd")),
            usage=usage_of(
                data.get("usage"),
                input_key="input_tokens",
                output_key="output_tokens",
                cached_key="cache_read_input_tokens",
            ),
        )

    def own_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where Claude Code keeps its login and settings: ``${CLAUDE_CONFIG_DIR:-~/.claude}``
        and ``~/.claude.json``; on Bedrock (``CLAUDE_CODE_USE_BEDROCK``) also ``~/.aws``,
        where its AWS profile lives. Visible to a claude reviewer, hidden from every other
        (``docs/reviewer-lockdown.md``)."""
        root = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        bedrock = (home / ".aws",) if env.get("CLAUDE_CODE_USE_BEDROCK") else ()
        return (root, home / ".claude.json", *bedrock)

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<escaped repo>/*.jsonl``.

        The first line with a ``cwd`` comes after the prompt has been written twice, so
        the head read is larger than the default.
        """
        root = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        return [SessionStore(root=root, pattern=_project_glob(str(repo)), head_bytes=65536)]

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Id = file stem; cwd = first ``cwd`` in the head; title = last or first prompt."""
        session_id = file.path.stem
        if not is_uuid(session_id):
            return None  # sidechain or other non-session files
        objects = head_objects(file.head)
        raw = text_of(file.head)
        cwd = next((c for o in objects if (c := as_str(o.get("cwd"))) is not None), None)
        if cwd is None:
            cwd = string_field(raw, "cwd")
        if cwd is None:
            if file.path.parent.name != project_dir_name(str(repo)):
                return None
            cwd = str(repo)
        elif not same_path(cwd, repo):
            return None
        return StoredSession(
            product=PRODUCT,
            session_id=session_id,
            cwd=cwd,
            updated=iso_utc(file.mtime),
            title=_title(objects, raw),
            source=SOURCE,
        )

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """``claude --resume <id>`` and ``claude -p --resume <id> "<prompt>"``.

        Read-only: :data:`READ_ONLY_FLAGS` before ``--resume``: ``--tools`` and
        ``--disallowedTools`` take every following word, so after them the prompt would be
        read as one more tool name.
        """
        return _RESUME.commands(session_id, command, self.default_executable)


_RESUME: Final = ResumeForms(
    ("--resume", SESSION_ID),
    ("-p", "--resume", SESSION_ID),
    read_only=(
        (*READ_ONLY_FLAGS, "--resume", SESSION_ID),
        ("-p", *READ_ONLY_FLAGS, "--resume", SESSION_ID),
    ),
)


def _title(objects: list[dict[str, Any]], raw: str) -> str | None:
    """``lastPrompt`` if the head has it, else the first user prompt."""
    for obj in objects:
        if obj.get("type") == "last-prompt" and (last := as_str(obj.get("lastPrompt"))):
            return title_of(last)
    for obj in objects:
        kind = obj.get("type")
        if kind == "queue-operation" and (queued := as_str(obj.get("content"))):
            return title_of(queued)
        if kind == "user":
            message = as_dict(obj.get("message"))
            if (text := content_text(message.get("content"))) is not None:
                return title_of(text)
    return title_of(string_field(raw, "content"))


ADAPTER: Final = ClaudeAdapter()
"""The instance the registry loads."""

if TYPE_CHECKING:
    _conforms: Adapter = ADAPTER
