"""The Node ``review-loop``'s whole surface, for the original and for review-loop.

:mod:`tests.differential.scenarios` follows the main paths; these scenarios run the rest of
what the original's parser and commands accept or refuse: every flag of every command in
every form its ``parseArgs`` takes (``--k=v``, ``--k v``, bare flags, ``=true``/``=false``,
repeated flags — the last wins —, its aliases ``--repo-root``, ``--cwd``, ``--packet-path``,
``--bodyFile``, ``--product-reviewer``, ``--cont``, ``--scope-slug``, ``--path``,
``--questionFile``, ``--question``, ``--body``, values in other cases, single-dash words and
unknown flags, which it ignores), and every recovery path (the round budget and its
re-authorisation, another round after PASS_WITH_CONCERNS, deadlines from
``REVIEW_LOOP_TIMEOUT_MS``, STOP, failed and resumed reviewer sessions, edited packets,
failure results in a later round, retired commands).

A scenario is a fresh repository, its fake reviewers' answers and its steps; :func:`play`
runs them through an :data:`Invoke` (one argv, environment and directory -> exit code and
stdout), so the recorder (:mod:`tests.differential.record_surface`, against the REAL
original) and the test (:mod:`tests.differential.test_rl_surface`, against review-loop)
run the very same code.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.differential import scenarios as sc
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo, git

ORIGIN = (
    "Adonis0123/adonis-skills@e2acfae790e9 skills/agentic-review-handoff/scripts/review-loop.mjs"
)
GOLDEN_DIR = sc.GOLDEN / "rl_surface"
Invoke = Callable[[list[str], dict[str, str], Path], tuple[int, str]]


@dataclass(frozen=True)
class Step:
    """One command line, or (``write`` given) text appended to a file.

    ``deliberate`` names a documented deliberate difference (docs/compatibility.md): the
    step is recorded and run, and the test checks what review-loop does instead.
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "{repo}"
    write: tuple[str, str] = ("", "")  # (path template, text appended)
    deliberate: str = ""


@dataclass(frozen=True)
class Scenario:
    """A fresh repository, the fake reviewers' answers, and the steps."""

    name: str
    steps: tuple[Step, ...]
    script: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def s(*argv: str, env: dict[str, str] | None = None, cwd: str = "{repo}", why: str = "") -> Step:
    """A step: ``argv`` with placeholders, extra environment, the directory it runs in."""
    return Step(tuple(argv), tuple((env or {}).items()), cwd, ("", ""), why)


def append(path: str, text: str) -> Step:
    """A step that appends ``text`` to the file at ``path`` (a template)."""
    return Step((), (), "{repo}", (path, text))


BLOCKED = sc.first(sc.F1, verdict="BLOCKED")
BLOCKED_AGAIN = sc.again(["| F1 | unresolved | still raises on [] |"], "BLOCKED")
CONCERNS = sc.first(sc.F2, verdict="PASS_WITH_CONCERNS")
PASS_AFTER_F1 = sc.again(["| F1 | resolved | guarded |"], "PASS")
PASS_AFTER_F2 = sc.again(["| F2 | resolved | renamed |"], "PASS")
CLEAN = sc.first(sc.NONE_ROW, verdict="NO_FINDINGS")
HANG = {"mode": "hang"}
FIX = ("fix-completion", "--repo={repo}", "--packet={packet}", "--body-file={fix}")
CONT = ("run", "--continue", "--repo={repo}")
GEMINI = (
    "review-loop adds gemini as a reviewer and peer (docs/compatibility.md: Added); the "
    "original refuses it"
)
TWO_PEERS = (
    "review-loop consults several peers at once (the seed's --peer a,b); the original refuses "
    "a comma list (docs/compatibility.md)"
)
PERSON_HELP = (
    "`<command> --help` prints a person's plain-text help in review-loop; the original ignores "
    "the flag and runs the command (docs/compatibility.md)"
)
VERSION = (
    "review-loop answers --version/-V with its version; the original has no such command "
    "(docs/compatibility.md)"
)
NOT_A_CHECKOUT = (
    "--repo naming a directory outside any git checkout: the original consults there and "
    "writes .review-handoff/ into it; review-loop refuses (exit 1, '--repo: ... is not inside "
    "a git checkout') (docs/compatibility.md)"
)
NOT_SUBMITTED = (
    "a reviewer that refused its credentials before any request left (NOT_SUBMITTED) is "
    "retried once in review-loop; the original never retries (docs/compatibility.md)"
)
RESUME_NOT_FOUND = (
    "Claude's own answer to a resume of an unknown session ('No conversation found with "
    "session ID') starts a new session in review-loop; the original does not recognise "
    "Claude's words and reports DELIVERY_UNKNOWN (docs/compatibility.md)"
)
UNKNOWN_PRODUCT = (
    "sessions --product with a name no product has (CLAUDE, bard): the original lists none "
    "(exit 0); review-loop refuses it as a usage error naming the products (exit 1) "
    "(docs/compatibility.md)"
)
GARBAGE = sc.GARBAGE_DEVIATION
ARCHIVED = sc.ARCHIVED_DEVIATION
RETIRED = (
    "open",
    "pair",
    "prompts",
    "bind",
    "next",
    "wait",
    "complete",
    "append-eof",
    "append",
    "board",
    "summary",
    "finish",
    "report",
    "status",
    "gate",
    "resolve",
    "disarm",
    "blind-submit",
    "h1-probe",
)


