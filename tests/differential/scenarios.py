"""The command lines the differential tier runs against the originals and against review-loop.

One :class:`Scenario` is a fresh repository, a script of fake reviewer answers and a list of
steps (argv templates). :mod:`tests.differential.record_originals` runs them against the
original Node ``review-loop`` and writes the golden files under ``golden/``;
:mod:`tests.differential.test_review_loop_drop_in` runs the same steps through review-loop
and compares exit codes, key sets, value types, statuses and error codes.

Placeholders in an argv: ``{repo}`` the repository, ``{packet}`` the ``packetPath`` of the
latest step that printed one, ``{fix}`` a Fix Completion body file, ``{question}`` a
question file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.orchestrator.workflows.test_review_run import F1, HEADER
from tests.orchestrator.workflows.test_review_run import FIX as FIX

GOLDEN = Path(__file__).with_name("golden")

# The answers and the Fix Completion of the review-run tests, in the original's format.
F2 = "| F2 | [非阻塞] | vague name | app.py:1 | app.py, lib.py | rename | reads well |"
NONE_ROW = "| (none) | — | — | — | — | — | — |"
NONE = HEADER + "\n" + NONE_ROW
BASE_FILES = {"app.py": "def f(x):\n    return x[0]\n"}
CHANGED = "def f(x):\n    return x[0] if x else None\n"


def first(*rows: str, verdict: str) -> dict[str, Any]:
    """A round-1 answer in the original's format."""
    text = "## Findings\n\n" + HEADER + "\n" + "\n".join(rows) + f"\n\nVerdict: {verdict}\n"
    return {"mode": "ok", "text": text}


def again(reassess: list[str], verdict: str) -> dict[str, Any]:
    """A re-review answer in the original's format."""
    table = "| ID | 状态 | 复核证据 |\n|---|---|---|\n" + "\n".join(reassess)
    text = (
        f"## Prior Findings Reassessment\n\n{table}\n\n## New Findings\n\n{NONE}\n\n"
        f"## Regression Surface\n\nNo regressions.\n\nVerdict: {verdict}\n"
    )
    return {"mode": "ok", "text": text}


@dataclass(frozen=True)
class Step:
    """One command line; ``ours_extra`` are flags review-loop needs for a documented deviation."""

    argv: tuple[str, ...]
    ours_extra: tuple[str, ...] = ()
    why: str = ""
    compare: bool = True  # False: a documented deviation; only the steps after it matter


@dataclass(frozen=True)
class Scenario:
    """A fresh repository, the fake reviewers' answers, and the steps."""

    name: str
    steps: tuple[Step, ...]
    script: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _s(*argv: str, extra: tuple[str, ...] = (), why: str = "", compare: bool = True) -> Step:
    return Step(tuple(argv), extra, why, compare)


