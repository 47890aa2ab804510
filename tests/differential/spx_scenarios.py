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

from tests.orchestrator.journal.payloads import finding, gap, unit
from tests.test_cli_verification import Repo, locator, write

Invoke = Callable[[list[str], "str | None"], tuple[int, str, str]]
BOGUS_TOKEN = "2026-01-01_00-00-00-000-000000000000"
OUTSIDE_A_REPOSITORY = (
    "outside a git work tree spx keys runs on a 'detached-unknown' pseudo-branch in the "
    "directory (a file-scoped start succeeds, a changeset start fails in git diff); review-loop "
    "refuses every verb there (exit 1, '--repo: … is not inside a git checkout')"
)


@dataclass(frozen=True)
class Outcome:
    """What one command line did."""

    name: str
    argv: list[str]
    exit: int
    stdout: str
    stderr: str
    usage: bool  # an argument-parser usage error: its stderr text is the parser's own
    headline: bool  # only the error's headline is spx's: the detail after it is git's or the OS's
    deviation: str  # a documented deliberate deviation (docs/compatibility.md): not compared


class Session:
    """One scenario's repository and the outcomes of its steps so far."""

    def __init__(self, invoke: Invoke, repo: Repo, work: Path) -> None:
        self.invoke, self.repo, self.work = invoke, repo, work
        self.outcomes: list[Outcome] = []
        self.placeholders: dict[str, str] = {}  # per-run words a scenario names

    def step(
        self,
        name: str,
        *argv: str,
        stdin: str | None = None,
        usage: bool = False,
        headline: bool = False,
        deviation: str = "",
    ) -> Outcome:
        code, out, err = self.invoke(list(argv), stdin)
        outcome = Outcome(name, list(argv), code, out, err, usage, headline, deviation)
        self.outcomes.append(outcome)
        return outcome

    def start(self, kind: str = "audit") -> str:
        source = write(self.work / f"start-{kind}.json", {"changed_paths": ["keep.py", "new.py"]})
        return _token(
            self.step(
                f"start_{kind}",
                *("-C", str(self.repo.root), "verification", "run", "start"),
                *(
                    "--verification-type",
                    kind,
                    "--scope-type",
                    "changeset",
                    "--scope",
                    self.repo.scope,
                ),
                *("--input", source),
            )
        )

    def add(self, name: str, token: str, verb: str, key: str, payload: Any) -> Outcome:
        path = write(self.work / f"{name}.json", payload)
        return self.step(
            name,
            *("-C", str(self.repo.root), "verification", "run", verb, "add"),
            *locator(self.repo, token),
            *("--idempotency-key", key, "--payload", path),
        )


def _token(started: Outcome) -> str:
    """The run token ``start`` printed; after a failed start the steps go on (to report all)."""
    documents = _documents(started.stdout)
    if started.exit != 0 or not documents or not isinstance(documents[-1], dict):
        return "start-failed"
    token: str = documents[-1]["runToken"]
    return token


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


def audit_lifecycle(s: Session) -> None:
    """``--input stdin``, ``input``, scope and findings, refusals, ``finish``, a sealed run."""
    root = str(s.repo.root)
    started = s.step(
        "start_from_stdin",
        *("-C", root, "verification", "run", "start", "--verification-type", "audit"),
        *("--scope-type", "changeset", "--scope", s.repo.scope, "--input", "stdin"),
        stdin=json.dumps({"changed_paths": ["keep.py", "new.py"]}),
    )
    token = _token(started)
    where = locator(s.repo, token)

    def verb(name: str, *argv: str) -> Outcome:
        return s.step(name, "-C", root, "verification", "run", *argv[:1], *where, *argv[1:])

    verb("input", "input")
    keep, new = unit("keep.py"), unit("new.py")
    s.add("scope_keep", token, "scope", keep["unitId"], keep)
    s.add("scope_new", token, "scope", new["unitId"], new)
    s.add("scope_gap", token, "scope", "gap", gap("src/a.py"))
    s.add(
        "same_key_other_payload", token, "scope", keep["unitId"], unit("keep.py", status="skipped")
    )
    s.add("finding_of_an_unrecorded_unit", token, "finding", "f0", finding(unit("nowhere.py")))
    s.add("finding", token, "finding", "f1", finding(keep))
    verb("status_open", "status")
    verb("finish_contradicting_the_evidence", "finish", "--terminal-status", "approved")
    verb("finish_outside_the_vocabulary", "finish", "--terminal-status", "maybe")
    verb("finish", "finish", "--terminal-status", "rejected")
    verb("finish_again_other_status", "finish", "--terminal-status", "approved")
    verb("status_sealed", "status")
    verb("render_sealed", "render")
    verb("input_sealed", "input")
    s.add("scope_after_seal", token, "scope", "late", unit("src/a.py"))
    s.add("finding_after_seal", token, "finding", "late", finding(keep))