def _consults(*forms: tuple[str, ...], then: tuple[Step, ...] = ()) -> tuple[Step, ...]:
    return (*(s("consult", *form) for form in forms), *then)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "help_forms",
        (
            s(why=PERSON_HELP),
            s("help"),
            s("--help", why=PERSON_HELP),
            s("-h", why=PERSON_HELP),
            s("help", "run"),
            s("help", "--repo={repo}"),
            s("--version", why=VERSION),
            s("-V", why=VERSION),
            s("run", "--help", why=PERSON_HELP),
            s("consult", "-h", why=PERSON_HELP),
        ),
    ),
    Scenario("retired_commands", tuple(s(name, "--repo={repo}") for name in RETIRED)),
    Scenario(
        "unknown_commands",
        (
            s("frobnicate"),
            s("Run", "--repo={repo}"),
            s("RUN"),
            s("run-loop"),
            s("consults", "--repo={repo}"),
            s("--repo={repo}"),
        ),
    ),
    Scenario(
        "consult_flag_forms",
        _consults(
            ("--repo={repo}", "--peer=claude", "--question-file={question}"),
            ("--repo", "{repo}", "--peer", "claude", "--question-file", "{question}"),
            ("--repo-root={repo}", "--peer=claude", "--questionFile={question}"),
            ("--repo={repo}", "--reviewer=claude", "--question-file={question}"),
            ("--repo={repo}", "--peer=CLAUDE", "--question-file={question}"),
            ("--repo={repo}", "--peer=Claude", "--question=Ship it?"),
            ("--repo={repo}", "--peer", "claude", "--question", "Ship it?"),
            ("--peer=claude", "--question-file={question}"),
            ("--cwd={repo}", "--peer=claude", "--question-file={question}"),
            ("--cwd={repo}/src", "--peer=claude", "--question-file={question}"),
            ("--repo=/nowhere", "--repo={repo}", "--peer=claude", "--question-file={question}"),
            ("--repo={repo}", "--peer=claude", "--question-file={question}", "--verbose"),
            ("--repo={repo}", "--peer=claude", "--question-file={question}", "--x=1", "-v"),
            ("--repo={repo}", "--peer=claude", "--question-file={question}", "stray"),
            ("--repo={repo}", "--peer=claude", "--question=ignored", "--question-file={question}"),
            then=(
                s(
                    "consult",
                    "--repo={repo}",
                    "--peer=codex",
                    "--peer=claude",
                    "--question-file={question}",
                    why=TWO_PEERS,
                ),
            ),
        ),
        {"claude": [{"mode": "ok", "text": "Ship it."}] * 16},
    ),
    Scenario(
        "consult_refusals",
        (
            *_consults(
                ("--repo={repo}", "--peer", "--question-file={question}"),
                ("--repo={repo}", "--peer=", "--question-file={question}"),
                ("--repo={repo}", "--question-file={question}"),
                ("--repo={repo}", "--peer=bard", "--question-file={question}"),
                ("--repo={repo}", "--peer=claude"),
                ("--repo={repo}", "--peer=claude", "--question="),
                ("--repo={repo}", "--peer=claude", "--question=   "),
                ("--repo={repo}", "--peer=claude", "--question-file={work}/absent.md"),
                ("--repo={repo}", "--peer=claude", "--question-file={work}/blank.md"),
                ("--repo={repo}", "--peer=claude", "--question-file", "--question=x"),
                ("--cwd={work}", "--peer=claude", "--question-file={question}"),
            ),
            s("consult", "--peer=claude", "--question-file={question}", cwd="{work}"),
            s(
                "consult",
                "--repo={work}",
                "--peer=claude",
                "--question-file={question}",
                why=NOT_A_CHECKOUT,
            ),
            s(
                "consult",
                "--repo={repo}",
                "--peer=gemini",
                "--question-file={question}",
                why=GEMINI,
            ),
            s(
                "consult",
                "--repo={repo}",
                "--peer=claude,codex",
                "--question-file={question}",
                why=TWO_PEERS,
            ),
        ),
        {"*": [{"mode": "ok", "text": "Ship it."}] * 4},
    ),
    *(
        Scenario(
            f"consult_{mode.replace('-', '_')}_{product}",
            (
                s("consult", "--repo={repo}", f"--peer={product}", "--question-file={question}"),
                s("sessions", "--repo={repo}"),
            ),
            {product: [{"mode": mode}] * 2},
        )
        for product, mode in (
            ("claude", "fail"),
            ("claude", "not-logged-in"),
            ("claude", "empty"),
            ("claude", "bad-args"),
            ("codex", "fail"),
            ("codex", "not-logged-in"),
            ("grok", "fail"),
        )
    ),
    Scenario(
        "timeout_values",
        tuple(
            s(
                "consult",
                "--repo={repo}",
                "--peer=codex",
                "--question-file={question}",
                env={"REVIEW_LOOP_TIMEOUT_MS": value},
            )
            for value in ("500", "1e3", "1500.5", " 800 ", "0x1f4")
        )
        + tuple(
            s(
                "consult",
                "--repo={repo}",
                "--peer=claude",
                "--question-file={question}",
                env={"REVIEW_LOOP_TIMEOUT_MS": value},
            )
            for value in ("100000000", "", "0", "-5", "abc", "Infinity", "NaN", "1_000")
        )
        + (
            s("sessions", "--repo={repo}", "--product=grok", env={"REVIEW_LOOP_TIMEOUT_MS": "abc"}),
            s("help", env={"REVIEW_LOOP_TIMEOUT_MS": "0"}),
            s(
                "close",
                "--repo={repo}",
                "--packet=x.md",
                "--reason=nope",
                env={"REVIEW_LOOP_TIMEOUT_MS": "-1"},
            ),
            s("run", "--repo={repo}", "--reviewer=claude", env={"REVIEW_LOOP_TIMEOUT_MS": "0"}),
        ),
        {"codex": [HANG] * 5, "claude": [{"mode": "ok", "text": "Ship it."}] * 2},
    ),
    Scenario(
        "run_timeout_then_continue",
        (
            s("run", "--repo={repo}", "--reviewer=claude", env={"REVIEW_LOOP_TIMEOUT_MS": "600"}),
            s(*CONT),
            s(*CONT, "--reviewer=claude"),
            s("sessions", "--repo={repo}"),
        ),
        {"claude": [HANG, BLOCKED]},
    ),
    Scenario(
        "sessions_forms",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s("sessions", "--repo={repo}"),
            s("sessions", "--repo", "{repo}"),
            s("sessions", "--repo-root={repo}"),
            s("sessions"),
            s("sessions", "--cwd={repo}"),
            s("sessions", "--product=claude", "--repo={repo}"),
            s("sessions", "--product", "--repo={repo}"),
            s("sessions", "--repo={repo}", "--product"),
            s("sessions", "--repo={repo}", "--product=codex"),
            s("sessions", "--repo={repo}", "--product=CLAUDE", why=UNKNOWN_PRODUCT),
            s("sessions", "--repo={repo}", "--product=codex", "--product=claude"),
            s("sessions", "--repo={repo}", "--verbose", "-x", "stray"),
            s("sessions", "--repo={work}", why=NOT_A_CHECKOUT),
            s("sessions", cwd="{work}"),
        ),
        {"claude": [CLEAN]},
    ),
    Scenario(
        "run_flag_forms",
        (
            s("run", "--repo", "{repo}", "--reviewer", "CLAUDE", "--rounds", "2"),
            s("run", "--repo-root={repo}", "--product-reviewer=Claude", "--scope-slug=second"),
            s("run", "--cwd={repo}", "--reviewer=claude", "--scope=third", "--paths=app.py"),
            s("run", "--reviewer=claude", "--scope=fourth", "--path=app.py", "--base=HEAD"),
            s(
                "run",
                "--repo={repo}",
                "--reviewer=codex",
                "--reviewer=claude",
                "--scope=fifth",
                "--verbose",
                "-q",
                "stray",
                "--completion=review",
                "--rounds=3",
            ),
            s(
                "run",
                "--repo={repo}",
                "--reviewer=claude",
                "--scope=sixth",
                "--sandbox=on",
                "--no-sandbox=false",
                "--continue=false",
            ),
        ),
        {"claude": [CLEAN] * 6},
    ),
    Scenario(
        "run_refusals",
        (
            s("run", "--repo={repo}", "--reviewer=bard"),
            s("run", "--repo={repo}", "--reviewer"),
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=0"),
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=-1"),
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=abc"),
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds"),
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=+0"),
            s("run", "--repo={repo}", "--reviewer=claude", "--no-sandbox"),
            s("run", "--repo={repo}", "--reviewer=claude", "--disable-sandbox"),
            s("run", "--repo={repo}", "--reviewer=claude", "--sandbox=off"),
            s("run", "--repo={repo}", "--reviewer=claude", "--sandbox", "off"),
            s("run", "--repo={repo}", "--reviewer=claude", "--base=nope"),
            s("run", "--repo={work}", "--reviewer=claude"),
            s("run", "--cwd={work}", "--reviewer=claude"),
            s("run", "--repo={repo}", "--continue", "--packet={repo}/nope.md"),
            s("run", "--repo={repo}", "--reviewer=claude", "--packet={fix}"),
            s("run", "--repo={repo}", "--reviewer=gemini", why=GEMINI),
        ),
    ),
    Scenario(
        "continue_forms_without_a_packet",
        (
            s("run", "--repo={repo}", "--continue"),
            s("run", "--repo={repo}", "--cont"),
            s("run", "--repo={repo}", "--continue=true"),
            s("run", "--continue", "--repo={repo}", "--reviewer=claude"),
            s("run", "--repo={repo}", "--continue", "--rounds=+1"),
        ),
    ),
    Scenario(
        "fix_and_close_flag_forms",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s("fix-completion", "--repo={repo}", "--packet-path={packet}", "--bodyFile={fix}"),
            s(
                "fix-completion",
                "--repo",
                "{repo}",
                "--packet",
                "{packet}",
                "--body",
                "## Fix Conclusion\nAgain.\n",
            ),
            s(
                "fix-completion",
                "--cwd={repo}",
                "--packet={packet}",
                "--body-file={fix}",
                "--body=# Fix Completion\n\nThird.\n",
                "--verbose",
            ),
            s("fix-completion", "--repo={repo}", "--packet={packet}"),
            s("fix-completion", "--repo={repo}", "--packet={packet}", "--body=# Notes\n\nx"),
            s("fix-completion", "--repo={repo}", "--packet={packet}", "--body-file={work}/no"),
            s("fix-completion", "--repo={repo}", "--packet={packet}", "--body-file"),
            s("fix-completion", "--repo={repo}", "--packet", "--body-file={fix}"),
            s("close", "--repo={repo}", "--packet={packet}", "--reason=accept-concerns"),
            s("close", "--repo={repo}", "--packet={packet}", "--reason", "accept-concerns "),
            s("close", "--repo={repo}", "--packet={packet}", "--reason=ACCEPT-CONCERNS"),
            s("close", "--repo={repo}", "--packet={packet}", "--reason"),
            s("close", "--repo={repo}", "--packet={packet}"),
            s("close", "--repo={repo}", "--reason=accept-concerns"),
            s(*CONT),
        ),
        {"claude": [BLOCKED, PASS_AFTER_F1]},
    ),
    Scenario(
        "budget_reauthorised_blocked_again",
        (
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=1"),
            s(*CONT),
            s(*CONT, "--rounds=+1"),
            s(*FIX),
            s(*CONT, "--rounds", "+1"),
            s(*CONT),
            s(*FIX),
            s(*CONT),
            s(*CONT, "--rounds=+1"),
            s("sessions", "--repo={repo}"),
        ),
        {"claude": [BLOCKED, BLOCKED_AGAIN, BLOCKED_AGAIN]},
    ),
    Scenario(
        "budget_reauthorised_then_pass",
        (
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=1"),
            s(*FIX),
            s(*CONT, "--rounds=3"),
            s(*CONT),
        ),
        {"claude": [BLOCKED, PASS_AFTER_F1]},
    ),
    Scenario(
        "budget_fractional_and_absolute",
        (
            s("run", "--repo={repo}", "--reviewer=claude", "--rounds=1.5"),
            s(*FIX),
            s(*CONT),
            s(*CONT, "--rounds=2"),
            s(*CONT, "--rounds=1e1"),
            s(*FIX),
            s(*CONT, "--rounds=+2"),
        ),
        {"claude": [BLOCKED, BLOCKED_AGAIN, BLOCKED_AGAIN]},
    ),
    Scenario(
        "concerns_another_round",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s(*FIX),
            s("run", "--continue", "--repo={repo}", "--packet={packet}"),
            s("close", "--repo={repo}", "--packet={packet}", "--reason=accept-concerns"),
            s(*CONT),
        ),
        {"claude": [CONCERNS, PASS_AFTER_F2]},
    ),
    Scenario(
        "concerns_completion_review_then_close",
        (
            s("run", "--repo={repo}", "--reviewer=claude", "--completion", "review"),
            s(*CONT, "--completion=review"),
            s("close", "--repo={repo}", "--packet={packet}", "--reason=accept-concerns"),
            s("close", "--repo={repo}", "--packet={packet}", "--reason=accept-concerns"),
            s("fix-completion", "--repo={repo}", "--packet={packet}", "--body-file={fix}"),
        ),
        {
            "claude": [
                CONCERNS,
                sc.again(["| F2 | unresolved | still vague |"], "PASS_WITH_CONCERNS"),
            ]
        },
    ),
    Scenario(
        "later_round_failures",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s(*FIX),
            s(*CONT),
            s(*CONT),
            s(*CONT),
            s(*CONT),
        ),
        {
            "claude": [
                BLOCKED,
                {"mode": "fail"},
                {"mode": "empty"},
                PASS_AFTER_F1,
            ]
        },
    ),
    Scenario(
        "later_round_with_paths",
        (
            s("run", "--repo={repo}", "--reviewer=claude", "--paths=app.py,lib.py"),
            s(*FIX),
            s(*CONT),
            s(*CONT, "--paths=app.py"),
        ),
        {"claude": [BLOCKED, {"mode": "fail"}, PASS_AFTER_F1]},
    ),
    Scenario(
        "resume_session_not_found",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s(*FIX),
            s(*CONT, why=RESUME_NOT_FOUND),
        ),
        {"claude": [BLOCKED, {"mode": "session-not-found"}, PASS_AFTER_F1]},
    ),
    Scenario(
        "edited_packet",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s(*FIX),
            append("{packet}", "\nan edit nobody recorded\n"),
            s(*CONT),
            s(*CONT),
        ),
        {"claude": [BLOCKED, PASS_AFTER_F1]},
    ),
    Scenario(
        "stop_file",
        (
            append("{repo}/.review-handoff/STOP", ""),
            s("run", "--repo={repo}", "--reviewer=claude"),
            s("consult", "--repo={repo}", "--peer=claude", "--question-file={question}"),
            s(*CONT),
        ),
        {"claude": [CLEAN, CLEAN]},
    ),
    Scenario(
        "packet_order_refusals",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s("run", "--repo={repo}", "--reviewer=claude", "--packet={packet}"),
            s(*CONT),
            s("close", "--repo={repo}", "--packet={packet}", "--reason=accept-concerns"),
            s(*FIX),
            s(*FIX),
            s("run", "--repo={repo}", "--reviewer=claude", "--packet={packet}"),
            s(*CONT, "--packet={packet}"),
            s(*CONT),
            s("fix-completion", "--repo={repo}", "--packet={packet}", "--body-file={fix}"),
            s("run", "--continue", "--repo={repo}", "--packet={packet}", why=ARCHIVED),
        ),
        {"claude": [BLOCKED, PASS_AFTER_F1]},
    ),
    Scenario(
        "delivery_unknown_then_retry",
        (
            s("run", "--repo={repo}", "--reviewer=claude"),
            s(*CONT),
            s("run", "--repo={repo}", "--reviewer=claude", "--scope=again"),
            s("sessions", "--repo={repo}"),
        ),
        {"claude": [{"mode": "fail"}, {"mode": "fail"}, CLEAN]},
    ),
    Scenario(
        "not_submitted_round_one",
        (s("run", "--repo={repo}", "--reviewer=claude", why=NOT_SUBMITTED),),
        {"claude": [{"mode": "not-logged-in"}] * 2},
    ),
    Scenario(
        "garbage_round_one",
        (s("run", "--repo={repo}", "--reviewer=claude", why=GARBAGE),),
        {"claude": [{"mode": "garbage"}, CLEAN]},
    ),
)


