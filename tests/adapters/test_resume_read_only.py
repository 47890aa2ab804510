"""Contract tests: every adapter's read-only resume commands keep its read-only flags.

The bare ``resume`` commands are the original tool's text (pinned by the goldens) and carry
no flags; a person who copies one resumes the reviewer with write access. ``read_only`` is
the same command with the flags the session ran with, checked here against the flag lists
written out independently in ``test_contract.READ_ONLY``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.agents.models import Capabilities, ResumeCommands
from review_loop.orchestrator.sessions.listing import read_only_resume
from tests.adapters.test_contract import OPENCODE_PERMISSION, READ_ONLY

PRODUCTS = product_names()
SESSION_ID = "0199a0b1-aaaa-7bbb-8ccc-0123456789ab"
PROMPT = "<prompt>"
# Flags that only shape headless output: an interactive session prints no JSON.
HEADLESS_ONLY = ("--output-format", "json")


def contains(argv: Sequence[str], flags: Sequence[str]) -> bool:
    """``flags`` appear in ``argv`` in order, side by side."""
    return any(tuple(argv[i : i + len(flags)]) == tuple(flags) for i in range(len(argv)))


def without_assignments(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """The leading ``NAME=value`` words a shell reads as variable assignments, and the rest."""
    assigned: dict[str, str] = {}
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0], re.DOTALL):
        name, _, value = argv.pop(0).partition("=")
        assigned[name] = value
    return assigned, argv


def interactive_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    if flags[: len(HEADLESS_ONLY)] == HEADLESS_ONLY:
        return flags[len(HEADLESS_ONLY) :]
    return flags


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_contract_read_only_resume_commands_carry_the_read_only_flags(product: str) -> None:
    commands = get_adapter(product).resume_commands(SESSION_ID, ("peer",))
    assert commands.read_only is not None, "a built-in adapter gives read-only commands"
    read_only = commands.read_only
    assert read_only.unavailable is None
    flags = READ_ONLY.get(product, ())
    pairs = (
        (commands.interactive, read_only.interactive, interactive_flags(flags)),
        (commands.headless, read_only.headless, flags),
    )
    for bare, guarded, expected in pairs:
        assert (bare is None) == (guarded is None)
        if guarded is None:
            continue
        assigned, argv = without_assignments(shlex.split(guarded))
        if product == "opencode":  # its rules and agent come from the environment only
            assert json.loads(assigned["OPENCODE_PERMISSION"]) == OPENCODE_PERMISSION
            content = json.loads(assigned["OPENCODE_CONFIG_CONTENT"])
            assert content["agent"]["review-loop-reader"]["permission"] == OPENCODE_PERMISSION
        else:
            assert assigned == {}
        assert argv[0] == "peer" and SESSION_ID in argv
        assert contains(argv, expected), f"{product}: {guarded} lacks {expected}"
        assert set(shlex.split(bare)) <= set(argv)  # the same command, flags added
    if read_only.headless is not None:
        # The prompt stays the last, positional word, after every flag's value.
        _, argv = without_assignments(shlex.split(read_only.headless))
        assert argv[-1] == PROMPT and not contains(argv[:-1], [PROMPT])


def test_contract_claude_prompt_is_not_swallowed_by_a_variadic_tool_list() -> None:
    # --tools and --disallowedTools take every following word: the prompt must not follow.
    commands = get_adapter("claude").resume_commands(SESSION_ID, ("claude",))
    assert commands.read_only is not None and commands.read_only.headless is not None
    argv = shlex.split(commands.read_only.headless)
    assert argv[-3:] == ["--resume", SESSION_ID, PROMPT]


def test_contract_codex_exec_flags_go_before_resume() -> None:
    # ``codex exec resume`` rejects -s: the flags belong to ``exec``.
    commands = get_adapter("codex").resume_commands(SESSION_ID, ("codex",))
    assert commands.read_only is not None and commands.read_only.headless is not None
    argv = shlex.split(commands.read_only.headless)
    assert argv[:3] == ["codex", "exec", "-s"]
    assert argv[-3:] == ["resume", SESSION_ID, PROMPT]


def test_contract_a_grok_without_read_only_mode_says_so_instead_of_a_command() -> None:
    adapter = get_adapter("grok")
    npm = adapter.capabilities("Usage: grok [options]\n  --max-tool-rounds <rounds>\n")
    commands = adapter.resume_commands(SESSION_ID, ("grok",), capabilities=npm)  # type: ignore[call-arg]
    assert commands.read_only is not None
    assert commands.read_only.interactive is None and commands.read_only.headless is None
    assert commands.read_only.unavailable is not None
    assert "no read-only mode" in commands.read_only.unavailable


def test_contract_an_adapter_without_read_only_commands_is_reported_unavailable() -> None:
    # A third-party adapter written before read_only existed returns bare commands only.
    bare = ResumeCommands(interactive="tool --resume s", headless='tool -p --resume s "<prompt>"')
    document = read_only_resume("tool", bare)
    assert document["interactive"] is None and document["headless"] is None
    assert document["unavailable"] is not None and "tool" in document["unavailable"]


def test_contract_read_only_resume_document_of_a_built_in() -> None:
    commands = get_adapter("codex").resume_commands(SESSION_ID, ("codex",))
    document = read_only_resume("codex", commands)
    assert set(document) == {"interactive", "headless", "unavailable"}
    assert document["unavailable"] is None and document["headless"] is not None


def test_capabilities_fixture_is_the_npm_variant() -> None:
    npm = get_adapter("grok").capabilities("  --max-tool-rounds <rounds>\n")
    assert isinstance(npm, Capabilities) and npm.read_only is False
