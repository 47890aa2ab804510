"""The review prompt at scale: a summarised diff view, byte for byte, and linear in its paths.

Contract tests. The golden prompt pins the summarised view's exact text (changed paths named
twice, diff parts for paths the evidence does not list, a path with several parts, a path shown
inline that also has a part left over, a part without a header), so that making the view fast
changes no byte of it. The scaling test counts string comparisons on an instrumented list of
changed paths (no clock): a list search per path (quadratic) makes millions of them where a
linear build makes a few per path.
"""

from __future__ import annotations

import os
from pathlib import Path

from review_loop.agents.review import Ledger
from review_loop.agents.review_prompt import build_review_prompt, diff_view

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "review"


def _file_diff(path: str, lines: int, sign: str = "+") -> str:
    body = "\n".join(f"{sign}line {i}" for i in range(lines))
    return (
        f"diff --git a/{path} b/{path}\nindex 0000000..1111111 100644\n--- a/{path}\n"
        f"+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}"
    )


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


TRICKY_DIFF = "\n\n".join(
    [
        _file_diff("small.py", 2),
        _file_diff("big.py", 300),
        _file_diff("twice.py", 1),  # shown inline; its second part below is left over
        _file_diff("unlisted.py", 200),  # a part the evidence's path list does not name
        _file_diff("twice.py", 250, sign="-"),
        "diff --git without-a-path\n+orphan line",
        _file_diff("unlisted.py", 120, sign="-"),  # the same unlisted path again
        _file_diff("last.py", 3),
    ]
)
TRICKY_CHANGED = ["big.py", "small.py", "twice.py", "big.py", "gone.py", "last.py"]


def test_contract_a_summarised_prompt_is_byte_identical_to_its_golden() -> None:
    prompt = build_review_prompt(
        round_number=1,
        packet_id="main--abc/p",
        packet_path="/r/.review-handoff/active/main--abc/p.md",
        packet_body="# Review Handoff\n\n- Scope: auto-loop\n",
        base_sha="f" * 40,
        evidence_path="/r/.review-handoff/runtime/main--abc/p/evidence/round-1.diff",
        paths=None,
        changed=TRICKY_CHANGED,
        diff_text=TRICKY_DIFF,
        ledger=Ledger(),
        budget=700,
    )
    assert prompt.must_cover == ("big.py", "big.py", "gone.py", "unlisted.py")
    _golden("prompt_round1_summarised.txt", prompt.text)
    view = diff_view(TRICKY_DIFF, TRICKY_CHANGED, 700)
    assert "- big.py (+300 -0, " in view.text and "- gone.py\n" in view.text
    assert "- unlisted.py (+200 -120, " in view.text
    assert "- 1 further diff part(s) without a file header" in view.text


class _CountedPath(str):
    """A changed path that counts every equality test made against it."""

    compared = 0
    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        _CountedPath.compared += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        _CountedPath.compared += 1
        return str.__ne__(self, other)


def test_contract_the_diff_view_and_prompt_are_linear_in_the_changed_paths() -> None:
    count = 3_000
    names = [f"vendor/d{i % 30:02}/f{i}.txt" for i in range(count)]
    diff = "\n\n".join(_file_diff(name, 1) for name in names) + "\n"
    changed = [_CountedPath(name) for name in names]
    _CountedPath.compared = 0
    prompt = build_review_prompt(
        round_number=1,
        packet_id="p",
        packet_path="p.md",
        packet_body="",
        base_sha="f" * 40,
        evidence_path="e",
        paths=None,
        changed=changed,
        diff_text=diff,
        ledger=Ledger(),
        budget=20_000,
    )
    assert 0 < len(prompt.must_cover) < count  # part inline, most only named
    assert f"- {names[-1]} (+1 -0, " in prompt.text
    # A list search per path makes about count**2 / 2 (4.5 million) comparisons here.
    assert _CountedPath.compared <= 8 * count