def audit_payload_rejections(s: Session) -> None:
    """The rejection blocks of the audit payload rules."""
    token = s.start()
    missing = unit("keep.py")
    del missing["coverageStatus"]
    s.add("missing_field", token, "scope", "a", missing)
    s.add("enum_value", token, "scope", "b", unit("keep.py", status="maybe"))
    nested = unit("keep.py")
    del nested["priorContext"]["languagePartition"]
    s.add("prior_context_without_language", token, "scope", "c", nested)
    s.add("not_an_object", token, "scope", "d", [1, 2])
    s.add("not_json", token, "scope", "e", "{not json")
    s.add("recorded", token, "scope", "f", unit("keep.py"))
    s.add("finding_severity", token, "finding", "g", finding(unit("keep.py"), severity="huge"))
    root = str(s.repo.root)
    metadata = write(s.work / "audit-metadata.json", {"actor": "me"})
    s.step(
        "audit_finish_with_metadata",
        *("-C", root, "verification", "run", "finish", *locator(s.repo, token)),
        *("--terminal-status", "approved", "--terminal-metadata", metadata),
    )


def review_and_test_runs(s: Session) -> None:
    """A review run sealed with its submitted review; a test run with a failing case."""
    root = str(s.repo.root)
    review = s.start("review")
    where = [*("--verification-type", "review", "--scope-type", "changeset")]
    where += ["--scope", s.repo.scope, "--run", review]
    comment = {
        **{"path": "keep.py", "side": "RIGHT", "originalCommit": s.repo.head},
        **{"diffHunk": "@@ -1 +1 @@", "body": "why 2?", "line": 1},
        "finding": {"disposition": "BLOCKING", "summary": "magic number"},
    }
    for name, payload in (
        ("review_finding_without_anchor", {k: v for k, v in comment.items() if k != "line"}),
        ("review_finding", comment),
    ):
        path = write(s.work / f"{name}.json", payload)
        s.step(
            name,
            *("-C", root, "verification", "run", "finding", "add", *where),
            *("--idempotency-key", "c1", "--payload", path),
        )
    submitted = {
        **{"actor": "me", "state": "approved", "body": ""},
        **{"submittedAt": "2026-01-01T00:00:00Z", "commit": s.repo.head},
    }
    for name, state in (
        ("review_metadata_contradicts", "approved"),
        ("review_finish", "changes_requested"),
    ):
        metadata = write(s.work / f"{name}.json", {**submitted, "state": state})
        s.step(
            name,
            *("-C", root, "verification", "run", "finish", *where),
            *("--terminal-status", "rejected", "--terminal-metadata", metadata),
        )
    s.step("review_render", "-C", root, "verification", "run", "render", *where)
    test = s.start("test")
    where = [*("--verification-type", "test", "--scope-type", "changeset")]
    where += ["--scope", s.repo.scope, "--run", test]
    case = write(s.work / "case.json", {"moduleId": "t.py", "testName": "t_a", "errors": ["boom"]})
    s.step(
        "test_finding",
        *("-C", root, "verification", "run", "finding", "add", *where),
        *("--idempotency-key", "t1", "--payload", case),
    )
    for status in ("passed", "failed"):
        s.step(
            f"test_finish_{status}",
            *("-C", root, "verification", "run", "finish", *where, "--terminal-status", status),
        )


def file_scope(s: Session) -> None:
    """A file-scoped run: its root unit decides the terminal status."""
    root = str(s.repo.root)
    source = write(s.work / "file-input.json", {"changed_paths": ["keep.py"]})
    where = ["--verification-type", "audit", "--scope-type", "file", "--scope", "keep.py"]
    started = s.step(
        "start_file",
        *("-C", root, "verification", "run", "start", *where, "--input", source),
    )
    where += ["--run", _token(started)]
    path = write(s.work / "file-unit.json", unit("keep.py"))
    s.step(
        "file_scope_unit",
        *("-C", root, "verification", "run", "scope", "add", *where),
        *("--idempotency-key", "u", "--payload", path),
    )
    s.step(
        "file_finish",
        *("-C", root, "verification", "run", "finish", *where, "--terminal-status", "approved"),
    )
    s.step("file_status", "-C", root, "verification", "run", "status", *where)


