"""Contract tests of the review run's pure rules: slug, answer parsing, verdicts, ledger,
packet text, prompt.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.review import (
    Ledger,
    ReviewFormatError,
    Verdict,
    apply_answer,
    branch_identity,
    branch_slug,
    is_blocking,
    missing_coverage,
    parse_answer,
    parse_verdict,
    valid_scope,
)
from review_loop.agents.review_packet import (
    PacketFormatError,
    fixer_position,
    h1_sections,
    h1_titles,
    join_packet,
    new_packet_text,
    normalise_fix_completion,
    review_stage,
    split_packet,
)
from review_loop.agents.review_prompt import build_review_prompt, diff_view, split_diff

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "review"
HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)


def findings(*rows: str, verdict: str = "BLOCKED") -> str:
    return "## Findings\n\n" + HEADER + "\n" + "\n".join(rows) + f"\n\nVerdict: {verdict}\n"


def rereview(reassess: list[str], new: list[str] | None, verdict: str) -> str:
    table = "| ID | 状态 | 复核证据 |\n|---|---|---|\n" + "\n".join(reassess)
    new_text = HEADER + "\n" + "\n".join(new) if new else "None"
    return (
        f"## Prior Findings Reassessment\n\n{table}\n\n## New Findings\n\n{new_text}\n\n"
        f"## Regression Surface\n\nNothing else moved.\n\nVerdict: {verdict}\n"
    )


F1 = "| F1 | [阻塞] | crash on empty input | a.py:3 raises | a.py, b.py | guard it | test passes |"
F2 = "| F2 | [非阻塞] | naming | a.py:1 | a.py | rename | reads well |"


def check(match: str) -> Any:
    return pytest.raises(ReviewFormatError, match=match)


# -- slug ---------------------------------------------------------------------------------


def test_branch_slug_is_readable_plus_hash_of_identity() -> None:
    digest = hashlib.sha256(b"feature/Foo Bar").hexdigest()[:12]
    assert branch_slug("feature/Foo Bar") == f"feature-foo-bar--{digest}"
    assert branch_slug("a\\b").startswith("a-b--")
    assert branch_slug("..-x-..").startswith("x--")
    assert branch_slug("ü").startswith("branch--")
    long = "x" * 80
    assert branch_slug(long) == "x" * 48 + "--" + hashlib.sha256(long.encode()).hexdigest()[:12]


def test_detached_head_slug_and_identity() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    identity = branch_identity(None, sha)
    assert identity == f"detached:{sha}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    assert branch_slug(identity) == f"detached-0123456789ab--{digest}"
    assert branch_identity("main", sha) == "main"


def test_scope_rules() -> None:
    assert valid_scope("auto-loop") and valid_scope("a-b-c") and valid_scope("x")
    assert not valid_scope("a-b-c-d")
    assert not valid_scope("Auto")
    assert not valid_scope("a" * 25)
    assert not valid_scope("")


# -- verdict ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("x\nVerdict: PASS", Verdict.PASS),
        ("x\n**Verdict:** `BLOCKED`\n\n", Verdict.BLOCKED),
        ("x\n## Verdict\n\nNO_FINDINGS\n", Verdict.NO_FINDINGS),
        ("verdict: pass_with_concerns", Verdict.PASS_WITH_CONCERNS),
    ],
)
def test_one_terminal_verdict(text: str, verdict: Verdict) -> None:
    assert parse_verdict(text) is verdict


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no verdict here", "no terminal verdict"),
        ("Verdict: PASS\nVerdict: BLOCKED", "more than one"),
        ("Verdict: PASS\nmore text after", "last non-empty line"),
        ("Verdict: MAYBE", "no terminal verdict"),
        ("", "empty"),
    ],
)
def test_verdict_errors(text: str, problem: str) -> None:
    with check(problem):
        parse_verdict(text)


def test_severity() -> None:
    assert is_blocking("[阻塞]") and is_blocking("Blocking") and is_blocking("blocker")
    assert not is_blocking("[非阻塞]") and not is_blocking("non-blocking")


# -- round 1 ------------------------------------------------------------------------------


def test_round_one_findings_table() -> None:
    answer = parse_answer(findings(F1, F2), 1, [])
    assert answer.verdict is Verdict.BLOCKED
    assert [f.id for f in answer.findings] == ["F1", "F2"]
    assert answer.findings[0].blocking and not answer.findings[1].blocking
    assert answer.findings[0].targetFiles == ["a.py", "b.py"]


def test_empty_table_and_escaped_pipe() -> None:
    assert parse_answer(findings(verdict="NO_FINDINGS"), 1, []).findings == []
    row = "| F1 | [非阻塞] | a &#124; b | x | a.py | y | z |"
    assert parse_answer(findings(row, verdict="PASS_WITH_CONCERNS"), 1, []).findings[0].title == (
        "a &#124; b"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no table\nVerdict: PASS", "no findings table"),
        (findings("| F1 | [阻塞] | a | b | c.py | d | e | f |"), "write a literal pipe"),
        (findings("| F1 | [阻塞] | a|b | x | c.py | d | e |"), "cells where the header has"),
        (findings("| F1 | major | t | e | a.py | f | c |"), "must be"),
        (findings(F1, F1), "appears twice"),
        (findings("| F 1! | [阻塞] | t | e | a.py | f | c |"), "short identifier"),
        (findings(F1).replace("Verdict: BLOCKED", "") + findings(F2), "more than one"),
    ],
)
def test_round_one_malformed(text: str, problem: str) -> None:
    with check(problem):
        parse_answer(text, 1, [])


def test_english_column_names_are_accepted() -> None:
    text = (
        "| ID | Severity | Title | Evidence | Target files | Required fix | Acceptance check |\n"
        "|---|---|---|---|---|---|---|\n" + F1 + "\n\nVerdict: BLOCKED"
    )
    assert parse_answer(text, 1, []).findings[0].id == "F1"


# -- round ≥ 2 ----------------------------------------------------------------------------


def test_rereview_parses_every_section() -> None:
    text = rereview(
        ["| F1 | resolved | fixed at a.py:3 |"], [F2.replace("F2", "F3")], "PASS_WITH_CONCERNS"
    )
    answer = parse_answer(text, 2, ["F1"])
    assert answer.reassessments[0].status == "resolved"
    assert [f.id for f in answer.findings] == ["F3"]
    assert answer.findings[0].round == 2
    assert answer.regressionSurface == "Nothing else moved."


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (rereview([], None, "PASS"), "exactly the prior finding IDs"),
        (rereview(["| F1 | resolved | x |", "| F9 | resolved | y |"], None, "PASS"), "not prior"),
        (rereview(["| F1 | done | x |"], None, "PASS"), "resolved, partially or unresolved"),
        (rereview(["| F1 | resolved | — |"], None, "PASS"), "evidence is empty"),
        (
            rereview(["| F1 | resolved | x |"], None, "PASS").replace(
                "## New Findings", "## Other"
            ),
            "New Findings",
        ),
        (
            rereview(["| F1 | resolved | x |"], None, "PASS").replace(
                "## Regression Surface", "## R"
            ),
            "Regression Surface",
        ),
        (
            rereview(["| F1 | resolved | x |"], None, "PASS").replace(
                "## Prior Findings Reassessment", "## P"
            ),
            "Prior Findings",
        ),
        (
            rereview(["| F1 | resolved | x |"], None, "PASS").replace("None", "F5 is broken"),
            "findings table",
        ),
    ],
)
def test_rereview_malformed(text: str, problem: str) -> None:
    with check(problem):
        parse_answer(text, 2, ["F1"])


# -- ledger -------------------------------------------------------------------------------


def test_ledger_across_rounds() -> None:
    ledger = apply_answer(Ledger(), parse_answer(findings(F1, F2), 1, []))
    assert ledger.open_blocking == ["F1"] and ledger.open_concerns == ["F2"]
    r2 = rereview(
        ["| F1 | resolved | ok |", "| F2 | partially | half |"], None, "PASS_WITH_CONCERNS"
    )
    ledger = apply_answer(ledger, parse_answer(r2, 2, ledger.finding_ids))
    assert ledger.open_blocking == [] and ledger.open_concerns == ["F2"]
    r3 = rereview(["| F1 | resolved | ok |", "| F2 | resolved | done |"], None, "PASS")
    ledger = apply_answer(ledger, parse_answer(r3, 3, ledger.finding_ids))
    assert ledger.open_blocking == [] and ledger.open_concerns == []
    assert ledger.finding_ids == ["F1", "F2"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (findings(F1, verdict="PASS"), "needs every finding resolved"),
        (findings(F2, verdict="NO_FINDINGS"), "needs every finding resolved"),
        (findings(F2, verdict="BLOCKED"), "at least one open blocking"),
        (findings(F1, verdict="PASS_WITH_CONCERNS"), "no open blocking"),
        (findings(verdict="PASS_WITH_CONCERNS"), "at least one open"),
    ],
)
def test_verdict_invariants(text: str, problem: str) -> None:
    with check(problem):
        apply_answer(Ledger(), parse_answer(text, 1, []))


def test_new_ids_must_be_unused() -> None:
    ledger = apply_answer(Ledger(), parse_answer(findings(F1), 1, []))
    text = rereview(["| F1 | unresolved | still |"], [F1], "BLOCKED")
    with check("already used"):
        apply_answer(ledger, parse_answer(text, 2, ["F1"]))


def test_coverage_is_required_only_to_pass() -> None:
    answer = parse_answer(
        "## Coverage\n\n- `a.py`\n- b.py\n\n" + findings(verdict="NO_FINDINGS"), 1, []
    )
    assert answer.coverage == ["a.py", "b.py"]
    assert missing_coverage(answer, ["a.py", "c.py"]) == ["c.py"]
    blocked = parse_answer(findings(F1), 1, [])
    assert missing_coverage(blocked, ["c.py"]) == []


# -- packet text --------------------------------------------------------------------------


def test_packet_round_trip_and_stages() -> None:
    text = new_packet_text(
        packet_id="main--abc/2026-01-01_10-00-auto-loop",
        branch="main",
        scope="auto-loop",
        created="2026-01-01T10:00:00.000Z",
        intake=False,
        base_sha="f" * 40,
        paths=None,
    )
    meta, body = split_packet(text)
    assert meta["last_anchor"] == "review_handoff" and meta["created"] == "2026-01-01T10:00:00.000Z"
    assert join_packet(meta, body) == text
    answer = parse_answer(findings(F1, F2), 1, [])
    ledger = apply_answer(Ledger(), answer)
    stage, anchor = review_stage(
        answer=answer,
        ledger=ledger,
        reviewer="codex",
        session_id="s-1",
        base_sha="f" * 40,
        evidence_path="runtime/evidence/round-1.diff",
        digest="d" * 64,
        fix_handoff=True,
        completion="pass",
    )
    assert anchor == "fix_handoff"
    full = body + stage
    assert h1_titles(full) == ["Review Handoff", "Review Findings", "Fix Handoff"]
    # what the packet shows can be parsed back as a round-1 answer
    findings_text = dict(h1_sections(full))["review_findings"]
    assert [f.id for f in parse_answer(findings_text, 1, []).findings] == ["F1", "F2"]
    _golden("packet_round1.md", join_packet(meta, full))


def test_rereview_stage_demotes_embedded_headings() -> None:
    text = rereview(["| F1 | resolved | ok |"], None, "PASS").replace(
        "Nothing else moved.", "# Not a stage\nfine"
    )
    answer = parse_answer(text, 2, ["F1"])
    stage, anchor = review_stage(
        answer=answer,
        ledger=Ledger(),
        reviewer="codex",
        session_id=None,
        base_sha="f" * 40,
        evidence_path="e",
        digest="d",
        fix_handoff=False,
        completion="pass",
    )
    assert anchor == "re_review"
    assert h1_titles(stage) == ["Re-review"]


FIX = """## Fix Conclusion
done
## Original Findings Snapshot
F1
## Finding Status
F1 fixed
## Verification
pytest
## Re-review Instructions
look at a.py
"""


def test_fix_completion_body() -> None:
    assert normalise_fix_completion(FIX).startswith("\n# Fix Completion\n")
    assert normalise_fix_completion("# Fix Completion\n" + FIX).count("# Fix Completion") == 1
    with pytest.raises(PacketFormatError, match="Verification"):
        normalise_fix_completion(FIX.replace("## Verification", "## Checks"))
    with pytest.raises(PacketFormatError, match="is empty"):
        normalise_fix_completion(FIX.replace("pytest", ""))
    with pytest.raises(PacketFormatError, match="no other H1"):
        normalise_fix_completion("# Fix Completion\n" + FIX + "\n# Re-review\n")
    position = fixer_position("\n# Fix Completion\n" + FIX)
    assert position["present"] is True and position["verification"] == "pytest"
    assert fixer_position("# Review Handoff\n")["fixRoundsCompleted"] == 0


def test_frontmatter_errors() -> None:
    with pytest.raises(PacketFormatError):
        split_packet("# no frontmatter")
    with pytest.raises(PacketFormatError):
        split_packet("---\nkey: v\n")


# -- prompt and large diffs ---------------------------------------------------------------


def _file_diff(path: str, lines: int) -> str:
    body = "\n".join(f"+line {i}" for i in range(lines))
    return (
        f"diff --git a/{path} b/{path}\nindex 0000000..1111111 100644\n--- a/{path}\n"
        f"+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}"
    )


def test_split_diff_names_each_file() -> None:
    diff = "\n\n".join([_file_diff("a.py", 3), _file_diff("b b.py", 2)]) + "\n"
    chunks = split_diff(diff)
    assert [c.path for c in chunks] == ["a.py", "b b.py"]
    assert chunks[0].added == 3
    symlink = 'review-evidence untracked-symlink-v1\npath-bytes 4\n"l.py"\ntarget-bytes 1\n"x"'
    assert split_diff(symlink)[0].path == "l.py"


def test_large_diff_is_summarised_but_every_path_is_named() -> None:
    diff = "\n\n".join(
        [_file_diff("small.py", 2), _file_diff("big.py", 500), _file_diff("c.py", 1)]
    )
    view = diff_view(diff, ["big.py", "c.py", "small.py"], budget=400)
    assert "small.py" in view.text and "+line 499" not in view.text
    assert view.summarised == ("big.py",)
    assert "- big.py (+500 -0" in view.text
    whole = diff_view(diff, ["big.py", "c.py", "small.py"], budget=10**6)
    assert whole.summarised == () and whole.note == "complete"
    assert diff_view("", [], budget=10).note == "empty"


def test_prompt_round_one_and_rereview() -> None:
    diff = _file_diff("a.py", 2) + "\n"
    prompt = build_review_prompt(
        round_number=1,
        packet_id="main--abc/p",
        packet_path="/r/.review-handoff/active/main--abc/p.md",
        packet_body="# Review Handoff\n\n- Scope: auto-loop\n",
        base_sha="f" * 40,
        evidence_path="/r/.review-handoff/runtime/main--abc/p/evidence/round-1.diff",
        paths=None,
        changed=["a.py"],
        diff_text=diff,
        ledger=Ledger(),
    )
    assert (
        "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |"
        in prompt.text
    )
    assert "+line 1" in prompt.text and prompt.must_cover == ()
    _golden("prompt_round1.txt", prompt.text)
    ledger = apply_answer(Ledger(), parse_answer(findings(F1), 1, []))
    again = build_review_prompt(
        round_number=2,
        packet_id="p",
        packet_path="p.md",
        packet_body="",
        base_sha="f" * 40,
        evidence_path="e",
        paths=["a.py"],
        changed=["a.py", "big.py"],
        diff_text=diff + "\n" + _file_diff("big.py", 400),
        ledger=ledger,
        budget=300,
    )
    assert "## Prior Findings Reassessment" in again.text and "F1" in again.text
    assert again.must_cover == ("big.py",)
    assert "MUST name each path" in again.format_rules


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
