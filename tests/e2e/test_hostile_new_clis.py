"""End-to-end: opencode and Qwen Code in the hostile repository run nothing it carries.

The real ``opencode`` 1.18.33 and ``qwen`` 0.24.4 from npm answer ``review-loop consult``
(the real process layer and sandbox) in the repository :func:`tests.e2e.hostile.
build_hostile_repo` makes, which for them holds ``opencode.json`` and ``.opencode/`` (MCP
servers, a plugin whose import and init each drop a canary, an agent under review-loop's own
agent name allowed every tool) and ``.qwen/settings.json`` (MCP servers, hooks, ``yolo``,
allow rules), ``.qwen/.env``, ``.env`` and ``.mcp.json``. The caller's environment holds
canary secrets. For each CLI:

- the consult answers;
- no canary file appears, inside or outside the repository;
- the repository's marker string (in the models and values it plants) is in no request;
- no live reviewer process holds a caller secret or a dotenv value;
- the repository, ``.git/`` included, is byte for byte what it was (opencode writes a
  project id into ``.git/``, qwen rewrites its settings file, when they are not stopped);
- nothing is left running.

The second test shows the fixture is live: each CLI run as it comes in the same repository
runs the repository's code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.e2e.helpers import run
from tests.e2e.hostile import HostileRepo, build_hostile_repo
from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    RUN_TIMEOUT,
    PeerFor,
    assert_nothing_left,
    peer_for,
)
from tests.e2e.test_hostile_repo import SECRETS, consult_holding_the_answer, leaked
from tests.fakes.model_api import Reply

NEW_CLIS = ("opencode", "qwen")
pytestmark = pytest.mark.timeout(900)
"""opencode alone takes a minute to start on a loaded machine (a 185 MB Bun executable);
the default per-test bound (120 s) is for the fake CLIs."""
HOLD_S = 6.0


@pytest.fixture
def hostile(tmp_path: Path) -> HostileRepo:
    return build_hostile_repo(tmp_path / "hostile-repo", outside=tmp_path / "outside")


OURS = Path(".git/info/exclude")
"""Where review-loop itself ignores its ``.review-handoff/`` (not the reviewer's write)."""


def digest(repo: Path) -> dict[str, str]:
    """Every file of ``repo`` but review-loop's own ``.review-handoff/``, with its hash."""
    found = {}
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo)
        if relative.parts[0] == ".review-handoff" or not path.is_file() or path.is_symlink():
            continue
        if relative == OURS:
            continue
        found[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.mark.parametrize("product", NEW_CLIS)
def test_hostile_repo_runs_nothing_and_changes_nothing(
    product: str,
    peer_for: PeerFor,  # noqa: F811  (the fixture imported above)
    hostile: HostileRepo,
) -> None:
    peer = peer_for(product, repo=hostile.repo)
    peer.env.update(SECRETS)
    peer.api.script(Reply.answer("Reviewed: nothing to add.", delay=HOLD_S))
    before = digest(hostile.repo)

    returncode, document, environments = consult_holding_the_answer(peer)

    assert returncode == 0 and document["ok"] is True, document
    assert document["text"] == "Reviewed: nothing to add."
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
    assert digest(hostile.repo) == before, "the reviewer changed the repository"
    assert_nothing_left(peer)


AS_IT_COMES = {"opencode": ["opencode", "run", "--format", "json"], "qwen": ["qwen", "-o", "json"]}


@pytest.mark.parametrize("product", NEW_CLIS)
def test_the_fixture_is_live_as_the_cli_comes(
    product: str,
    peer_for: PeerFor,  # noqa: F811  (the fixture imported above)
    hostile: HostileRepo,
) -> None:
    peer = peer_for(product, repo=hostile.repo)
    peer.api.default = Reply.answer("ok", delay=3.0)  # MCP servers start in the background
    before = digest(hostile.repo)

    run(AS_IT_COMES[product], env=peer.env, cwd=peer.repo, stdin="ECHO: ok", timeout=RUN_TIMEOUT)

    fired = hostile.fired()
    assert any(name.startswith(f"outside/PWNED-{product}") for name in fired), fired
    assert any(name.startswith(f"repo/PWNED-{product}") for name in fired), fired
    after = {k: v for k, v in digest(hostile.repo).items() if not k.startswith("PWNED-")}
    assert after != before, "the CLI as it comes left the repository as it was"
