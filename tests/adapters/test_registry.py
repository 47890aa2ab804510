"""Contract tests of the adapter registry: built-ins and third-party adapters, one door.

A third-party adapter is a real installed distribution (a ``.dist-info`` on ``sys.path``)
whose entry point in the ``review_loop.adapters`` group names the adapter.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, is_product, known_products, product_names, registry
from review_loop.agents.errors import UnknownProductError
from review_loop.prefs import load_prefs

ACME = textwrap.dedent(
    """
    from review_loop.agents.models import (
        Capabilities, EnvPassthrough, Failure, Invocation, ResumeCommands
    )

    class Acme:
        name = "acme"
        default_executable = "acme-cli"
        env_passthrough = EnvPassthrough(names=("ACME_TOKEN",))

        def probe_args(self):
            return None

        def capabilities(self, probe_output):
            return Capabilities()

        def build(self, request, *, command, capabilities):
            return Invocation(argv=(*command, "--read-only"), stdin=request.prompt.encode(),
                              cwd=request.cwd)

        def interpret(self, invocation, completed):
            return Failure(state="DELIVERY_UNKNOWN", reason="unparsed")

        def session_stores(self, env, home, repo):
            return []

        def parse_session(self, file, repo):
            return None

        def resume_commands(self, session_id, command):
            return ResumeCommands(interactive=None, headless=None)

    ADAPTER = Acme()
    """
)


@pytest.fixture
def acme_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    (tmp_path / "acme_adapter.py").write_text(ACME)
    dist = tmp_path / "acme_adapter-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-adapter\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[review_loop.adapters]\nacme = acme_adapter:ADAPTER\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._third_party.cache_clear()
    registry.get_adapter.cache_clear()
    yield
    registry._third_party.cache_clear()
    registry.get_adapter.cache_clear()


def test_builtins_are_registered() -> None:
    assert product_names()[:4] == ("claude", "codex", "grok", "gemini")
    for name in ("claude", "codex", "grok", "gemini"):
        assert get_adapter(name).name == name


def test_unknown_product_names_what_is_accepted() -> None:
    with pytest.raises(UnknownProductError) as caught:
        get_adapter("bard", field="--peer")
    assert str(caught.value) == (
        "--peer: unknown product 'bard' (accepted: claude, codex, gemini, grok, opencode, qwen, "
        "simulated)"
    )


@pytest.mark.usefixtures("acme_installed")
def test_third_party_adapter_comes_through_the_entry_point_group(tmp_path: Path) -> None:
    assert "acme" in product_names()
    assert is_product("acme")
    assert "acme" in known_products()
    adapter = get_adapter("acme")
    assert adapter.name == "acme"
    prefs_file = tmp_path / "prefs.toml"
    prefs_file.write_text('order = ["acme", "claude"]\n')
    assert load_prefs(known_products(), path=prefs_file, env={}).order == ("acme", "claude")


def test_without_the_distribution_acme_is_unknown() -> None:
    registry._third_party.cache_clear()
    assert not is_product("acme")
    assert "acme" not in known_products()
