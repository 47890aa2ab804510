"""The steps of ``review-loop demo`` and how each is run (the command's contract is in
:mod:`review_loop.orchestrator.cli.demo`).

Kept apart from the command module so that ``review-loop help``, which loads every command
module for its usage lines, loads none of this.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from review_loop.orchestrator.cli.stops import Stop

STEP_GRACE_S = 30.0
"""How long a step stopped by a signal has to end its reviewer and records (it cancels
them itself) before it is killed."""

_GIT_CONTEXT = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")
"""The caller's git variables, which would point the demo's git at another repository."""

_HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
REPLIES = (
    "(scripted simulated answer 1)\n\n## Coverage\n- calc.py\n\n## Findings\n\n"
    + _HEADER
    + "\n| F1 | [阻塞] | no test pins the fix | calc.py:2 changed, no test | test_calc.py "
    "| add a test | total([1, 2]) == 3 |\n\nVerdict: BLOCKED",
    "(scripted simulated answer 2)\n\n## Coverage\n- calc.py\n- test_calc.py\n\n"
    "## Prior Findings Reassessment\n\n| ID | 状态 | 复核证据 |\n|---|---|---|\n"
    "| F1 | resolved | test_calc.py asserts total([1, 2]) == 3 |\n\n## New Findings\n\n"
    + _HEADER
    + "\n| F2 | [非阻塞] | empty input untested | test_calc.py | test_calc.py "
    "| test total([]) | total([]) == 0 |\n\n## Regression Surface\n\nOnly calc.py changed.\n\n"
    "Verdict: PASS_WITH_CONCERNS",
)
"""The simulated reviewer's scripted answers: round 1 blocks on F1 (严重度 is "severity",
[阻塞] "blocking", the original tool's table); the re-review resolves it (状态 "status",
复核证据 "re-review evidence") and leaves F2, non-blocking ([非阻塞])."""

FIX_COMPLETION = """# Fix Completion

## Fix Conclusion
Added test_calc.py, which pins the fix.
## Original Findings Snapshot
F1 [阻塞] no test pins the fix
## Finding Status
F1 fixed
## Verification
python -m pytest test_calc.py
## Re-review Instructions
Check test_calc.py.
"""

_RESUME_KEYS = ("resume", "resumeInShell", "resumeReadOnly", "resumeReadOnlyInShell")


@dataclass(frozen=True, slots=True)
class Step:
    """One command of the demo.

    Attributes:
        name: the command (``run``), as the document names the step.
        note: what the step shows, for the person watching.
        words: its arguments; ``{demo}`` is the throw-away directory and ``{packet}`` the
            ``packetPath`` of the step before.
        expect: the ``status`` its document must have (``None``: ``ok: true`` is enough).
        scripted: whether the simulated reviewer answers from the scripted replies.
        before: what the person does before typing the command (a file written).
    """

    name: str
    note: str
    words: str
    expect: str | None
    scripted: bool = False
    before: Callable[[Path], None] | None = None

    def args(self, demo: Path, documents: Sequence[Mapping[str, Any]]) -> list[str]:
        """The arguments, the placeholders filled in (each word stays one argument)."""
        packet = str(documents[-1].get("packetPath", "")) if documents else ""
        return [
            word.replace("{demo}", str(demo)).replace("{packet}", packet)
            for word in shlex.split(self.words)
        ]


def _write_fix(demo: Path) -> None:
    test = "from calc import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
    (demo / "repo" / "test_calc.py").write_text(test)
    (demo / "fix.md").write_text(FIX_COMPLETION)


_REPO = "--repo {demo}/repo"
STEPS: Final = (
    Step(
        "consult",
        "ask a question (advisory answer)",
        f"consult {_REPO} --peer simulated --question-file {{demo}}/question.md",
        "advisory",
    ),
    Step(
        "run",
        "review round 1 (scripted: BLOCKED on F1)",
        f"run {_REPO} --reviewer simulated --completion review --timeout 60",
        "blocked",
        scripted=True,
    ),
    Step(
        "fix-completion",
        "record the fix (test_calc.py added)",
        f"fix-completion {_REPO} --packet {{packet}} --body-file {{demo}}/fix.md",
        "fix_recorded",
        before=_write_fix,
    ),
    Step(
        "run",
        "re-review (scripted: F1 resolved, PASS_WITH_CONCERNS with F2 left)",
        f"run {_REPO} --continue --timeout 60",
        "awaiting_user_decision",
        scripted=True,
    ),
    Step(
        "close",
        "accept the non-blocking concern and archive the packet",
        f"close {_REPO} --packet {{packet}} --reason accept-concerns",
        "archived",
    ),
    Step(
        "verify-diff",
        "a fresh executor judges the fix",
        f"verify-diff {_REPO} --executor simulated --timeout 60 --description "
        "'total() skipped the first element' --fix-direction 'sum every element' "
        "--target calc.py",
        "converged",
    ),
    Step(
        "sessions",
        "the resumable sessions",
        f"sessions {_REPO} --product simulated",
        None,
    ),
)
"""The demo's commands, in order (see the module docstring)."""


