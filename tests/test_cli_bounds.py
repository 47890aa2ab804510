"""Contract tests of bounds and names: deadlines, refused input that writes nothing, records.

- A deadline below one second or above one day is refused with the accepted range, on every
  command that takes ``--timeout``, in the prefs file (``timeoutMs``) and in the embedding
  API (``PeerRequest.timeout_ms``: 0 and negatives are refused, never "0 means the
  default"). ``REVIEW_LOOP_TIMEOUT_MS`` is the original's contract: any positive number
  (``500``, ``1e3``, ``1500.5``); what is not one is refused, naming it.
- A refused ``--resume`` is refused before anything is written, with exit code 1.
- Two consults started in the same millisecond on the same peer get distinct record
  directories (created exclusively).

Commands run in-process through the real command line (``review_loop.orchestrator.cli``);
the consults reach fake reviewer CLIs through the real process layer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.agents.errors import InputError, PrefsError
from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.workflows.consult import ConsultPlan, run_consult
from review_loop.prefs import Prefs
from review_loop.prefs.store import TIMEOUT_ENV_ACCEPTED
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

RANGE_SECONDS = "from 1 to 86400"
RANGE_MS = "from 1000 (1 s) to 86400000 (1 day)"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"app.py": "x = 1\n"})


def rl(*argv: str) -> tuple[int, dict[str, Any]]:
    out: list[str] = []
    code = cli_run(list(argv), stdout=out.append)
    assert len(out) == 1, out
    return code, json.loads(out[0])


def tree(root: Path) -> list[str]:
    """Every path under ``root`` except git's own files: what a command wrote."""
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*") if ".git" not in path.parts
    )


# -- deadlines on the command line -----------------------------------------------------------

