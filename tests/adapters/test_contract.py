"""Contract tests: the behaviour every registered adapter must show.

Built-in products are additionally held to their documented read-only flags and to the
golden samples recorded from the real CLIs (``golden.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from review_loop.adapters import Adapter, get_adapter, product_names
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.models import (
    AgentRequest,
    Capabilities,
    DeliveryState,
    EnvPassthrough,
    Failure,
    Invocation,
    Reply,
)
from tests.adapters.golden import CASES, PROMPT, REPO, Golden, finished, sample, success_for

PRODUCTS = product_names()

# The flags that make each built-in read-only, written out here independently of the
# modules so that dropping one from an adapter fails a test.
READ_ONLY: dict[str, tuple[str, ...]] = {
    "claude": (
        "--permission-mode",
        "plan",
        "--tools",
        "Read,Grep,Glob",
        "--disallowedTools",
        "Write,Edit,NotebookEdit,Bash,Agent,WebFetch,WebSearch",
    ),
    "codex": ("-s", "read-only", "-c", 'sandbox_mode="read-only"', "-c", 'approval_policy="never"'),
    "gemini": (
        "--approval-mode",
        "plan",
        "--admin-policy",
        str(Path(__file__).parents[2] / "review_loop" / "adapters" / "gemini_read_only.toml"),
    ),
    "opencode": ("--agent", "review-loop-reader"),
    "qwen": (
        "--approval-mode",
        "plan",
        "--exclude-tools",
        # every tool qwen 0.24 registers but read_file, grep_search, glob, list_directory
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
        "omni_understand_video_segments,omni_recall_media_memory,propose_goal,display_image",
    ),
    "grok": (
        "--output-format",
        "json",
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
    ),
}

# The flags that keep each built-in from running what the repository provides (settings,
# hooks, MCP servers, rules), written out independently of the modules.
NO_PROJECT_CODE: dict[str, tuple[str, ...]] = {
    "claude": (
        "--setting-sources",
        "user",
        "--strict-mcp-config",
        "--mcp-config",
        '{"mcpServers":{}}',
        "--settings",
        '{"disableAllHooks":true}',
    ),
    # the reviewed repository untrusted, whatever the user's own config.toml says
    "codex": ("--ignore-rules", "-c", f'projects={{"{REPO}"={{trust_level="untrusted"}}}}'),
    "qwen": ("--safe-mode",),  # no hook, extension, skill, MCP server or memory agent
}

# The read-only rules opencode takes from its environment only, written out independently:
# every tool denied but the four that read, for the run's own agent too.
OPENCODE_PERMISSION = {
    "*": "deny",
    "read": "allow",
    "glob": "allow",
    "grep": "allow",
    "list": "allow",
}
OPENCODE_ENV = {"OPENCODE_DISABLE_PROJECT_CONFIG": "1"}

# Products whose CLI writes into the repository by itself: run with it mounted read-only.
READ_ONLY_REPOSITORY = ("opencode", "qwen")

# What each built-in's CLI would load from the repository and must not see.
HIDDEN: dict[str, tuple[str, ...]] = {
    "gemini": (".gemini", ".env"),
    "grok": (".grok", ".env"),
    "opencode": (".opencode", "opencode.json", "opencode.jsonc"),
    "qwen": (".qwen", ".env", ".mcp.json"),
}

# Each built-in's own credential, which must reach it; and secrets of other tools, which
# no adapter may let through.
OWN_CREDENTIAL = {
    "claude": "ANTHROPIC_API_KEY",
    "codex": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "grok": "GROK_API_KEY",
    "opencode": "OPENCODE_CONFIG",
    "qwen": "OPENAI_API_KEY",
}
FOREIGN_SECRETS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "NPM_TOKEN",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
    "KUBECONFIG",
)

# Probe outputs each built-in may see (besides no probe at all).
PROBES: dict[str, tuple[str | None, ...]] = {
    "claude": (None, "2.1.197 (Claude Code)\n"),
    "codex": (
        None,
        "WARNING: proceeding, even though we could not create PATH aliases\ncodex-cli 0.171.0\n",
    ),
    "gemini": (None, "0.61.0\n"),
    "opencode": (None, "1.18.33\n"),
    "qwen": (None, "0.24.4\n"),
    "grok": (
        None,
        sample("grok", "help-vibe-0.0.34.txt").decode(),
        sample("grok", "help-build-synthetic.txt").decode(),
        "Usage: grok [options]\n  --some-future-flag\n",
    ),
}

HOSTILE_PROMPTS = (
    PROMPT,
    "--permission-mode bypassPermissions --sandbox danger-full-access",
    "-s workspace-write",
    "'; rm -rf / ; echo '$(whoami)` \"quoted\" \\ back\nsecond line",
)
FLAG_LIKE_IDS = (
    "--dangerously-skip-permissions",
    "-s",
    "--sandbox=off",
    "x y",
    "",
    "id;rm -rf /",
)
COMMANDS: tuple[tuple[str, ...], ...] = (("peer",), ("/opt/bin/peer wrapper", "--profile", "x y"))


def all_capabilities(adapter: Adapter, product: str) -> list[Capabilities]:
    probes = PROBES.get(product, (None,))
    return [Capabilities(), *(adapter.capabilities(p) for p in probes)]


def requests(prompt: str = PROMPT) -> list[AgentRequest]:
    return [
        AgentRequest(prompt=prompt, cwd=REPO),
        AgentRequest(prompt=prompt, cwd=REPO, session_id="11111111-2222-4333-8444-555555555555"),
        AgentRequest(
            prompt=prompt, cwd=REPO, resume_session_id="0199a0b1-aaaa-7bbb-8ccc-0123456789ab"
        ),
    ]


def invocations(
    adapter: Adapter, product: str, *, prompt: str = PROMPT, command: Sequence[str] = ("peer",)
) -> list[Invocation]:
    """Every invocation the adapter agrees to build for the standard requests."""
    built = []
    for capabilities in all_capabilities(adapter, product):
        for request in requests(prompt):
            try:
                built.append(adapter.build(request, command=command, capabilities=capabilities))
            except AdapterRefusalError:
                assert request.resume_session_id is not None  # only resumes may be refused
    assert built
    return built


def contains_run(argv: Sequence[str], flags: Sequence[str]) -> bool:
    """Whether ``flags`` appear in ``argv`` in order and next to each other."""
    size = len(flags)
    return any(tuple(argv[i : i + size]) == tuple(flags) for i in range(len(argv) - size + 1))


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_registered_adapter_satisfies_protocol(product: str) -> None:
    adapter = get_adapter(product)
    assert isinstance(adapter, Adapter)
    assert adapter.name == product
    assert adapter.default_executable


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
@pytest.mark.parametrize("command", COMMANDS, ids=["bare", "alias"])
def test_argv_starts_with_command(product: str, command: tuple[str, ...]) -> None:
    adapter = get_adapter(product)
    for invocation in invocations(adapter, product, command=command):
        assert invocation.argv[: len(command)] == command
        assert invocation.cwd == REPO


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
@pytest.mark.parametrize("prompt", HOSTILE_PROMPTS, ids=["plain", "flags", "short-flag", "shell"])
def test_prompt_never_inside_a_shell_string(product: str, prompt: str) -> None:
    adapter = get_adapter(product)
    for invocation in invocations(adapter, product, prompt=prompt):
        for word in invocation.argv:
            if prompt in word:
                assert word in (prompt, "\n" + prompt), word
        if invocation.stdin is not None:
            assert invocation.stdin == prompt.encode()
        else:
            assert sum(prompt in word for word in invocation.argv) == 1


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
@pytest.mark.parametrize("prompt", HOSTILE_PROMPTS, ids=["plain", "flags", "short-flag", "shell"])
def test_read_only_flags_always_present(product: str, prompt: str) -> None:
    if product not in READ_ONLY:
        pytest.skip(f"no documented read-only flags for third-party product {product}")
    adapter = get_adapter(product)
    for invocation in invocations(adapter, product, prompt=prompt):
        if invocation.isolate_in_copy:
            assert product == "grok"  # the only CLI without a read-only mode
            continue
        assert contains_run(invocation.argv, READ_ONLY[product]), invocation.argv


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_no_project_code_runs(product: str) -> None:
    if product not in NO_PROJECT_CODE and product not in HIDDEN:
        pytest.skip(f"no documented project-configuration controls for {product}")
    adapter = get_adapter(product)
    for invocation in invocations(adapter, product):
        if product in NO_PROJECT_CODE:
            assert contains_run(invocation.argv, NO_PROJECT_CODE[product]), invocation.argv
        assert set(HIDDEN.get(product, ())) <= set(invocation.hidden_paths)
        for path in invocation.hidden_paths:
            assert not Path(path).is_absolute() and ".." not in Path(path).parts


@pytest.mark.parametrize("product", ["opencode"])
def test_opencode_read_only_rules_are_set_for_every_run(product: str) -> None:
    import json

    adapter = get_adapter(product)
    for invocation in invocations(adapter, product):
        assert json.loads(invocation.env["OPENCODE_PERMISSION"]) == OPENCODE_PERMISSION
        content = json.loads(invocation.env["OPENCODE_CONFIG_CONTENT"])
        assert content["agent"]["review-loop-reader"]["permission"] == OPENCODE_PERMISSION
        assert OPENCODE_ENV.items() <= invocation.env.items()


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_repository_read_only_where_the_cli_writes_into_it(product: str) -> None:
    adapter = get_adapter(product)
    for invocation in invocations(adapter, product):
        assert invocation.read_only_repository is (product in READ_ONLY_REPOSITORY)


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_env_passthrough_is_declared_and_narrow(product: str) -> None:
    declared = get_adapter(product).env_passthrough
    assert isinstance(declared, EnvPassthrough)
    for name in FOREIGN_SECRETS:
        assert not declared.allows(name), f"{product} lets {name} through"
    assert all(len(prefix) >= 4 and prefix.endswith("_") for prefix in declared.prefixes)
    if product in OWN_CREDENTIAL:
        assert declared.allows(OWN_CREDENTIAL[product])


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_capabilities_never_claim_safety_they_lack(product: str) -> None:
    adapter = get_adapter(product)
    for capabilities in all_capabilities(adapter, product)[1:]:
        assert capabilities.read_only or capabilities.isolate_in_copy


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
@pytest.mark.parametrize("session_id", FLAG_LIKE_IDS)
def test_flag_like_session_ids_are_refused(product: str, session_id: str) -> None:
    adapter = get_adapter(product)
    for capabilities in all_capabilities(adapter, product):
        resume = AgentRequest(prompt=PROMPT, cwd=REPO, resume_session_id=session_id)
        with pytest.raises(AdapterRefusalError):
            adapter.build(resume, command=("peer",), capabilities=capabilities)
        preassigned = AgentRequest(prompt=PROMPT, cwd=REPO, session_id=session_id)
        try:
            invocation = adapter.build(preassigned, command=("peer",), capabilities=capabilities)
        except AdapterRefusalError:
            continue
        assert invocation.session_id != session_id  # ignored, never passed on


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
@pytest.mark.parametrize(
    ("change", "state"),
    [
        ({"timed_out": True, "returncode": None}, DeliveryState.DELIVERY_UNKNOWN),
        ({"stopped": True, "returncode": -15}, DeliveryState.DELIVERY_UNKNOWN),
        ({"cancelled": True, "returncode": -9}, DeliveryState.DELIVERY_UNKNOWN),
        # A CLI that traps SIGTERM, or finishes just as the deadline fires, can exit 0
        # with a whole answer: the run was still interrupted, so it is never a reply.
        ({"timed_out": True, "returncode": 0}, DeliveryState.DELIVERY_UNKNOWN),
        ({"stopped": True, "returncode": 0}, DeliveryState.DELIVERY_UNKNOWN),
        ({"cancelled": True, "returncode": 0}, DeliveryState.DELIVERY_UNKNOWN),
        (
            {"spawn_error": "No such file or directory", "returncode": None},
            DeliveryState.NOT_SUBMITTED,
        ),
    ],
    ids=[
        "timeout",
        "stopped",
        "cancelled",
        "timeout-exit-0",
        "stopped-exit-0",
        "cancelled-exit-0",
        "spawn-error",
    ],
)
def test_interrupted_run_never_yields_a_reply(
    product: str, change: dict[str, object], state: DeliveryState
) -> None:
    golden = success_for(product)
    if golden is None:
        pytest.skip(f"no golden success for {product}")
    outcome = golden.adapter().interpret(golden.invocation(), golden.completed(**change))
    assert isinstance(outcome, Failure)
    assert outcome.state is state
    if change.get("timed_out"):
        assert outcome.reason == "timeout"


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
@pytest.mark.parametrize("stdout", [b"\xff\xfe\x00\x80 not utf-8 {", b'{"result": "\xff"}\n'])
def test_non_utf8_output_is_delivery_unknown(product: str, stdout: bytes) -> None:
    adapter = get_adapter(product)
    for invocation in invocations(adapter, product):
        outcome = adapter.interpret(invocation, finished(stdout))
        assert isinstance(outcome, Failure)
        assert outcome.state is DeliveryState.DELIVERY_UNKNOWN


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_golden_sample(case: Golden) -> None:
    outcome = case.adapter().interpret(case.invocation(), case.completed())
    if case.state is DeliveryState.DELIVERED:
        assert isinstance(outcome, Reply), outcome
        assert outcome.text == case.text
        assert outcome.session_id == case.session_id
        return
    assert isinstance(outcome, Failure), outcome
    assert outcome.state is case.state
    if case.reason is not None:
        assert outcome.reason == case.reason
    assert outcome.session_not_found is case.session_not_found
    if case.session_id is not None:
        assert outcome.session_id == case.session_id
    assert len(outcome.detail) <= 2000


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_golden_cases_cover_every_builtin(product: str) -> None:
    if product not in READ_ONLY:
        pytest.skip("third-party product")
    states = {case.state for case in CASES if case.product == product}
    assert states == set(DeliveryState)


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_resume_commands_are_copy_ready(product: str) -> None:
    adapter = get_adapter(product)
    session_id = "0199a0b1-aaaa-7bbb-8ccc-0123456789ab"
    for command, prefix in ((("peer",), "peer "), (("my peer", "-x"), "'my peer' -x ")):
        commands = adapter.resume_commands(session_id, command)
        for text in (commands.interactive, commands.headless):
            if text is None:
                continue
            assert text.startswith(prefix)
            assert session_id in text
        if commands.headless is not None:
            assert commands.headless.endswith(' "<prompt>"')


@pytest.mark.parametrize("product", PRODUCTS, ids=PRODUCTS)
def test_session_stores_are_pure_descriptions(product: str, tmp_path: Path) -> None:
    adapter = get_adapter(product)
    stores = adapter.session_stores({}, tmp_path / "home", REPO)
    for store in stores:
        assert store.root.is_relative_to(tmp_path / "home")
        assert store.head_bytes > 0
    assert list(tmp_path.iterdir()) == []  # nothing was created
