"""Contract tests: the variables a CLI's own user configuration names for its credentials.

The adapters parse configuration TEXT (the orchestrator reads the user's files): codex's
``model_providers.<id>.env_key`` and ``env_http_headers`` (top level, legacy profiles, and
profile files), gemini's ``$NAME`` / ``${NAME}`` references in its settings. Pure: no file
is read here. Also the ``missing credentials`` refusal, which names the variable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.adapters._common import missing_credential, missing_variable
from review_loop.agents.models import Completed, DeliveryState, Invocation

CODEX_CONFIG = """
model = "gpt-5"
model_provider = "x"

[model_providers.x]
name = "custom"
base_url = "https://llm.example.com/v1"
env_key = "MY_PROVIDER_KEY"
env_http_headers = { "X-Project" = "MY_PROJECT_HEADER" }

[model_providers.azure]
env_key = "AZURE_OPENAI_API_KEY"

[profiles.old]
model_provider = "legacy"

[profiles.old.model_providers.legacy]
env_key = "LEGACY_KEY"
"""


def test_contract_codex_names_every_provider_env_key_and_header_variable() -> None:
    names = get_adapter("codex").configured_env_names({"config.toml": CODEX_CONFIG})  # type: ignore[attr-defined]
    assert names == ("MY_PROVIDER_KEY", "MY_PROJECT_HEADER", "AZURE_OPENAI_API_KEY", "LEGACY_KEY")


def test_contract_codex_profile_files_count_and_repeats_are_named_once() -> None:
    profile = '[model_providers.p]\nenv_key = "PROFILE_KEY"\n'
    texts = {"config.toml": CODEX_CONFIG, "work.config.toml": profile + CODEX_CONFIG}
    names = get_adapter("codex").configured_env_names(texts)  # type: ignore[attr-defined]
    assert names.count("MY_PROVIDER_KEY") == 1 and "PROFILE_KEY" in names


@pytest.mark.parametrize(
    "text",
    [
        "model_providers = [",  # not TOML: codex says so itself
        '[model_providers.x]\nenv_key = "A=B"\n',  # not a variable name
        '[model_providers.x]\nenv_key = 3\nenv_http_headers = "NOT_A_TABLE"\n',
        'model_providers = "x"\nenv_key = "TOP_LEVEL_IS_NOT_A_PROVIDER"\n',
        "",
    ],
)
def test_contract_codex_text_that_names_nothing(text: str) -> None:
    assert get_adapter("codex").configured_env_names({"config.toml": text}) == ()  # type: ignore[attr-defined]


def test_contract_codex_user_config_files_follow_codex_home() -> None:
    codex = get_adapter("codex")
    home = Path("/home/u")
    assert codex.user_config_files({}, home) == (  # type: ignore[attr-defined]
        home / ".codex" / "config.toml",
        home / ".codex" / "*.config.toml",
    )
    assert codex.user_config_files({"CODEX_HOME": "/c"}, home)[0] == Path("/c/config.toml")  # type: ignore[attr-defined]


def test_contract_gemini_names_the_variables_its_settings_reference() -> None:
    settings = """{
      // gemini strips comments and resolves references in every string
      "security": {"auth": {"selectedType": "gemini-api-key"}},
      "mcpServers": {"x": {"headers": {"Authorization": "Bearer ${MY_MCP_TOKEN}"}}},
      "model": {"name": "$MY_MODEL_NAME"},
      "other": "${WITH_DEFAULT:-fallback} and ${bad name} and $$ and $9X"
    }"""
    names = get_adapter("gemini").configured_env_names({"settings.json": settings})  # type: ignore[attr-defined]
    assert names == ("MY_MCP_TOKEN", "MY_MODEL_NAME", "WITH_DEFAULT")
    home = Path("/home/u")
    assert get_adapter("gemini").user_config_files({}, home) == (home / ".gemini/settings.json",)  # type: ignore[attr-defined]


def test_contract_a_missing_credential_names_its_variable() -> None:
    failure = missing_credential(
        "MY_PROVIDER_KEY", "Missing environment variable: 'MY_PROVIDER_KEY'."
    )
    assert failure.state is DeliveryState.NOT_SUBMITTED
    assert failure.reason == "missing credentials"
    assert missing_variable(failure.detail) == "MY_PROVIDER_KEY"
    assert missing_variable(missing_credential(None, "no key").detail) is None


@pytest.mark.parametrize("quote", ["'", "`"])  # the samples' form; codex 0.171's own
def test_contract_codex_refusal_names_the_variable_codex_wanted(quote: str) -> None:
    codex = get_adapter("codex")
    stderr = f"Error: Missing environment variable: {quote}MY_PROVIDER_KEY{quote}.\n".encode()
    completed = Completed(returncode=1, stdout=b"", stderr=stderr, elapsed_ms=100)
    outcome = codex.interpret(Invocation(argv=("codex",), cwd=Path("/")), completed)
    assert outcome.reason == "missing credentials"  # type: ignore[union-attr]
    assert missing_variable(outcome.detail) == "MY_PROVIDER_KEY"  # type: ignore[union-attr]
