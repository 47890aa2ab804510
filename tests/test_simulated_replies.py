"""Contract and process tests of the scripted simulated reviewer
(``REVIEW_LOOP_SIMULATED_REPLIES``): the offline review round trip.

Contract tests: the replies file is validated with errors naming the item and field; each
call takes the next answer; the position survives processes and restarts with an edited
file. Process tests: parallel simulated CLIs never take the same answer; the command line
refuses a bad file before any reviewer runs; ``run`` -> ``fix-completion`` ->
``run --continue`` -> ``close`` with no key and no fake CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.agents.errors import InputError
from review_loop.agents.models import AgentRequest, Capabilities, Completed, DeliveryState, Failure
from review_loop.simulated_replies import (
    POSITION_SUFFIX,
    REPLIES_ENV,
    check_environment,
    next_reply,
    parse_replies,
)
from tests.test_cli import git_repo, run_cli

HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
BLOCKED = (
    f"## Coverage\n- README\n\n## Findings\n\n{HEADER}\n"
    "| F1 | [阻塞] | greeting lost | README:1 says changed | README | restore it "
    "| README says hello |\n\nVerdict: BLOCKED"
)
CONCERNS = (
    "## Coverage\n- README\n\n## Prior Findings Reassessment\n\n| ID | 状态 | 复核证据 |\n"
    "|---|---|---|\n| F1 | resolved | README says hello |\n\n## New Findings\n\n"
    f"{HEADER}\n| F2 | [非阻塞] | no test | README | README | add one | a test |\n\n"
    "## Regression Surface\n\nOnly README changed.\n\nVerdict: PASS_WITH_CONCERNS"
)
FIX = """# Fix Completion