async def run_demo(demo: Path, *, keep: bool, stop: Stop) -> Mapping[str, Any]:
    """Make the repository, run every step, and return the document."""
    say(
        f"demo: a throw-away repository in {demo} "
        + ("(kept at the end)" if keep else "(removed at the end)")
    )
    await _make_repository(demo)
    replies = demo / "replies.json"
    replies.write_text(json.dumps(list(REPLIES), ensure_ascii=False, indent=1))
    done: list[dict[str, Any]] = []
    documents: list[Mapping[str, Any]] = []
    base: dict[str, Any] = {"directory": str(demo), "kept": keep, "steps": done}
    for step in STEPS:
        # what a signal leaves to print: the steps that ended, the one it stopped, and how
        # that one ended (``_end`` adds its exit code)
        partial = {**base, "steps": list(done), "stoppedStep": step.name}
        stop.keep(partial)
        if step.before is not None:
            step.before(demo)
        argv = step.args(demo, documents)
        say(f"\n$ review-loop {_shown(argv, demo)}    # {step.note}")
        code, document = await _run_step(
            argv, demo, replies if step.scripted else None, stopped=partial
        )
        status = document.get("status") if isinstance(document.get("status"), str) else None
        done.append({"step": step.name, "argv": ["review-loop", *argv], "exitCode": code,
                     "status": status, "document": document})  # fmt: skip
        say(f"  -> {_outcome(code, document)}")
        failure = _failure(step, code, document)
        if failure is not None:
            return {"ok": False, "status": "failed", "failedStep": len(done), **base,
                    "error": failure}  # fmt: skip
        documents.append(document)
    if not keep:
        done[-1]["document"] = _without_resume(done[-1]["document"])
    say(
        "\ndemo: the answers above are simulated (no model was asked); "
        "use --peer codex|claude|gemini|grok|opencode|qwen for real reviews; "
        "review-loop doctor shows which of them are installed here and logged in"
    )
    return {
        "ok": True,
        "status": "completed",
        **base,
        "message": (
            "the review round trip ran offline: run BLOCKED -> fix-completion -> run "
            "--continue PASS_WITH_CONCERNS -> close; the answers are simulated"
        ),
    }


def _failure(step: Step, code: int, document: Mapping[str, Any]) -> str | None:
    """Why ``step`` did not give what the loop promises, or ``None``."""
    if code != 0 or document.get("ok") is False:
        said = document.get("error") or document.get("message") or "no document"
        return f"step `{step.name}` exited {code}: {said}"
    if step.expect is not None and document.get("status") != step.expect:
        return (
            f"step `{step.name}` gave status {document.get('status')!r}, "
            f"where the loop gives {step.expect!r}"
        )
    return None


FIX_RECORDED_ANCHOR = "fix_completion"
"""``lastAnchor`` of a packet whose fix was recorded and not yet re-reviewed."""


