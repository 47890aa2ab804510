"""Contract tests: what opencode's and Qwen Code's adapters read from the user's own files,
and that prefs accept the two products wherever a product name goes.

The parsers get the text the orchestrator read; the files are only the user's own (never
the repository's), relocated by the CLIs' own variables.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, known_products
from review_loop.prefs import load_prefs

HOME = Path("/home/u")


def test_opencode_names_the_variables_its_config_substitutes() -> None:
    text = (
        '{"provider": {"x": {"options": {"apiKey": "{env:MY_PROVIDER_KEY}", '
        '"baseURL": "{env:MY_BASE}/v1"}}}, "note": "{env:not a name}", "k": "{file:~/.key}"}'
    )
    names = get_adapter("opencode").configured_env_names({"opencode.json": text})  # type: ignore[attr-defined]
    assert names == ("MY_PROVIDER_KEY", "MY_BASE")


def test_opencode_reads_only_the_users_own_config() -> None:
    adapter = get_adapter("opencode")
    files = adapter.user_config_files({}, HOME)  # type: ignore[attr-defined]
    assert files == (
        HOME / ".config/opencode/opencode.json",
        HOME / ".config/opencode/opencode.jsonc",
    )
    moved = adapter.user_config_files(  # type: ignore[attr-defined]
        {"XDG_CONFIG_HOME": "/cfg", "OPENCODE_CONFIG": "/etc/oc.json"}, HOME
    )
    assert moved == (
        Path("/cfg/opencode/opencode.json"),
        Path("/cfg/opencode/opencode.jsonc"),
        Path("/etc/oc.json"),
    )


def test_qwen_names_its_settings_references_and_provider_keys() -> None:
    text = (
        '{"security": {"auth": {"apiKey": "$QWEN_KEY"}}, "x": "${OTHER:-d}", '
        '"modelProviders": {"openai": [{"id": "m", "envKey": "MY_MODEL_KEY"}]}}'
    )
    names = get_adapter("qwen").configured_env_names({"settings.json": text})  # type: ignore[attr-defined]
    assert names == ("QWEN_KEY", "OTHER", "MY_MODEL_KEY")


def test_qwen_settings_follow_qwen_home() -> None:
    adapter = get_adapter("qwen")
    assert adapter.user_config_files({}, HOME) == (HOME / ".qwen/settings.json",)  # type: ignore[attr-defined]
    moved = adapter.user_config_files({"QWEN_HOME": "/q"}, HOME)  # type: ignore[attr-defined]
    assert moved == (Path("/q/settings.json"),)


@pytest.mark.parametrize("product", ["opencode", "qwen"])
def test_prefs_accept_the_product_in_the_order(product: str, tmp_path: Path) -> None:
    prefs_file = tmp_path / "prefs.toml"
    prefs_file.write_text(f'order = ["{product}", "claude"]\n')
    assert load_prefs(known_products(), path=prefs_file, env={}).order == (product, "claude")