def node_invoker(script: Path) -> Invoke:
    """Run the original at ``script`` with node."""

    def invoke(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
        done = subprocess.run(
            ["node", str(script), *argv],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done.returncode, done.stdout

    return invoke


def _document(stdout: str) -> Any:
    try:
        return json.loads(stdout)
    except ValueError:
        return {"<text>": stdout.splitlines()[:1]}


def play(scenario: Scenario, invoke: Invoke, work: Path) -> list[dict[str, Any]]:
    """Run ``scenario`` in a fresh repository under ``work``; its normalised outcomes."""
    repo = committed_repo(work / "repo", {**sc.BASE_FILES, "lib.py": "y = 1\n"})
    (repo / "src").mkdir()
    (repo / "src" / "mod.py").write_text("z = 1\n")
    git(repo, "add", "src")
    git(repo, "commit", "-qm", "src")
    (repo / "app.py").write_text(sc.CHANGED)
    home = work / "home"
    home.mkdir()
    fakes = FakeCLIs(work / "fakes")
    fakes.script(**{("any_" if k == "*" else k): v for k, v in scenario.script.items()})
    base = fakes.env({"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"})
    (work / "fix.md").write_text(sc.FIX)
    (work / "question.md").write_text("Ship it?\n")
    (work / "blank.md").write_text("  \n")
    values = {
        "repo": str(repo),
        "packet": "",
        "fix": str(work / "fix.md"),
        "question": str(work / "question.md"),
        "work": str(work),
    }
    paths = {str(repo): "<repo>", str(home): "<home>", str(work): "<work>"}
    outcomes = []
    for step in scenario.steps:
        if step.write[0]:
            target = Path(step.write[0].format(**values))
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a") as file:
                file.write(step.write[1])
            continue
        argv = sc.expand(step.argv, values)
        env = {**base, **dict(step.env)}
        code, stdout = invoke(argv, env, Path(step.cwd.format(**values)))
        document = _document(stdout)
        if isinstance(document, dict) and isinstance(document.get("packetPath"), str):
            values["packet"] = document["packetPath"]
        outcomes.append(
            {
                "argv": list(step.argv),
                "env": dict(step.env),
                "exit": code,
                "stdout": sc.normalise(document, paths),
                "deliberate": step.deliberate,
            }
        )
    return outcomes