def _outcome(code: int, document: Mapping[str, Any]) -> str:
    """What a step came to, in a line."""
    words = [f"exit {code}"]
    for key in ("status", "verdict"):
        if isinstance(document.get(key), str):
            words.append(f"{key} {document[key]}")
    # After fix-completion a blocking finding stays open until the re-review resolves it;
    # "open blocking F1" there reads as a failure, so say what the packet says: a fix is
    # recorded for it and the re-review is next.
    fixed = document.get("lastAnchor") == FIX_RECORDED_ANCHOR
    for key, label in (("openBlocking", "blocking"), ("openConcerns", "concerns")):
        if document.get(key):
            ids = ",".join(map(str, document[key]))
            words.append(f"{ids} fixed, awaiting re-review" if fixed else f"open {label} {ids}")
    if isinstance(document.get("count"), int):
        words.append(f"{document['count']} session(s)")
    return ", ".join(words)


def _shown(argv: Sequence[str], demo: Path) -> str:
    """The command as a person would type it in the demo directory."""
    return " ".join(shlex.quote(word.replace(f"{demo}/", "")) for word in argv)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _without_resume(document: Mapping[str, Any]) -> dict[str, Any]:
    """``sessions``' document without the resume commands, which would point into the
    directory removed at exit."""
    sessions = [
        {key: value for key, value in session.items() if key not in _RESUME_KEYS}
        for session in document.get("sessions", [])
    ]
    note = "resume commands omitted: the demo directory is removed on exit (--keep keeps it)"
    return {**document, "sessions": sessions, "note": note}


def _environment(demo: Path, replies: Path | None) -> dict[str, str]:
    """The caller's environment, with review-loop's state in the demo directory and the
    scripted replies named only for the steps that use them."""
    env = {key: value for key, value in os.environ.items() if key not in _GIT_CONTEXT}
    env["REVIEW_LOOP_HOME"] = str(demo / "state")
    env.pop("REVIEW_LOOP_SIMULATED_REPLIES", None)
    if replies is not None:
        env["REVIEW_LOOP_SIMULATED_REPLIES"] = str(replies)
    return env


async def _make_repository(demo: Path) -> None:
    """``repo``: ``calc.py`` committed with a bug, and its fix uncommitted; the question."""
    import anyio

    repo = demo / "repo"
    repo.mkdir()
    env = _environment(demo, None)
    # Nothing of the user's git configuration may change or stop the demo's one commit.
    settings = ["-c", "user.name=demo", "-c", "user.email=demo@example.invalid",
                "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]  # fmt: skip
    (repo / "calc.py").write_text("def total(xs):\n    return sum(xs[1:])\n")
    for words in (["init", "-q"], ["add", "calc.py"], ["commit", "-qm", "calc"]):
        await anyio.run_process(["git", *settings, *words], cwd=repo, env=env)
    (repo / "calc.py").write_text("def total(xs):\n    return sum(xs)\n")  # the fix
    (demo / "question.md").write_text("Is the fix in calc.py (sum every element) right?\n")


async def _run_step(
    argv: list[str], demo: Path, replies: Path | None, *, stopped: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """Run ``review-loop ARGV`` (this installation's) in ``demo``: its exit code and its
    document. Its stderr is the person's; a cancellation ends it first (see :func:`_end`)
    and notes its exit code in ``stopped`` (``stoppedStepExitCode``)."""
    import subprocess

    import anyio

    process = await anyio.open_process(
        [sys.executable, "-m", "review_loop", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None,
        cwd=demo,
        env=_environment(demo, replies),
    )
    output = bytearray()
    finished = False
    try:
        assert process.stdout is not None
        async for chunk in process.stdout:
            output += chunk
        code = await process.wait()
        finished = True
    finally:
        ended = await _end(process)
        if not finished:  # a signal stopped the demo during this step
            stopped["stoppedStepExitCode"] = ended
    try:
        document = json.loads(output.decode("utf-8", "replace"))
    except ValueError:
        document = {"ok": False, "error": f"no JSON document on stdout: {output[-500:]!r}"}
    return code, document if isinstance(document, dict) else {"document": document}


async def _end(process: Any) -> int:
    """A step still running (a signal cancelled the demo) gets SIGTERM — it then ends its
    reviewer and finishes its records — and SIGKILL after :data:`STEP_GRACE_S`; it is
    reaped either way, before the directory it writes into is removed. Returns its exit
    code."""
    import signal

    import anyio

    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(STEP_GRACE_S):
                await process.wait()
            if process.returncode is None:
                process.kill()
        code: int = await process.wait()
        await process.aclose()
    return code
