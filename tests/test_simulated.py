"""Contract, collaboration and process tests of the simulated reviewer (``--peer simulated``).

It is the offline mode a newcomer tries first. Contract tests: each answer is in the format its
workflow's own parser accepts. Collaboration tests: the adapter launched through the real
process layer (asyncio and trio), resume keeps the id, and a hostile repository cannot run
code through it. Process tests, end to end: ``consult``, ``run`` and ``verify-diff`` on the
command line with no key and no fake CLI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.adapters.registry import OFFLINE
from review_loop.agents import converge, review
from review_loop.agents import verify_diff as vd
from review_loop.agents.models import DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from review_loop.simulated import answer, main
from tests.test_cli import git_repo, run_cli

LEAD = "You are a read-only code reviewer in an automated review loop"
REVIEW_ROUND_1 = f"""{LEAD} (round 1, first review).
Paths in scope: (all)
Changed paths (every one must be reviewed):
- app.py
- lib/util.py

Review the change.
"""

REVIEW_ROUND_2 = f"""{LEAD} (round 2, re-review after a fix).
Changed paths (every one must be reviewed):
- app.py

Prior findings (reassess every one of these IDs, no others): F1, F2
"""


def test_contract_registered_through_the_registry_and_never_automatic() -> None:
    assert "simulated" in product_names()
    assert get_adapter("simulated").name == "simulated"
    assert "simulated" in OFFLINE


def test_contract_review_answers_parse_with_the_review_runs_parser() -> None:
    first = review.parse_answer(answer(REVIEW_ROUND_1), 1, [])
    assert first.verdict is review.Verdict.NO_FINDINGS and first.findings == []
    assert first.coverage == ["app.py", "lib/util.py"]
    assert review.missing_coverage(first, ["app.py", "lib/util.py"]) == []
    second = review.parse_answer(answer(REVIEW_ROUND_2), 2, ["F1", "F2"])
    assert second.verdict is review.Verdict.PASS
    assert [(r.id, r.status) for r in second.reassessments] == [
        ("F1", "resolved"),
        ("F2", "resolved"),
    ]


def test_contract_convergence_blind_review_and_preflight_answers() -> None:
    from review_loop.agents.prompts import load_prompt

    position = converge.parse_position(answer(load_prompt("converge_round_a")))
    assert position.parsed and position.position == "AGREE"
    position_b = converge.parse_position(answer(load_prompt("converge_round_b")))
    assert position_b.position == "AGREE"
    assert converge.parse_blind_review(answer(load_prompt("blind_review"))) == ("CLEAN", [])
    assert answer(load_prompt("converge_preflight")) == "PREFLIGHT OK"


def test_contract_verify_diff_answers_parse_with_its_parsers() -> None:
    scenarios = vd.parse_scenarios_reply(answer(vd.scenarios_prompt("d", "f", "t.py", "x")))
    assert scenarios is not None and len(scenarios) == 1
    verdict = vd.parse_verdict(answer(vd.executor_prompt("x = 1\n", "+x = 1", "s")))
    assert isinstance(verdict, vd.Verdict) and verdict.objective_met == "yes"
    auto = vd.parse_verdict(
        answer(vd.auto_executor_prompt("skill", "+x", {"a.md": "x"})), auto=True
    )
    assert isinstance(auto, vd.Verdict) and auto.objective_met == "yes"


def test_contract_every_answer_says_it_is_simulated() -> None:
    assert "simulated" in answer("Should we ship?")
    assert "simulated" in answer(REVIEW_ROUND_1)


def test_contract_executable_keeps_a_resumed_id_and_refuses_an_empty_prompt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--resume", "abc-1", "Hello?"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["session_id"] == "abc-1" and "Stance" in line["text"]
    assert main(["   "]) == 2


# -- through the real process layer ---------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


@pytest.mark.anyio
async def test_collaboration_consult_and_resume_through_the_process_layer(repo: Path) -> None:
    record = repo / ".review-handoff" / "runtime" / "sim"
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        first = await d.consult(PeerRequest(peer="simulated", prompt="Ship?", record_dir=record))
        assert first.ok and first.reply is not None and first.sessionId
        again = await d.consult(
            PeerRequest(
                peer="simulated",
                prompt="And now?",
                record_dir=record.with_name("sim2"),
                resume_session_id=first.sessionId,
            )
        )
    assert again.ok and again.sessionId == first.sessionId and not again.degraded


@pytest.mark.anyio
async def test_collaboration_a_hostile_repository_cannot_run_code_through_it(
    repo: Path, tmp_path: Path
) -> None:
    """``python -m review_loop.simulated`` in the repository would import the repository's
    own ``review_loop`` package; ``-I`` keeps the working directory off ``sys.path``."""
    canary = tmp_path / "canary"
    planted = repo / "review_loop"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "simulated.py").write_text(
        f"open({str(canary)!r}, 'w').write('ran')\n"
        'print(\'{"session_id": "x", "text": "HIJACKED"}\')\n'
    )
    record = repo / ".review-handoff" / "runtime" / "sim"
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(PeerRequest(peer="simulated", prompt="Hi", record_dir=record))
    assert delivery.state is DeliveryState.DELIVERED
    assert delivery.reply is not None and "HIJACKED" not in delivery.reply.text
    assert not canary.exists()


# -- the command line, no key, no fake CLI ---------------------------------------------------


def test_end_to_end_consult_run_and_verify_diff_offline(repo: Path) -> None:
    code, doc, stderr = run_cli(
        "consult", "--repo", str(repo), "--peer", "simulated", "--question", "Ship?"
    )
    assert code == 0, stderr
    assert doc["ok"] is True and doc["product"] == "simulated"
    # The seed's token stays, quoted, with its meaning in English.
    assert '"一致即采纳" ("adopt when the peers agree")' in doc["message"]
    assert "reviewer=simulated status=answered" in stderr
    (repo / "README").write_text("changed\n")
    code, doc, stderr = run_cli("run", "--repo", str(repo), "--reviewer", "simulated")
    assert code == 0, (doc, stderr)
    assert doc["verdict"] == "NO_FINDINGS" and doc["status"] == "archived"
    code, doc, stderr = run_cli(
        "verify-diff", "--repo", str(repo), "--executor", "simulated",
        "--description", "the README says changed", "--fix-direction", "edit it",
        "--target", "README",
    )  # fmt: skip
    assert code == 0, stderr
    assert doc["status"] == "converged" and doc["objective_met"] == "yes"


def test_end_to_end_fallback_auto_never_picks_the_simulated_reviewer(repo: Path) -> None:
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--fallback", "auto",
        "--question", "Ship?", env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert code == 2
    assert all(f["to"] != "simulated" for f in doc["fallbacks"])
    assert doc["product"] != "simulated"


@pytest.mark.parametrize(
    "change",
    [{"timed_out": True}, {"stopped": True}, {"cancelled": True}, {"returncode": 1}],
    ids=["timeout", "stopped", "cancelled", "exit-1"],
)
def test_contract_an_interrupted_or_failed_run_is_never_a_reply(change: dict[str, object]) -> None:
    from review_loop.agents.models import AgentRequest, Capabilities, Completed, Failure, Reply

    adapter = get_adapter("simulated")
    invocation = adapter.build(
        AgentRequest(prompt="Hi", cwd=Path("/repo")),
        command=("python3",),
        capabilities=Capabilities(),
    )
    assert invocation.argv == ("python3", "-I", "-B", "-m", "review_loop.simulated")
    whole = b'{"session_id": "s1", "text": "an answer"}\n'
    assert isinstance(adapter.interpret(invocation, Completed(returncode=0, stdout=whole)), Reply)
    fields: dict[str, object] = {"returncode": 0, "stdout": whole, **change}
    outcome = adapter.interpret(invocation, Completed(**fields))  # type: ignore[arg-type]
    assert isinstance(outcome, Failure) and outcome.state is DeliveryState.DELIVERY_UNKNOWN


def test_end_to_end_demo_runs_from_any_directory_and_prints_no_dead_resume_command(
    tmp_path: Path,
) -> None:
    import subprocess

    demo = Path(__file__).resolve().parents[1] / "scripts" / "demo"
    ran = subprocess.run([str(demo)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    # scripts/demo is `review-loop demo`: ONE document, holding each step's document
    documents = [step["document"] for step in json.loads(ran.stdout)["steps"]]
    assert [d.get("ok", d.get("status")) for d in documents] == [
        *[True] * 5, "converged", True,
    ]  # fmt: skip
    # the scripted round trip: run, fix-completion, run --continue, close
    assert [d.get("status") for d in documents[1:5]] == [
        "blocked", "fix_recorded", "awaiting_user_decision", "archived",
    ]  # fmt: skip
    sessions = documents[-1]["sessions"]
    assert sessions and all("resume" not in s and "resumeInShell" not in s for s in sessions)
    # nothing that points at the removed directory: no command that changes into it, in
    # any document (parsed, so a random session id ending in "cd" is not a command)
    assert not [key for d in documents for key in _keys(d) if key.endswith("InShell")]
    assert not [text for d in documents for text in _strings(d) if _SHELL_CD.search(text)]


_SHELL_CD = re.compile(r"(?:^|[\s;&|(])cd\s")
"""A shell ``cd`` command word, at the start of a string or after a separator."""


def _keys(value: object) -> Iterator[str]:
    """Every key of every mapping in a parsed JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def _strings(value: object) -> Iterator[str]:
    """Every string value in a parsed JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_the_demo_check_finds_a_cd_command_and_not_a_session_id_ending_in_cd() -> None:
    ended_in_cd = '/venv/bin/python -m review_loop.simulated --resume 9f3ea8de1bbe1cd "<prompt>"'
    assert not _SHELL_CD.search(ended_in_cd)
    assert _SHELL_CD.search("cd /tmp/demo/repo && claude --resume s1")
    assert _SHELL_CD.search("(cd '/tmp/demo repo'; codex resume s1)")
    document = {"sessions": [{"resumeReadOnlyInShell": {"headless": ended_in_cd}}]}
    assert list(_keys(document)) == ["sessions", "resumeReadOnlyInShell", "headless"]
    assert list(_strings(document)) == [ended_in_cd]
