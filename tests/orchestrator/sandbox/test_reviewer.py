"""What a reviewer can read: contract (the hidden-path list per product) and process tests.

Process tests run the fake CLIs (``tests/fakes``, mode ``read-paths``) through the real
dispatcher and process layer, as each product (the npm grok isolated in its copy, Grok
Build in place), in a HOME full of canary secrets, with review-loop's state secret and a
superproject's ``.env`` above the repository. The fake reports what it could read and
whether it could unmount a cover. Without a namespace (a PATH whose ``unshare`` fails, as
where user namespaces are disabled), a reviewer is refused unless prefs allow it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.sandbox import reviewer as sandbox
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

REAL_PRODUCTS = ("claude", "codex", "gemini", "grok")

# -- contract ---------------------------------------------------------------------------------

HOME = Path("/home/u")
STATE = Path("/home/u/.config/review-loop")
REPO = Path("/work/super/repo")


def owned(env: dict[str, str] | None = None) -> dict[str, tuple[Path, ...]]:
    return {name: sandbox.own_files(get_adapter(name), env or {}, HOME) for name in product_names()}


def walked() -> list[str]:
    return [n for p in product_names() for n in getattr(get_adapter(p), "ancestor_files", ())]


def plan(product: str, env: dict[str, str] | None = None) -> sandbox.Exposure:
    return sandbox.hidden_for(
        product,
        owned=owned(env),
        ancestor_files=walked(),
        home=HOME,
        env=env or {},
        state=STATE,
        repo=REPO,
        cwd=REPO,
    )


OWN = {
    "claude": {HOME / ".claude", HOME / ".claude.json"},
    "codex": {HOME / ".codex"},
    "gemini": {HOME / ".gemini"},
    "grok": {HOME / ".grok"},
}


@pytest.mark.parametrize("product", REAL_PRODUCTS)
def test_contract_each_product_keeps_its_own_files_and_nothing_else_of_the_products(
    product: str,
) -> None:
    exposure = plan(product)

    assert set(exposure.keep) == OWN[product]
    others = set().union(*(paths for name, paths in OWN.items() if name != product))
    assert others <= set(exposure.hide)
    assert not set(exposure.keep) & set(exposure.hide)


@pytest.mark.parametrize("product", REAL_PRODUCTS)
def test_contract_every_product_is_kept_from_the_state_and_the_secret_stores(
    product: str,
) -> None:
    hidden = set(plan(product).hide)

    assert STATE in hidden
    for name in (".ssh", ".aws", ".gnupg", ".config/gh", ".docker/config.json", ".kube", ".netrc"):
        assert HOME / name in hidden, name


@pytest.mark.parametrize("product", REAL_PRODUCTS)
def test_contract_every_dotenv_above_the_repository_is_hidden(product: str) -> None:
    hidden = set(plan(product).hide)

    for directory in (Path("/work/super"), Path("/work"), Path("/")):
        assert directory / ".env" in hidden
        assert directory / ".gemini" / ".env" in hidden
    assert REPO / ".env" not in hidden  # the repository's own: its adapter's hidden_paths


def test_contract_the_adapters_project_paths_are_hidden_in_the_working_directory() -> None:
    exposure = sandbox.hidden_for(
        "gemini", owned=owned(), home=HOME, env={}, state=STATE, repo=REPO, cwd=REPO,
        project=(".gemini", ".env"),
    )  # fmt: skip
    assert {REPO / ".gemini", REPO / ".env"} <= set(exposure.hide)
    with pytest.raises(ValueError, match="not a path inside the working directory"):
        sandbox.hidden_for(
            "gemini", owned=owned(), home=HOME, env={}, state=STATE, repo=REPO, cwd=REPO,
            project=("../x",),
        )  # fmt: skip


def test_contract_a_products_own_dotenv_in_home_stays_its_own() -> None:
    # HOME is above a repository under it: ~/.gemini/.env is gemini's own configuration
    home_repo = HOME / "src" / "repo"

    def hidden_for(product: str) -> sandbox.Exposure:
        return sandbox.hidden_for(
            product,
            owned=owned(),
            ancestor_files=walked(),
            home=HOME,
            env={},
            state=STATE,
            repo=home_repo,
            cwd=home_repo,
        )

    exposure = hidden_for("gemini")
    assert HOME / ".gemini" / ".env" not in exposure.hide
    assert HOME / ".env" in exposure.hide
    codex = hidden_for("codex")
    assert HOME / ".gemini" in codex.hide


def test_contract_relocated_stores_follow_the_environment() -> None:
    env = {
        "CODEX_HOME": "/srv/codex",
        "CLAUDE_CONFIG_DIR": "/srv/claude",
        "XDG_CONFIG_HOME": "/srv/xdg",
        "DOCKER_CONFIG": "/srv/docker",
        "KUBECONFIG": "/srv/k1:/srv/k2",
    }
    claude, codex = plan("claude", env), plan("codex", env)

    assert Path("/srv/codex") in claude.hide and Path("/srv/codex") in codex.keep
    assert Path("/srv/claude") in codex.hide and Path("/srv/claude") in claude.keep
    for path in ("/srv/xdg/gh", "/srv/docker", "/srv/k1", "/srv/k2"):
        assert Path(path) in claude.hide


def test_contract_claude_on_bedrock_keeps_its_aws_profile() -> None:
    bedrock = {"CLAUDE_CODE_USE_BEDROCK": "1"}
    assert HOME / ".aws" not in plan("claude", bedrock).hide
    assert HOME / ".aws" in plan("codex", bedrock).hide


def test_contract_the_simulated_reviewer_runs_without_the_sandbox() -> None:
    assert sandbox.exempt(get_adapter("simulated"))
    assert not any(sandbox.exempt(get_adapter(name)) for name in REAL_PRODUCTS)


# -- process ----------------------------------------------------------------------------------

SECRETS = {
    ".ssh/id_rsa": "SSH-KEY-CANARY",
    ".aws/credentials": "AWS-CANARY",
    ".gnupg/private-keys-v1.d/k.key": "GPG-CANARY",
    ".config/gh/hosts.yml": "GH-TOKEN-CANARY",
    ".docker/config.json": "DOCKER-AUTH-CANARY",
    ".kube/config": "KUBE-CANARY",
    ".netrc": "NETRC-CANARY",
}
OWN_FILES = {
    "claude": {".claude/.credentials.json": "CLAUDE-CRED-CANARY", ".claude.json": "CLAUDE-JSON"},
    "codex": {".codex/auth.json": "CODEX-AUTH-CANARY"},
    "gemini": {".gemini/oauth_creds.json": "GEMINI-OAUTH-CANARY"},
    "grok": {".grok/user-settings.json": "GROK-KEY-CANARY"},
}
STATE_SECRET = "STATE-SECRET-CANARY"
PARENT_DOTENV = "GEMINI_MODEL=parent-dotenv-canary"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def world(tmp_path: Path, fakes: FakeCLIs) -> dict[str, Path]:
    """Canary secrets in HOME and the state directory; a repository below a superproject."""
    home, state = Path(os.environ["HOME"]), Path(os.environ["REVIEW_LOOP_HOME"])
    paths = {name: _write(home / name, text) for name, text in SECRETS.items()}
    for files in OWN_FILES.values():
        paths.update({name: _write(home / name, text) for name, text in files.items()})
    paths["state-secret"] = _write(state / "state-secret", STATE_SECRET)
    super_dir = tmp_path / "super"
    paths["parent .env"] = _write(super_dir / ".env", PARENT_DOTENV)
    paths["parent .gemini/.env"] = _write(super_dir / ".gemini" / ".env", PARENT_DOTENV)
    paths["repo"] = committed_repo(super_dir / "repo", {"a.txt": "the code under review\n"})
    return paths


def _directories(paths: dict[str, Path]) -> list[str]:
    home, state = Path(os.environ["HOME"]), Path(os.environ["REVIEW_LOOP_HOME"])
    return [str(state), str(home / ".ssh"), str(home / ".aws")]


async def _consult(repo: Path, prefs: Prefs, peer: str) -> tuple[DeliveryState, str, str]:
    request = PeerRequest(peer=peer, prompt="read", record_dir=repo / ".review-handoff" / "t")
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        delivery = await dispatcher.consult(request)
    text = delivery.reply.text if delivery.reply is not None else ""
    return delivery.state, text, json.dumps(delivery.document())


PREFS = Prefs.validate({"timeoutMs": 30_000, "graceMs": 300})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("product", "variant"),
    [("claude", ""), ("codex", ""), ("gemini", ""), ("grok", "build"), ("grok", "vibe")],
)
async def test_process_a_reviewer_reads_only_its_own_files(
    world: dict[str, Path],
    fakes: FakeCLIs,
    product: str,
    variant: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        pytest.skip("no mount namespaces on this system")
    assert await sandbox.unavailable() is None  # a Linux with unshare must protect reviewers
    if variant:
        monkeypatch.setenv("FAKE_GROK_VARIANT", variant)
    repo = world["repo"]
    targets = [str(p) for name, p in world.items() if name != "repo"]
    targets += [*_directories(world), str(repo / "a.txt")]
    fakes.script(**{product: [{"mode": "read-paths", "paths": targets}]})

    state, text, raw = await _consult(repo, PREFS, product)

    assert state is DeliveryState.DELIVERED, raw
    seen = json.loads(text)
    own = OWN_FILES[product]
    for name, path in world.items():
        if name == "repo":
            continue
        if name in own:
            assert seen[str(path)] == own[name], f"{product} lost its own {name}"
        else:
            assert seen[str(path)] in ("", "<FileNotFoundError>"), f"{product} read {name}"
    for directory in _directories(world):
        assert seen[directory] == [], f"{product} listed {directory}"
    assert seen[str(repo / "a.txt")] == "the code under review\n"
    assert all(canary not in text for canary in (STATE_SECRET, *SECRETS.values()))
    assert "parent-dotenv-canary" not in text
    unmounted = {key: rc for key, rc in seen.items() if key.startswith("umount ")}
    assert unmounted and all(rc != 0 for rc in unmounted.values()), unmounted


@pytest.fixture
def failing_unshare(tmp_path: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``unshare`` first on PATH (before the fakes') that fails as it does where user
    namespaces are off."""
    bin_dir = tmp_path / "bin-unshare-fails"
    bin_dir.mkdir()
    tool = bin_dir / "unshare"
    tool.write_text(
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.anyio
@pytest.mark.usefixtures("failing_unshare")
@pytest.mark.parametrize("product", REAL_PRODUCTS)
async def test_process_without_a_namespace_a_reviewer_is_refused_by_default(
    world: dict[str, Path], fakes: FakeCLIs, product: str
) -> None:
    fakes.script(**{product: [{"mode": "read-paths", "paths": [str(world["state-secret"])]}]})

    state, text, raw = await _consult(world["repo"], PREFS, product)

    assert state is DeliveryState.NOT_SUBMITTED, raw
    assert text == "" and fakes.calls() == []  # nothing was started
    delivery = json.loads(raw)
    assert delivery["reason"] == "refused"
    assert "Operation not permitted" in delivery["detail"]
    assert sandbox.ALLOW_COMMAND in delivery["detail"]
    assert delivery["unprotected"] is None


@pytest.mark.anyio
async def test_process_a_refused_launch_is_kept_the_next_reviewer_is_refused_before_its_launch(
    world: dict[str, Path], fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first reviewer's launch is the check: its failed ``unshare`` is the refusal, and
    the process keeps that answer, so the next reviewer is refused without running it."""
    bin_dir = tmp_path / "bin-unshare-counts"
    bin_dir.mkdir()
    runs = tmp_path / "unshare-runs"
    tool = bin_dir / "unshare"
    tool.write_text(
        f"#!/bin/sh\necho run >> '{runs}'\n"
        "echo 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    fakes.script(codex=[{"mode": "read-paths", "paths": [str(world["state-secret"])]}])
    requests = [
        PeerRequest(peer="codex", prompt="read", record_dir=world["repo"] / ".review-handoff" / n)
        for n in ("first", "second")
    ]

    async with open_dispatcher(repo=world["repo"], prefs=PREFS, progress=lambda _: None) as d:
        deliveries = [await d.consult(request) for request in requests]

    assert [each.state for each in deliveries] == [DeliveryState.NOT_SUBMITTED] * 2
    assert [each.reason for each in deliveries] == ["refused"] * 2
    assert deliveries[0].detail == deliveries[1].detail
    assert "Operation not permitted" in deliveries[1].detail
    assert fakes.calls() == []  # no CLI ever ran
    assert runs.read_text() == "run\n"  # the second reviewer was refused before its launch


@pytest.mark.anyio
@pytest.mark.usefixtures("failing_unshare")
async def test_process_without_a_namespace_an_allowed_reviewer_runs_and_says_so(
    world: dict[str, Path], fakes: FakeCLIs
) -> None:
    fakes.script(codex=[{"mode": "read-paths", "paths": [str(world["state-secret"])]}])
    prefs = dataclasses.replace(PREFS, allowUnprotected=True)

    state, text, raw = await _consult(world["repo"], prefs, "codex")

    assert state is DeliveryState.DELIVERED, raw
    assert json.loads(text)[str(world["state-secret"])] == STATE_SECRET  # as it says:
    assert "no private mount namespace" in json.loads(raw)["unprotected"]


@pytest.mark.anyio
@pytest.mark.usefixtures("failing_unshare")
async def test_process_the_simulated_reviewer_needs_no_namespace(world: dict[str, Path]) -> None:
    state, _, raw = await _consult(world["repo"], PREFS, "simulated")

    assert state is DeliveryState.DELIVERED, raw
    assert json.loads(raw)["unprotected"] is None
