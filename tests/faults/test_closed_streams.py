"""Process tests: closed or failing standard streams never cost a record or an answer.

``review-loop`` runs as a real process started by ``/bin/sh`` with its descriptors as a
daemon or a cron job would leave them: stderr closed (``2>&-``), stdin closed, all three
closed, stdout closed (``>&-``), stdout or stderr on a full device (``/dev/full``). Each
time the fake reviewer answers and the command must end as ``docs/cli.md`` says: exit 0
with its one document when stdout works, exit 120 and a line on stderr (when there is one)
when the document could not be written; never a traceback; the session record
``finished``; the answer kept under ``.review-handoff/runtime/consults/``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import WAIT_S, Scanner, one_document, records, unfinished
from tests.gitrepo import guarded_change

UNPRINTED = 120  # docs/cli.md: the document did not reach stdout
ANSWER = "the change is right, said the fake"
NOT_WRITTEN = "the JSON document was not written to stdout"

# (redirections, exit code, stdout carries the document, stderr is there to read)
CASES = {
    "stderr-closed": ("2>&-", 0, True, False),
    "stdin-closed": ("<&-", 0, True, True),
    "stderr-full": ("2>/dev/full", 0, True, False),
    "all-closed": ("<&- >&- 2>&-", UNPRINTED, False, False),
    "stdout-closed": (">&-", UNPRINTED, False, True),
    "stdout-full": (">/dev/full", UNPRINTED, False, True),
}


def _through_shell(
    redirections: str, args: list[str], env: dict[str, str], stderr_file: Path
) -> subprocess.CompletedProcess[str]:
    """``python -m review_loop ARGS`` exec'd by sh with ``redirections`` applied last.

    stderr goes to a file (not a pipe), so that a closed or full stderr is exactly the one
    the redirection made, and what review-loop did write to a working stderr can be read.
    """
    script = f'exec "$@" {redirections}'
    command = ["/bin/sh", "-c", script, "sh", sys.executable, "-m", "review_loop", *args]
    with stderr_file.open("w") as err:
        return subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
            timeout=WAIT_S * 4,
            check=False,
        )


def _check_records(repo: Path) -> None:
    found = records(repo)
    assert found, "no session record"
    assert [r["status"] for r in found.values()] == ["finished"] * len(found), found
    assert unfinished(repo) == []


@pytest.mark.parametrize("case", CASES)
def test_process_consult_with_closed_or_failing_streams(
    case: str, tmp_path: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    redirections, code, prints, stderr_readable = CASES[case]
    repo = guarded_change(tmp_path / "repo")
    fakes.script(codex=[{"mode": "ok", "text": ANSWER}])
    args = ["consult", "--repo", str(repo), "--peer", "codex", "--question", "Is it right?"]
    done = _through_shell(redirections, args, env, tmp_path / "stderr.txt")
    stderr = (tmp_path / "stderr.txt").read_text()
    assert done.returncode == code, (done.stdout[-2000:], stderr[-2000:])
    assert "Traceback" not in stderr + done.stdout
    if prints:
        document = one_document(done.stdout)
        assert document["ok"] is True and document["text"] == ANSWER, document
    else:
        assert done.stdout == ""
    if stderr_readable and not prints:
        assert NOT_WRITTEN in stderr, stderr
    _check_records(repo)
    answers = list((repo / ".review-handoff" / "runtime" / "consults").glob("*.md"))
    assert len(answers) == 1 and ANSWER in answers[0].read_text()
    assert len(fakes.calls()) == 1  # asked once, answered once
    assert scanner.survivors() == []


FINDINGS_HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)


@pytest.mark.parametrize("case", ["stderr-closed", "all-closed", "stdout-full"])
def test_process_run_with_closed_or_failing_streams(
    case: str, tmp_path: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    redirections, code, prints, stderr_readable = CASES[case]
    repo = guarded_change(tmp_path / "repo")
    verdict = f"## Findings\n\n{FINDINGS_HEADER}\n\nVerdict: PASS\n"
    fakes.script(codex=[{"mode": "ok", "text": verdict}])
    args = ["run", "--repo", str(repo), "--reviewer", "codex"]
    done = _through_shell(redirections, args, env, tmp_path / "stderr.txt")
    stderr = (tmp_path / "stderr.txt").read_text()
    assert done.returncode == code, (done.stdout[-2000:], stderr[-2000:])
    assert "Traceback" not in stderr + done.stdout
    if prints:
        document = one_document(done.stdout)
        assert document["ok"] is True and document["verdict"] == "PASS", document
    if stderr_readable and not prints:
        assert NOT_WRITTEN in stderr, stderr
    _check_records(repo)
    answers = list((repo / ".review-handoff" / "runtime").rglob("answers/round-1.md"))
    assert len(answers) == 1 and "Verdict: PASS" in answers[0].read_text()
    assert len(fakes.calls()) == 1
    assert scanner.survivors() == []


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def test_process_mcp_whose_client_stopped_reading_stops_with_exit_120(
    env: dict[str, str], scanner: Scanner
) -> None:
    """The client closed its end of the server's stdout: the first reply cannot be written.
    The server stops as on a closed stdin (every job stopped) and says why, exit 120."""
    import json

    proc = subprocess.Popen(
        [sys.executable, "-m", "review_loop", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.close()  # the client stops reading before the server answers
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    try:
        proc.wait(timeout=WAIT_S * 4)  # stdin stays open: the server must end by itself
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the server went on serving a client that was gone") from None
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode()
    proc.stdin.close()
    proc.stderr.close()
    assert proc.returncode == UNPRINTED, stderr[-2000:]
    assert "Traceback" not in stderr and "TaskGroup" not in stderr
    assert "the MCP client's end of stdout failed (Broken pipe)" in stderr, stderr
    assert scanner.survivors() == []