COMMANDS = {
    "consult": ["consult", "--repo", "{repo}", "--peer", "codex", "--question", "Q"],
    "run": ["run", "--repo", "{repo}", "--reviewer", "codex"],
    "blind-review": ["blind-review", "--repo", "{repo}", "--reviewer", "claude"],
    "verify-diff": ["verify-diff", "--repo", "{repo}", "--description", "d", "--target", "app.py"],
    "preflight": ["preflight", "--repo", "{repo}", "--peer", "codex", "--host", "claude"],
    "converge": [
        "converge", "--repo", "{repo}", "--plan", "{app}", "--host-position", "{app}",
        "--host", "claude",
    ],
    "audit": ["audit", "selector", "{repo}"],
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("value", ["0.0004", "100000", "0", "-5", "nan", "inf"])
def test_contract_timeout_out_of_range_is_refused_with_the_range(
    repo: Path, fakes: FakeCLIs, command: str, value: str
) -> None:
    before = tree(repo)
    words = (w.replace("{repo}", str(repo)) for w in COMMANDS[command])
    argv = [w.replace("{app}", str(repo / "app.py")) for w in words]
    code, doc = rl(*argv, f"--timeout={value}")
    assert code == 1, doc
    assert doc["ok"] is False
    assert doc["error"].startswith("--timeout:"), doc
    assert RANGE_SECONDS in doc["error"], doc
    assert tree(repo) == before
    assert fakes.calls() == []


def test_contract_timeout_bounds_themselves_are_accepted() -> None:
    from review_loop.orchestrator.cli.common import positive_seconds

    assert positive_seconds("1", "--timeout") == 1_000
    assert positive_seconds("86400", "--timeout") == 86_400_000
    assert positive_seconds("2.5", "--timeout") == 2_500


# -- deadlines in prefs, the environment and the embedding API -------------------------------


def test_contract_prefs_timeout_beyond_a_day_names_file_key_and_range(
    repo: Path, fakes: FakeCLIs, user_state: Path
) -> None:
    prefs_file = user_state / "prefs.toml"
    prefs_file.write_text(f"timeoutMs = {10**25}\n")
    before = tree(repo)
    code, doc = rl("consult", "--repo", str(repo), "--peer", "codex", "--question", "Q")
    assert code == 1
    assert str(prefs_file) in doc["error"] and "timeoutMs" in doc["error"], doc
    assert RANGE_MS in doc["error"], doc
    assert tree(repo) == before and fakes.calls() == []


@pytest.mark.parametrize("value", ["9999999999999999999999999", "0", "999"])
def test_contract_prefs_set_refuses_out_of_range_and_writes_nothing(
    user_state: Path, value: str
) -> None:
    code, doc = rl("prefs", "set", "timeoutMs", value)
    assert code == 1
    assert "timeoutMs" in doc["error"] and RANGE_MS in doc["error"], doc
    assert not (user_state / "prefs.toml").exists()


@pytest.mark.parametrize("value", ["0", "-1", "soon", "Infinity", "NaN", "1_000"])
def test_contract_env_timeout_that_is_not_a_positive_number_is_refused(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("REVIEW_LOOP_TIMEOUT_MS", value)
    before = tree(repo)
    code, doc = rl("consult", "--repo", str(repo), "--peer", "codex", "--question", "Q")
    assert code == 1
    assert doc["error"].startswith("REVIEW_LOOP_TIMEOUT_MS:"), doc
    assert TIMEOUT_ENV_ACCEPTED in doc["error"], doc
    assert tree(repo) == before and fakes.calls() == []


def test_contract_prefs_model_bounds() -> None:
    # A Prefs' deadline is any positive whole number of ms (REVIEW_LOOP_TIMEOUT_MS sets it,
    # as the original takes it); the prefs file keeps its range (the prefs set test above).
    for good in (1, 999, 1_000, 86_400_000, 86_400_001):
        assert Prefs(timeoutMs=good).timeoutMs == good
    for bad in (0, -1, True, 1.5):
        with pytest.raises(PrefsError, match="timeoutMs"):
            Prefs(timeoutMs=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, -1, 86_400_001, 10**25, True, 1.5])
def test_contract_peer_request_refuses_a_deadline_that_would_mean_something_else(
    tmp_path: Path, value: Any
) -> None:
    with pytest.raises(InputError, match=r"PeerRequest\.timeout_ms") as caught:
        PeerRequest(peer="codex", prompt="p", record_dir=tmp_path, timeout_ms=value)
    assert "86400000" in str(caught.value)


def test_contract_peer_request_keeps_a_valid_deadline(tmp_path: Path) -> None:
    assert PeerRequest(peer="codex", prompt="p", record_dir=tmp_path, timeout_ms=1).timeout_ms == 1
    assert PeerRequest(peer="codex", prompt="p", record_dir=tmp_path).timeout_ms is None


# -- a refused --resume writes nothing ---------------------------------------------------------


@pytest.mark.parametrize("resume", ["../x", "../../etc/passwd", "-rf", "a b", ""])
def test_contract_refused_resume_writes_nothing(repo: Path, fakes: FakeCLIs, resume: str) -> None:
    before = tree(repo)
    code, doc = rl(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Q", f"--resume={resume}"
    )
    assert code == 1, doc
    assert doc["error"].startswith("--resume:"), doc
    assert tree(repo) == before
    assert not (repo / ".review-handoff").exists()
    assert fakes.calls() == []


# -- record directories are created exclusively ------------------------------------------------


@pytest.mark.anyio
async def test_collaboration_same_millisecond_consults_get_distinct_record_dirs(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "first"}, {"mode": "ok", "text": "second"}])
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    plan = ConsultPlan(peers=("codex",), question="Q")
    results: list[dict[str, Any]] = []

    def pinned() -> str:
        return "2026-11-30T22:15:59.733Z"

    async def one() -> None:
        async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
            results.append(await run_consult(d, plan, clock=pinned))

    async with anyio.create_task_group() as group:
        group.start_soon(one)
        group.start_soon(one)

    assert [r["ok"] for r in results] == [True, True], results
    records = {r["sessionRecordPath"] for r in results}
    answers = {r["recordPath"] for r in results}
    assert len(records) == 2 and len(answers) == 2, results
    sessions = repo / ".review-handoff" / "runtime" / "consult-sessions"
    assert sorted(os.listdir(sessions)) == [
        "2026-11-30T22-15-59-733Z-codex",
        "2026-11-30T22-15-59-733Z-codex-2",
    ]
    texts = sorted(Path(path).read_text().split("## Peer response")[1].strip() for path in answers)
    assert texts == ["first", "second"]
    for path in records:
        record = json.loads(Path(path).read_text())
        assert record["status"] == "finished"


@pytest.mark.parametrize("key", ["graceMs", "livenessMs"])
def test_contract_prefs_grace_and_liveness_have_an_upper_bound(key: str) -> None:
    assert getattr(Prefs.validate({key: 86_400_000}), key) == 86_400_000
    with pytest.raises(PrefsError, match=key):
        Prefs.validate({key: 10**25})  # a stopped session would never be killed