def usage_errors(s: Session) -> None:
    """Argument-parser refusals: exit 1, nothing on stdout (the texts are the parsers' own)."""
    token = s.start()
    root = str(s.repo.root)
    head = ["-C", root, "verification", "run"]
    where = locator(s.repo, token)
    start = ["start", "--verification-type", "audit", "--scope-type", "changeset"]
    s.step("start_without_input", *head, *start, "--scope", s.repo.scope, usage=True)
    s.step("unknown_option", *head, "status", *where, "--bogus", "1", usage=True)
    s.step("status_without_run", *head, "status", *where[:-2], usage=True)
    s.step("unknown_verb", *head, "frobnicate", usage=True)
    s.step("bad_verification_type", *head, "status", *where[2:], "--verification-type", "lint")
    s.step("bad_scope_type", *head, "status", *where[:2], *where[4:], "--scope-type", "tree")
    s.step("bad_changeset_scope", *head, "status", *where[:4], "--scope", "main", *where[6:])


def unit_rules(s: Session) -> None:
    """Kind/class, coverage-gap, parent rules; a payload and metadata on stdin."""
    token = s.start()
    root = str(s.repo.root)
    s.add("first_unit_with_a_parent", token, "scope", "p0", unit("keep.py", parent="x"))
    s.add("root", token, "scope", "p1", unit("keep.py"))
    own = unit("new.py")
    s.add("own_parent", token, "scope", "p2", {**own, "parentUnitId": own["unitId"]})
    s.add("unrecorded_parent", token, "scope", "p3", unit("new.py", parent="nowhere"))
    s.add("child", token, "scope", "p4", unit("new.py", parent=unit("keep.py")["unitId"]))
    s.add("kind_not_of_the_class", token, "scope", "k", {**unit("src/a.py"), "auditClass": "spec"})
    covered_gap = {**gap("src/a.py"), "coverageStatus": "audited"}
    s.add("gap_marked_covered", token, "scope", "g1", covered_gap)
    s.add("gap_with_provenance", token, "scope", "g2", {**gap("src/a.py"), **_provenance()})
    s.step(
        "payload_on_stdin",
        *("-C", root, "verification", "run", "scope", "add", *locator(s.repo, token)),
        *("--idempotency-key", "stdin", "--payload", "stdin"),
        stdin=json.dumps({**gap("src/a.py"), "parentUnitId": unit("keep.py")["unitId"]}),
    )
    s.step(
        "input_of_an_unknown_run",
        *("-C", root, "verification", "run", "input", *locator(s.repo, BOGUS_TOKEN)),
    )
    review = s.start("review")
    where = ["--verification-type", "review", "--scope-type", "changeset"]
    submitted = {
        "actor": "me",
        "state": "approved",
        "body": "",
        "submittedAt": "2026-01-01T00:00:00Z",
    }
    s.step(
        "review_metadata_on_stdin",
        *("-C", root, "verification", "run", "finish", *where, "--scope", s.repo.scope),
        *("--run", review, "--terminal-status", "approved", "--terminal-metadata", "stdin"),
        stdin=json.dumps({**submitted, "commit": s.repo.head}),
    )


def file_scope_roots(s: Session) -> None:
    """A file-scoped run's root unit must be its file, and only one."""
    root = str(s.repo.root)
    source = write(s.work / "file-input.json", {"changed_paths": ["keep.py"]})
    where = ["--verification-type", "audit", "--scope-type", "file", "--scope", "keep.py"]
    started = s.step(
        "start_file", *("-C", root, "verification", "run", "start", *where, "--input", source)
    )
    where += ["--run", _token(started)]
    for name, payload in (
        ("root_of_another_file", unit("new.py")),
        ("optional_root", unit("keep.py", requirement="optional")),
        ("root", unit("keep.py")),
        ("second_root", unit("keep.py", concern="tests")),
    ):
        path = write(s.work / f"{name}.json", payload)
        s.step(
            name,
            *("-C", root, "verification", "run", "scope", "add", *where),
            *("--idempotency-key", name, "--payload", path),
        )


def _provenance() -> dict[str, Any]:
    return {"producerProvenance": unit("x.py")["producerProvenance"]}


