"""The spx ``verification run`` command lines of the differential tier, for spx and review-loop.

Each scenario is a fresh repository (:class:`tests.test_cli_verification.Repo`) and a list of
spx command lines, in the argument order spx's clients write them (``-C <root>`` before
``verification`` as the seed skills do). :mod:`tests.differential.record_spx` runs them
against the REAL spx and writes ``golden/spx/recorded.json``;
:mod:`tests.differential.test_spx_drop_in` runs the same lines through review-loop's entry
point and compares. A scenario is a function of an :data:`Invoke` (one argv -> exit code,
stdout, stderr), so both sides run the very same code.

:func:`normalise` replaces what differs per run or per implementation by design: paths,
run tokens, times, digests, the run store directory (``.spx/branch/<slug>/`` vs
``.review-handoff/verification/branch/<slug>/``: a documented deviation) and the program
name in headlines (``spx`` vs ``review-loop``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.orchestrator.journal.payloads import finding, unit
from tests.test_cli_verification import Repo, locator, write

Invoke = Callable[[list[str], "str | None"], tuple[int, str, str]]
BOGUS_TOKEN = "2026-01-01_00-00-00-000-000000000000"


@dataclass(frozen=True)
class Outcome:
    """What one command line did."""

    name: str
    argv: list[str]
    exit: int
    stdout: str
    stderr: str


class Session:
    """One scenario's repository and the outcomes of its steps so far."""

    def __init__(self, invoke: Invoke, repo: Repo, work: Path) -> None:
        self.invoke, self.repo, self.work = invoke, repo, work
        self.outcomes: list[Outcome] = []

    def step(self, name: str, *argv: str, stdin: str | None = None) -> Outcome:
        code, out, err = self.invoke(list(argv), stdin)
        outcome = Outcome(name, list(argv), code, out, err)
        self.outcomes.append(outcome)
        return outcome

    def start(self, kind: str = "audit") -> str:
        source = write(self.work / f"start-{kind}.json", {"changed_paths": ["keep.py", "new.py"]})
        started = self.step(
            f"start_{kind}",
            *("-C", str(self.repo.root), "verification", "run", "start"),
            *("--verification-type", kind, "--scope-type", "changeset", "--scope", self.repo.scope),
            *("--input", source),
        )
        documents = _documents(started.stdout)
        if started.exit != 0 or not documents or not isinstance(documents[-1], dict):
            return "start-failed"  # the steps go on, so every difference is reported
        token: str = documents[-1]["runToken"]
        return token

    def add(self, name: str, token: str, verb: str, key: str, payload: Any) -> Outcome:
        path = write(self.work / f"{name}.json", payload)
        return self.step(
            name,
            *("-C", str(self.repo.root), "verification", "run", verb, "add"),
            *locator(self.repo, token),
            *("--idempotency-key", key, "--payload", path),
        )


def directory_before_verification(s: Session) -> None:
    """``-C`` / ``--directory`` wherever spx accepts them (A53, A56)."""
    token = s.start()
    root = str(s.repo.root)
    where = ["verification", "run", "status", *locator(s.repo, token)]
    s.step("C_after_the_verb", *where, "-C", root)
    s.step("C_before_verification", "-C", root, *where)
    s.step("C_attached_before_verification", f"-C{root}", *where)
    s.step("directory_before_verification", "--directory", root, *where)
    s.step("directory_equals_before_verification", f"--directory={root}", *where)
    s.step("directory_after_verification", "verification", "--directory", root, *where[1:])


def keys_rules_and_extra_fields(s: Session) -> None:
    """Keys of the client's choice, a rule with ``:``, extra fields (A59 A60 A61 A63 A64)."""
    token = s.start()
    recorded = unit("keep.py")
    s.add("scope_key_of_the_clients_choice", token, "scope", "scope-00", recorded)
    s.add("scope_key_reused_as_a_finding_key", token, "finding", "scope-00", finding(recorded))
    s.add("extra_id_field", token, "scope", "idem-1", {**unit("new.py"), "id": "legacy"})
    s.add(
        "extra_subjectPaths_field",
        token,
        "scope",
        "idem-2",
        {**unit("src/a.py"), "subjectPaths": ["src/a.py"]},
    )
    s.add("rule_with_a_colon", token, "finding", "f-colon", finding(recorded, rule="style:naming"))
    s.add("same_key_again", token, "finding", "f-colon", finding(recorded, rule="style:naming"))
    root = str(s.repo.root)
    s.step("status", "-C", root, "verification", "run", "status", *locator(s.repo, token))
    s.step("render", "-C", root, "verification", "run", "render", *locator(s.repo, token))


