"""Gemini CLI (``gemini`` 0.61): one JSON object on stdout, errors as JSON on stderr.

Read-only by construction, in two layers: ``--approval-mode plan`` lets the agent read but
denies writes outside its own plans directory (docs/cli-adapters.md §4), and
``--admin-policy gemini_read_only.toml`` (shipped beside this module) denies leaving plan
mode and the writing tools. Plan mode alone is not enough headless: 0.61 auto-approves
``exit_plan_mode`` there and then runs every tool (YOLO). ``--admin-policy`` rather than
``--policy``: the latter replaces the user's own policy directory instead of adding to it.
``--skip-trust`` and ``GEMINI_CLI_TRUST_WORKSPACE=true`` keep a headless run from stopping at
the trust check; the repository's own configuration, which trust would load, is hidden
from the CLI (:data:`HIDDEN_PATHS`).
The prompt goes on stdin; ``-p ""`` selects headless mode and appends nothing.

The session id is chosen before launch (``--session-id <uuid>``); a resume passes
``--resume <id>`` (the two flags are mutually exclusive).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from review_loop.adapters._common import (
    SESSION_ID,
    ResumeForms,
    as_dict,
    as_int,
    as_str,
    checked_session_id,
    content_text,
    head_objects,
    iso_utc,
    no_answer,
    not_submitted,
    parse_json_object,
    preassigned_uuid,
    prompt_bytes,
    readable_stdout,
    require_command,
    same_path,
    text_of,
    title_of,
    unknown,
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
from review_loop.adapters.refusals import refusal_in, refuse_too_old, refused
from review_loop.agents.constants import ENV_NAME_PATTERN
from review_loop.agents.env_passthrough import EnvPassthrough
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.listing_vocabulary import ResumeCommands, StoredSession
from review_loop.agents.refusals import Refusal

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

PRODUCT: Final = "gemini"

OLDEST_VERSION: Final = (0, 61, 0)
"""The oldest Gemini CLI whose ``--admin-policy`` read-only policy and ``--skip-trust`` were
proven here (``tests/e2e``). An older ``gemini --version`` is refused ``cli_too_old``."""

READ_ONLY_POLICY: Final = Path(__file__).with_name("gemini_read_only.toml")
"""Denies ``exit_plan_mode`` and the writing tools. Gemini silently ignores a policy file
that is missing, so ``tests/adapters`` checks this one exists and says what it must."""

READ_ONLY_FLAGS: Final = ("--approval-mode", "plan", "--admin-policy", str(READ_ONLY_POLICY))
"""Present in every argv ``build`` returns."""

HIDDEN_PATHS: Final = (".gemini", ".env")
"""The repository's Gemini configuration, hidden from every run (``Invocation.hidden_paths``).

