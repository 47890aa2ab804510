"""Grok: two different CLIs answer to ``grok``; the ``--help`` probe tells them apart.

- **Grok Build** (xAI; help lists ``--sandbox`` and ``--output-format``): read-only by
  construction with ``--sandbox read-only``, a read-only tool list, ``--deny MCPTool`` and
  ``--permission-mode dontAsk`` (docs/origins.md §3.4; docs/cli-adapters.md, "Facts the
  adapters rely on"). One JSON object on stdout with ``text``, ``stopReason`` and
  ``sessionId``; resumable with ``-r <id>``.
- **npm ``@vibe-kit/grok-cli`` 0.0.34** (help lists ``--max-tool-rounds``, no
  ``--sandbox``): headless mode auto-approves every tool, writes included, and it keeps no
  sessions (docs/cli-adapters.md §3). It is never given the user's tree: the invocation says
  ``isolate_in_copy`` so the orchestrator runs it in a throw-away copy. It cannot resume.

Any other help text is treated like the npm CLI: never assume read-only. So is a
``Capabilities`` that did not come from the probe (its default variant).

Neither variant reads the prompt from stdin, so it is one argv element (never a shell
string), limited to 128 KiB by the kernel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final
from urllib.parse import unquote

from review_loop.adapters._common import (
    SESSION_ID,
    ResumeForms,
    as_dict,
    as_str,
    checked_session_id,
    directory_argument,
    exit_reason,
    is_plain_token,
    iso_utc,
    last_json_lines,
    no_answer,
    not_submitted,
    parse_json_object,
    prompt_argument,
    readable_stdout,
    require_command,
    same_path,
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
    generic_failure,
    json_lines,
)
from review_loop.adapters.refusals import refusal_in, refused
from review_loop.agents.env_passthrough import EnvPassthrough
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.listing_vocabulary import ReadOnlyResume, ResumeCommands, StoredSession

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

PRODUCT: Final = "grok"

BUILD: Final = "grok-build"
"""Variant: xAI Grok Build, read-only sandbox and sessions."""
VIBE: Final = "vibe-0.0.34"
"""Variant: npm ``@vibe-kit/grok-cli`` 0.0.34, no read-only mode, no sessions."""
VIBE_PACKAGE: Final = "@vibe-kit/grok-cli"
"""The npm CLI's package name, as its ``package.json`` says."""
UNKNOWN: Final = "unknown"
"""Variant: help text we do not recognise; handled like :data:`VIBE`."""

SANDBOX_FLAGS: Final = (
    "--sandbox",
    "read-only",
    "--tools",
    "read_file,grep,list_dir",
    "--disallowed-tools",
    "search_tool,use_tool",
    "--deny",
    "MCPTool",
    "--permission-mode",
    "dontAsk",
    "--no-subagents",
    "--disable-web-search",
    "--no-auto-update",
)
"""What keeps Grok Build read-only: the sandbox, the tool lists and the permission mode.
Also what an interactive read-only resume carries (it prints no JSON)."""

READ_ONLY_FLAGS: Final = ("--output-format", "json", *SANDBOX_FLAGS)
"""Follow the prompt in every Grok Build argv ``build`` returns."""

NO_READ_ONLY_MODE: Final = (
    "this grok CLI ({variant}) has no read-only mode and keeps no sessions: review-loop ran "
    "it in a throw-away copy of the repository, which a resume command cannot reproduce"
)

VIBE_HOME_FILES: Final = (".grok/user-settings.json", ".grok/GROK.md")
"""What the npm CLI reads from HOME: its key, base URL and models; the user's instructions."""

ENV_PASSTHROUGH: Final = EnvPassthrough(prefixes=("GROK_", "XAI_"))
"""Grok's credentials and endpoint (``GROK_API_KEY``, ``GROK_BASE_URL``, ``GROK_MODEL``,
``XAI_API_KEY``) and ``GROK_HOME``."""

HIDDEN_PATHS: Final = (".grok", ".env")
"""The repository's grok configuration, hidden from every run (``Invocation.hidden_paths``):
the npm CLI reads ``.grok/settings.json`` from its working directory (and starts the MCP
servers listed there), and ``dotenv`` loads the working directory's ``.env`` into its
environment at start (``GROK_BASE_URL`` would send the user's key elsewhere; measured by
``tests/e2e/test_hostile_repo.py``). Grok Build's use of them is unmeasured, so they are
hidden there too."""

SOURCE: Final = "cli-store"

_ERROR_REPLY = "Sorry, I encountered an error:"
_MISSING_KEY = "API key required"
# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
# Parser errors come before anything runs: commander ("error: unknown option '--x'") and
# clap ("error: unexpected argument '--x' found", exit 2).
_ARGUMENT_ERROR = (
    r"(?m)^error: (?:unknown option|unexpected argument|too many arguments"
    r"|missing required argument|option '.*' argument missing|invalid value)"
)
_SESSION_NOT_FOUND = r"(?i)session\b.*\bnot found|no such session|unknown session"