def observed_in_place_of_evidence(s: Session) -> None:
    """``observed`` where ``evidence`` belongs is the missing ``evidence`` (A37)."""
    token = s.start()
    recorded = unit("keep.py")
    s.add("scope_unit", token, "scope", "u", recorded)
    payload = finding(recorded)
    payload["observed"] = payload.pop("evidence")["observed"]
    s.add("observed_in_place_of_evidence", token, "finding", "f-observed", payload)


def unknown_run(s: Session) -> None:
    """``status``/``render``/``finish`` of a run that does not exist (A51)."""
    s.start()
    root = str(s.repo.root)
    for verb in ("status", "render", "finish"):
        extra = ["--terminal-status", "approved"] if verb == "finish" else []
        s.step(
            f"unknown_token_{verb}",
            *("-C", root, "verification", "run", verb, *locator(s.repo, BOGUS_TOKEN), *extra),
        )


def path_like_token(s: Session) -> None:
    """A run token that is not a safe path segment (A52)."""
    s.start()
    s.step(
        "path_like_token",
        *("-C", str(s.repo.root), "verification", "run", "status", *locator(s.repo, "../x")),
    )


def review_metadata_without_state(s: Session) -> None:
    """A review's terminal metadata without ``state`` (A81)."""
    token = s.start("review")
    metadata = write(
        s.work / "metadata.json",
        {"actor": "me", "body": "", "submittedAt": "2026-01-01T00:00:00Z", "commit": s.repo.head},
    )
    s.step(
        "review_metadata_without_state",
        *("-C", str(s.repo.root), "verification", "run", "finish"),
        *("--verification-type", "review", "--scope-type", "changeset", "--scope", s.repo.scope),
        *("--run", token, "--terminal-status", "approved", "--terminal-metadata", metadata),
    )


SCENARIOS: dict[str, Callable[[Session], None]] = {
    "directory_before_verification": directory_before_verification,
    "keys_rules_and_extra_fields": keys_rules_and_extra_fields,
    "observed_in_place_of_evidence": observed_in_place_of_evidence,
    "unknown_run": unknown_run,
    "path_like_token": path_like_token,
    "review_metadata_without_state": review_metadata_without_state,
}


def play(name: str, invoke: Invoke, work: Path) -> list[dict[str, Any]]:
    """Run scenario ``name`` in a fresh repository under ``work``; its normalised outcomes."""
    work.mkdir(parents=True, exist_ok=True)
    session = Session(invoke, Repo(work / "repo"), work)
    SCENARIOS[name](session)
    paths = {str(session.repo.root): "<repo>", str(work): "<work>"}
    return [
        {
            "name": outcome.name,
            "argv": json.loads(normalise_text(json.dumps(outcome.argv), paths)),
            "exit": outcome.exit,
            "stdout": _documents(normalise_text(outcome.stdout, paths)),
            "stderr": normalise_text(outcome.stderr, paths).splitlines(),
        }
        for outcome in session.outcomes
    ]


_STORE = re.compile(r"<repo>/(?:\.spx|\.review-handoff/verification)/branch/[^/\"\s]+")
_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-\d{3}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")
_HEX = re.compile(r"\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b")
_PROGRAM = re.compile(r"\b(?:spx|review-loop) verification run\b")


def normalise_text(text: str, paths: dict[str, str]) -> str:
    """Replace per-run and per-implementation values with placeholders."""
    for path, placeholder in sorted(paths.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, placeholder)
    for pattern, placeholder in (
        (_STORE, "<store>"),
        (_TOKEN, "<token>"),
        (_TIME, "<time>"),
        (_HEX, "<sha>"),
        (_PROGRAM, "<program> verification run"),
    ):
        text = pattern.sub(placeholder, text)
    return text


def _documents(stdout: str) -> list[Any]:
    """Each stdout line as JSON (a line that is not JSON is kept as text)."""
    documents: list[Any] = []
    for line in stdout.splitlines():
        try:
            documents.append(json.loads(line))
        except ValueError:
            documents.append(line)
    return documents