0.61 runs headless only in a trusted workspace (untrusted exits 55), and a trusted one
loads ``.gemini/settings.json`` (MCP servers, hooks, ``tools.discoveryCommand``, policies,
agents, skills) and every variable of ``.gemini/.env`` or ``.env`` into its own
environment (``GOOGLE_GEMINI_BASE_URL`` would send the user's key elsewhere). No flag or
variable turns that off, so the orchestrator covers these paths; proven against the real
CLI by ``tests/e2e/test_hostile_repo.py``."""
ANCESTOR_FILES: Final = (".gemini/.env", ".env")
"""Loaded from every directory above the working directory (``GeminiAdapter.ancestor_files``)."""

RETRY_DEFAULTS: Final = Path(__file__).with_name("gemini_defaults.json")
"""Gemini's own settings that bound a refused request, passed as its system defaults
(``GEMINI_CLI_SYSTEM_DEFAULTS_PATH``, the lowest settings tier: the user's own settings
and the administrator's system settings still win; a user's own defaults file at that
variable is replaced).

Gemini reads a system file only when it and every directory above it are owned by root
and writable by no one else, and skips it otherwise with no more than a warning: a
user's own install, or a clone under ``/tmp``, fails that, and without a namespace so
does ``/`` itself (the overflow uid in a user namespace). So it is a root file
(``Invocation.root_files``): the sandbox places a read-only copy in a root of the
reviewer's own and points the variable at it; only a run without the sandbox reads this
path itself (trusted only if the install is root's).

Without them 0.61 never gives up on a refusal. A 429 rate limit is retried with backoff
ten times per model (5 s doubling to 30 s, or the provider's retry delay), then again on
the fallback model; and in plan mode every model fallback is silent, so a daily quota or
an unknown model makes it switch between the two models of its ``auto`` chain without
end (each switch resets its availability and its attempt count: thousands of requests a
minute, until the deadline). Its own controls end that:

- ``general.maxAttempts: 2``: a request is tried twice (one retry: a short provider
  retry delay, a transient 5xx or a broken stream still recover), where 0.61 allows 10;
- ``experimental.dynamicModelConfiguration`` with every ``modelConfigs.modelChains``
  chain empty: each model is a chain of its own, so no request falls back to another
  model; the model ``auto`` (or the user) chose is the one refused. No other setting,
  flag or variable turns the fallback off (the non-dynamic chains are built in).

Proven against the real CLI by ``tests/e2e/test_gemini_refusals_real.py``: each refusal
ends in at most two requests, with its named reason."""

SYSTEM_DEFAULTS_VARIABLE: Final = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
ENV: Final = {
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
    SYSTEM_DEFAULTS_VARIABLE: str(RETRY_DEFAULTS),
}
ROOT_FILES: Final = ((SYSTEM_DEFAULTS_VARIABLE, str(RETRY_DEFAULTS)),)
""":data:`RETRY_DEFAULTS`, placed where gemini trusts it (``Invocation.root_files``)."""
ENV_PASSTHROUGH: Final = EnvPassthrough(
    names=(
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_VERTEX_BASE_URL",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ),
    prefixes=("GEMINI_",),
)
"""Gemini's credentials (``GEMINI_API_KEY``, ``GOOGLE_API_KEY``, Vertex AI project and
location, a service-account file), endpoint and ``GEMINI_CLI_HOME``."""
SOURCE: Final = "cli-store"
# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
_SETTINGS_REFERENCE: Final = r"\$(?:(\w+)|\{([^}]+?)(?::-[^}]*)?\})"
"""Gemini's own pattern for a variable reference in a settings string (``$X``, ``${X}``,
``${X:-default}``)."""
PROJECT_ROOT_SIDECAR: Final = "../.project_root"
"""Beside ``chats/``: the directory the project slug stands for."""

# Exit codes that come before the first request (packages/core/src/utils/exitCodes.ts and
# docs/cli-adapters.md §4): 41 auth not configured, 42 bad input (session id taken or not
# found), 55 untrusted directory. 41 and 42 are also reachable later in a run, so each is
# trusted only together with the message printed for the up-front case.
_AUTH = 41
_INPUT = 42
_UNTRUSTED = 55
_AUTH_SETUP = r"(?i)auth method"
_SESSION_NOT_FOUND = r"Error resuming session|Invalid session identifier"
_SESSION_TAKEN = r"Session ID .* already exists"
# yargs validation, printed with the usage text and exit 1 before anything runs.
_ARGUMENT_ERROR = (
    r"Unknown arguments?:|Not enough arguments following|Invalid values:"
    r"|Missing required argument|mutually exclusive|Invalid session ID"
    r"|option cannot be empty|Cannot use both"
)


_LINE_OPENS_OBJECT = r"(?m)^\{"


def _error_object(stderr: str) -> dict[str, Any] | None:
    """The ``{"session_id", "error": {...}}`` object gemini prints on stderr, if any.

    It is the last top-level JSON object: 0.61 prints warnings and, for API errors, a
    stack dump first, and the dump holds braces of its own (``_ApiError: {...}``,
    ``Turn.run (...) {``), so neither the whole text nor a single line need parse.
    """
    decoder = json.JSONDecoder()
    for found in reversed(list(re.finditer(_LINE_OPENS_OBJECT, stderr))):
        try:
            value, _ = decoder.raw_decode(stderr, found.start())
        except ValueError:
            continue
        found_object = as_dict(value)
        if isinstance(found_object.get("error"), dict):
            return found_object
    data = parse_json_object(stderr)
    if data is not None and isinstance(data.get("error"), dict):
        return data
    lines = [line for line in json_lines(stderr) if isinstance(line.get("error"), dict)]
    return lines[-1] if lines else None


def _refusal(stderr: str, error: Mapping[str, Any], returncode: int | None) -> Failure | None:
    """A failure that proves no request was sent, or ``None``."""
    message = as_str(error.get("message")) or ""
    code = as_int(error.get("code"))
    said = f"{message}\n{stderr}"
    if returncode == _UNTRUSTED or code == _UNTRUSTED:
        return not_submitted("untrusted directory", said.strip())
    if (returncode == _AUTH or code == _AUTH) and re.search(_AUTH_SETUP, said):
        return not_submitted("auth not configured", said.strip())
    if returncode == _INPUT or code == _INPUT:
        if re.search(_SESSION_NOT_FOUND, said):
            return not_submitted("session not found", said.strip(), session_not_found=True)
        if re.search(_SESSION_TAKEN, said):
            return not_submitted("argument error", said.strip())
    if returncode == 1 and not error and re.search(_ARGUMENT_ERROR, stderr):
        return not_submitted("argument error", stderr)
    return None


# Gemini's own reading of a Google error, named in the stack dump it prints on stderr
# before the error document ("... Full report available at: <file> TerminalQuotaError:
# ..."). The document keeps only the message and loses what told the cases apart: a
# per-minute limit and a daily quota are the same "You exceeded your current quota" from
# Google (only the QuotaFailure quota id differs, which gemini read), and a 404's status
# becomes exit code 1.
_ERROR_CLASS = r"\b(RetryableQuotaError|TerminalQuotaError|ModelNotFoundError): "
_CAPACITY = r"(?i)exhausted your capacity|capacity exceeded|MODEL_CAPACITY_EXHAUSTED"
_ERROR_CLASS_REFUSAL: Final = {
    "RetryableQuotaError": Refusal.RATE_LIMITED,  # gemini would retry it: a rate
    "TerminalQuotaError": Refusal.QUOTA_EXHAUSTED,  # a daily or zero quota, used-up credit
    "ModelNotFoundError": Refusal.MODEL_UNAVAILABLE,  # any 404 of a generate request
}


def _named_refusal(stderr: str, code: int | None, message: str) -> Refusal | None:
    """The refusal of gemini's error document (``code``, ``message``): gemini's own class
    for the error where it printed one, else the words (``code`` as the HTTP status only
    when it is one)."""
    classes = re.findall(_ERROR_CLASS, stderr)
    if classes:
        named = _ERROR_CLASS_REFUSAL[classes[-1]]
        # a model with no capacity left on the provider's side is busy, not the account
        if named is Refusal.QUOTA_EXHAUSTED and re.search(_CAPACITY, message):
            return Refusal.RATE_LIMITED
        return named
    status = code if code is not None and 100 <= code <= 599 else None
    return refusal_in(status, message)


def _usage(stats: object) -> Usage | None:
    """Token counts summed over ``stats.models.*.tokens``."""
    from review_loop.agents.models import Usage

    totals: dict[str, int] = {}
    for model in as_dict(as_dict(stats).get("models")).values():
        tokens = as_dict(as_dict(model).get("tokens"))
        for key in ("prompt", "candidates", "cached"):
            count = as_int(tokens.get(key))
            if count is not None:
                totals[key] = totals.get(key, 0) + count
    if not totals:
        return None
    return Usage(
        input_tokens=totals.get("prompt"),
        output_tokens=totals.get("candidates"),
        cached_input_tokens=totals.get("cached"),
    )


_AUTH_FROM_ENV: Final = (
    ("GOOGLE_GENAI_USE_GCA", "true", "oauth-personal"),
    ("GOOGLE_GENAI_USE_VERTEXAI", "true", "vertex-ai"),
    ("GOOGLE_GEMINI_BASE_URL", None, "gateway"),
    ("GEMINI_API_KEY", None, "gemini-api-key"),
    ("CLOUD_SHELL", "true", "compute-default-credentials"),
    ("GEMINI_CLI_USE_COMPUTE_ADC", "true", "compute-default-credentials"),
)
"""Gemini's ``getAuthTypeFromEnv``, in its order: (variable, the value it must have or
``None`` for any, the auth type it selects)."""


def _dotenv_names(text: str) -> dict[str, str]:
    """``NAME=value`` lines of a ``.env`` file (``export`` and quotes allowed)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and re.fullmatch(ENV_NAME_PATTERN, name.strip()):
            found[name.strip()] = value.strip().strip("'\"")
    return found


def _selected_type(settings: str | None) -> str | None:
    """``security.auth.selectedType`` of the user's settings (or the older top-level
    ``selectedAuthType``); ``None`` when absent. Raises ``ValueError`` on a file that is no
    JSON object."""
    if settings is None:
        return None
    document = json.loads(settings)
    if not isinstance(document, dict):
        raise ValueError("not an object")
    auth = as_dict(as_dict(document.get("security")).get("auth"))
    chosen = auth.get("selectedType", document.get("selectedAuthType"))
    return chosen if isinstance(chosen, str) and chosen else None


def _gemini_login(
    env: Mapping[str, str], settings: str | None, dotenv: Mapping[str, str]
) -> LoginState:
    """What gemini decides before its first request, from the auth type and the variables
    that type needs (its ``validateAuthMethod``)."""
    values = {**dotenv, **env}
    try:
        chosen = _selected_type(settings)
    except ValueError:
        return LoginState("unknown", "~/.gemini/settings.json is not a JSON object gemini reads")
    source = "settings.json security.auth.selectedType"
    if chosen is None:
        found = [
            (n, t) for n, want, t in _AUTH_FROM_ENV if values.get(n) and want in (None, values[n])
        ]
        if not found:
            return LoginState(
                "logged-out",
                "no auth method: no security.auth.selectedType in ~/.gemini/settings.json and "
                "none of GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA in its "
                "environment (run gemini once to log in, or set GEMINI_API_KEY)",
            )
        source, chosen = found[0]
    if chosen == "gemini-api-key":
        if values.get("GEMINI_API_KEY"):
            return LoginState("logged-in", f"gemini-api-key (from {source}), GEMINI_API_KEY set")
        return LoginState(
            "unknown",
            f"gemini-api-key (from {source}) but no GEMINI_API_KEY in its environment: a key "
            "gemini saved in its own keychain store is not readable without asking it",
        )
    if chosen == "vertex-ai":
        keys = ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")
        if values.get("GOOGLE_API_KEY") or all(values.get(k) for k in keys):
            return LoginState("logged-in", f"vertex-ai (from {source})")
        return LoginState(
            "logged-out",
            f"vertex-ai (from {source}) needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION, "
            "or GOOGLE_API_KEY, in its environment",
        )
    if chosen == "gateway":
        return LoginState("logged-in", f"gateway (from {source}): the endpoint decides")
    if chosen in ("oauth-personal", "compute-default-credentials"):
        return LoginState(
            "unknown",
            f"{chosen} (from {source}): its token is kept by gemini (or the machine's "
            "metadata server) and only a request tells whether it is still valid",
        )
    return LoginState(
        "unknown", f"auth type {chosen!r} (from {source}) is not one review-loop knows"
    )


@final
class GeminiAdapter:
    """``gemini -o json --approval-mode plan -p ""`` with the prompt on stdin."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = PRODUCT
    default_executable: str = "gemini"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH

    def user_config_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """The user's own settings, ``${GEMINI_CLI_HOME:-~}/.gemini/settings.json``: its
        string values may name variables. Never the workspace's ``.gemini/``."""
        base = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
        return (base / ".gemini" / "settings.json",)

    def configured_env_names(self, texts: Mapping[str, str]) -> tuple[str, ...]:
        """The variables the user's settings reference: gemini resolves ``$NAME``,
        ``${NAME}`` and ``${NAME:-default}`` in every string value of a settings file when
        it loads it (an API key kept as ``"apiKey": "$MY_KEY"``, an MCP header). Read from
        the raw text, as gemini's own pattern does, so a reference in a comment counts too
        (the user's file: at worst a name of theirs passes that gemini does not use)."""
        names = (
            match.group(1) or match.group(2)
            for text in texts.values()
            for match in re.finditer(_SETTINGS_REFERENCE, text)
        )
        return tuple(dict.fromkeys(n for n in names if n and re.fullmatch(ENV_NAME_PATTERN, n)))

    def probe_args(self) -> tuple[str, ...] | None:
        """``gemini --version`` prints ``0.61.0``."""
        return ("--version",)

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Every supported version is read-only and resumable; only the version is read."""
        from review_loop.agents.models import Capabilities

        return Capabilities(version=version_in(probe_output))

    def required_flags(self, capabilities: Capabilities) -> tuple[RequiredFlag, ...]:
        """:data:`READ_ONLY_FLAGS`, as ``gemini --help`` lists them. Its lockdown is the
        covering of :data:`HIDDEN_PATHS` (no flag turns the project's files off)."""
        return flag_requirements(READ_ONLY_FLAGS, "read-only")

    def login_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where gemini keeps its choice of login and its own keys: the user's
        ``settings.json`` (``security.auth.selectedType``) and ``.env`` of
        ``${GEMINI_CLI_HOME:-~}/.gemini``."""
        base = (Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home) / ".gemini"
        return (base / "settings.json", base / ".env")

    def login_from(
        self, env: Mapping[str, str], texts: Mapping[str, str], capabilities: Capabilities
    ) -> LoginState:
        """Gemini's own check before its first request (``validateNonInteractiveAuth``):
        the auth type the settings select, else the one its environment implies
        (:func:`_gemini_login`)."""
        settings = next((t for p, t in texts.items() if p.endswith("settings.json")), None)
        dotenv = next((t for p, t in texts.items() if p.endswith(".env")), "")
        return _gemini_login(env, settings, _dotenv_names(dotenv))

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """``gemini -o json <read-only flags> --skip-trust -p "" --session-id|--resume``.

        Raises:
            AdapterRefusalError: a resume or preassigned id that is not a safe token or UUID;
                an empty prompt; an install path the read-only policy cannot be passed from.
        """
        from review_loop.agents.models import Invocation

        if "," in str(READ_ONLY_POLICY):
            # --admin-policy splits its value at commas: the policy would silently not load.
            raise AdapterRefusalError(
                PRODUCT, f"the read-only policy path {str(READ_ONLY_POLICY)!r} has a comma"
            )
        refuse_too_old(PRODUCT, capabilities.version, OLDEST_VERSION)
        argv = [*require_command(PRODUCT, command), "-o", "json", *READ_ONLY_FLAGS]
        argv += ["--skip-trust", "-p", ""]
        if request.resume_session_id is not None:
            session_id = checked_session_id(PRODUCT, request.resume_session_id)
            argv += ["--resume", session_id]
        else:
            session_id = preassigned_uuid(PRODUCT, request.session_id)
            argv += ["--session-id", session_id]
        return Invocation(
            argv=tuple(argv),
            env=dict(ENV),
            stdin=prompt_bytes(PRODUCT, request.prompt),
            cwd=request.cwd,
            session_id=session_id,
            hidden_paths=HIDDEN_PATHS,
            root_files=ROOT_FILES,
        )

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """Read ``{session_id, response, stats}``; classify the JSON error on stderr."""
        from review_loop.agents.models import Reply

        failure = generic_failure(completed)
        if failure is not None:
            return failure
        known_id = invocation.session_id
        stderr = text_of(completed.stderr)
        error_data = _error_object(stderr)
        error = as_dict(error_data.get("error")) if error_data is not None else {}
        if completed.returncode != 0 or error:
            refusal = _refusal(stderr, error, completed.returncode)
            if refusal is not None:
                return refusal
        stdout = readable_stdout(completed, known_id)
        if not isinstance(stdout, str):
            return stdout
        data = parse_json_object(stdout)
        if data is not None and isinstance(data.get("error"), dict):
            error = as_dict(data.get("error"))
        if error:
            session_id = (as_str(error_data.get("session_id")) if error_data else None) or known_id
            code = error.get("code")
            reason = f"api error {code}" if code is not None else "api error"
            message = as_str(error.get("message")) or detail_of(completed)
            named = _named_refusal(stderr, as_int(code), message)
            if named is not None:
                # gemini's error document carries no stats: a refusal of a later request
                # (after tools ran) reads the same as one of the first, so nothing is proven.
                return refused(named, message, processed_nothing=False, session_id=session_id)
            return unknown(reason, message, session_id=session_id)
        if data is None or "response" not in data:
            return no_answer(completed, stdout, session_id=known_id)
        session_id = as_str(data.get("session_id")) or known_id
        if completed.returncode != 0:
            return no_answer(completed, stdout, session_id=session_id)
        text = as_str(data.get("response")) or ""
        if not text.strip():
            return unknown("empty output", detail_of(completed), session_id=session_id)
        return Reply(text=text, session_id=session_id, usage=_usage(data.get("stats")))

    def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
        """Complete once stdout is the one JSON document (``-o json``) with a ``response``
        or an ``error`` object."""
        if completed.stdout_truncated:
            return False
        stdout = decode_utf8(completed.stdout)
        data = parse_json_object(stdout) if stdout is not None else None
        return data is not None and ("response" in data or isinstance(data.get("error"), dict))

    @property
    def ancestor_files(self) -> tuple[str, ...]:
        """What Gemini CLI loads from every directory above its working directory: the
        first ``.gemini/.env`` or ``.env`` it finds walking up (a superproject's, around a
        submodule or nested checkout). The sandbox hides them from every reviewer."""
        return ANCESTOR_FILES

    def own_files(self, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
        """Where Gemini CLI keeps its OAuth login, settings, ``.env`` and sessions:
        ``${GEMINI_CLI_HOME:-~}/.gemini``. Visible to a gemini reviewer, hidden from every
        other."""
        base = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
        return (base / ".gemini",)

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """``${GEMINI_CLI_HOME:-~}/.gemini/tmp/<slug>/chats/session-*.jsonl``.

        The slug for ``repo`` is in ``~/.gemini/projects.json``; rather than read it, every
        slug is matched and each chat is kept only if the slug's ``.project_root``
        sidecar names ``repo`` (:meth:`parse_session`).
        """
        base = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
        return [
            SessionStore(
                root=base / ".gemini" / "tmp",
                pattern="*/chats/session-*.jsonl",
                head_bytes=8192,
                sidecars=(PROJECT_ROOT_SIDECAR,),
            )
        ]

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Line 1's ``sessionId``; the project from ``.project_root`` or ``projectHash``."""
        objects = head_objects(file.head)
        if not objects:
            return None
        meta = objects[0]
        session_id = as_str(meta.get("sessionId"))
        if session_id is None or meta.get("kind") == "subagent":
            return None
        root_bytes = file.sidecars.get(PROJECT_ROOT_SIDECAR)
        if root_bytes is not None:
            cwd = text_of(root_bytes).strip()
            if not same_path(cwd, repo):
                return None
        else:  # older layout: the directory is sha256(project root)
            import hashlib  # here, not at import: only this layout needs it (and it is slow)

            project_hash = hashlib.sha256(str(repo).encode("utf-8")).hexdigest()
            if meta.get("projectHash") != project_hash:
                return None
            cwd = str(repo)
        return StoredSession(
            product=PRODUCT,
            session_id=session_id,
            cwd=cwd,
            updated=iso_utc(file.mtime),
            title=_title(objects),
            source=SOURCE,
        )

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """``gemini --resume <id>`` and ``gemini --resume <id> -p "<prompt>"``.

        Read-only: :data:`READ_ONLY_FLAGS` (plan mode and the read-only policy file of this
        installation) after the id.
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
    """The session summary if recorded, else the first user message."""
    if summary := as_str(objects[0].get("summary")):
        return title_of(summary)
    for obj in objects[1:]:
        if obj.get("type") == "user" and (text := content_text(obj.get("content"))):
            return title_of(text)
    return None


ADAPTER: Final = GeminiAdapter()
"""The instance the registry loads."""

if TYPE_CHECKING:
    _conforms: Adapter = ADAPTER
