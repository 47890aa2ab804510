"""Contract tests: every registered adapter's ``required_flags`` (adapters/base.py) names
only flags its ``build`` passes, each with a purpose and a help page, and its optional login
hook reads what its CLI prints. Future adapters are held to it by registration alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.adapters.base import LoginState, login_state, required_flags
from review_loop.agents.models import AgentRequest, Capabilities


@pytest.mark.parametrize("product", product_names())
def test_required_flags_are_flags_build_passes(product: str, tmp_path: Path) -> None:
    adapter = get_adapter(product)
    capabilities = Capabilities()
    flags = required_flags(adapter, capabilities)
    request = AgentRequest(prompt="hi", cwd=tmp_path)
    argv = adapter.build(request, command=(product,), capabilities=capabilities).argv
    for flag in flags:
        assert flag.flag.startswith("-") and flag.flag in argv, (product, flag)
        assert flag.purpose in ("read-only", "lockdown"), (product, flag)
        assert flag.help_args and flag.help_args[-1] in ("--help", "-h"), (product, flag)


@pytest.mark.parametrize(
    ("product", "output", "returncode", "state"),
    [
        (
            "claude",
            '{"loggedIn": true, "authMethod": "api_key", "apiKeySource": "K"}',
            0,
            "logged-in",
        ),
        ("claude", '{\n  "loggedIn": false,\n  "authMethod": "none"\n}', 1, "logged-out"),
        ("claude", "TypeError: boom", 1, "unknown"),
        ("codex", "WARNING: x\nLogged in using an API key - sk-***abcd", 0, "logged-in"),
        ("codex", "WARNING: x\nNot logged in", 1, "logged-out"),
        ("codex", "error: unexpected argument", 2, "unknown"),
        ("gemini", "", None, "unknown"),
        ("grok", "", None, "unknown"),
    ],
)
def test_login_state_reads_what_the_cli_prints(
    product: str, output: str, returncode: int | None, state: str
) -> None:
    read = login_state(get_adapter(product), output, returncode)
    assert isinstance(read, LoginState) and read.state == state, read