def _is_build(capabilities: Capabilities) -> bool:
    return capabilities.variant == BUILD


def _single_argument(prompt: str) -> str:
    """The prompt for ``-p``; a leading newline keeps a prompt like ``-x`` from reading
    as a flag to parsers that reject option values starting with ``-``."""
    return "\n" + prompt if prompt.startswith("-") else prompt


@final
class GrokAdapter:
    """Grok Build read-only, or the npm grok-cli isolated in a copy of the repository."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = PRODUCT
    default_executable: str = "grok"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH

    def probe_args(self) -> tuple[str, ...] | None:
        """``grok --help``: its flags tell the variants apart."""
        return ("--help",)

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Grok Build if the help lists ``--sandbox`` and ``--output-format``; else unsafe."""
        from review_loop.agents.models import Capabilities

        text = probe_output or ""
        if "--sandbox" in text and "--output-format" in text:
            return Capabilities(variant=BUILD, version=version_in(text))
        variant = VIBE if "--max-tool-rounds" in text else UNKNOWN
        return Capabilities(variant=variant, read_only=False, resumable=False, isolate_in_copy=True)

    def package_file(self, executable: Path) -> Path | None:
        """The npm CLI's ``package.json``: its ``grok`` is ``<package>/dist/index.js``.

        Only the package tells the npm CLI's release: its ``--help`` names none and its
        ``--version`` prints ``1.0.1`` in 0.0.34 (a constant of its source, not the
        package's version). Grok Build's native executable has no such file: ``None``."""
        if (executable.parent.name, executable.name) != ("dist", "index.js"):
            return None
        return executable.parent.parent / "package.json"

    def package_version(self, text: str) -> str | None:
        """``version`` of a ``package.json`` whose ``name`` is :data:`VIBE_PACKAGE`."""
        package = parse_json_object(text) or {}
        if package.get("name") != VIBE_PACKAGE:
            return None
        return version_in(as_str(package.get("version")))

    def required_flags(self, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
        """Grok Build: :data:`SANDBOX_FLAGS`, as ``grok --help`` lists them. The npm CLI
        has none to require: it runs in a throw-away copy of the repository instead."""
        if not _is_build(capabilities):
            return ()
        return flag_requirements(SANDBOX_FLAGS, "read-only")

    def login_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """The npm CLI's saved key: ``~/.grok/user-settings.json`` (``apiKey``; it ignores
        ``GROK_HOME``), copied into the scratch HOME it runs with."""
        return (home / VIBE_HOME_FILES[0],)

    def login_from(
        self, env: Mapping[str, str], texts: Mapping[str, str], capabilities: Capabilities
    ) -> LoginState:
        """The npm CLI's own rule (``loadApiKey``): ``GROK_API_KEY``, else ``apiKey`` of
        ``~/.grok/user-settings.json``; neither is logged out ("API key required"). Grok
        Build keeps its login its own way, which it tells no other program: unknown."""
        if _is_build(capabilities):
            return LoginState(
                "unknown",
                "Grok Build has no login status command and keeps its login its own way: "
                "only a request tells",
            )
        if env.get("GROK_API_KEY"):
            return LoginState("logged-in", "api key from GROK_API_KEY")
        for text in texts.values():
            try:
                saved = json.loads(text)
            except ValueError:
                return LoginState("unknown", "~/.grok/user-settings.json is not JSON")
            if isinstance(saved, dict) and isinstance(saved.get("apiKey"), str) and saved["apiKey"]:
                return LoginState("logged-in", "api key from ~/.grok/user-settings.json")
        return LoginState(
            "logged-out",
            "no GROK_API_KEY in its environment and no apiKey in ~/.grok/user-settings.json "
            "(the two places the npm grok CLI reads its key from)",
        )

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """Grok Build: ``grok [-r <id>] -p <prompt> <read-only flags>``.

        Otherwise ``grok -d <cwd> -p <prompt>`` with ``isolate_in_copy`` (never ``-k`` or
        ``-u``: the npm CLI saves those into ``~/.grok/user-settings.json``).

        Raises:
            AdapterRefusalError: a resume for a CLI without sessions; a prompt too large
                for one argument.
        """
        from review_loop.agents.models import Invocation

        prefix = require_command(PRODUCT, command)
        prompt = prompt_argument(PRODUCT, request.prompt)
        if not _is_build(capabilities):
            if request.resume_session_id is not None:
                raise AdapterRefusalError(
                    PRODUCT,
                    f"this grok CLI ({capabilities.variant}) keeps no sessions, so "
                    f"{request.resume_session_id!r} cannot be resumed",
                )
            return Invocation(
                argv=(*prefix, "-d", directory_argument(PRODUCT, request.cwd), "-p", prompt),
                cwd=request.cwd,
                isolate_in_copy=True,
                hidden_paths=HIDDEN_PATHS,
                home_files=VIBE_HOME_FILES,
            )
        argv = list(prefix)
        session_id: str | None = None
        if request.resume_session_id is not None:
            session_id = checked_session_id(PRODUCT, request.resume_session_id)
            argv += ["-r", session_id]
        argv += ["-p", _single_argument(prompt), *READ_ONLY_FLAGS]
        return Invocation(
            argv=tuple(argv), cwd=request.cwd, session_id=session_id, hidden_paths=HIDDEN_PATHS
        )

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Parse per variant; the variant is the one ``build`` chose."""
        failure = generic_failure(completed)
        if failure is not None:
            return failure
        stderr = text_of(completed.stderr)
        if completed.returncode != 0 and not completed.stdout.strip():
            if invocation.isolate_in_copy and _MISSING_KEY in stderr:
                return not_submitted("missing credentials", stderr)
            if re.search(_ARGUMENT_ERROR, stderr) or (
                completed.returncode == 2 and re.search(r"(?m)^error: ", stderr)
            ):
                return not_submitted("argument error", stderr)
        if invocation.isolate_in_copy:
            return _interpret_vibe(completed)
        return _interpret_build(invocation, completed, stderr)

    def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
        """Grok Build: complete once stdout is its one JSON document (``--output-format
        json``), with an answer, a stop reason or an error. The npm CLI (run in a copy)
        prints chat messages with no final event: never complete before it exits."""
        if invocation.isolate_in_copy or completed.stdout_truncated:
            return False
        stdout = decode_utf8(completed.stdout)
        data = parse_json_object(stdout) if stdout is not None else None
        keys = ("text", "result", "output", "stopReason", "error", "is_error")
        return data is not None and any(key in data for key in keys)

    def own_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where both grok CLIs keep their key and settings (the npm CLI's
        ``user-settings.json``, Grok Build's sessions): ``${GROK_HOME:-~/.grok}``, and
        ``~/.grok`` itself (the npm CLI ignores ``GROK_HOME``). Visible to a grok reviewer,
        hidden from every other."""
        root = Path(env["GROK_HOME"]) if env.get("GROK_HOME") else home / ".grok"
        return tuple(dict.fromkeys((root, home / ".grok")))

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """Grok Build: ``${GROK_HOME:-~/.grok}/sessions/<encoded cwd>/<id>/summary.json``.

        Best effort: this layout comes from third-party readers of the store, not from a
        measurement here. Every project directory is matched and :meth:`parse_session`
        keeps the sessions whose recorded ``cwd`` is ``repo``. The npm CLI keeps no
        sessions, so it simply has nothing there.
        """
        root = Path(env["GROK_HOME"]) if env.get("GROK_HOME") else home / ".grok"
        return [SessionStore(root=root / "sessions", pattern="*/*/summary.json", head_bytes=65536)]

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """``summary.json``: id and cwd from ``info`` (or the top level, or the path)."""
        raw = text_of(file.head)
        data = parse_json_object(raw) or {}
        info = as_dict(data.get("info"))
        session_id = _first_str(info, data, keys=("id", "session_id", "sessionId"))
        if session_id is None:
            session_id = string_field(raw, "id") or file.path.parent.name
        cwd = _first_str(info, data, keys=("cwd", "working_directory"))
        if cwd is None:
            cwd = string_field(raw, "cwd") or unquote(file.path.parent.parent.name)
        if not is_plain_token(session_id) or not same_path(cwd, repo):
            return None
        title = _first_str(data, info, keys=("generated_title", "title", "session_summary"))
        return StoredSession(
            product=PRODUCT,
            session_id=session_id,
            cwd=cwd,
            updated=iso_utc(file.mtime),
            title=title_of(title),
            source=SOURCE,
        )

    def resume_commands(
        self,
        session_id: str,
        command: Sequence[str],
        *,
        capabilities: Capabilities | None = None,
    ) -> ResumeCommands:
        """``grok -r <id>`` and ``grok -r <id> -p "<prompt>"``.

        Read-only: :data:`SANDBOX_FLAGS` after the id, and :data:`READ_ONLY_FLAGS` before
        ``-p`` headless. Given the probed ``capabilities`` of a CLI without sessions (the npm
        variant), every command is ``None`` and ``read_only.unavailable`` says why. Without
        them, Grok Build is assumed: only it ever reports a session id.
        """
        if capabilities is not None and not _is_build(capabilities):
            unavailable = NO_READ_ONLY_MODE.format(variant=capabilities.variant)
            return ResumeCommands(
                interactive=None,
                headless=None,
                read_only=ReadOnlyResume(interactive=None, headless=None, unavailable=unavailable),
            )
        return _RESUME.commands(session_id, command, self.default_executable)


_RESUME: Final = ResumeForms(
    ("-r", SESSION_ID),
    ("-r", SESSION_ID, "-p"),
    read_only=(("-r", SESSION_ID, *SANDBOX_FLAGS), ("-r", SESSION_ID, *READ_ONLY_FLAGS, "-p")),
)


def _first_str(*sources: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for source in sources:
        for key in keys:
            if value := as_str(source.get(key)):
                return value
    return None


def _interpret_build(invocation: Invocation, completed: Completed, stderr: str) -> Outcome:
    """One JSON object: ``text``/``result``/``output`` and ``sessionId``/``session_id``."""
    from review_loop.agents.models import Reply

    known_id = invocation.session_id
    not_found = invocation.session_id is not None and bool(re.search(_SESSION_NOT_FOUND, stderr))
    stdout = readable_stdout(completed, known_id)
    if not isinstance(stdout, str):
        return stdout
    data = parse_json_object(stdout)
    if data is None:
        if not_found and completed.returncode != 0:
            return _session_not_found(completed)
        return no_answer(completed, stdout, session_id=known_id)
    text = _first_str(data, keys=("text", "result", "output")) or ""
    session_id = _first_str(data, keys=("sessionId", "session_id")) or known_id
    if completed.returncode != 0 or data.get("error") or data.get("is_error") is True:
        if not_found and not text:
            return _session_not_found(completed)
        error = data.get("error")
        detail = as_str(as_dict(error).get("message")) or as_str(error) or detail_of(completed)
        reason = exit_reason(completed) if completed.returncode != 0 else "error"
        return unknown(reason, detail, session_id=session_id)
    if not text.strip():
        if data.get("stopReason") == "Cancelled":
            return unknown(
                "cancelled at a permission gate", detail_of(completed), session_id=session_id
            )
        return unknown("empty output", detail_of(completed), session_id=session_id)
    return Reply(
        text=text,
        session_id=session_id,
        usage=usage_of(
            data.get("usage"),
            input_key="input_tokens",
            output_key="output_tokens",
            cached_key="cached_input_tokens",
        ),
    )


def _session_not_found(completed: Completed) -> Failure:
    # Unmeasured wording, so delivery stays unknown; the flag lets the dispatcher start a
    # new session when this came back fast (docs/origins.md §3.5 (c)).
    return unknown("session not found", detail_of(completed), session_not_found=True)


def _interpret_vibe(completed: Completed) -> Outcome:
    """JSONL chat messages; the answer is the last ``assistant`` message's ``content``.

    API errors exit 0 with ``Sorry, I encountered an error: …`` as that content.
    """
    from review_loop.agents.models import Reply

    final: dict[str, Any] | None
    if completed.stdout_truncated:
        # Only the end is provably whole: the last line must lie wholly in the tail.
        stdout = text_of(completed.stdout)
        tail = last_json_lines(completed.stdout, 1)
        final = tail[0] if tail else None
    else:
        decoded = decode_utf8(completed.stdout)
        if decoded is None:
            return unknown("parse failed", "stdout is not UTF-8")
        stdout = decoded
        messages = [line for line in json_lines(stdout) if "role" in line]
        final = messages[-1] if messages else None
    if final is None:
        if completed.stdout_truncated:
            return unknown("output too large", detail_of(completed))
        return no_answer(completed, stdout)
    content = as_str(final.get("content")) or ""
    if final.get("role") != "assistant" or final.get("tool_calls"):
        return unknown("no final answer", content or detail_of(completed))
    if content.startswith(_ERROR_REPLY):
        return _api_error(content)
    if completed.returncode != 0:
        return unknown(exit_reason(completed), content or detail_of(completed))
    if not content.strip():
        return unknown("empty output", detail_of(completed))
    return Reply(text=content)


_API_STATUS = r"Grok API error: (\d{3})\b"


def _api_error(content: str) -> Failure:
    """``Sorry, I encountered an error: Grok API error: 429 "..."``: a named refusal where
    the status and words say one, else ``api error``.

    Always ``DELIVERY_UNKNOWN``: on an error 0.0.34 prints the prompt and the error alone,
    dropping the tool rounds that came before it (measured: a tool call answered, then a
    403, prints the same two lines as a 403 on the first request), so nothing proves the
    refused request was the first."""
    found = re.search(_API_STATUS, content)
    refusal = refusal_in(int(found.group(1)) if found else None, content)
    if refusal is None:
        return unknown("api error", content)
    return refused(refusal, content, processed_nothing=False)


ADAPTER: Final = GrokAdapter()
"""The instance the registry loads."""

if TYPE_CHECKING:
    _conforms: Adapter = ADAPTER
