"""Contract tests: how the gemini, grok, opencode and qwen adapters read a login without a
model call (the pure ``login_args``/``login_state`` and ``login_files``/``login_from`` hooks
``review-loop doctor`` asks).

- opencode: ``opencode auth list``'s own output (as 1.18.33 prints it, colour codes
  included) — a stored credential or a provider key in its environment is a login,
  ``0 credentials`` and nothing else is none, anything else is unknown;
- gemini: its own rule before a first request — the auth type its user settings select,
  else the one its environment (and ``~/.gemini/.env``) implies, and whether the variables
  that type needs are there; a Google login's token can only be proven by a request;
- grok (npm 0.0.34): ``GROK_API_KEY``, else ``apiKey`` of ``~/.grok/user-settings.json``;
  Grok Build keeps its login its own way (unknown);
- qwen: no status command exists (``qwen auth`` was removed): unknown, saying why.
"""

from __future__ import annotations

import json
from pathlib import Path

from review_loop.adapters import get_adapter
from review_loop.adapters.base import LoginState, login_from
from review_loop.agents.models import Capabilities

# What opencode 1.18.33 prints for `opencode auth list` (captured; ESC is \x1b).
OPENCODE_NONE = (
    "\x1b[0m\n┌  Credentials \x1b[90m~/.local/share/opencode/auth.json\n│\n└  0 credentials\n"
)
OPENCODE_STORED = (
    "┌  Credentials \x1b[90m~/.local/share/opencode/auth.json\n│\n●  Anthropic \x1b[90mapi\n│\n"
    "●  OpenAI \x1b[90moauth\n│\n└  2 credentials\n"
)
OPENCODE_ENV = OPENCODE_NONE + (
    "\n┌  Environment\n│\n●  Anthropic \x1b[90mANTHROPIC_API_KEY\n│\n└  1 environment variable\n"
)
HOME = Path("/home/u")
VIBE = Capabilities(variant="vibe-0.0.34", read_only=False, resumable=False, isolate_in_copy=True)


def test_contract_opencode_reads_its_auth_list() -> None:
    opencode = get_adapter("opencode")
    assert opencode.login_args() == ("auth", "list")
    assert opencode.login_state(OPENCODE_NONE, 0) == LoginState(
        "logged-out",
        "opencode auth list: 0 stored credential(s) (log in with: opencode auth login)",
    )
    assert opencode.login_state(OPENCODE_STORED, 0) == LoginState(
        "logged-in", "opencode auth list: 2 stored credential(s)"
    )
    assert opencode.login_state(OPENCODE_ENV, 0) == LoginState(
        "logged-in",
        "opencode auth list: 0 stored credential(s), 1 provider key(s) in its environment",
    )
    assert opencode.login_state(OPENCODE_STORED, 1).state == "unknown"  # it failed
    assert opencode.login_state("Error: unknown command auth", 0).state == "unknown"


def _gemini(env: dict[str, str], settings: object = None, dotenv: str | None = None) -> LoginState:
    gemini = get_adapter("gemini")
    settings_path, dotenv_path = gemini.login_files(env, HOME)
    assert (settings_path, dotenv_path) == (HOME / ".gemini/settings.json", HOME / ".gemini/.env")
    texts = {}
    if settings is not None:
        texts[str(settings_path)] = settings if isinstance(settings, str) else json.dumps(settings)
    if dotenv is not None:
        texts[str(dotenv_path)] = dotenv
    return login_from(gemini, env, texts, Capabilities())


def _selected(kind: str) -> dict[str, object]:
    return {"security": {"auth": {"selectedType": kind}}}


def test_contract_gemini_reads_its_auth_type_and_the_variables_it_needs() -> None:
    nothing = _gemini({})
    assert nothing.state == "logged-out" and "GEMINI_API_KEY" in nothing.detail
    assert _gemini({"GEMINI_API_KEY": "k"}) == LoginState(
        "logged-in", "gemini-api-key (from GEMINI_API_KEY), GEMINI_API_KEY set"
    )
    assert _gemini({}, dotenv='export GEMINI_API_KEY="k"\n').state == "logged-in"
    assert _gemini({}, _selected("gemini-api-key")).state == "unknown"  # a keychain key?
    assert _gemini({}, _selected("oauth-personal")).state == "unknown"  # a token: a request tells
    assert _gemini({"GOOGLE_GENAI_USE_GCA": "true"}).state == "unknown"
    assert _gemini({"GOOGLE_GENAI_USE_GCA": "false"}).state == "logged-out"
    assert _gemini({}, _selected("vertex-ai")).state == "logged-out"
    vertex = {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}
    assert _gemini(vertex, _selected("vertex-ai")).state == "logged-in"
    assert _gemini({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_API_KEY": "k"}).state == (
        "logged-in"
    )
    # the settings' choice wins over the environment, as in gemini
    assert _gemini({"GEMINI_API_KEY": "k"}, _selected("oauth-personal")).state == "unknown"
    assert _gemini({}, "{not json").state == "unknown"
    assert _gemini({}, {"selectedAuthType": "gemini-api-key"}).state == "unknown"  # older form


def test_contract_gemini_settings_live_under_gemini_cli_home() -> None:
    files = get_adapter("gemini").login_files({"GEMINI_CLI_HOME": "/g"}, HOME)
    assert files == (Path("/g/.gemini/settings.json"), Path("/g/.gemini/.env"))


def test_contract_grok_reads_the_two_places_its_npm_cli_takes_a_key_from() -> None:
    grok = get_adapter("grok")
    (settings,) = grok.login_files({"GROK_HOME": "/elsewhere"}, HOME)
    assert settings == HOME / ".grok/user-settings.json"  # the npm CLI ignores GROK_HOME
    saved = {str(settings): json.dumps({"apiKey": "xai-1"})}
    assert login_from(grok, {"GROK_API_KEY": "k"}, {}, VIBE) == LoginState(
        "logged-in", "api key from GROK_API_KEY"
    )
    assert login_from(grok, {}, saved, VIBE) == LoginState(
        "logged-in", "api key from ~/.grok/user-settings.json"
    )
    none = login_from(grok, {}, {str(settings): json.dumps({"apiKey": ""})}, VIBE)
    assert none.state == "logged-out" and "GROK_API_KEY" in none.detail
    assert login_from(grok, {}, {}, VIBE).state == "logged-out"
    assert login_from(grok, {}, {str(settings): "{"}, VIBE).state == "unknown"
    build = Capabilities(variant="grok-build")
    assert login_from(grok, {"GROK_API_KEY": "k"}, saved, build).state == "unknown"


def test_contract_qwen_says_why_its_login_is_unknown() -> None:
    qwen = get_adapter("qwen")
    assert getattr(qwen, "login_args", None) is None
    said = qwen.login_state("", None)
    assert said.state == "unknown" and "`qwen auth` was removed" in said.detail


def test_contract_a_login_reading_that_fails_is_unknown() -> None:
    class Broken:
        def login_from(self, *args: object) -> LoginState:
            raise KeyError("boom")

    assert login_from(Broken(), {}, {}, Capabilities()).state == "unknown"
    assert login_from(object(), {}, {}, Capabilities()).state == "unknown"