RUN = ("run", "--repo={repo}", "--reviewer=claude")
FIX_STEP = _s("fix-completion", "--repo={repo}", "--packet={packet}", "--body-file={fix}")
CONSULT = ("consult", "--repo={repo}", "--peer=claude", "--question-file={question}")
GARBAGE_DEVIATION = (
    "garbage output is DELIVERY_UNKNOWN (exit 2) in review-loop, advisory text in the "
    "original (docs/compatibility.md)"
)
ARCHIVED_DEVIATION = (
    "the original refuses an archived --packet (exit 1, 'writes refuse archive'); review-loop "
    "answers already_archived with evidenceCurrent (exit 0), a read-only report "
    "(docs/compatibility.md)"
)
SCENARIOS = (
    Scenario("help", (_s("help"),)),
    Scenario(
        "blocked_fix_pass",
        (
            _s(*RUN),
            FIX_STEP,
            _s("run", "--continue", "--repo={repo}"),
            _s("run", "--continue", "--repo={repo}"),
            _s("sessions", "--repo={repo}"),
        ),
        {
            "claude": [
                first(F1, F2, verdict="BLOCKED"),
                again(["| F1 | resolved | guarded |", "| F2 | resolved | renamed |"], "PASS"),
            ]
        },
    ),
    Scenario(
        "budget_round1",
        (_s(*RUN, "--rounds=1"),),
        {"claude": [first(F1, verdict="BLOCKED")]},
    ),
    Scenario(
        "budget_round2",
        (_s(*RUN, "--rounds=2"), FIX_STEP, _s("run", "--continue", "--repo={repo}")),
        {
            "claude": [
                first(F1, verdict="BLOCKED"),
                again(["| F1 | unresolved | still raises on [] |"], "BLOCKED"),
            ]
        },
    ),
    Scenario(
        "concerns_close",
        (
            _s(*RUN),  # PASS_WITH_CONCERNS waits for the user by default, as the original
            _s("close", "--repo={repo}", "--packet={packet}", "--reason=accept-concerns"),
        ),
        {"claude": [first(F2, verdict="PASS_WITH_CONCERNS")]},
    ),
    Scenario(
        "failed_consults",
        (
            _s(*CONSULT, compare=False, why=GARBAGE_DEVIATION),
            _s(*CONSULT, compare=False, why="review-loop adds keys; its error text differs"),
            _s("sessions", "--repo={repo}"),
        ),
        {"claude": [{"mode": "garbage"}, {"mode": "not-logged-in"}]},
    ),
    Scenario(
        "archived_continue_packet",
        (
            _s(*RUN),
            _s(
                *("run", "--continue", "--repo={repo}", "--packet={packet}"),
                compare=False,
                why=ARCHIVED_DEVIATION,
            ),
        ),
        {"claude": [first(NONE_ROW, verdict="NO_FINDINGS")]},
    ),
    Scenario(
        "consults",
        (_s(*CONSULT), _s(*CONSULT), _s(*CONSULT)),
        {
            "claude": [
                {"mode": "ok", "text": "Ship it."},
                {"mode": "not-logged-in"},
                {"mode": "empty"},
            ]
        },
    ),
    Scenario(
        "usage_errors",
        (
            _s("run", "--repo={repo}", "--intake", "--continue"),
            _s("fix-completion", "--repo={repo}"),
            _s("close", "--repo={repo}", "--packet=nope.md", "--reason=accept-concerns"),
            _s("close", "--repo={repo}", "--packet=nope.md", "--reason=looks-fine"),
            _s(
                "sessions",
                "--repo={repo}",
                "--product=bard",
                why="an unknown --product is exit 1 naming the products in review-loop, an "
                "empty list (exit 0) in the original (docs/compatibility.md)",
                compare=False,
            ),
            _s("consult", "--repo={repo}", "--peer=claude"),
            _s("consult", "--repo={repo}", "--peer=bard", "--question-file={question}"),
            _s("frobnicate"),
        ),
    ),
    Scenario(
        "delivery_unknown",
        (_s(*RUN),),
        {"claude": [{"mode": "fail"}]},
    ),
)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}([.-]\d+)?Z")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}")
_HEX = re.compile(r"\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b")
_SLUG = re.compile(r"main--[0-9a-f]{12}")


def normalise(value: Any, paths: dict[str, str]) -> Any:
    """Replace per-run values (paths, uuids, times, stamps, digests) with placeholders."""
    text = json.dumps(value, ensure_ascii=False)
    for path, name in sorted(paths.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, name)
    for pattern, name in (
        (_UUID, "<uuid>"),
        (_TIME, "<time>"),
        (_STAMP, "<stamp>"),
        (_HEX, "<sha>"),
        (_SLUG, "main--<slug>"),
    ):
        text = pattern.sub(name, text)
    return json.loads(text)


def expand(argv: tuple[str, ...], values: dict[str, str]) -> list[str]:
    """Fill the placeholders of ``argv``."""
    return [word.format(**values) for word in argv]
