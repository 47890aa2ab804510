"""End-to-end: a hostile repository runs nothing in a reviewer and learns no secret.

Each real CLI from npm answers ``review-loop consult`` (the real process layer) in the
repository :func:`tests.e2e.hostile.build_hostile_repo` makes: hooks, MCP servers,
discovery commands, credential helpers and dotenv files for every product, each of which
would drop a canary file inside and outside the repository. The caller's environment holds
canary secrets (``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``, ``DATABASE_URL``,
``SSH_AUTH_SOCK``). For every CLI:

- the consult answers (``ok: true``), codex's even in a project the user marked trusted;
- no canary file appears, inside or outside the repository;
- nothing of the repository's configuration reached the model API (its marker string, in
  the models and values it plants, is in no request);
- while the model holds its answer, every live process of the reviewer (the CLI and
  whatever it started, found by the run's marker) is read from ``/proc``: none holds a
  canary secret; where the CLI has a shell tool (codex, the npm grok), the model also asks
  it to run ``env`` and the output it gets back holds none either;
- nothing is left running.

The second test shows the fixture is live: each CLI run directly, with the flags the
adapters used before this lockdown (claude, gemini), as it comes (the npm grok), or in a
project the user trusted (codex), does run the repository's code.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from review_loop.orchestrator.process.run import MARKER_ENV
from tests.conftest import TOKEN_ENV
from tests.e2e.helpers import kill_group, run
from tests.e2e.hostile import HostileRepo, build_hostile_repo
from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    EVERY_CLI,
    RUN_TIMEOUT,
    Peer,
    PeerFor,
    assert_nothing_left,
    peer_for,
)
from tests.fakes.model_api import Reply

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "canary-aws-7f3c0d9e",
    "GITHUB_TOKEN": "canary-gh-51b2aa07",
    "DATABASE_URL": "postgres://app:canary-db-c0ffee11@db.internal/prod",
    "SSH_AUTH_SOCK": "/tmp/canary-agent-9d8e7f/agent.sock",
}
HOLD_S = 6.0
"""How long the model holds its (first) answer while the reviewer's processes are read."""
SHELL_TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "codex": ("exec_command", {"cmd": "env"}),
    "grok": ("bash", {"command": "env"}),
}


@pytest.fixture
def hostile(tmp_path: Path) -> HostileRepo:
    return build_hostile_repo(tmp_path / "hostile-repo", outside=tmp_path / "outside")


def reviewer_environments() -> list[dict[str, str]]:
    """The environment of every live process of this test that carries a run marker."""
    token = os.environ[TOKEN_ENV]
    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        with contextlib.suppress(psutil.Error, OSError):
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            env = proc.environ()
            if env.get(TOKEN_ENV) == token and MARKER_ENV in env:
                found.append(env)
    return found


