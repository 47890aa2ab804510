"""Contract and collaboration tests of the embedding API (``review_loop``), asyncio and trio.

Paths as ``str`` or ``Path``; an existing git checkout required, nothing created otherwise;
positive deadlines; non-empty prompts; records unique per call, where ``sessions`` finds
them, excluded from git; diagnostics through ``logging``; ``dir()``/``__all__``; and a
user's ``mypy`` finding the package's types. The simulated reviewer answers (no key).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import review_loop
from review_loop import InputError, PeerRequest, ReviewLoopError, open_dispatcher
from review_loop.prefs import Prefs
from tests.test_cli import git_repo, run_cli

pytestmark = pytest.mark.anyio


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


async def test_contract_repo_and_record_dir_as_str(repo: Path) -> None:
    async with open_dispatcher(repo=str(repo), prefs=Prefs(), progress=lambda _: None) as d:
        assert d.repo == repo
        delivery = await d.consult(
            PeerRequest(peer="simulated", prompt="Ship?", record_dir=str(repo / "r" / "a"))
        )
    assert delivery.ok
    assert Path(delivery.recordPath or "").parent == repo / "r" / "a"


@pytest.mark.parametrize("kind", ["missing", "not-git", "a-file"])
async def test_contract_an_existing_git_checkout_is_required_and_nothing_is_created(
    tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "target"
    if kind == "not-git":
        target.mkdir()
    elif kind == "a-file":
        target.write_text("x")
    before = tree(tmp_path)
    with pytest.raises(ReviewLoopError, match="is not inside a git checkout"):
        async with open_dispatcher(repo=target, prefs=Prefs(), progress=lambda _: None):
            pass  # pragma: no cover - never reached
    assert tree(tmp_path) == before


@pytest.mark.parametrize("timeout_ms", [0, -1, 10**12, 1.5, True])
async def test_contract_deadlines_must_be_positive(timeout_ms: object) -> None:
    with pytest.raises(InputError, match=r"PeerRequest\.timeout_ms"):
        PeerRequest(peer="simulated", prompt="x", timeout_ms=timeout_ms)  # type: ignore[arg-type]


@pytest.mark.parametrize(("peer", "prompt"), [("simulated", ""), ("simulated", " \n"), ("", "x")])
async def test_contract_an_empty_prompt_or_peer_is_refused_before_anything_starts(
    peer: str, prompt: str
) -> None:
    with pytest.raises(InputError, match=r"PeerRequest\.(prompt|peer)"):
        PeerRequest(peer=peer, prompt=prompt)


async def test_contract_record_dir_must_be_a_path() -> None:
    with pytest.raises(InputError, match=r"PeerRequest\.record_dir"):
        PeerRequest(peer="simulated", prompt="x", record_dir=42)  # type: ignore[arg-type]


async def test_collaboration_records_are_unique_per_call_listed_and_excluded(repo: Path) -> None:
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        first, second = await d.fan_out(
            [
                PeerRequest(peer="simulated", prompt="One?"),
                PeerRequest(peer="simulated", prompt="Two?"),
            ]
        )
        relative = await d.consult(PeerRequest(peer="simulated", prompt="3", record_dir="mine/x"))
    paths = {first.recordPath, second.recordPath}
    assert len(paths) == 2
    for path in paths:
        assert Path(path or "").is_relative_to(repo / ".review-handoff" / "runtime" / "embedded")
    assert relative.recordPath == str(repo / ".review-handoff/runtime/mine/x/reviewer-session.json")
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""  # .review-handoff/ is in git's exclude file
    code, doc, _ = run_cli("sessions", "--repo", str(repo), "--product", "simulated")
    assert code == 0
    assert {s["sessionId"] for s in doc["sessions"]} >= {first.sessionId, second.sessionId}


async def test_collaboration_diagnostics_go_through_the_hosts_logging(
    repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A refused request is retried once, which logs a "retry" event: it reaches the host's
    # logging (here pytest's handler) under "review_loop", and nothing else prints it.
    caplog.set_level(logging.INFO, logger="review_loop")
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        await d.consult(PeerRequest(peer="simulated", prompt="x", resume_session_id="-x"))
    records = [r for r in caplog.records if r.name == "review_loop"]
    retry = [r for r in records if getattr(r, "event", None) == "retry"]
    assert retry, [r.getMessage() for r in records]
    assert retry[0].getMessage().startswith("retry peer=simulated ")


def test_contract_public_api_in_dir_and_all() -> None:
    assert dir(review_loop) == sorted(review_loop.__all__)
    assert "open_dispatcher" in dir(review_loop) and "importlib" not in dir(review_loop)


def test_contract_a_users_mypy_finds_the_typed_package(tmp_path: Path) -> None:
    """A user's project with its own venv, review-loop installed as scripts/install does
    (``editable_mode=compat``: a path in a ``.pth`` file, which mypy follows; the default
    editable import hook is invisible to it): ``mypy --strict`` finds the typed package."""
    package = Path(review_loop.__file__).parent
    assert (package / "py.typed").is_file()
    install = (package.parent / "scripts" / "install").read_text()
    assert "editable_mode=compat" in install
    venv = tmp_path / "user-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", purelib], capture_output=True, text=True, check=True
    ).stdout.strip()
    (Path(site) / "__editable__.review_loop.pth").write_text(f"{package.parent}\n")
    user = tmp_path / "user.py"
    user.write_text(
        "from review_loop import PeerRequest\n"
        "request = PeerRequest(peer='codex', prompt='x', record_dir='r')\n"
        "wrong: int = request.prompt\n"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", str(venv / "bin" / "python"), str(user)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    # Found and type-checked: the one error is the user's own wrong annotation.
    assert 'Incompatible types in assignment (expression has type "str"' in ran.stdout, ran
    assert "Found 1 error in 1 file" in ran.stdout, ran.stdout