def locators_and_inputs(s: Session) -> None:
    """Where the run is looked for, and what ``start`` takes as input."""
    token = s.start()
    root = str(s.repo.root)
    where = locator(s.repo, token)
    status = ["verification", "run", "status"]
    s.step("C_a_subdirectory", "-C", str(s.repo.root / "src"), *status, *where)
    s.step("other_verification_type", "-C", root, *status, *where, "--verification-type", "test")
    other = f"{s.repo.base}..{s.repo.base}"
    s.step("other_scope", "-C", root, *status, *where[:4], "--scope", other, *where[6:])
    start = ["verification", "run", "start", "--verification-type", "audit"]
    changeset = ["--scope-type", "changeset", "--scope", s.repo.scope]
    text = write(s.work / "not-json.txt", "not json at all\n")
    s.step("start_with_text_input", "-C", root, *start, *changeset, "--input", text)
    s.step("start_with_empty_stdin", "-C", root, *start, *changeset, "--input", "stdin", stdin="")
    missing = ["--scope-type", "file", "--scope", "missing.py", "--input", text]
    s.step("start_file_scope_of_a_missing_file", "-C", root, *start, *missing)
    outside = s.work / "outside"
    outside.mkdir()
    for name, scope in (
        ("changeset", changeset),
        ("file", ["--scope-type", "file", "--scope", "a.py"]),
    ):
        s.step(
            f"start_{name}_outside_a_repository",
            *("-C", str(outside), *start, *scope, "--input", text),
            deviation=OUTSIDE_A_REPOSITORY,
        )


def scope_forms(s: Session) -> None:
    """How a ``--scope`` may be written: refs, short ids, three dots, file path forms."""
    root = str(s.repo.root)
    source = write(s.work / "forms.json", {"changed_paths": ["keep.py"]})
    start = ["-C", root, "verification", "run", "start", "--verification-type", "audit"]
    short = f"{s.repo.base[:10]}..{s.repo.head[:10]}"
    s.placeholders[short] = "<short>..<short>"
    for name, scope_type, scope in (
        ("refs", "changeset", "HEAD~1..HEAD"),
        ("short_ids", "changeset", short),
        ("three_dots", "changeset", f"{s.repo.base}...{s.repo.head}"),
        ("unknown_revision", "changeset", "nope..HEAD"),
        ("dot_slash_file", "file", "./keep.py"),
        ("absolute_file", "file", str(s.repo.root / "keep.py")),
        ("dotdot_file", "file", "../escape.py"),
    ):
        started = s.step(
            f"start_{name}",
            *start,
            *("--scope-type", scope_type, "--scope", scope, "--input", source),
            headline=name == "unknown_revision",
        )
        if started.exit == 0:
            s.step(
                f"status_{name}",
                *("-C", root, "verification", "run", "status", "--verification-type", "audit"),
                *("--scope-type", scope_type, "--scope", scope, "--run", _token(started)),
            )


SCENARIOS: dict[str, Callable[[Session], None]] = {
    "scope_forms": scope_forms,
    "locators_and_inputs": locators_and_inputs,
    "unit_rules": unit_rules,
    "file_scope_roots": file_scope_roots,
    "usage_errors": usage_errors,
    "audit_lifecycle": audit_lifecycle,
    "audit_payload_rejections": audit_payload_rejections,
    "review_and_test_runs": review_and_test_runs,
    "file_scope": file_scope,
    "directory_before_verification": directory_before_verification,
    "keys_rules_and_extra_fields": keys_rules_and_extra_fields,
    "observed_in_place_of_evidence": observed_in_place_of_evidence,
    "unknown_run": unknown_run,
    "path_like_token": path_like_token,
    "review_metadata_without_state": review_metadata_without_state,
}


def play(
    name: str,
    invoke: Invoke,
    work: Path,
    scenarios: dict[str, Callable[[Session], None]] | None = None,
) -> list[dict[str, Any]]:
    """Run scenario ``name`` (of ``scenarios``, default :data:`SCENARIOS`) in a fresh
    repository under ``work``; its normalised outcomes."""
    work.mkdir(parents=True, exist_ok=True)
    session = Session(invoke, Repo(work / "repo"), work)
    (scenarios or SCENARIOS)[name](session)
    paths = {str(session.repo.root): "<repo>", str(work): "<work>", **session.placeholders}
    return [
        {
            "name": outcome.name,
            "argv": json.loads(normalise_text(json.dumps(outcome.argv), paths)),
            "exit": outcome.exit,
            "stdout": _documents(normalise_text(outcome.stdout, paths)),
            "stderr": normalise_text(outcome.stderr, paths).splitlines(),
            "usageError": outcome.usage,
            "headlineOnly": outcome.headline,
            "deviation": outcome.deviation,
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