def consult_holding_the_answer(peer: Peer) -> tuple[int, dict[str, Any], list[dict[str, str]]]:
    """Run ``review-loop consult``; while the model holds its answer, read the reviewer's
    processes. Returns the exit code, the JSON document and the environments read."""
    argv = [sys.executable, "-m", "review_loop", "consult", "--repo", str(peer.repo)]
    argv += ["--peer", peer.product, "--question", "Review README.md, please."]
    proc = subprocess.Popen(
        argv,
        env=peer.env,
        cwd=peer.repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        peer.api.wait_for_requests(1, timeout=RUN_TIMEOUT)
        environments = reviewer_environments()
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except BaseException:
        kill_group(proc.pid)
        proc.communicate()
        raise
    try:
        document = json.loads(out)
    except ValueError:
        pytest.fail(f"rc={proc.returncode}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}")
    assert isinstance(document, dict)
    return proc.returncode, document, environments


def trust_project(peer: Peer, hostile: HostileRepo) -> None:
    """Mark the hostile repository trusted in codex's own ``config.toml``, as a user might."""
    with (peer.home / ".codex" / "config.toml").open("a") as config:
        config.write(f'\n[projects."{hostile.repo}"]\ntrust_level = "trusted"\n')


def leaked(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


@pytest.mark.parametrize("product", EVERY_CLI)
def test_hostile_repo_runs_nothing_and_learns_no_secret(
    product: str,
    peer_for: PeerFor,  # noqa: F811  (the fixture imported above)
    hostile: HostileRepo,
) -> None:
    peer = peer_for(product, repo=hostile.repo)
    peer.env.update(SECRETS)
    if product == "codex":  # the user trusts this project: the adapter must untrust it
        trust_project(peer, hostile)
    if product in SHELL_TOOLS:
        name, arguments = SHELL_TOOLS[product]
        peer.api.script(Reply.tool(name, arguments, delay=HOLD_S), Reply("text", text=None))
    else:
        peer.api.script(Reply.answer("Reviewed: nothing to add.", delay=HOLD_S))

    returncode, document, environments = consult_holding_the_answer(peer)

    assert returncode == 0 and document["ok"] is True, document
    assert hostile.fired() == [], f"the repository ran code in {product}: {hostile.fired()}"
    for request in peer.api.requests:
        seen = f"{request.path} {request.query} {request.raw_body.decode('utf-8', 'replace')}"
        at = seen.find(hostile.token)
        assert at < 0, f"{product} loaded the repository's configuration: {seen[at - 200 : at]}"
        assert leaked(seen) == [], f"{product} sent a caller secret to the model"
    assert environments, f"no live process of the {product} reviewer was found"
    for env in environments:
        assert leaked(json.dumps(env)) == [] and not set(SECRETS) & set(env), sorted(env)
        assert hostile.token not in json.dumps(env), "a dotenv file reached a reviewer process"
    if product in SHELL_TOOLS:
        text = str(document["text"])
        assert "PATH=" in text, f"the shell tool did not run: {text[:500]}"
        assert leaked(text) == [], text
    assert_nothing_left(peer)


LOOSE_ARGV = {
    # what the adapters ran before this lockdown (claude, gemini), or the CLI as it comes
    "claude": ["claude", "-p", "--output-format", "json", "--permission-mode", "plan"],
    "gemini": ["gemini", "-o", "json", "--approval-mode", "plan", "--skip-trust", "-p", ""],
    "codex": ["codex", "exec", "--json", "-s", "read-only", "--skip-git-repo-check", "-"],
    "grok": ["grok", "-p", "ECHO: ok"],
}


@pytest.mark.parametrize("product", EVERY_CLI)
def test_the_fixture_is_live_without_the_lockdown(
    product: str,
    peer_for: PeerFor,  # noqa: F811  (the fixture imported above)
    hostile: HostileRepo,
) -> None:
    peer = peer_for(product, repo=hostile.repo)
    peer.api.script(Reply.answer("ok", delay=3.0))  # MCP servers start in the background
    if product == "codex":  # codex loads a project's config only once the user trusts it
        trust_project(peer, hostile)

    run(LOOSE_ARGV[product], env=peer.env, cwd=peer.repo, stdin="ECHO: ok", timeout=RUN_TIMEOUT)

    fired = hostile.fired()
    assert any(name.startswith(f"outside/PWNED-{product}") for name in fired), fired
    assert any(name.startswith(f"repo/PWNED-{product}") for name in fired), fired


def test_claude_argv_draws_no_warning_of_our_own(peer_for: PeerFor) -> None:  # noqa: F811
    # The exact argv the adapter builds, run by the real claude: our flags name only tools
    # and settings it knows (it warned about "MultiEdit", which 2.1 does not have).
    from review_loop.adapters.claude import ADAPTER
    from review_loop.agents.models import AgentRequest, Capabilities

    peer = peer_for("claude")
    peer.api.script(Reply.answer("fine"))
    request = AgentRequest(prompt="Is README.md clear?", cwd=peer.repo)
    invocation = ADAPTER.build(request, command=("claude",), capabilities=Capabilities())

    ran = run(invocation.argv, env=peer.env, cwd=peer.repo, stdin="Is README.md clear?")

    assert ran.returncode == 0 and json.loads(ran.stdout)["result"] == "fine", ran.describe()
    assert "matches no known tool" not in ran.stderr and "Permission" not in ran.stderr, ran.stderr
