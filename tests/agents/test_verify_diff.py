"""Contract tests of verify-diff's pure rules: modes, verdict parsing, decisions, edits,
the frontmatter check, skill grouping, scenarios, counting and the result shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from review_loop.agents import verify_diff as vd


def fenced(data: Any, info: str = "json") -> str:
    return f"```{info}\n{json.dumps(data, indent=2)}\n```"


def verdict_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "objective_met": "partial",
        "remaining_gaps": ["gap"],
        "regressions": [],
        "suggested_edits": [{"old_string": "a", "new_string": "b", "rationale": "why"}],
        "confidence": "high",
    }
    data.update(changes)
    return data


def parsed(**changes: Any) -> vd.Verdict:
    result = vd.parse_verdict(fenced(verdict_data(**changes)))
    assert isinstance(result, vd.Verdict)
    return result


# -- mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "mode"),
    [
        (("d", "f", "t"), "explicit-args"),
        ((None, None, None), "auto-derive"),
        (("", " ", "\t\n"), "auto-derive"),
        (("d", None, None), "incomplete"),
        (("d", "f", "  "), "incomplete"),
        ((None, "f", "t"), "incomplete"),
    ],
)
def test_mode_counts_non_blank_fields(fields: tuple[str | None, ...], mode: str) -> None:
    assert vd.select_mode(*fields) == mode


# -- verdict parsing, in the seed's order -----------------------------------------------------


def test_last_json_block_wins_over_earlier_blocks() -> None:
    text = (
        'Scenario artifact:\n```json\n{"not": "the verdict"}\n```\n'
        "```bash\necho hi\n```\nVerdict:\n" + fenced(verdict_data(objective_met="no"))
    )
    verdict = vd.parse_verdict(text)
    assert isinstance(verdict, vd.Verdict)
    assert verdict.objective_met == "no"


def test_fences_inside_json_strings_do_not_end_the_block() -> None:
    edit = {"old_string": "```json\n{}\n```", "new_string": "~~~\nx\n~~~", "rationale": "r"}
    verdict = vd.parse_verdict("prose\n" + fenced(verdict_data(suggested_edits=[edit])))
    assert isinstance(verdict, vd.Verdict)
    assert verdict.suggested_edits[0].old_string == "```json\n{}\n```"


def test_untagged_block_opening_with_a_brace_counts() -> None:
    assert isinstance(vd.parse_verdict(fenced(verdict_data(), info="")), vd.Verdict)


def test_longer_fence_holds_shorter_fences() -> None:
    body = json.dumps(verdict_data())
    text = f"````json\n{body}\n```\n````"
    # the inner ``` line is not a closing fence for ````, so it stays in the body
    assert vd.parse_verdict(text) == vd.PARSE_FAILURE
    assert isinstance(vd.parse_verdict(f"````json\n{body}\n````"), vd.Verdict)


@pytest.mark.parametrize(
    "text",
    [
        "no fenced block at all",
        '{"objective_met": "yes"}',
        "```json\n{not json}\n```",
        '```json\n{"objective_met": "yes",\n```',
        "```python\nprint(1)\n```",
    ],
)
def test_parse_failure(text: str) -> None:
    assert vd.parse_verdict(text) == "verdict parse failure"


@pytest.mark.parametrize(
    "data",
    [
        [1, 2],
        "a string",
        verdict_data(objective_met="maybe"),
        verdict_data(objective_met="unknown"),
        verdict_data(confidence="certain"),
        verdict_data(remaining_gaps="gap"),
        verdict_data(regressions=[1]),
        verdict_data(suggested_edits={"old_string": "a"}),
        verdict_data(suggested_edits=[{"old_string": "a"}]),
        verdict_data(suggested_edits=[{"old_string": "a", "new_string": 2}]),
        verdict_data(suggested_edits=["a"]),
        {k: v for k, v in verdict_data().items() if k != "confidence"},
        {k: v for k, v in verdict_data().items() if k != "regressions"},
    ],
)
def test_schema_violation(data: Any) -> None:
    assert vd.parse_verdict(fenced(data)) == "verdict schema violation"


def test_auto_schema_requires_intent_and_file() -> None:
    edit = {"file": "skills/a/SKILL.md", "old_string": "a", "new_string": "b"}
    good = verdict_data(inferred_intent=" Make it polite. ", suggested_edits=[edit])
    verdict = vd.parse_verdict(fenced(good), auto=True)
    assert isinstance(verdict, vd.Verdict)
    assert verdict.inferred_intent == "Make it polite."
    assert verdict.suggested_edits[0].file == "skills/a/SKILL.md"
    for bad in (
        {**good, "inferred_intent": "  "},
        {k: v for k, v in good.items() if k != "inferred_intent"},
        {**good, "suggested_edits": [{"old_string": "a", "new_string": "b"}]},
        {**good, "suggested_edits": [{**edit, "file": ""}]},
    ):
        assert vd.parse_verdict(fenced(bad), auto=True) == "verdict schema violation"
    # the explicit-args schema ignores both
    assert isinstance(vd.parse_verdict(fenced(verdict_data())), vd.Verdict)


def test_extra_keys_and_missing_rationale_are_accepted() -> None:
    verdict = parsed(extra=1, suggested_edits=[{"old_string": "a", "new_string": "b"}])
    assert verdict.suggested_edits[0].rationale == ""


# -- decisions --------------------------------------------------------------------------------


def test_converged_needs_yes_and_no_regressions() -> None:
    assert vd.decide(parsed(objective_met="yes", regressions=[]), 1, None) == "converged"
    assert vd.decide(parsed(objective_met="yes", regressions=["r"]), 1, None) == "apply"
    # edits on a pass are discarded by the caller; the decision is still converged
    assert vd.decide(parsed(objective_met="yes"), 2, parsed()) == "converged"


def test_divergence_compares_sorted_multisets_from_iteration_two() -> None:
    first = parsed(remaining_gaps=["b", "a", "a"], regressions=["r"])
    same = parsed(remaining_gaps=["a", "b", "a"], regressions=["r"])
    assert vd.decide(same, 1, None) == "apply"
    assert vd.decide(same, 2, first) == "divergent"
    assert vd.decide(parsed(remaining_gaps=["a", "b"], regressions=["r"]), 2, first) == "apply"
    assert vd.decide(parsed(remaining_gaps=["a", "b", "a"], regressions=[]), 2, first) == "apply"
    # regressions-only reports with equal empty gaps still diverge
    only = parsed(remaining_gaps=[], regressions=["x"], suggested_edits=[])
    assert vd.decide(only, 3, only) == "divergent"


# -- counting ---------------------------------------------------------------------------------


def test_tally_field_semantics() -> None:
    tally = vd.Tally()
    assert tally.result("skipped", "dispatch error").to_json() == {
        "status": "skipped",
        "iterations_used": 0,
        "objective_met": "unknown",
        "applied_edits_count": 0,
        "unresolved_gaps": [],
        "reverted_paths": [],
        "reason": "dispatch error",
    }
    tally.record(parsed(objective_met="partial", remaining_gaps=["g1"]))
    tally.applied_edits_count = 2
    unresolved = tally.result("unresolved")
    assert (unresolved.objective_met, unresolved.unresolved_gaps, unresolved.reason) == (
        "partial",
        ("g1",),
        None,
    )
    divergent = tally.result("skipped", "divergent gaps")
    assert (divergent.objective_met, divergent.unresolved_gaps) == ("partial", ("g1",))
    conflict = tally.result("conflict", "scope violation", ["x"])
    assert (conflict.objective_met, conflict.unresolved_gaps, conflict.reverted_paths) == (
        "unknown",
        (),
        ("x",),
    )
    assert tally.result("skipped", "verdict parse failure").objective_met == "unknown"
    tally.record(parsed(objective_met="yes", regressions=[], remaining_gaps=["nice to have"]))
    converged = tally.result("converged")
    assert converged.iterations_used == 2 and converged.applied_edits_count == 2
    assert (converged.objective_met, converged.unresolved_gaps, converged.reason) == (
        "yes",
        (),
        None,
    )
    assert tally.first is not None and tally.first.remaining_gaps == ("g1",)


def test_early_results() -> None:
    assert vd.early_result("incomplete args").to_json() == {
        "status": "skipped",
        "iterations_used": 0,
        "objective_met": "unknown",
        "applied_edits_count": 0,
        "unresolved_gaps": [],
        "reverted_paths": [],
        "reason": "incomplete args",
    }
    assert vd.early_result("missing target").status == "skipped"
    assert vd.early_result("empty diff").status == "conflict"
    assert list(vd.Result(status="converged").to_json()) == [
        "status",
        "iterations_used",
        "objective_met",
        "applied_edits_count",
        "unresolved_gaps",
        "reverted_paths",
        "reason",
    ]


# -- edits ------------------------------------------------------------------------------------


def test_apply_edit_needs_exactly_one_match() -> None:
    assert vd.apply_edit("one two three", "two", "2") == "one 2 three"
    assert vd.apply_edit("one two three", "four", "4") is None
    assert vd.apply_edit("two two", "two", "2") is None
    assert vd.apply_edit("aaa", "aa", "b") is None  # overlapping matches are two
    assert vd.apply_edit("abc", "", "x") is None
    assert vd.apply_edit("line1\r\nline2\r\n", "line1\nline2", "l1\nl2") == "l1\r\nl2\r\n"


# -- frontmatter --------------------------------------------------------------------------------


GOOD = "---\nname: x\ndescription: Greets\n---\n# Body\n"


def test_frontmatter_states() -> None:
    assert vd.frontmatter_state("# no frontmatter\n") == "none"
    assert vd.frontmatter_state(GOOD) == "ok"
    assert vd.frontmatter_state("\ufeff---\r\nname: x\r\n---\r\nbody") == "ok"
    assert vd.frontmatter_state("---\nname: [unclosed\n---\n") == "invalid"
    assert vd.frontmatter_state("---\nname: x\n") == "unclosed"


def test_frontmatter_broken() -> None:
    assert not vd.frontmatter_broken(GOOD, GOOD)
    assert not vd.frontmatter_broken("plain text\n", GOOD)  # no block: no rail
    assert vd.frontmatter_broken("---\nname: x: y: [\n---\n", GOOD)
    assert vd.frontmatter_broken("---\nname: x\n# Body\n", GOOD)  # closing line removed
    # a YAML document that never had a closing line is not frontmatter-style
    assert not vd.frontmatter_broken("---\na: 1\nb: 2\n", "---\na: 1\n")
    assert vd.frontmatter_description(GOOD) == "Greets"
    assert vd.frontmatter_description("# none") is None


# -- auto-derive grouping and aggregate -----------------------------------------------------


def test_group_by_skill_merges_prefixes_and_picks_primary() -> None:
    groups, others = vd.group_by_skill(
        [
            ".claude/skills/alpha/SKILL.md",
            "skills/alpha/SKILL.md",
            "skills/alpha/ref/notes.md",
            ".claude/skills/beta/b.md",
            ".claude/skills/beta/a.md",
            "README.md",
            "skills/loose.md",
            "plugins/x/skills/gamma/SKILL.md",
        ]
    )
    assert list(groups) == ["alpha", "beta"]
    assert groups["alpha"].files == (
        ".claude/skills/alpha/SKILL.md",
        "skills/alpha/SKILL.md",
        "skills/alpha/ref/notes.md",
    )
    assert groups["alpha"].primary_file == "skills/alpha/SKILL.md"
    assert groups["beta"].primary_file == ".claude/skills/beta/a.md"
    assert others == ("README.md", "plugins/x/skills/gamma/SKILL.md", "skills/loose.md")
    only_claude, _ = vd.group_by_skill([".claude/skills/c/x.md", ".claude/skills/c/SKILL.md"])
    assert only_claude["c"].primary_file == ".claude/skills/c/SKILL.md"


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["converged", "conflict", "unresolved"], "conflict"),
        (["converged", "unresolved", "skipped"], "unresolved"),
        (["converged", "converged"], "converged"),
        (["skipped", "skipped"], "skipped"),
        (["converged", "skipped"], "partial"),
    ],
)
def test_aggregate_status_precedence(statuses: list[vd.Status], expected: str) -> None:
    assert vd.aggregate_status(statuses) == expected


def test_aggregate_sums_and_nulls_reason() -> None:
    verdicts = {
        name: vd.SkillVerdict(
            primary_file=f"skills/{name}/SKILL.md",
            files=(f"skills/{name}/SKILL.md",),
            inferred_intent=None,
            result=vd.Result(status="skipped", iterations_used=n, applied_edits_count=n + 1),
        )
        for name, n in (("a", 1), ("b", 2))
    }
    doc = vd.aggregate(["README"], verdicts).to_json()
    assert list(doc) == [
        "mode",
        "status",
        "iterations_used_total",
        "applied_edits_count_total",
        "non_skill_files",
        "per_skill",
        "reason",
    ]
    assert (doc["status"], doc["reason"], doc["iterations_used_total"]) == ("skipped", None, 3)
    assert doc["applied_edits_count_total"] == 5
    assert list(doc["per_skill"]["a"])[:4] == ["primary_file", "files", "inferred_intent", "status"]
    early = vd.auto_early_result("no skill files in diff", ["x"]).to_json()
    assert early["reason"] == "no skill files in diff" and early["non_skill_files"] == ["x"]


# -- scenarios --------------------------------------------------------------------------------


def scenario(kind: str = "median", items: int = 3, critical: bool = True) -> dict[str, Any]:
    checklist = [f"item {i}" for i in range(items)]
    if critical and checklist:
        checklist[0] = "[critical] " + checklist[0]
    return {"kind": kind, "title": "t", "description": "d", "checklist": checklist}


def test_scenarios_rules() -> None:
    one = vd.parse_scenarios({"scenarios": [scenario()]})
    assert one[0].checklist[0] == "[critical] item 0"
    assert len(vd.parse_scenarios([scenario(), scenario("edge", 7)])) == 2
    for bad, message in (
        ({"scenarios": []}, "1-2 scenarios"),
        ({"scenarios": [scenario()] * 3}, "1-2 scenarios"),
        ([scenario("edge")], "median"),
        ([scenario(), scenario()], "edge"),
        ([scenario(items=2)], "needs 3-7"),
        ([scenario(items=8)], "needs 3-7"),
        ([scenario(critical=False)], "[critical]"),
        ([{**scenario(), "description": " "}], "description"),
        ([{**scenario(), "kind": "typical"}], "kind"),
    ):
        with pytest.raises(vd.ScenarioError, match=message.replace("[", r"\[")):
            vd.parse_scenarios(bad)


def test_scenarios_reply_and_fallback() -> None:
    reply = "Here:\n" + fenced({"scenarios": [scenario()]})
    assert vd.parse_scenarios_reply(reply) is not None
    assert vd.parse_scenarios_reply("no block") is None
    assert vd.parse_scenarios_reply(fenced({"scenarios": [scenario(items=1)]})) is None
    fallback = vd.fallback_scenarios("Greets  the user")
    assert len(fallback) == 1 and fallback[0].kind == "median"
    assert fallback[0].checklist[0] == (
        "[critical] The file achieves what it declares as its purpose: Greets the user"
    )
    assert 3 <= len(fallback[0].checklist) <= 7
    bare = vd.fallback_scenarios(None)  # no declared purpose: still a scenario, one critical
    assert 3 <= len(bare[0].checklist) <= 7 and bare[0].checklist[0].startswith("[critical] ")
    vd.parse_scenarios([s.to_json() for s in (*fallback, *bare)][:1])  # a valid scenario
    text = vd.render_scenarios(vd.parse_scenarios([scenario(), scenario("edge")]))
    assert text.startswith("Scenario 1 (median): t\nd\n\nRequirements checklist:\n- [critical]")
    assert "Scenario 2 (edge): t" in text


# -- prompts and progress rows -------------------------------------------------------------------


def test_executor_prompt_has_four_sections_in_order() -> None:
    prompt = vd.executor_prompt("FILE", "DIFF", "SCEN")
    labels = ["TARGET FILE", "UNIFIED DIFF", "SCENARIOS", "EXECUTOR PROMPT"]
    positions = [prompt.index(f"--- {label} ---") for label in labels]
    assert positions == sorted(positions)
    assert "Gate reachability rule" in prompt and '"objective_met": "yes|partial|no"' in prompt


def test_auto_prompt_substitutes_the_skill_name() -> None:
    prompt = vd.auto_executor_prompt("alpha", "DIFF", {"skills/alpha/SKILL.md": "x", "gone": None})
    labels = ["DIFF", "AFFECTED FILES", "INFERENCE PROMPT", "RESPONSE FORMAT"]
    positions = [prompt.index(f"--- {label} ---") for label in labels]
    assert positions == sorted(positions)
    assert "for skill `alpha`" in prompt and "<skill-name>" not in prompt
    assert "### skills/alpha/SKILL.md\nx" in prompt and vd.MISSING_FILE_NOTE in prompt
    assert '"inferred_intent"' in prompt


def test_iteration_board_rows() -> None:
    lines: list[str] = []
    board = vd.IterationBoard.explicit(3, lines.append)
    board.register()
    board.start(1)
    board.complete(1, "1 edit(s) applied")
    board.start(2)
    board.close(2, vd.exit_note(vd.Result(status="converged"), 2))
    assert lines == [
        "[verify-diff] iteration 1 (1/3): pending",
        "[verify-diff] iteration 2 (2/3): pending",
        "[verify-diff] iteration 3 (3/3): pending",
        "[verify-diff] iteration 1 (1/3): in_progress",
        "[verify-diff] iteration 1 (1/3): completed — 1 edit(s) applied",
        "[verify-diff] iteration 2 (2/3): in_progress",
        "[verify-diff] iteration 2 (2/3): completed — converged at iter 2",
        "[verify-diff] iteration 3 (3/3): completed — skipped: converged at iter 2",
    ]
    rows: list[str] = []
    vd.IterationBoard.for_skill("alpha", 1, rows.append).register()
    assert rows == ["[verify-diff] alpha iter 1 (1/1): pending"]
