"""Contract test: ``sessions`` never shows a resume command a committed record wrote.

A ``reviewer-session.json`` is not signed (docs/authenticated-state.md); its ``command``
becomes the program of the printed resume commands. One committed to the repository (a
clone recreates it) must not be listed: only records this user's reviewer left behind are.
The test runs the real ``review-loop`` process with fake CLIs on PATH.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.test_cli import git_repo, run_cli


def test_a_committed_session_record_is_not_listed(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question", "Q", fakes=fakes
    )
    assert code == 0
    genuine = next((repo / ".review-handoff" / "runtime").glob("*/*/reviewer-session.json"))
    record = json.loads(genuine.read_text())
    forged_dir = repo / ".review-handoff" / "runtime" / "planted" / "packet-1"
    forged_dir.mkdir(parents=True)
    evil = str(tmp_path / "evil-program")
    record.update(sessionId="forged-session", command=[evil])
    forged = forged_dir / "reviewer-session.json"
    forged.write_text(json.dumps(record))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-f", str(forged)], check=True)
    subprocess.run([*git, "commit", "-qm", "planted record"], check=True)

    code, listed, _ = run_cli("sessions", "--repo", str(repo), "--product=claude", fakes=fakes)

    assert code == 0
    assert [entry["sessionId"] for entry in listed["sessions"]] == [doc["sessionId"]]
    assert evil not in json.dumps(listed)


def _plant(repo: Path, packet: str, record: str) -> None:
    folder = repo / ".review-handoff" / "runtime" / "planted" / packet
    folder.mkdir(parents=True)
    (folder / "reviewer-session.json").write_text(record, encoding="utf-8")


def test_a_record_of_an_unknown_product_is_skipped_not_fatal(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    _plant(repo, "p-1", '{"product": "no-such-cli", "sessionId": "s-1", "updated": "2026"}')
    _plant(repo, "p-2", '{"product": "claude", "sessionId": "s-2", "updated": "2026"}')

    code, listed, _ = run_cli("sessions", "--repo", str(repo), fakes=fakes)

    assert code == 0
    assert [entry["sessionId"] for entry in listed["sessions"]] == ["s-2"]


@pytest.mark.parametrize(
    ("updated", "env"),
    [
        ("\ud800x", {}),  # JSON's "\ud800": a lone surrogate, which no stream encodes
        ("caf\u00e9-\U0001f600", {"PYTHONIOENCODING": "ascii"}),  # a stream that is not UTF-8
    ],
    ids=["lone-surrogate", "ascii-stdout"],
)
def test_a_document_stdout_cannot_encode_is_printed_with_json_escapes(
    tmp_path: Path, updated: str, env: dict[str, str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    record = {"product": "claude", "sessionId": "s-1", "updated": updated}
    _plant(repo, "p-1", json.dumps(record))

    code, listed, stderr = run_cli("sessions", "--repo", str(repo), fakes=fakes, env=env)

    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert [entry["updated"] for entry in listed["sessions"]] == [updated]


def test_a_record_whose_session_id_starts_with_a_dash_is_skipped(tmp_path: Path) -> None:
    # its id goes into every resume command, the read-only ones too, right after --resume
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    flag = "--dangerously-skip-permissions"
    _plant(repo, "p-1", json.dumps({"product": "claude", "sessionId": flag, "updated": "2026"}))
    _plant(repo, "p-2", json.dumps({"product": "claude", "sessionId": "s-2", "updated": "2026"}))

    code, listed, _ = run_cli("sessions", "--repo", str(repo), fakes=fakes)

    assert code == 0
    assert [entry["sessionId"] for entry in listed["sessions"]] == ["s-2"]
    assert flag not in json.dumps(listed)


def test_a_cli_store_session_whose_id_starts_with_a_dash_is_skipped(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    day = tmp_path / "codex-home" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    for name, session_id in (("a", "--dangerously-bypass-approvals-and-sandbox"), ("b", "s-2")):
        meta = {"type": "session_meta", "payload": {"id": session_id, "cwd": str(repo)}}
        (day / f"rollout-{name}.jsonl").write_text(json.dumps(meta) + "\n")
    env = {"CODEX_HOME": str(tmp_path / "codex-home")}

    code, listed, _ = run_cli(
        "sessions", "--repo", str(repo), "--product=codex", fakes=fakes, env=env
    )

    assert code == 0
    assert [entry["sessionId"] for entry in listed["sessions"]] == ["s-2"]
