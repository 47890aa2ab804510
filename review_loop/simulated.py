"""The simulated reviewer: a tiny offline CLI shipped with review-loop, for trying it keyless.

``python -I -B -m review_loop.simulated [--resume SESSION_ID] [PROMPT]`` reads the prompt
(the argument, else stdin) and prints one JSON line, ``{"session_id": ..., "text": ...}``.
It recognises the prompts review-loop's workflows send and answers each in the format that
workflow accepts, so every workflow runs end to end without an API key:

- consult: an advisory stance (stance, reasons, risks, what would change its mind);
- review round 1: an empty findings table, ``## Coverage`` naming every changed path,
  ``Verdict: NO_FINDINGS``; a re-review: every prior finding reassessed as resolved,
  ``Verdict: PASS``;
- convergence round A/B: a position ending ``Position: AGREE``; preflight: ``PREFLIGHT OK``;
- blind review: ``None`` and ``Verdict: CLEAN``;
- verify-diff: scenarios JSON, or an executor verdict (``objective_met: "yes"``).

``REVIEW_LOOP_SIMULATED_REPLIES=<file>`` scripts it instead: each call takes the next answer
of the file's JSON list, verbatim (:mod:`review_loop.simulated_replies`); the JSON line then
also carries ``"scripted": <index>``. The built-in answers resume once the list is used up.

It is an honest stand-in, not a reviewer: every answer says it is simulated, and it reads
nothing but its prompt — no file of the repository, nothing it could run — so a hostile
repository gains nothing from it. Sessions are not stored: a resumed id is answered as a new
turn under the same id. The adapter that launches it through the real process layer is
:mod:`review_loop.adapters.simulated`.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable, Sequence

NOTE = "(simulated reviewer: an offline stand-in that read only its prompt, not a real review)"


def _block(prompt: str, header: str) -> list[str]:
    """The non-empty lines after ``header`` up to the next blank line."""
    lines = prompt.splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith(header):
            block: list[str] = []
            for item in lines[index + 1 :]:
                if not item.strip():
                    break
                block.append(item.strip())
            return block
    return []


def _changed_paths(prompt: str) -> list[str]:
    paths = []
    for line in _block(prompt, "Changed paths"):
        path = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line).strip("` ")
        if path and not path.startswith("("):
            paths.append(path.split()[0])
    return paths


def _prior_ids(prompt: str) -> list[str]:
    match = re.search(r"reassess every one of these IDs, no others\):\s*(.*)", prompt)
    if match is None:
        return []
    parts = (part.strip() for part in match.group(1).split(","))
    return [part for part in parts if re.fullmatch(r"[\w.:-]+", part)]


def _coverage(prompt: str) -> str:
    paths = _changed_paths(prompt)
    return "## Coverage\n" + ("\n".join(f"- {p}" for p in paths) if paths else "- (none)")


def _review(prompt: str) -> str:
    header = "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |"
    separator = "|---|---|---|---|---|---|---|"
    if "first review" in prompt:
        return (
            f"{NOTE}\n\n{_coverage(prompt)}\n\n## Findings\n\n{header}\n{separator}\n\n"
            "Verdict: NO_FINDINGS"
        )
    rows = "\n".join(
        f"| {fid} | resolved | simulated re-check of {fid}: the frozen diff addresses it |"
        for fid in _prior_ids(prompt)
    )
    return (
        f"{NOTE}\n\n{_coverage(prompt)}\n\n"
        f"## Prior Findings Reassessment\n\n| ID | 状态 | 复核证据 |\n|---|---|---|\n"
        f"{rows}\n\n## New Findings\n\nNone\n\n## Regression Surface\n\n"
        "No regression seen in the frozen diff (simulated).\n\nVerdict: PASS"
    )


def _position(prompt: str) -> str:
    return (
        f"{NOTE}\n\n## Scope\nThe plan as written.\n\n## Attribution\nNo status to change.\n\n"
        "## Ownership\nAs the plan assigns it.\n\n## Assumptions and risks\nNone found.\n\n"
        "## Verification\nRun the repository's tests after each item.\n\n"
        "## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE"
    )


def _fenced(document: object) -> str:
    return "```json\n" + json.dumps(document, ensure_ascii=False, indent=2) + "\n```"


def _scenarios(prompt: str) -> str:
    scenario = {
        "kind": "median",
        "title": "the described fix",
        "description": "the typical use the description and fix direction imply",
        "checklist": [
            "[critical] the described problem no longer occurs",
            "behaviour outside the fix is unchanged",
            "the change follows the suggested fix direction",
        ],
    }
    return f"{NOTE}\n\n{_fenced({'scenarios': [scenario]})}"


def _executor(prompt: str) -> str:
    verdict: dict[str, object] = {
        "objective_met": "yes",
        "remaining_gaps": [],
        "regressions": [],
        "suggested_edits": [],
        "confidence": "low",
    }
    if "INFER INTENT" in prompt:
        verdict = {"inferred_intent": "the change as the diff shows it (simulated)", **verdict}
    return (
        f"{NOTE}\n\nNo scenario was executed: this is a simulated executor.\n\n{_fenced(verdict)}"
    )


def _consult(prompt: str) -> str:
    return (
        f"{NOTE}\n\nStance: proceed, with the checks below.\n\n"
        "Key reasons: nothing in the question rules the plan out.\n\n"
        "Open risks: this answer is simulated; ask a real peer before relying on it.\n\n"
        "What would change my mind: a failing test or a reproducible counterexample."
    )


# The first marker found in the prompt decides the answer (most specific first).
_ANSWERS: Sequence[tuple[str, Callable[[str], str]]] = (
    ("Preflight of a review loop", lambda _: "PREFLIGHT OK"),
    ("You are a blind reviewer", lambda _: f"{NOTE}\n\n## Findings\n\nNone\n\nVerdict: CLEAN"),
    ("automated review loop (round", _review),
    ("three-party convergence", _position),
    ("Three-party convergence", _position),
    ("You derive evaluation scenarios", _scenarios),
    ("You are a fresh executor", _executor),
)


def answer(prompt: str) -> str:
    """The simulated answer to ``prompt``: the format its workflow accepts."""
    for marker, make in _ANSWERS:
        if marker in prompt:
            return make(prompt)
    return _consult(prompt)


def _scripted() -> tuple[int, str] | str | None:
    """The next answer of ``$REVIEW_LOOP_SIMULATED_REPLIES`` (:mod:`.simulated_replies`):
    ``(index, text)``; ``None`` with no file or once its list is used up; the error's text
    when the file cannot be used (the CLI then refuses, exit 2, before answering)."""
    import os

    if not os.environ.get("REVIEW_LOOP_SIMULATED_REPLIES"):
        return None  # the usual case: nothing more is imported
    from review_loop.agents.errors import InputError
    from review_loop.simulated_replies import next_reply, replies_path

    try:
        path = replies_path(os.environ)
        return next_reply(path) if path is not None else None
    except InputError as error:
        return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    """Answer one prompt; the session id is kept on ``--resume`` and new otherwise."""
    import argparse

    parser = argparse.ArgumentParser(prog="review-loop-simulated", allow_abbrev=False)
    parser.add_argument("--resume", default=None, help="continue this session id")
    parser.add_argument("prompt", nargs="?", default=None, help="the prompt (default: stdin)")
    args = parser.parse_args(argv)
    prompt = args.prompt if args.prompt is not None else sys.stdin.read()
    if not prompt.strip():
        print("review-loop-simulated: the prompt is empty", file=sys.stderr)  # noqa: T201
        return 2
    session_id = args.resume or str(uuid.uuid4())
    scripted = _scripted()
    if isinstance(scripted, str):
        print(f"review-loop-simulated: {scripted}", file=sys.stderr)  # noqa: T201
        return 2
    reply: dict[str, object] = {"session_id": session_id}
    if scripted is None:
        reply["text"] = answer(prompt)
    else:
        reply["scripted"], reply["text"] = scripted
    line = json.dumps(reply, ensure_ascii=False)
    sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
