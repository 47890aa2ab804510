"""The environment a reviewer gets: an allow-list, never the caller's whole environment.

Contract tests of :mod:`review_loop.orchestrator.process.environment`, then process tests through
the real dispatcher and process layer: a reviewer CLI that prints its whole environment
(a prefs peer-command alias of claude) sees no canary secret of the caller, while what its
adapter declares, what prefs ``envPassthrough`` names and the run's marker reach it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.adapters.claude import ENV as CLAUDE_ENV
from review_loop.agents.models import EnvPassthrough, Invocation
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.process.environment import (
    BASICS,
    PASSTHROUGH_ENV,
    caller_names,
    child_environment,
)
from review_loop.orchestrator.process.run import MARKER_ENV
from review_loop.prefs import Prefs
from tests.fakes import fake_agent
from tests.gitrepo import committed_repo

CANARIES = {
    "AWS_SECRET_ACCESS_KEY": "canary-aws-" + uuid.uuid4().hex,
    "GITHUB_TOKEN": "canary-gh-" + uuid.uuid4().hex,
    "DATABASE_URL": f"postgres://u:canary-{uuid.uuid4().hex}@db/x",
    "SSH_AUTH_SOCK": "/tmp/canary-agent-" + uuid.uuid4().hex,
}

DUMP_CLI = """\
import json, os, sys
if "--help" in sys.argv:  # the flags review-loop checks before it runs a claude
    print(HELP_TEXT)
    sys.exit(0)
sys.stdin.read()
session = sys.argv[sys.argv.index("--session-id") + 1]
print(json.dumps({"type": "result", "is_error": False, "session_id": session,
                  "result": json.dumps(dict(os.environ))}))
"""


def invocation(**fields: object) -> Invocation:
    return Invocation(argv=("cli",), cwd=Path("/"), **fields)  # type: ignore[arg-type]


# -- contract --------------------------------------------------------------------------------


def test_contract_only_the_basics_pass_by_default() -> None:
    caller = {"PATH": "/bin", "HOME": "/h", "LC_TIME": "C", "https_proxy": "http://p", **CANARIES}
    env = child_environment(invocation(), {MARKER_ENV: "m"}, caller)
    assert env == {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_TIME": "C",
        "https_proxy": "http://p",
        MARKER_ENV: "m",
    }


def test_contract_declared_names_and_prefixes_pass_and_nothing_else() -> None:
    caller = {"ANTHROPIC_API_KEY": "k", "MY_NAME": "n", "MY_NAMES": "no", **CANARIES}
    allowed = EnvPassthrough(names=("MY_NAME",), prefixes=("ANTHROPIC_",))
    env = child_environment(invocation(pass_env=allowed), {}, caller)
    assert env == {"ANTHROPIC_API_KEY": "k", "MY_NAME": "n"}


def test_contract_unset_set_and_the_marker_win_over_what_passes() -> None:
    caller = {"CLAUDECODE": "1", "HOME": "/real", MARKER_ENV: "forged"}
    allowed = EnvPassthrough(prefixes=("CLAUDE",))
    inv = invocation(pass_env=allowed, unset_env=("CLAUDECODE",), env={"HOME": "/scratch"})
    env = child_environment(inv, {MARKER_ENV: "mine"}, caller)
    assert env == {"HOME": "/scratch", MARKER_ENV: "mine"}


def test_contract_the_caller_lists_exact_names_never_patterns() -> None:
    caller = {PASSTHROUGH_ENV: "MY_TOKEN, *,AWS_*  A=B", "MY_TOKEN": "t", **CANARIES}
    assert caller_names(caller) == ("MY_TOKEN",)
    env = child_environment(invocation(), {}, caller)
    assert env == {"MY_TOKEN": "t"}


def test_contract_no_adapter_declares_a_generic_secret() -> None:
    for product in product_names():
        declared = get_adapter(product).env_passthrough
        for name in CANARIES:
            assert not declared.allows(name), (product, name)
    for name in CANARIES:
        assert not BASICS.allows(name)


# -- process ---------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})


@pytest.fixture
def dump_cli(tmp_path: Path) -> tuple[str, ...]:
    script = tmp_path / "dump_env.py"
    script.write_text(DUMP_CLI.replace("HELP_TEXT", repr(fake_agent.HELP["claude"])))
    return (sys.executable, str(script))


@pytest.mark.anyio
async def test_process_caller_secrets_do_not_reach_the_reviewer(
    repo: Path, dump_cli: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "claude-needs-this")
    monkeypatch.setenv("MY_TOOL_TOKEN", "the-user-passed-this")
    prefs = Prefs.validate(
        {
            "timeoutMs": 20_000,
            "graceMs": 300,
            "peerCommands": {"dump": {"product": "claude", "command": list(dump_cli)}},
            "envPassthrough": ["MY_TOOL_TOKEN"],
        }
    )
    request = PeerRequest(
        peer="dump", prompt="env?", record_dir=repo / ".review-handoff" / "runtime" / "t"
    )
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        delivery = await dispatcher.consult(request)
    assert delivery.reply is not None, delivery
    seen = json.loads(delivery.reply.text)
    leaked = sorted(name for name in CANARIES if name in seen)
    assert leaked == [], f"caller secrets reached the reviewer: {leaked}"
    assert not any(value in json.dumps(seen) for value in CANARIES.values())
    assert seen["MY_TOOL_TOKEN"] == "the-user-passed-this"  # prefs envPassthrough
    assert seen["ANTHROPIC_API_KEY"] == "claude-needs-this"  # the adapter's declaration
    assert seen["PATH"] == os.environ["PATH"] and seen["HOME"] == os.environ["HOME"]
    assert seen[MARKER_ENV]  # the run's marker is still set
    assert set(seen) <= {*os.environ, MARKER_ENV, *CLAUDE_ENV}  # nothing invented either


def test_process_prefs_set_env_passthrough_validates_and_persists(user_state: Path) -> None:
    def prefs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "review_loop", "prefs", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[3])},
        )

    done = prefs("set", "envPassthrough", "AWS_PROFILE,MY_TOKEN")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["prefs"]["envPassthrough"] == ["AWS_PROFILE", "MY_TOKEN"]
    refused = prefs("set", "envPassthrough", "AWS_*")
    assert refused.returncode == 1
    assert "envPassthrough" in refused.stdout + refused.stderr
    assert "'AWS_*' is not an environment variable name" in refused.stdout + refused.stderr
    kept = json.loads(prefs("show").stdout)
    assert kept["prefs"]["envPassthrough"] == ["AWS_PROFILE", "MY_TOKEN"]  # refused: unchanged
    assert prefs("set", "envPassthrough", "").returncode == 0
    assert json.loads(prefs("show").stdout)["prefs"]["envPassthrough"] == []
