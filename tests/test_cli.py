"""Process tests: the ``review-loop`` command run end to end as a process, fake CLIs on PATH.

Checks the contract a skill parses: one JSON document on stdout, exit 0 / 2 (ok:false) /
1 (usage, bad input), the consult and session records, the exclude entry, and that bad
input leaves nothing behind. Golden files hold normalised real outputs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeCLIs

GOLDEN = Path(__file__).parent / "golden"


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "README").write_text("x\n")
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "my 'quoted' repo")


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def run_cli(
    *args: str,
    fakes: FakeCLIs | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[int, Any, str]:
    full_env = fakes.env(path_only=True) if fakes else dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("REVIEW_LOOP_TIMEOUT_MS", "20000")
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )
    document = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, document, proc.stderr


def normalise(document: Any, repo: Path) -> Any:
    """Replace what differs between runs (paths, ids, times) with placeholders."""
    if isinstance(document, dict):
        return {key: normalise(value, repo) for key, value in document.items()}
    if isinstance(document, list):
        return [normalise(value, repo) for value in document]
    if not isinstance(document, str):
        return document
    text = document.replace(shlex.quote(str(repo)), "<repo>").replace(str(repo), "<repo>")
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z", "<stamp>", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "<time>", text)


def without_elapsed(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: 0 if k == "elapsedMs" else without_elapsed(v) for k, v in document.items()}
    if isinstance(document, list):
        return [without_elapsed(v) for v in document]
    return document


def check_golden(name: str, document: Any) -> None:
    document = without_elapsed(document)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    assert document == json.loads(path.read_text())


def test_consult_success_shape_and_records(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "Stance: ship it."}])
    code, doc, stderr = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Ship?", fakes=fakes
    )
    assert code == 0, stderr
    assert doc["ok"] is True and doc["status"] == "advisory"
    assert doc["text"] == "Stance: ship it."
    assert "[review-loop] reviewer=codex status=active elapsed=00:00" in stderr
    check_golden("consult_ok", normalise(doc, repo))
    record = Path(doc["recordPath"]).read_text()
    assert record.startswith("# DecisionConsult\n")
    assert "- advisory: true" in record and "## Question\n\nShip?" in record
    assert "## Peer response\n\nStance: ship it." in record
    prompt = fakes.calls()[0]["stdin"]
    assert prompt.startswith("You are a decision consult peer (advisory only).")
    assert "--- question framing ---\nShip?" in prompt
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.review-handoff/") == 1
    run_cli("consult", "--repo", str(repo), "--peer", "codex", "--question", "Again?", fakes=fakes)
    assert (repo / ".git" / "info" / "exclude").read_text().count("/.review-handoff/") == 1
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""  # .review-handoff/ is excluded; nothing else was added


def test_consult_then_sessions_lists_it_with_resume_commands(repo: Path, fakes: FakeCLIs) -> None:
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question", "Q", fakes=fakes
    )
    assert code == 0
    code, listed, _ = run_cli("sessions", "--repo", str(repo), "--product=claude", fakes=fakes)
    assert code == 0
    assert listed["count"] == 1
    entry = listed["sessions"][0]
    assert entry["sessionId"] == doc["sessionId"]
    assert entry["cwd"] == str(repo)
    assert entry["packetId"].startswith("consult-sessions/")
    assert entry["resume"]["headless"].endswith(f'--resume {doc["sessionId"]} "<prompt>"')
    check_golden("sessions_claude", normalise(listed, repo))
    code, other, _ = run_cli("sessions", "--repo", str(repo), "--product", "codex", fakes=fakes)
    assert other["count"] == 0


def test_consult_resume_continues_the_same_session(repo: Path, fakes: FakeCLIs) -> None:
    _, first, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Q1", fakes=fakes
    )
    _, second, _ = run_cli(
        "consult",
        "--repo",
        str(repo),
        "--peer",
        "codex",
        "--question",
        "Q2",
        "--resume",
        first["sessionId"],
        fakes=fakes,
    )
    assert second["ok"] and second["sessionId"] == first["sessionId"]
    argv = fakes.calls()[1]["argv"]
    assert argv[argv.index("resume") + 1] == first["sessionId"]


def test_host_skip_host_picks_two_peers_in_parallel(repo: Path, fakes: FakeCLIs) -> None:
    code, doc, _ = run_cli(
        "consult",
        "--repo",
        str(repo),
        "--host=claude",
        "--skip-host",
        "--question",
        "Q",
        fakes=fakes,
    )
    assert code == 0
    assert [r["peer"] for r in doc["results"]] == ["codex", "grok"]
    assert doc["ok"] is True


def test_failure_is_delivery_unknown_exit_2(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "fail"}])
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Q", fakes=fakes
    )
    assert code == 2
    assert doc["ok"] is False and doc["status"] == "DELIVERY_UNKNOWN"
    assert doc["delivery"] == "DELIVERY_UNKNOWN"
    assert doc["message"].startswith("consult peer invoke failed: ")
    check_golden("consult_fail", normalise(doc, repo))
    assert not list((repo / ".review-handoff" / "runtime" / "consults").iterdir())


def test_timeout_with_fallback_reports_the_swap(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(codex=[{"mode": "hang"}], gemini=[{"mode": "ok", "text": "from gemini"}])
    code, doc, stderr = run_cli(
        "consult",
        "--repo",
        str(repo),
        "--peer",
        "codex",
        "--fallback",
        "gemini",  # grok is Peer B for a claude host: never its substitute (T22)
        "--question",
        "Q",
        # every attempt's deadline: gemini must start and answer within it on a loaded
        # machine too (1 s was missed); codex's expiring is all this test needs of it
        "--timeout",
        "5",
        "--host",
        "claude",
        fakes=fakes,
    )
    assert code == 0, doc
    assert doc["product"] == "gemini"
    assert doc["fallbacks"] == [{"from": "codex", "to": "gemini", "reason": "timeout"}]
    # Said once on stderr: the progress line (the structured event goes to a host's logging
    # handlers; the command's stderr does not print it a second time).
    said = [line for line in stderr.splitlines() if "fallback" in line]
    assert said == ["[review-loop] reviewer=codex status=fallback to=gemini why=timeout"], stderr


@pytest.mark.parametrize(
    ("mode", "extra"),
    [("garbage", {}), ("non-utf8", {}), ("empty", {}), ("huge", {"bytes": 100 * 1024 * 1024})],
)
def test_bad_cli_output_is_delivery_unknown(
    repo: Path, fakes: FakeCLIs, mode: str, extra: dict[str, Any]
) -> None:
    fakes.script(claude=[{"mode": mode, **extra}])
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question", "Q", fakes=fakes
    )
    assert code == 2
    assert doc["status"] == "DELIVERY_UNKNOWN"
    assert len(fakes.calls()) == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["--peer", "nosuch", "--question", "Q"],
            "--peer: unknown product or peer-command 'nosuch'",
        ),
        (
            ["--peer", "codex", "--question-file", "/no/such/file.md"],
            "--question-file: no such file",
        ),
        (["--peer", "codex", "--question", "   "], "--question: the question is empty"),
        (
            ["--peer", "codex", "--question", "Q", "--peer-command", "codex999"],
            "--peer-command: 'codex999'",
        ),
        (["--peer", "codex"], "--question-file: no question given"),
        (["--peer", "codex", "--question", "Q", "--timeout", "soon"], "--timeout: 'soon'"),
        (["--peer", "codex", "--question", "Q", "--fallback", "nope"], "--fallback: unknown"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    repo: Path, fakes: FakeCLIs, args: list[str], needle: str
) -> None:
    code, doc, _ = run_cli("consult", "--repo", str(repo), *args, fakes=fakes)
    assert code == 1
    assert doc["ok"] is False
    assert needle in doc["error"]
    assert not (repo / ".review-handoff").exists()
    assert fakes.calls() == []


def test_not_a_git_repo(tmp_path: Path, fakes: FakeCLIs) -> None:
    plain = tmp_path / "plain dir"
    plain.mkdir()
    code, doc, _ = run_cli(
        "consult", "--repo", str(plain), "--peer", "codex", "--question", "Q", fakes=fakes
    )
    assert code == 1
    assert "--repo" in doc["error"] and "not inside a git checkout" in doc["error"]
    assert not (plain / ".review-handoff").exists()


def test_question_file_with_spaces_and_quotes(repo: Path, fakes: FakeCLIs, tmp_path: Path) -> None:
    qfile = tmp_path / 'my "question" file.md'
    qfile.write_text("Is $HOME `expanded`? It must not be.\n")
    code, doc, _ = run_cli(
        "consult",
        "--repo",
        str(repo),
        "--peer",
        "codex",
        "--question-file",
        str(qfile),
        fakes=fakes,
    )
    assert code == 0, doc
    assert "Is $HOME `expanded`? It must not be." in fakes.calls()[0]["stdin"]


def test_invalid_prefs_file_is_named(repo: Path, fakes: FakeCLIs, user_state: Path) -> None:
    (user_state / "prefs.toml").write_text('order = ["claude", "bard"]\n')
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Q", fakes=fakes
    )
    assert code == 1
    assert "order[1]: unknown product 'bard'" in doc["error"]
    (user_state / "prefs.toml").write_text("order = [\n")
    code, doc, _ = run_cli("prefs", fakes=fakes)
    assert code == 1 and "not valid TOML" in doc["error"]
    (user_state / "prefs.toml").write_text("timeoutMs = -5\n")
    code, doc, _ = run_cli("prefs", fakes=fakes)
    assert code == 1 and "timeoutMs" in doc["error"]


def test_prefs_set_show_alias_reset(fakes: FakeCLIs, user_state: Path) -> None:
    code, doc, _ = run_cli("prefs", "set", "order", "codex,grok,claude")
    assert code == 0 and doc["prefs"]["order"] == ["codex", "grok", "claude"]
    code, doc, _ = run_cli("prefs", "set", "skipHost", "true")
    assert doc["prefs"]["skipHost"] is True
    code, doc, _ = run_cli("prefs", "alias", "codex002", "codex", str(fakes.bin / "codex"))
    assert doc["prefs"]["peerCommands"]["codex002"]["product"] == "codex"
    assert (user_state / "prefs.toml").exists()
    code, doc, _ = run_cli("prefs", "set", "order", "codex,codex")
    assert code == 1 and "order" in doc["error"]
    code, doc, _ = run_cli("prefs")
    assert doc["prefs"]["order"] == ["codex", "grok", "claude"]  # the bad write changed nothing
    code, doc, _ = run_cli("prefs", "reset")
    assert doc["prefs"]["order"] == ["claude", "codex", "grok"]


def test_peer_command_alias_launches_the_other_executable(
    repo: Path, fakes: FakeCLIs, tmp_path: Path
) -> None:
    launcher = tmp_path / "bin2" / "codex002"
    launcher.parent.mkdir()
    launcher.write_text((fakes.bin / "codex").read_text())
    launcher.chmod(0o755)
    env = {"PATH": f"{launcher.parent}:{fakes.env(path_only=True)['PATH']}"}
    code, doc, _ = run_cli(
        "consult",
        "--repo",
        str(repo),
        "--peer",
        "codex",
        "--peer-command=codex002",
        "--question",
        "Q",
        fakes=fakes,
        env=env,
    )
    assert code == 0, doc
    assert doc["peer"] == "codex002" and doc["product"] == "codex"


def test_help_is_json_and_spawns_nothing(fakes: FakeCLIs, tmp_path: Path) -> None:
    code, doc, _ = run_cli("help", fakes=fakes, cwd=tmp_path)
    assert code == 0 and doc["ok"] is True
    assert any(line.startswith("review-loop consult") for line in doc["usage"])
    assert fakes.calls() == []
    assert list(tmp_path.iterdir()) == [fakes.root]
    code, doc, _ = run_cli("frobnicate")
    assert code == 1 and doc["error"].startswith("Unknown command: frobnicate.")