## Fix Conclusion
Restored the greeting.
## Original Findings Snapshot
F1 [阻塞] greeting lost
## Finding Status
F1 fixed
## Verification
grep hello README
## Re-review Instructions
Check README line 1.
"""


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"replies": []}, "the document is a JSON object, not a list"),
        ([1], "[0]: a JSON number, not a string or an object"),
        (["ok", {"txt": "x"}], "[1].text: Field required"),
        (["ok", {"text": "x", "extra": 1}], "[1].extra: Extra inputs are not permitted"),
        (["ok", "ok", "   "], "[2]: String should have at least 1 character"),
        ([{"text": 3}], "[0].text: Input should be a valid string"),
    ],
)
def test_contract_a_bad_replies_file_is_refused_naming_the_item_and_field(
    tmp_path: Path, document: object, named: str
) -> None:
    path = _write(tmp_path / "r.json", document)
    with pytest.raises(InputError) as refused:
        parse_replies(path.read_bytes(), source=str(path))
    message = str(refused.value)
    assert message.startswith(f"{REPLIES_ENV}: {path}: {named}"), message
    assert 'each a non-empty string or {"text": "<answer>"}' in message


def test_contract_not_json_and_a_relative_path_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff[")
    with pytest.raises(InputError, match="not a UTF-8 JSON document"):
        parse_replies(bad.read_bytes(), source=str(bad))
    environ = {REPLIES_ENV: "r.json"}
    _write(tmp_path / "r.json", ["a"])
    check_environment(environ, tmp_path)  # the command line makes it absolute
    assert environ[REPLIES_ENV] == str(tmp_path / "r.json")
    with pytest.raises(InputError, match=r"missing\.json: cannot be read"):
        check_environment({REPLIES_ENV: str(tmp_path / "missing.json")}, tmp_path)


def test_contract_each_call_takes_the_next_answer_verbatim_then_none(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.json", [" first\n", {"text": "second"}])
    assert next_reply(path) == (0, " first\n")
    assert next_reply(path) == (1, "second")
    assert next_reply(path) is None
    assert next_reply(path) is None
    position = json.loads((tmp_path / f"r.json{POSITION_SUFFIX}").read_text())
    assert position["next"] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # renamed, not left


def test_contract_an_edited_file_or_a_removed_position_starts_again(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.json", ["a", "b"])
    assert next_reply(path) == (0, "a")
    _write(path, ["c", "d"])
    assert next_reply(path) == (0, "c")
    (tmp_path / f"r.json{POSITION_SUFFIX}").unlink()
    assert next_reply(path) == (0, "c")
    (tmp_path / f"r.json{POSITION_SUFFIX}").write_text("{half a")  # never written so: ignored
    assert next_reply(path) == (0, "c")


def _simulated(env: dict[str, str], prompt: str = "Hi?") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-I", "-B", "-m", "review_loop.simulated", prompt],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_process_parallel_calls_each_take_a_different_answer(tmp_path: Path) -> None:
    answers = [f"answer {n}" for n in range(8)]
    path = _write(tmp_path / "r.json", answers)
    env = {**os.environ, REPLIES_ENV: str(path)}
    running = [_simulated(env) for _ in answers]
    taken = []
    for process in running:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        taken.append(json.loads(out)["text"])
    assert sorted(taken) == sorted(answers)
    done = _simulated(env)  # used up: the built-in answer, which says it is simulated
    out, _ = done.communicate(timeout=60)
    assert "simulated reviewer" in json.loads(out)["text"] and "scripted" not in json.loads(out)


def test_process_the_simulated_cli_refuses_a_bad_file_and_the_adapter_reads_not_submitted(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path / "r.json", ["ok", 7])
    process = _simulated({**os.environ, REPLIES_ENV: str(path)})
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and not out and "[1]: a JSON number" in err
    adapter = get_adapter("simulated")
    request = AgentRequest(prompt="Hi?", cwd=tmp_path)
    invocation = adapter.build(request, command=(sys.executable,), capabilities=Capabilities())
    outcome = adapter.interpret(
        invocation, Completed(returncode=2, stdout=b"", stderr=err.encode())
    )
    assert isinstance(outcome, Failure) and outcome.state is DeliveryState.NOT_SUBMITTED
    assert "[1]: a JSON number" in outcome.detail
    assert not (tmp_path / f"r.json{POSITION_SUFFIX}").exists()  # nothing was taken


def test_process_the_command_line_refuses_a_bad_file_before_any_reviewer_runs(
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path / "repo")
    _write(tmp_path / "r.json", [{"text": ""}])
    env = {REPLIES_ENV: "../r.json", "REVIEW_LOOP_HOME": str(tmp_path / "state")}
    code, doc, _ = run_cli("consult", "--peer", "simulated", "--question", "x", env=env, cwd=repo)
    assert code == 1
    assert doc["error"].startswith(f"{REPLIES_ENV}: {tmp_path / 'r.json'}: [0].text: ")
    assert not (repo / ".review-handoff" / "runtime").exists()  # no reviewer was started


def test_process_the_review_round_trip_offline(tmp_path: Path) -> None:
    """``run`` BLOCKED -> ``fix-completion`` -> ``run --continue`` PASS_WITH_CONCERNS ->
    ``close --reason accept-concerns``: with no key and no fake CLI."""
    repo = git_repo(tmp_path / "repo")
    (repo / "README").write_text("changed\n")
    replies = _write(tmp_path / "replies.json", [BLOCKED, CONCERNS])
    env = {REPLIES_ENV: str(replies), "REVIEW_LOOP_HOME": str(tmp_path / "state")}
    r = "--repo", str(repo)
    code, first, stderr = run_cli(
        "run", *r, "--reviewer", "simulated", "--completion", "review", env=env
    )
    assert code == 0, stderr
    assert first["status"] == "blocked" and first["openBlocking"] == ["F1"], first
    (repo / "README").write_text("hello\n")
    (tmp_path / "fix.md").write_text(FIX)
    code, fixed, stderr = run_cli(
        "fix-completion", *r, "--packet", first["packetPath"],
        "--body-file", str(tmp_path / "fix.md"), env=env,
    )  # fmt: skip
    assert code == 0 and fixed["status"] == "fix_recorded", (fixed, stderr)
    code, second, stderr = run_cli("run", *r, "--continue", env=env)
    assert code == 0, stderr
    assert second["status"] == "awaiting_user_decision", second
    assert second["verdict"] == "PASS_WITH_CONCERNS" and second["round"] == 2
    code, closed, stderr = run_cli(
        "close", *r, "--packet", second["packetPath"], "--reason", "accept-concerns", env=env
    )
    assert code == 0, stderr
    assert closed["status"] == "archived" and closed["acceptedConcernIds"] == ["F2"], closed
