"""Collaboration tests: the whole verify-diff loop on a real temporary git repository.

The executor is a fake CLI scripted per iteration (``tests.fakes``), run through the real
dispatcher and process layer; each final JSON document is compared with a golden file
under ``tests/golden/verify_diff/`` (set ``REVIEW_LOOP_UPDATE_GOLDEN=1`` to rewrite them).
Async tests run on asyncio and trio; no process may outlive a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.errors import InputError, StateError
from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.orchestrator.workflows.verify_diff import VerifyDiffPlan, run_verify_diff
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs

GOLDEN = Path(__file__).parents[2] / "golden" / "verify_diff"

SKILL_HEAD = """---
name: greeter
description: Greet the user
---
# Greeter

Say hello to the user.
Then ask how they are.
"""
SKILL_WORK = SKILL_HEAD.replace("Say hello to the user.", "Say hello to the user politely.")
DESCRIPTION = "The greeting is curt and users find it rude."
DIRECTION = "Make the greeting line polite without changing the follow-up question."
SCENARIOS = (
    {
        "kind": "median",
        "title": "first contact",
        "description": "A new user opens the session and is greeted.",
        "checklist": [
            "[critical] the greeting reads as polite",
            "the follow-up question is still asked",
            "the frontmatter still names the skill",
        ],
    },
)


# -- fixtures and helpers ---------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """SKILL.md changed in the working tree; notes.txt and other.txt clean."""
    repo = make_repo(
        tmp_path / "repo",
        {"SKILL.md": SKILL_HEAD, "notes.txt": "notes\n", "other.txt": "other\n"},
    )
    (repo / "SKILL.md").write_text(SKILL_WORK)
    return repo


def answer(data: Any, prose: str = "I executed the scenario.") -> dict[str, Any]:
    """A fake step whose reply ends with ``data`` as a fenced JSON block."""
    return {"mode": "ok", "text": f"{prose}\n\n```json\n{json.dumps(data, indent=2)}\n```\n"}


def verdict(
    objective: str = "partial",
    gaps: Sequence[str] = ("gap",),
    regressions: Sequence[str] = (),
    edits: Sequence[tuple[str, str]] = (),
    **extra: Any,
) -> dict[str, Any]:
    step = {
        "objective_met": objective,
        "remaining_gaps": list(gaps),
        "regressions": list(regressions),
        "suggested_edits": [
            {"old_string": old, "new_string": new, "rationale": "r"} for old, new in edits
        ],
        "confidence": "high",
    }
    step.update(extra)
    return answer(step)


PASS = verdict("yes", gaps=())
POLITER = ("Say hello to the user politely.", "Say hello to the user kindly and politely.")


def explicit_plan(**changes: Any) -> VerifyDiffPlan:
    from review_loop.agents.verify_diff import parse_scenarios

    fields: dict[str, Any] = {
        "description": DESCRIPTION,
        "fix_direction": DIRECTION,
        "target": "SKILL.md",
        "executor": "claude",
        "scenarios": parse_scenarios(list(SCENARIOS)),
    }
    fields.update(changes)
    return VerifyDiffPlan(**fields)


async def run(repo: Path, plan: VerifyDiffPlan) -> tuple[dict[str, Any], list[str]]:
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    rows: list[str] = []
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        document = await run_verify_diff(dispatcher, plan, progress=rows.append)
    return document, rows


def assert_golden(name: str, document: dict[str, Any]) -> None:
    """The document equals ``golden/verify_diff/<name>.json``, key order included."""
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    path = GOLDEN / f"{name}.json"
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def prompts(fakes: FakeCLIs) -> list[str]:
    return [call["stdin"] for call in fakes.calls()]


LABELS = (
    "TARGET FILE",
    "UNIFIED DIFF",
    "SCENARIOS",
    "EXECUTOR PROMPT",
    "DIFF",
    "AFFECTED FILES",
    "INFERENCE PROMPT",
    "RESPONSE FORMAT",
)


def section(prompt: str, label: str) -> str:
    """The body of ``--- label ---`` up to the next known section label."""
    after = prompt.split(f"--- {label} ---\n", 1)[1]
    ends = [after.find(f"\n\n--- {other} ---\n") for other in LABELS]
    return after[: min([e for e in ends if e >= 0], default=len(after))] + "\n"


def run_dir(repo: Path) -> Path:
    (found,) = (repo / ".review-handoff" / "runtime" / "verify-diff").iterdir()
    return found


pytestmark = pytest.mark.anyio


# -- explicit-args mode ------------------------------------------------------------------------


async def test_converges_at_iteration_one(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[PASS])
    document, rows = await run(repo, explicit_plan())
    assert_golden("converged_at_1", document)
    assert (repo / "SKILL.md").read_text() == SKILL_WORK
    (prompt,) = prompts(fakes)
    labels = ["TARGET FILE", "UNIFIED DIFF", "SCENARIOS", "EXECUTOR PROMPT"]
    assert [prompt.index(f"--- {x} ---") for x in labels] == sorted(
        prompt.index(f"--- {x} ---") for x in labels
    )
    assert section(prompt, "TARGET FILE") == SKILL_WORK
    assert "+Say hello to the user politely." in section(prompt, "UNIFIED DIFF")
    assert "[critical] the greeting reads as polite" in section(prompt, "SCENARIOS")
    # bias-free: the executor never sees the caller's framing
    assert DESCRIPTION not in prompt and DIRECTION not in prompt
    # a fresh session: a pre-assigned id, never a resume
    argv = fakes.calls()[0]["argv"]
    assert "--session-id" in argv and "--resume" not in argv
    assert rows[-2:] == [
        "[verify-diff] iteration 1 (1/1): in_progress",
        "[verify-diff] iteration 1 (1/1): completed — converged at iter 1",
    ]
    record = run_dir(repo)
    assert json.loads((record / "result.json").read_text()) == document
    assert (record / "iter-1" / "prompt.md").read_text() == prompt


async def test_converges_at_iteration_three(repo: Path, fakes: FakeCLIs) -> None:
    second = ("Then ask how they are.", "Then ask, warmly, how they are.")
    fakes.script(
        claude=[
            verdict(gaps=["could be warmer"], edits=[POLITER]),
            # the second edit's old_string is gone (already rewritten): skipped, not counted
            verdict(gaps=["follow-up is curt"], edits=[second, POLITER]),
            verdict("yes", gaps=["optional: emoji"], edits=[("Greeter", "GREETER")]),
        ]
    )
    document, rows = await run(repo, explicit_plan(max_iterations=4))
    assert_golden("converged_at_3", document)
    text = (repo / "SKILL.md").read_text()
    assert "kindly and politely" in text and "warmly" in text
    assert "GREETER" not in text  # edits on a pass are discarded
    first, middle, last = prompts(fakes)
    assert "kindly and politely" in section(middle, "TARGET FILE")
    assert "+Say hello to the user kindly and politely." in section(middle, "UNIFIED DIFF")
    assert "warmly" in section(last, "UNIFIED DIFF")
    assert section(first, "SCENARIOS") == section(last, "SCENARIOS")
    session_ids = {c["argv"][c["argv"].index("--session-id") + 1] for c in fakes.calls()}
    assert len(session_ids) == 3
    assert rows[-1] == "[verify-diff] iteration 4 (4/4): completed — skipped: converged at iter 3"


async def test_divergent_gaps(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(
        claude=[
            verdict(gaps=["b", "a"], regressions=["r"], edits=[POLITER]),
            verdict(gaps=["a", "b"], regressions=["r"], edits=[("Greeter", "Hello bot")]),
        ]
    )
    document, _ = await run(repo, explicit_plan(max_iterations=3))
    assert_golden("divergent_gaps", document)
    assert "Hello bot" not in (repo / "SKILL.md").read_text()


async def test_verdict_parse_failure_after_a_productive_iteration(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(
        claude=[
            verdict(edits=[POLITER]),
            {"mode": "ok", "text": 'All good!\n```json\n{"objective_met": "yes",\n```'},
        ]
    )
    document, _ = await run(repo, explicit_plan(max_iterations=2))
    assert_golden("parse_failure", document)


async def test_verdict_without_any_block_is_a_parse_failure(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "text": "Looks fine to me."}])
    document, _ = await run(repo, explicit_plan())
    assert document["reason"] == "verdict parse failure"
    assert document["iterations_used"] == 0


async def test_verdict_schema_violation(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[verdict("maybe", edits=[POLITER])])
    document, _ = await run(repo, explicit_plan(max_iterations=2))
    assert_golden("schema_violation", document)
    assert (repo / "SKILL.md").read_text() == SKILL_WORK


async def test_broken_frontmatter_is_reverted(repo: Path, fakes: FakeCLIs) -> None:
    breaking = ("description: Greet the user", "description: Greet: the: user: [")
    fakes.script(claude=[verdict(edits=[POLITER, breaking])])
    document, _ = await run(repo, explicit_plan(max_iterations=2))
    assert_golden("frontmatter_broken", document)
    assert (repo / "SKILL.md").read_text() == SKILL_HEAD  # git checkout HEAD -- SKILL.md
    backup = run_dir(repo) / "reverted" / "SKILL.md"
    assert "Greet: the: user: [" in backup.read_text()


async def test_scope_violation_on_a_second_file(repo: Path, fakes: FakeCLIs) -> None:
    (repo / "notes.txt").write_text("the caller's own uncommitted work\n")
    step = verdict(edits=[POLITER])
    step["write"] = "other.txt"  # the "read-only" executor writes a second file
    fakes.script(claude=[step])
    document, _ = await run(repo, explicit_plan(max_iterations=2))
    assert_golden("scope_violation", document)
    assert (repo / "other.txt").read_text() == "other\n"  # git checkout HEAD -- other.txt
    assert (repo / "notes.txt").read_text() == "the caller's own uncommitted work\n"
    assert "kindly and politely" in (repo / "SKILL.md").read_text()
    assert (run_dir(repo) / "reverted" / "other.txt").read_text() == "written by a fake reviewer\n"


async def test_scope_rail_restores_a_dirty_path_to_its_start_of_run_content(
    repo: Path, fakes: FakeCLIs
) -> None:
    (repo / "other.txt").write_text("caller's edit\n")
    step = verdict(edits=[POLITER])
    step["write"] = "other.txt"
    fakes.script(claude=[step])
    document, _ = await run(repo, explicit_plan())
    assert (document["reason"], document["reverted_paths"]) == ("scope violation", ["other.txt"])
    assert (repo / "other.txt").read_text() == "caller's edit\n"


async def test_unresolved_at_the_cap(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(
        claude=[
            verdict(gaps=["x"], edits=[POLITER]),
            verdict(gaps=["y"], edits=[("Then ask how they are.", "Then ask how they feel.")]),
        ]
    )
    document, rows = await run(repo, explicit_plan(max_iterations=2))
    assert_golden("unresolved_at_cap", document)
    assert rows[-1] == "[verify-diff] iteration 2 (2/2): completed — 1 edit(s) applied"


async def test_executor_timeout_is_a_dispatch_error(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[verdict(edits=[POLITER]), {"mode": "hang"}])
    document, rows = await run(repo, explicit_plan(max_iterations=3, timeout_ms=1500))
    assert_golden("executor_timeout", document)
    assert any("dispatch error (claude: DELIVERY_UNKNOWN, timeout)" in r for r in rows)
    assert len(fakes.calls()) == 2  # no self-review, no re-send


@pytest.mark.parametrize("mode", ["fail", "empty", "garbage"])
async def test_failed_or_empty_dispatch_is_a_dispatch_error(
    repo: Path, fakes: FakeCLIs, mode: str
) -> None:
    fakes.script(claude=[{"mode": mode}])
    document, _ = await run(repo, explicit_plan(max_iterations=2))
    assert_golden("dispatch_error", document)


async def test_whitespace_answer_is_a_dispatch_error(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "ok", "text": "  \n"}])
    document, _ = await run(repo, explicit_plan())
    assert document["reason"] == "dispatch error"


async def test_scenarios_are_derived_once_by_a_separate_session(
    repo: Path, fakes: FakeCLIs
) -> None:
    derived = {
        "scenarios": [
            {
                "kind": "median",
                "title": "derived median",
                "description": "Greet a newcomer.",
                "checklist": ["[critical] polite greeting", "follow-up kept", "name kept"],
            }
        ]
    }
    fakes.script(claude=[answer(derived), verdict(edits=[POLITER]), PASS])
    document, _ = await run(repo, explicit_plan(scenarios=None, max_iterations=2))
    assert (document["status"], document["iterations_used"]) == ("converged", 2)
    ask, first, second = prompts(fakes)
    assert DESCRIPTION in ask and DIRECTION in ask and "--- TARGET FILE ---\nSKILL.md" in ask
    assert "Say hello to the user politely." in ask  # the first 100 lines
    assert "derived median" in section(first, "SCENARIOS")
    assert section(first, "SCENARIOS") == section(second, "SCENARIOS")
    assert DESCRIPTION not in first and DESCRIPTION not in second
    saved = json.loads((run_dir(repo) / "scenarios.json").read_text())
    assert saved[0]["title"] == "derived median"


async def test_invalid_derived_scenarios_fall_back_to_the_file_never_the_framing(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(claude=[answer({"scenarios": []}), PASS])
    document, rows = await run(repo, explicit_plan(scenarios=None))
    assert document["status"] == "converged"
    executor = prompts(fakes)[1]
    scenarios = section(executor, "SCENARIOS")
    assert scenarios.startswith("Scenario 1 (median): typical use")
    assert "[critical] The file achieves what it declares as its purpose: Greet the user" in (
        scenarios
    )
    # V45: the executor never sees the Finding's framing, not even through the fallback
    assert DESCRIPTION not in executor and DIRECTION not in executor
    assert any("no valid scenarios" in row for row in rows)


async def test_scenario_dispatch_failure_is_a_dispatch_error(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "fail"}])
    document, _ = await run(repo, explicit_plan(scenarios=None))
    assert_golden("dispatch_error", document)
    assert len(fakes.calls()) == 1


async def test_empty_diff_is_a_conflict(repo: Path, fakes: FakeCLIs) -> None:
    document, _ = await run(repo, explicit_plan(target="notes.txt"))
    assert_golden("empty_diff", document)
    assert fakes.calls() == []
    assert not (repo / ".review-handoff").exists()


async def test_untracked_target_is_an_empty_diff_with_a_hint(repo: Path, fakes: FakeCLIs) -> None:
    (repo / "new.md").write_text("brand new\n")
    document, rows = await run(repo, explicit_plan(target="new.md"))
    assert_golden("empty_diff", document)
    assert any("git add -N -- new.md" in row for row in rows)


async def test_intent_to_add_target_is_verified(repo: Path, fakes: FakeCLIs) -> None:
    (repo / "new.md").write_text("brand new\n")
    git(repo, "add", "-N", "new.md")
    fakes.script(claude=[verdict(edits=[("brand new", "brand new, polite")])])
    document, _ = await run(repo, explicit_plan(target=str(repo / "new.md")))
    assert (document["status"], document["applied_edits_count"]) == ("unresolved", 1)
    assert "+brand new" in section(prompts(fakes)[0], "UNIFIED DIFF")
    assert (repo / "new.md").read_text() == "brand new, polite\n"


async def test_edits_keep_the_file_mode(repo: Path, fakes: FakeCLIs) -> None:
    (repo / "SKILL.md").chmod(0o755)
    fakes.script(claude=[verdict(edits=[POLITER])])
    document, _ = await run(repo, explicit_plan())
    assert document["applied_edits_count"] == 1
    assert (repo / "SKILL.md").stat().st_mode & 0o777 == 0o755


async def test_missing_target(repo: Path, fakes: FakeCLIs) -> None:
    document, _ = await run(repo, explicit_plan(target="no/such/file.md"))
    assert_golden("missing_target", document)


async def test_incomplete_args(repo: Path, fakes: FakeCLIs) -> None:
    document, _ = await run(repo, explicit_plan(target="  "))
    assert_golden("incomplete_args", document)
    assert fakes.calls() == []


async def test_target_outside_the_repository_is_refused(repo: Path, fakes: FakeCLIs) -> None:
    with pytest.raises(InputError, match="--target"):
        await run(repo, explicit_plan(target="../elsewhere.md"))


async def test_base_ref_other_than_head(repo: Path, fakes: FakeCLIs) -> None:
    git(repo, "commit", "-qam", "polite")
    (repo / "SKILL.md").write_text(SKILL_WORK + "Bye.\n")
    fakes.script(claude=[PASS])
    document, _ = await run(repo, explicit_plan(base="HEAD~1"))
    assert document["status"] == "converged"
    diff = section(prompts(fakes)[0], "UNIFIED DIFF")
    assert "+Say hello to the user politely." in diff and "+Bye." in diff


async def test_staged_changes_are_refused(repo: Path, fakes: FakeCLIs) -> None:
    git(repo, "add", "SKILL.md")
    with pytest.raises(InputError, match="staged changes"):
        await run(repo, explicit_plan())
    assert fakes.calls() == []


async def test_staging_during_the_run_stops_it(repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[verdict(edits=[POLITER]), PASS])
    plan = explicit_plan(max_iterations=2)
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})

    def progress(row: str) -> None:
        if row.endswith("(1/2): completed — 1 edit(s) applied"):
            git(repo, "add", "notes.txt", "SKILL.md")

    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        with pytest.raises(StateError, match="staged while verify-diff was running"):
            await run_verify_diff(dispatcher, plan, progress=progress)
    assert len(fakes.calls()) == 1


# -- auto-derive mode ---------------------------------------------------------------------------


ALPHA = "---\nname: alpha\ndescription: Alpha skill\n---\nAlpha does one thing.\n"
ALPHA_EXTRA = "Extra notes for alpha.\n"
BETA = "---\nname: beta\ndescription: Beta skill\n---\nBeta does another thing.\n"


@pytest.fixture
def skills_repo(tmp_path: Path) -> Path:
    """alpha changed under both prefixes, beta under .claude/, and a non-skill file."""
    repo = make_repo(
        tmp_path / "skills-repo",
        {
            "skills/alpha/SKILL.md": ALPHA,
            ".claude/skills/alpha/extra.md": ALPHA_EXTRA,
            ".claude/skills/beta/SKILL.md": BETA,
            "README.md": "readme\n",
            "skills/gamma/SKILL.md": "gamma\n",
        },
    )
    (repo / "skills/alpha/SKILL.md").write_text(ALPHA.replace("one thing", "one thing well"))
    (repo / ".claude/skills/alpha/extra.md").write_text(ALPHA_EXTRA + "More.\n")
    (repo / ".claude/skills/beta/SKILL.md").write_text(BETA.replace("another", "a second"))
    (repo / "README.md").write_text("readme, changed\n")
    return repo


def auto_verdict(
    intent: str,
    objective: str = "partial",
    gaps: Sequence[str] = ("gap",),
    edits: Sequence[tuple[str, str, str]] = (),
) -> dict[str, Any]:
    return answer(
        {
            "inferred_intent": intent,
            "objective_met": objective,
            "remaining_gaps": list(gaps),
            "regressions": [],
            "suggested_edits": [
                {"file": f, "old_string": o, "new_string": n, "rationale": "r"} for f, o, n in edits
            ],
            "confidence": "medium",
        }
    )


def auto_plan(**changes: Any) -> VerifyDiffPlan:
    return VerifyDiffPlan(executor="claude", **changes)


async def test_auto_partial_with_merged_prefixes(skills_repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(
        claude=[
            auto_verdict("Make alpha do its thing well.", "yes", gaps=()),
            {"mode": "ok", "text": "beta looks fine, no JSON"},
        ]
    )
    document, rows = await run(skills_repo, auto_plan(max_iterations=2))
    assert_golden("auto_partial", document)
    alpha_prompt, beta_prompt = prompts(fakes)
    files = section(alpha_prompt, "AFFECTED FILES")
    assert "### .claude/skills/alpha/extra.md\n" in files and "### skills/alpha/SKILL.md\n" in files
    assert "for skill `alpha`" in section(alpha_prompt, "INFERENCE PROMPT")
    diff = section(alpha_prompt, "DIFF")
    assert "skills/alpha/SKILL.md" in diff and "README.md" not in diff and "beta" not in diff
    assert "for skill `beta`" in beta_prompt
    assert "[verify-diff] alpha iter 2 (2/2): completed — skipped: converged at iter 1" in rows
    assert "[verify-diff] beta iter 1 (1/2): in_progress" in rows


async def test_auto_out_of_scope_edit_is_never_written(skills_repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(
        claude=[
            auto_verdict(
                "Alpha, better.",
                edits=[
                    ("README.md", "readme", "hacked"),
                    ("skills/alpha/SKILL.md", "one thing well", "one thing very well"),
                ],
            ),
            auto_verdict("Beta, second.", "yes", gaps=()),
        ]
    )
    document, _ = await run(skills_repo, auto_plan(max_iterations=2))
    assert_golden("auto_scope_violation", document)
    assert (skills_repo / "README.md").read_text() == "readme, changed\n"
    assert "very well" in (skills_repo / "skills/alpha/SKILL.md").read_text()


async def test_auto_frontmatter_rail_and_intent_fixed_at_iteration_one(
    skills_repo: Path, fakes: FakeCLIs
) -> None:
    extra = (".claude/skills/alpha/extra.md", "More.", "More, and more.")
    fakes.script(
        claude=[
            # alpha: iteration 1 edits extra.md (no frontmatter), iteration 2 breaks SKILL.md
            auto_verdict("Alpha intent, first.", gaps=["g1"], edits=[extra]),
            auto_verdict(
                "Alpha intent, drifted.",
                gaps=["g2"],
                edits=[("skills/alpha/SKILL.md", "name: alpha", "name: [alpha")],
            ),
            # beta: unresolved at the cap; its intent stays the iteration-1 value
            auto_verdict("Beta intent, first.", gaps=["b1"], edits=[]),
            auto_verdict("Beta intent, drifted.", gaps=["b2"]),
        ]
    )
    document, _ = await run(skills_repo, auto_plan(max_iterations=2))
    assert_golden("auto_conflict", document)
    head = git(skills_repo, "show", "HEAD:skills/alpha/SKILL.md")
    assert (skills_repo / "skills/alpha/SKILL.md").read_text() == head
    assert "More, and more." in (skills_repo / ".claude/skills/alpha/extra.md").read_text()
    alpha_second = prompts(fakes)[1]
    assert "More, and more." in section(alpha_second, "AFFECTED FILES")


async def test_auto_all_skipped_has_null_reason(skills_repo: Path, fakes: FakeCLIs) -> None:
    fakes.script(claude=[{"mode": "fail"}])
    document, _ = await run(skills_repo, auto_plan())
    assert (document["status"], document["reason"]) == ("skipped", None)
    assert {v["reason"] for v in document["per_skill"].values()} == {"dispatch error"}
    assert all(v["inferred_intent"] is None for v in document["per_skill"].values())


async def test_auto_empty_diff(repo: Path, fakes: FakeCLIs) -> None:
    git(repo, "checkout", "--", "SKILL.md")
    document, _ = await run(repo, auto_plan())
    assert_golden("auto_empty_diff", document)


async def test_auto_no_skill_files(repo: Path, fakes: FakeCLIs) -> None:
    document, _ = await run(repo, auto_plan())
    assert_golden("auto_no_skill_files", document)
    assert fakes.calls() == []


# -- the command --------------------------------------------------------------------------------


def run_cli(fakes: FakeCLIs, *args: str) -> subprocess.CompletedProcess[str]:
    env = fakes.env(path_only=True)
    env["REVIEW_LOOP_TIMEOUT_MS"] = "20000"
    return subprocess.run(
        [sys.executable, "-m", "review_loop", "verify-diff", *args],
        capture_output=True,
        text=True,
        env=env,
    )


def test_command_prints_the_verdict_and_rows(repo: Path, fakes: FakeCLIs, tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps({"scenarios": list(SCENARIOS)}))
    fakes.script(claude=[verdict(edits=[POLITER]), PASS])
    proc = run_cli(
        fakes,
        "--repo", str(repo),
        "--description", DESCRIPTION,
        "--fix-direction", DIRECTION,
        "--target", "SKILL.md",
        "--max-iterations", "3",
        "--executor", "claude",
        "--scenarios-file", str(scenarios),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert_golden("command_converged", document)
    rows = [line for line in proc.stderr.splitlines() if line.startswith("[verify-diff] iter")]
    assert rows == [
        "[verify-diff] iteration 1 (1/3): pending",
        "[verify-diff] iteration 2 (2/3): pending",
        "[verify-diff] iteration 3 (3/3): pending",
        "[verify-diff] iteration 1 (1/3): in_progress",
        "[verify-diff] iteration 1 (1/3): completed — 1 edit(s) applied",
        "[verify-diff] iteration 2 (2/3): in_progress",
        "[verify-diff] iteration 2 (2/3): completed — converged at iter 2",
        "[verify-diff] iteration 3 (3/3): completed — skipped: converged at iter 2",
    ]


def test_command_incomplete_args_exits_zero(repo: Path, fakes: FakeCLIs) -> None:
    proc = run_cli(fakes, "--repo", str(repo), "--description", DESCRIPTION)
    assert proc.returncode == 0
    assert_golden("incomplete_args", json.loads(proc.stdout))


def test_command_refuses_staged_changes(repo: Path, fakes: FakeCLIs) -> None:
    git(repo, "add", "SKILL.md")
    proc = run_cli(fakes, "--repo", str(repo), "--executor", "claude")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    assert document["ok"] is False and "staged changes (SKILL.md)" in document["error"]
    assert fakes.calls() == []


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--max-iterations", "0"], "--max-iterations"),
        (["--max-iterations", "two"], "--max-iterations"),
        (["--executor", "nobody"], "--executor"),
        (["--base", "no-such-ref"], "--base"),
        (["--scenarios-file", "x.json"], "--scenarios-file"),
    ],
)
def test_command_bad_input_names_the_field(
    repo: Path, fakes: FakeCLIs, args: list[str], field: str
) -> None:
    proc = run_cli(fakes, "--repo", str(repo), *args)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"].startswith(field)
    assert not (repo / ".review-handoff").exists()


def test_command_bad_scenarios_file(repo: Path, fakes: FakeCLIs, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"scenarios": [{**SCENARIOS[0], "checklist": ["one"]}]}))
    proc = run_cli(
        fakes,
        "--repo", str(repo),
        "--description", "d", "--fix-direction", "f", "--target", "SKILL.md",
        "--scenarios-file", str(bad),
    )  # fmt: skip
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error.startswith("--scenarios-file: scenarios[0].checklist has 1 items")


# -- end to end: the real claude CLI against the fake model API ---------------------------------


@pytest.mark.e2e
def test_e2e_one_iteration_with_the_real_claude(repo: Path, tmp_path: Path) -> None:
    """One explicit-args iteration through the real ``claude`` (``scripts/install-clis``),
    whose model is the fake API: the verdict's edit lands and the document is the seed's."""
    from tests.e2e.conftest import SKIP_ENV, bin_dir
    from tests.fakes.model_api import cli_env, serve_model_api

    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: e2e tier skipped")
    claude = bin_dir() / "claude"
    if not os.access(claude, os.X_OK):
        pytest.fail(f"the real claude CLI is not installed at {claude}; run scripts/install-clis")
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps({"scenarios": list(SCENARIOS)}))
    with serve_model_api() as api:
        api.script(verdict(gaps=["could be warmer"], edits=[POLITER])["text"])
        home = tmp_path / "cli-home"
        home.mkdir()
        env = cli_env(
            "claude",
            api,
            home,
            extra={
                "REVIEW_LOOP_HOME": os.environ["REVIEW_LOOP_HOME"],
                "REVIEW_LOOP_TIMEOUT_MS": "60000",
            },
        )
        env["PATH"] = f"{bin_dir()}:{env['PATH']}"
        proc = subprocess.run(
            [sys.executable, "-m", "review_loop", "verify-diff", "--repo", str(repo),
             "--description", DESCRIPTION, "--fix-direction", DIRECTION,
             "--target", "SKILL.md", "--executor", "claude",
             "--scenarios-file", str(scenarios)],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        turns = api.turns("anthropic")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_golden("e2e_unresolved_one_pass", json.loads(proc.stdout))
    assert "kindly and politely" in (repo / "SKILL.md").read_text()
    assert turns and "--- SCENARIOS ---" in turns[0].all_text
    assert DESCRIPTION not in turns[0].all_text
