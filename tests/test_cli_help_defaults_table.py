"""Process and contract tests: every default a help page documents, proven by behaviour.

:data:`PROOFS` maps each ``(command, flag)`` whose help (``review-loop COMMAND --help``,
from ``review_loop/orchestrator/cli/manual.py``) states a default to the exact default text
and the test that proves it; :data:`PROSE` does the same for defaults stated in a flag's
meaning, a page's notes or the footer ("by default", "without it", ``${VAR:-...}``), and
:data:`HELP_JSON` for the ``defaults`` of the agents' ``review-loop help`` document. The
contract tests fail when a help text documents a default with no entry here, or an entry's
text no longer matches the help, so a new default cannot be added unproven and a changed
default or help text fails a test.

Each proof runs the real command without the flag (fake reviewer CLIs on PATH through the
real process layer, or the offline simulated reviewer) and observes the defaulted value in
the JSON document, the records, the liveness line on stderr or the argv the fake reviewer
received. The parametrized proofs take their cases from the tables, so a flag added to a
table is proven on every command listed there.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli.manual import _FOOTER, PAGES
from tests import test_cli_help_defaults as earlier
from tests.fakes import FakeCLIs
from tests.fakes.skills import install_skills
from tests.test_cli import git_repo
from tests.test_simulated_replies import BLOCKED, CONCERNS, FIX

TOP = "the git top level of the cwd"
TIMEOUT = "prefs timeoutMs (20 minutes), or REVIEW_LOOP_TIMEOUT_MS"
BRANCH_RUN = "the current branch's run (named by the branch slug)"
SKILLS = "prefs skillDirs, then the host's own skill directories"
PREFS_PEERS = "the prefs order, without the host"

# (command, flag as the help spells it) -> (the default the help states, its proof)
PROOFS: dict[tuple[str, str], tuple[str, str]] = {
    **{
        (c, "--repo DIR"): (TOP, "test_repo_default_is_the_git_top_level_of_the_cwd")
        for c in (
            "consult",
            "sessions",
            "evidence",
            "verify-diff",
            "run",
            "fix-completion",
            "close",
            "preflight",
            "converge",
            "blind-review",
            "ledger",
            "lessons",
        )
    },
    ("scope", "--repo DIR"): (TOP, "test_repo_default_is_the_git_top_level_of_the_cwd"),
    ("audit", "--repo DIR"): (TOP, "test_repo_default_is_the_git_top_level_of_the_cwd"),
    ("verification", "--repo ROOT"): (TOP, "test_repo_default_is_the_git_top_level_of_the_cwd"),
    # proven where the demo's own process tests run it (a second run here would add ~7 s)
    ("demo", "--keep"): (
        "removed",
        "tests.test_cli_demo::test_process_the_demo_prints_one_document_and_removes_its_directory",
    ),
    ("doctor", "--repo DIR"): (
        f"{TOP}; outside a checkout, the cwd",
        "test_doctor_repo_default_inside_and_outside_a_checkout",
    ),
    **{
        (c, "--timeout SECONDS"): (TIMEOUT, "test_timeout_default_on_every_command")
        for c in ("consult", "verify-diff", "run", "preflight", "converge", "blind-review", "audit")
    },
    **{
        (c, "--base REF"): ("HEAD", "test_base_default_is_head")
        for c in ("evidence", "verify-diff", "run", "blind-review", "ledger")
    },
    **{
        (c, "--paths a,b"): ("every changed path", "test_paths_default_is_every_changed_path")
        for c in ("evidence", "blind-review", "ledger")
    },
    **{
        (c, "--run NAME"): (BRANCH_RUN, "test_run_name_default_is_the_branch_run")
        for c in ("preflight", "converge", "blind-review", "ledger")
    },
    **{
        (c, "--reviewer P"): (PREFS_PEERS, "test_peers_default_is_the_prefs_order_without_host")
        for c in ("preflight", "converge")
    },
    **{
        (c, "--skill-dir DIR"): (SKILLS, "test_skill_dir_default")
        for c in ("preflight", "converge")
    },
    **{
        (c, "--fallback F|auto"): ("no fallback", "test_fallback_default_is_none")
        for c in ("consult", "converge")
    },
    ("consult", "--reviewer P"): (
        "none: name one, or give --host H for the first two of the prefs order (without the "
        "host when skipHost is true: --skip-host, or prefs skipHost)",
        "test_consult_peer_default_names_no_peer_unless_the_host_is_skipped",
    ),
    ("consult", "--skip-host [true|false]"): ("prefs skipHost", "test_skip_host_default"),
    ("consult", "--resume SESSION_ID"): (
        "a new session",
        "test_consult_resume_and_fallback_defaults",
    ),
    ("sessions", "--product P"): (
        "every product",
        "test_sessions_product_default_is_every_product",
    ),
    ("prefs", "ACTION"): ("show", "test_action_defaults"),
    ("ledger", "ACTION"): ("show", "test_action_defaults"),
    ("lessons", "ACTION"): ("list", "test_action_defaults"),
    ("verify-diff", "--max-iterations N"): ("1", "test_verify_diff_max_iterations_default_is_one"),
    ("verify-diff", "--reviewer P"): (
        "the first product in prefs order",
        "test_verify_diff_executor_default",
    ),
    ("run", "--reviewer P"): (
        "the first product of the prefs order that is not the host (claude when --host is not "
        "given): codex under the default order",
        "test_run_reviewer_default",
    ),
    ("run", "--completion review|pass"): ("review", "test_run_completion_default_is_review"),
    ("run", "--rounds N|+N"): ("3", "test_run_defaults_rounds_scope_and_the_packet_is_a_file"),
    ("run", "--scope SLUG"): (
        "auto-loop",
        "test_run_defaults_rounds_scope_and_the_packet_is_a_file",
    ),
    ("run", "--packet PATH"): (
        "with --continue, the scope's latest active packet",
        "test_run_defaults_rounds_scope_and_the_packet_is_a_file",
    ),
    ("run", "--intake [true|false]"): ("false", "test_run_intake_default_is_false"),
    **{
        (c, "--blind-reviewer P"): ("claude", "test_blind_reviewer_default_is_claude")
        for c in ("preflight", "converge")
    },
    ("converge", "--host-position FILE"): ("round A only", "test_converge_host_position_default"),
    ("blind-review", "--reviewer P"): ("claude", "test_blind_review_reviewer_default_is_claude"),
    ("ledger", "--detail D"): ("empty", "test_ledger_detail_default_is_empty"),
    ("audit", "--concerns FILE"): (
        "the concerns configured in $REVIEW_LOOP_HOME/audit-concerns.json and "
        "$REVIEW_LOOP_AUDIT_CONCERNS; a selected concern none configures is missing-skill",
        "test_audit_concerns_default",
    ),
    ("audit", "--driver FILE|self"): (
        "none: the audit is BLOCKED not-started",
        "test_audit_driver_and_deterministic_defaults",
    ),
    ("audit", "--deterministic-verification FILE"): (
        "unestablished",
        "test_audit_driver_and_deterministic_defaults",
    ),
}

# Defaults stated in prose: (command or "footer", flag spelling or "notes") -> (the words
# that state it, its proof).
PROSE: dict[tuple[str, str], tuple[str, str]] = {
    **{
        (c, "--host H"): ("by default false", "test_skip_host_default")
        for c in ("consult", "run", "preflight", "converge")
    },
    ("converge", "--host-position FILE"): (
        "without it only round A runs",
        "test_converge_host_position_default",
    ),
    ("ledger", "--result TOKEN"): (
        "without it, agentic-review, architecture-hardening and goal-gate take it from their proof",
        "test_ledger_result_default_is_the_proof",
    ),
    ("lessons", "notes"): (
        "${AGENT_LESSONS_DIR:-~/.local/state/agent-lessons}/task-completion-loop/",
        "test_lessons_directory_default",
    ),
    ("footer", "notes"): (
        "REVIEW_LOOP_HOME (default $XDG_CONFIG_HOME/review-loop)",
        "test_state_home_default",
    ),
}

# The agents' ``review-loop help`` document: its ``defaults`` key -> its proof, or why it
# states no default (a description of what always holds).
HELP_JSON: dict[str, str] = {
    "rounds": "test_run_defaults_rounds_scope_and_the_packet_is_a_file",
    "completion": "test_run_completion_default_is_review",
    "reviewerOrder": "test_help_json_defaults",
    "reviewerTimeout": "test_timeout_default_on_every_command",
    "terminationGrace": "test_help_json_defaults",
    "reviewerProgress": "test_help_json_defaults",
    "stateHome": "test_state_home_default",
}
HELP_JSON_NOT_DEFAULTS = {
    "autoLoop": "the mode's description",
    "reviewer": "the products a --reviewer may name",
    "sandbox": "always read-only: no flag changes it (tests/test_cli_trust.py)",
}
PROSE_MARKERS = re.compile(r"\bdefault\b|\bwithout it\b|:-|\botherwise\b")


def _proof_exists(name: str) -> bool:
    """A test of this module or of ``earlier``, or ``module::test`` for one kept elsewhere."""
    if "::" in name:
        module, _, test = name.partition("::")
        return test.startswith("test_") and callable(
            getattr(importlib.import_module(module), test, None)
        )
    return callable(globals().get(name)) or callable(getattr(earlier, name, None))


# -- the contract: every documented default has its proof ------------------------------


def test_contract_every_documented_default_has_a_proof() -> None:
    documented = {
        (command, flag.spelling): flag.default
        for command, page in PAGES.items()
        for flag in page.flags
        if flag.default != "none"
    }
    assert set(documented) == set(PROOFS), (
        f"unproven: {sorted(set(documented) - set(PROOFS))}; "
        f"stale: {sorted(set(PROOFS) - set(documented))}"
    )
    for key, (text, proof) in PROOFS.items():
        assert documented[key] == text, f"{key}: the help now says {documented[key]!r}"
        assert proof.split("::")[-1].startswith("test_") and _proof_exists(proof), (
            f"{key}: no test {proof}"
        )


def _prose() -> Iterator[tuple[tuple[str, str], str]]:
    for command, page in PAGES.items():
        for flag in page.flags:
            yield (command, flag.spelling), flag.meaning
        if page.notes:
            yield (command, "notes"), page.notes
    yield ("footer", "notes"), _FOOTER


def test_contract_every_default_in_prose_has_a_proof() -> None:
    found = {key for key, text in _prose() if PROSE_MARKERS.search(text)}
    assert found == set(PROSE), (
        f"unproven: {sorted(found - set(PROSE))}; stale: {sorted(set(PROSE) - found)}"
    )
    texts = dict(_prose())
    for key, (words, proof) in PROSE.items():
        assert words in re.sub(r"\s+", " ", texts[key]), f"{key}: no longer says {words!r}"
        assert _proof_exists(proof), f"{key}: no test {proof}"


def test_contract_every_default_of_the_help_document_has_a_proof() -> None:
    from review_loop.orchestrator.cli.help import execute

    keys = set(execute(None)["defaults"])  # type: ignore[arg-type]
    assert keys == set(HELP_JSON) | set(HELP_JSON_NOT_DEFAULTS)
    assert all(_proof_exists(proof) for proof in HELP_JSON.values())


# -- the world the proofs run in ----------------------------------------------------------


@dataclass
class Ran:
    code: int
    doc: Any
    stderr: str


@dataclass
class World:
    """A repository with a change, fake reviewer CLIs first on PATH, a private home."""

    tmp: Path
    repo: Path
    fakes: FakeCLIs
    env: dict[str, str]

    @property
    def deep(self) -> Path:
        path = self.repo / "deep" / "er"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def run(self, *args: str, cwd: Path | None = None, **extra: str) -> Ran:
        env = {**self.env, **extra}
        ran = subprocess.run(
            [sys.executable, "-m", "review_loop", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd or self.repo,
            timeout=120,
        )
        doc = json.loads(ran.stdout) if ran.stdout.strip().startswith("{") else ran.stdout
        return Ran(ran.returncode, doc, ran.stderr)

    def ok(self, *args: str, cwd: Path | None = None, **extra: str) -> Any:
        ran = self.run(*args, cwd=cwd, **extra)
        assert ran.code == 0, (args, ran.doc, ran.stderr)
        return ran.doc

    def reviews(self) -> None:
        """Every fake reviewer answers a well-formed review (BLOCKED, one finding)."""
        self.fakes.script(any_=[{"mode": "ok", "text": BLOCKED}])

    def products_asked(self) -> list[str]:
        return [call["product"] for call in self.fakes.calls()]

    def skills(self) -> Path:
        """Install every skill the loop needs and name their directory in prefs."""
        where = install_skills(self.tmp / "skills")
        self.ok("prefs", "set", "skillDirs", str(where))
        return where

    def commit(self, *names: str) -> None:
        git = ["git", "-C", str(self.repo), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "add", *names], check=True)
        subprocess.run([*git, "commit", "-qm", "more"], check=True)

    def head(self, ref: str = "HEAD") -> str:
        return subprocess.run(
            ["git", "-C", str(self.repo), "rev-parse", ref],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()


@pytest.fixture
def world(tmp_path: Path) -> World:
    repo = git_repo(tmp_path / "repo")
    (repo / "README").write_text("changed\n")
    fakes = FakeCLIs(tmp_path / "fakes")
    env = fakes.env(path_only=True)
    # no deadline, lessons directory, config home or skill directories of the test run's own
    for name in (
        "REVIEW_LOOP_TIMEOUT_MS", "AGENT_LESSONS_DIR", "XDG_CONFIG_HOME", "REVIEW_LOOP_SKILL_DIRS"
    ):  # fmt: skip
        env.pop(name, None)
    (tmp_path / "home").mkdir()
    env["HOME"] = str(tmp_path / "home")
    env["REVIEW_LOOP_HOME"] = str(tmp_path / "state")
    return World(tmp_path, repo, fakes, env)


def _packet(world: World, replies: list[str]) -> dict[str, Any]:
    """A ``run`` by the scripted simulated reviewer: its document."""
    script = world.tmp / "replies.json"
    script.write_text(json.dumps(replies, ensure_ascii=False))
    return world.ok(  # type: ignore[no-any-return]
        "run", "--reviewer", "simulated", REVIEW_LOOP_SIMULATED_REPLIES=str(script)
    )


# -- --repo: the git top level of the cwd -------------------------------------------------


def _under_repo(world: World, text: str) -> None:
    assert f"{world.repo}/.review-handoff" in text, text
    assert not (world.deep / ".review-handoff").exists()


def _repo_case(world: World, command: str) -> None:
    """Run ``command`` from a subdirectory without ``--repo``: it works on the top level."""
    deep, repo = world.deep, str(world.repo)
    same_as_top: dict[str, list[str]] = {
        "sessions": ["sessions"],
        "evidence": ["evidence"],
        "ledger": ["ledger", "show"],
        "scope": ["scope", "resolve", "HEAD~1...HEAD"],
    }
    if command in same_as_top:
        argv = same_as_top[command]
        assert world.ok(*argv, cwd=deep) == world.ok(*argv, "--repo", repo, cwd=world.tmp)
    elif command == "verification":
        where = ["--verification-type", "review", "--scope-type", "file", "--scope", "README"]
        argv = ["verification", "run", "status", *where, "--run", "r"]
        below = world.run(*argv, cwd=deep)
        assert below.code != 0 and f"namespace={repo}/.review-handoff/" in below.stderr
        at_top = world.run("verification", "-C", repo, *argv[1:], cwd=world.tmp)
        assert below.stderr == at_top.stderr
    elif command == "consult":
        doc = world.ok("consult", "--peer", "codex", "--question", "hi", cwd=deep)
        _under_repo(world, doc["recordPath"])
    elif command == "verify-diff":
        framing = ["--description", "d", "--fix-direction", "f", "--target", "README"]
        ran = world.run("verify-diff", "--executor", "codex", *framing, cwd=deep)
        _under_repo(world, ran.stderr)
    elif command == "run":
        world.reviews()
        _under_repo(world, world.ok("run", "--reviewer", "codex", cwd=deep)["packetPath"])
    elif command in ("fix-completion", "close"):
        first = _packet(world, [BLOCKED] if command == "fix-completion" else [CONCERNS])
        (world.tmp / "fix.md").write_text(FIX)
        extra = (
            ["--body-file", str(world.tmp / "fix.md")]
            if command == "fix-completion"
            else ["--reason", "accept-concerns"]
        )
        doc = world.ok(command, "--packet", first["packetId"], *extra, cwd=deep)
        assert doc["packetId"] == first["packetId"], doc
    elif command in ("preflight", "converge", "blind-review"):
        world.skills()
        (world.tmp / "plan.md").write_text("# plan\n")
        argv = {"converge": ["--plan", str(world.tmp / "plan.md")]}.get(command, [])
        ran = world.run(command, *argv, cwd=deep)
        assert ran.code in (0, 2), (ran.doc, ran.stderr)
        assert (world.repo / ".review-handoff" / "runtime" / "converge").is_dir()
        assert not (deep / ".review-handoff").exists()
    elif command == "lessons":
        lesson = ["--slug", "s", "--cue", "c", "--lesson", "l", "--evidence", "e", "--run", "r"]
        world.ok("lessons", "write", *lesson, cwd=deep, AGENT_LESSONS_DIR=str(world.tmp / "l"))
        shown = world.ok("ledger", "show", "--repo", repo, "--run", "r")
        assert shown["exists"] is True and "s" in shown["ledger"]["lessons"], shown
    elif command == "audit":
        world.commit("README")
        doc = world.ok("audit", "HEAD~1...HEAD", "--driver", "self", cwd=deep)
        _under_repo(world, doc["runFile"])
    else:  # pragma: no cover - a table row without a case here fails loudly
        raise AssertionError(f"no --repo case for {command}")


@pytest.mark.parametrize(
    "command",
    sorted(c for (c, _), (_, p) in PROOFS.items() if p.startswith("test_repo_default")),
)
def test_repo_default_is_the_git_top_level_of_the_cwd(world: World, command: str) -> None:
    world.commit("README")  # two commits: scope and audit resolve HEAD~1...HEAD
    (world.repo / "README").write_text("changed again\n")
    _repo_case(world, command)


def test_doctor_repo_default_inside_and_outside_a_checkout(world: World) -> None:
    def looked_in(cwd: Path) -> set[str]:
        doc = world.run("doctor", cwd=cwd).doc
        return {path for skill in doc["skills"] for path in skill["lookedIn"]}

    inside = looked_in(world.deep)
    assert any(p.startswith(f"{world.repo}/.claude/") for p in inside), inside
    assert not any(p.startswith(f"{world.deep}/") for p in inside)
    outside = world.tmp / "elsewhere"
    outside.mkdir()
    assert any(p.startswith(f"{outside}/.claude/") for p in looked_in(outside))


# -- --timeout: prefs timeoutMs (20 minutes), or REVIEW_LOOP_TIMEOUT_MS ------------------


def _timeout_argv(world: World, command: str) -> list[str]:
    if command == "consult":
        return ["consult", "--peer", "codex", "--question", "hi"]
    if command == "verify-diff":
        framing = ["--description", "d", "--fix-direction", "f", "--target", "README"]
        return ["verify-diff", "--executor", "codex", *framing]
    if command == "run":
        return ["run", "--reviewer", "codex"]
    if command in ("preflight", "blind-review"):
        return [command]
    if command == "converge":
        world.skills()
        (world.tmp / "plan.md").write_text("# plan\n")
        return ["converge", "--plan", str(world.tmp / "plan.md")]
    if command == "audit":
        (world.repo / "a.py").write_text("x = 1\n")
        world.commit("a.py", "README")
        concerns = {"concerns": {"python:audit-python-code": {"product": "codex"}}}
        home = Path(world.env["REVIEW_LOOP_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        (home / "audit-concerns.json").write_text(json.dumps(concerns))
        return ["audit", "HEAD~1...HEAD", "--driver", "self"]
    raise AssertionError(f"no --timeout case for {command}")  # pragma: no cover


@pytest.mark.parametrize(
    "command",
    sorted(c for (c, _), (_, p) in PROOFS.items() if p == "test_timeout_default_on_every_command"),
)
def test_timeout_default_on_every_command(world: World, command: str) -> None:
    ran = world.run(*_timeout_argv(world, command))
    # the liveness line a reviewer's launch prints names its deadline
    assert "status=active elapsed=00:00 timeout=20:00" in ran.stderr, (ran.doc, ran.stderr)
    assert "timeout=" not in ran.stderr.replace("timeout=20:00", ""), ran.stderr


def test_timeout_default_comes_from_prefs_then_the_environment(world: World) -> None:
    ask = ["consult", "--peer", "codex", "--question", "hi"]
    assert "timeout=20:00" in world.run(*ask).stderr
    assert "timeout=00:30" in world.run(*ask, REVIEW_LOOP_TIMEOUT_MS="30000").stderr
    world.ok("prefs", "set", "timeoutMs", "90000")
    assert "timeout=01:30" in world.run(*ask).stderr
    assert "timeout=00:07" in world.run(*ask, "--timeout", "7").stderr


# -- --base HEAD and --paths: every changed path --------------------------------------------


def _evidence_of(world: World, command: str) -> dict[str, Any]:
    """The evidence ``command`` computed without --base and --paths."""
    if command == "evidence":
        return world.ok("evidence")["evidence"]  # type: ignore[no-any-return]
    if command == "run":
        world.reviews()
        doc = world.ok("run", "--reviewer", "codex")
        state = world.repo / ".review-handoff" / "runtime" / doc["packetId"]
        return {"baseSha": json.loads((state / "auto-run-state.json").read_text())["baseSha"]}
    if command == "blind-review":
        return world.run("blind-review").doc["evidence"]  # type: ignore[no-any-return]
    if command == "ledger":
        gate = world.ok("ledger", "gate", "--gate", "verification", "--result", "PASS")
        return gate["gate"]["evidence"]  # type: ignore[no-any-return]
    if command == "verify-diff":
        framing = ["--description", "d", "--fix-direction", "f", "--target", "README"]
        world.run("verify-diff", "--executor", "codex", *framing)
        return {"prompt": "".join(call["stdin"] for call in world.fakes.calls())}
    raise AssertionError(f"no --base case for {command}")  # pragma: no cover


@pytest.mark.parametrize(
    "command", sorted(c for (c, _), (_, p) in PROOFS.items() if p == "test_base_default_is_head")
)
def test_base_default_is_head(world: World, command: str) -> None:
    world.commit("README")  # HEAD is now a second commit, not the first
    (world.repo / "README").write_text("changed at HEAD\n")
    head = world.head()
    evidence = _evidence_of(world, command)
    if command == "verify-diff":  # the executor is shown the diff against HEAD
        assert "-changed\n+changed at HEAD" in evidence["prompt"], evidence["prompt"]
    else:
        assert evidence["baseSha"] == head, evidence


@pytest.mark.parametrize(
    "command",
    sorted(
        c for (c, _), (_, p) in PROOFS.items() if p == "test_paths_default_is_every_changed_path"
    ),
)
def test_paths_default_is_every_changed_path(world: World, command: str) -> None:
    (world.repo / "new.txt").write_text("new\n")
    (world.repo / "sub").mkdir()
    (world.repo / "sub" / "more.txt").write_text("more\n")
    evidence = _evidence_of(world, command)
    assert evidence["pathFilter"] is None
    assert evidence["coveredPaths"] == ["README", "new.txt", "sub/more.txt"], evidence


# -- --run NAME: the current branch's run ----------------------------------------------------


def _slug_of(world: World, branch: str) -> str:
    from review_loop.agents.branch import branch_identity, branch_slug

    return branch_slug(branch_identity(branch, world.head()))


def _slug(world: World) -> str:
    branch = subprocess.run(
        ["git", "-C", str(world.repo), "branch", "--show-current"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return _slug_of(world, branch)


@pytest.mark.parametrize(
    "command",
    sorted(
        c for (c, _), (_, p) in PROOFS.items() if p == "test_run_name_default_is_the_branch_run"
    ),
)
def test_run_name_default_is_the_branch_run(world: World, command: str) -> None:
    subprocess.run(["git", "-C", str(world.repo), "branch", "-qM", "master"], check=True)
    world.skills()
    (world.tmp / "plan.md").write_text("# plan\n")
    argv = {
        "converge": ["converge", "--plan", str(world.tmp / "plan.md")],
        "ledger": ["ledger", "set", "--id", "F1", "--status", "PENDING"],
    }.get(command, [command])
    runs = world.repo / ".review-handoff" / "runtime" / "converge"

    def ran_in() -> list[str]:
        ran = world.run(*argv)
        assert ran.code in (0, 2), (ran.doc, ran.stderr)
        assert ran.doc.get("run", _slug(world)) == _slug(world), ran.doc
        return sorted(p.name for p in runs.iterdir())

    assert ran_in() == [_slug(world)]
    assert ran_in() == [_slug(world)]  # a second call continues the same run
    subprocess.run(["git", "-C", str(world.repo), "checkout", "-qb", "other"], check=True)
    other = _slug(world)  # another branch has its own
    assert other.startswith("other") and ran_in() == sorted([other, _slug_of(world, "master")])


# -- reviewers chosen by default ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["preflight", "converge"])
def test_peers_default_is_the_prefs_order_without_host(world: World, command: str) -> None:
    assert PROOFS[(command, "--reviewer P")][0] == PREFS_PEERS
    world.skills()
    (world.tmp / "plan.md").write_text("# plan\n")
    argv = (
        ["converge", "--plan", str(world.tmp / "plan.md")] if command == "converge" else [command]
    )
    world.ok("prefs", "set", "order", "grok,codex,gemini,claude")
    ran = world.run(*argv, "--host", "codex")
    assert ran.code in (0, 2), (ran.doc, ran.stderr)
    peers = (
        [ran.doc["peers"][side]["product"] for side in "AB"]
        if command == "converge"
        else [check["product"] for check in ran.doc["checks"] if check["role"].startswith("Peer")]
    )
    assert peers == ["grok", "gemini"], ran.doc
    assert "codex" not in world.products_asked()


def test_run_reviewer_default(world: World) -> None:
    world.reviews()
    assert world.ok("run")["reviewer"] == "codex"  # the default order; claude is the host
    world.ok("prefs", "set", "order", "claude,grok,codex")
    (world.repo / "README").write_text("changed for the next packet\n")
    assert world.ok("run", "--scope", "second")["reviewer"] == "grok"
    (world.repo / "README").write_text("changed for a third packet\n")
    assert world.ok("run", "--scope", "third", "--host", "grok")["reviewer"] == "claude"
    assert world.products_asked() == ["codex", "grok", "claude"]


def test_verify_diff_executor_default(world: World) -> None:
    world.ok("prefs", "set", "order", "grok,codex,claude")
    framing = ["--description", "d", "--fix-direction", "f", "--target", "README"]
    world.run("verify-diff", *framing)
    assert set(world.products_asked()) == {"grok"}, world.fakes.calls()


@pytest.mark.parametrize(
    "command",
    sorted(c for (c, _), (_, p) in PROOFS.items() if p == "test_blind_reviewer_default_is_claude"),
)
def test_blind_reviewer_default_is_claude(world: World, command: str) -> None:
    world.ok("prefs", "set", "order", "codex,grok")
    if command == "preflight":
        doc = world.run("preflight").doc
        blind = [check for check in doc["checks"] if check["role"] == "Blind reviewer"]
        assert [check["product"] for check in blind] == ["claude"], doc
    else:  # no preflight recorded: the blind reviewer is proven alongside round A
        world.skills()
        (world.tmp / "plan.md").write_text("# plan\n")
        ran = world.run("converge", "--plan", str(world.tmp / "plan.md"))
        assert ran.code in (0, 2), (ran.doc, ran.stderr)
    # the peers are codex and grok (the prefs order); claude is asked only as the blind one
    assert sorted(world.products_asked()) == ["claude", "codex", "grok"]


def test_fallback_default_is_none(world: World) -> None:
    world.fakes.script(codex=[{"mode": "not-logged-in"}])
    ran = world.run("consult", "--peer", "codex", "--question", "hi")
    assert ran.code == 2 and ran.doc["fallbacks"] == [], ran.doc
    assert world.products_asked() == ["codex"]  # nobody else was asked
    world.skills()
    (world.tmp / "plan.md").write_text("# plan\n")
    ran = world.run("converge", "--plan", str(world.tmp / "plan.md"), "--peer", "codex,grok")
    # codex could not be asked: no other product took its place (claude is asked once, as
    # the blind reviewer proven alongside round A; gemini, the one an auto fallback takes,
    # never)
    asked = world.products_asked()
    assert "gemini" not in asked and asked.count("claude") == 1, asked
    assert ran.doc["peers"]["A"]["product"] == "codex", ran.doc


def test_skip_host_default(world: World) -> None:
    from review_loop.prefs import Prefs

    assert Prefs().skipHost is False
    # no --peer, no --host: nobody is chosen
    ran = world.run("consult", "--question", "hi")
    assert ran.code == 1 and "--host H --skip-host" in ran.doc["error"], ran.doc
    # --host, skipHost false: the first two of the prefs order, the host's product included
    doc = world.ok("consult", "--host", "codex", "--question", "hi")
    assert [r["product"] for r in doc["results"]] == ["claude", "codex"], doc
    # prefs skipHost true: the first two of the prefs order without the host
    world.ok("prefs", "set", "skipHost", "true")
    doc = world.ok("consult", "--host", "codex", "--question", "hi")
    assert [r["product"] for r in doc["results"]] == ["claude", "grok"], doc
    assert sorted(world.products_asked()) == ["claude", "claude", "codex", "grok"]
    # run, converge and preflight never choose the host, whatever skipHost says
    world.ok("prefs", "set", "skipHost", "false")
    world.ok("prefs", "set", "order", "codex,grok")
    world.reviews()
    assert world.ok("run", "--host", "codex")["reviewer"] == "grok"


# -- run --completion, --intake ------------------------------------------------------------------


def test_run_completion_default_is_review(world: World) -> None:
    doc = _packet(world, [CONCERNS])
    assert doc["status"] == "awaiting_user_decision", doc
    from review_loop.orchestrator.cli.help import execute

    assert str(execute(None)["defaults"]["completion"]).startswith("review ")  # type: ignore[arg-type]


def test_run_intake_default_is_false(world: World) -> None:
    doc = _packet(world, [BLOCKED])
    packet = Path(doc["packetPath"]).read_text(encoding="utf-8")
    assert "\n# Review Handoff\n" in packet and "# Review Intake" not in packet, packet
    intake = world.ok(
        "run", "--reviewer", "simulated", "--intake", "--scope", "intake",
        REVIEW_LOOP_SIMULATED_REPLIES=str(world.tmp / "replies.json"),
    )  # fmt: skip
    assert "\n# Review Intake\n" in Path(intake["packetPath"]).read_text(encoding="utf-8")


# -- converge --host-position, --skill-dir -----------------------------------------------------


def test_converge_host_position_default(world: World) -> None:
    world.skills()
    (world.tmp / "plan.md").write_text("# plan\n")
    doc = world.ok("converge", "--plan", str(world.tmp / "plan.md"))
    assert doc["status"] == "awaiting_host_position" and doc["rounds"] == 0, doc
    assert sorted(world.products_asked()) == ["claude", "codex"]  # round A: one call each


@pytest.mark.parametrize("command", ["preflight", "converge"])
def test_skill_dir_default(world: World, command: str) -> None:
    saved = world.skills()
    (world.tmp / "plan.md").write_text("# plan\n")
    argv = (
        ["converge", "--plan", str(world.tmp / "plan.md")] if command == "converge" else [command]
    )
    # prefs skillDirs: every skill is found there
    ran = world.run(*argv, "--host", "claude")
    assert ran.code in (0, 2), (ran.doc, ran.stderr)
    doc = world.ok("preflight", "--host", "claude") if command == "converge" else ran.doc
    found = {skill["name"]: skill["found"] for skill in doc["skills"]}
    assert found and all(str(path).startswith(str(saved)) for path in found.values()), found
    # then the host's own skill directories (~/.claude/skills for claude)
    world.ok("prefs", "set", "skillDirs", "")
    own = install_skills(Path(world.env["HOME"]) / ".claude" / "skills")
    doc = world.run("preflight", "--host", "claude").doc
    found = {skill["name"]: skill["found"] for skill in doc["skills"]}
    assert all(str(path).startswith(str(own)) for path in found.values()), found


# -- ledger --detail, --result -----------------------------------------------------------------


def test_ledger_detail_default_is_empty(world: World) -> None:
    gate = world.ok("ledger", "gate", "--gate", "verification", "--result", "PASS")["gate"]
    assert gate["detail"] == "" and gate["provenance"] == "self-reported", gate


def test_ledger_result_default_is_the_proof(world: World) -> None:
    ran = world.run("ledger", "gate", "--gate", "architecture-hardening")
    assert ran.code == 2 and ran.doc["status"] == "GATE_UNPROVEN", ran.doc
    assert world.ok("ledger", "show")["ledger"]["gates"] == []  # nothing was written
    ran = world.run("ledger", "gate", "--gate", "agentic-review")
    assert ran.code == 2 and ran.doc["status"] == "GATE_UNPROVEN", ran.doc


# -- audit ---------------------------------------------------------------------------------------


def test_audit_concerns_default(world: World) -> None:
    (world.repo / "a.py").write_text("x = 1\n")
    world.commit("a.py", "README")
    doc = world.ok("audit", "HEAD~1...HEAD", "--driver", "self")
    assert doc["concerns"] and {c["status"] for c in doc["concerns"]} == {"missing-skill"}, doc
    assert world.products_asked() == []
    # $REVIEW_LOOP_AUDIT_CONCERNS, then $REVIEW_LOOP_HOME/audit-concerns.json
    concerns = {"concerns": {"python:audit-python-code": {"product": "grok"}}}
    (world.tmp / "env-concerns.json").write_text(json.dumps(concerns))
    world.run(
        "audit", "HEAD~1...HEAD", "--driver", "self",
        REVIEW_LOOP_AUDIT_CONCERNS=str(world.tmp / "env-concerns.json"),
    )  # fmt: skip
    assert set(world.products_asked()) == {"grok"}
    concerns["concerns"]["python:audit-python-code"]["product"] = "codex"
    home = Path(world.env["REVIEW_LOOP_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "audit-concerns.json").write_text(json.dumps(concerns))
    world.run("audit", "HEAD~1...HEAD", "--driver", "self")
    assert set(world.products_asked()) == {"grok", "codex"}


def test_audit_driver_and_deterministic_defaults(world: World) -> None:
    world.commit("README")
    ran = world.run("audit", "HEAD~1...HEAD")
    assert ran.code == 2 and ran.doc["status"] == "BLOCKED", ran.doc
    assert ran.doc["runToken"] == "not-started" and "no run-driver identity" in ran.doc["stderr"]
    doc = world.ok("audit", "HEAD~1...HEAD", "--driver", "self")
    assert doc["deterministicVerification"] == "unestablished", doc


# -- lessons directory, state home, the help document ------------------------------------------


def test_lessons_directory_default(world: World) -> None:
    lesson = ["--slug", "s", "--cue", "c", "--lesson", "l", "--evidence", "e"]
    doc = world.ok("lessons", "write", *lesson)
    default = Path(world.env["HOME"]) / ".local/state/agent-lessons/task-completion-loop/s.md"
    assert doc["path"] == str(default) and default.is_file(), doc
    chosen = world.tmp / "lessons"
    doc = world.ok("lessons", "write", *lesson, AGENT_LESSONS_DIR=str(chosen))
    assert doc["path"] == str(chosen / "task-completion-loop" / "s.md"), doc


def test_state_home_default(world: World) -> None:
    env = {k: v for k, v in world.env.items() if k != "REVIEW_LOOP_HOME"}
    env["XDG_CONFIG_HOME"] = str(world.tmp / "xdg")
    ran = subprocess.run(
        [sys.executable, "-m", "review_loop", "prefs", "set", "order", "codex"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert (world.tmp / "xdg" / "review-loop" / "prefs.toml").is_file()
    env.pop("XDG_CONFIG_HOME")
    ran = subprocess.run(
        [sys.executable, "-m", "review_loop", "prefs", "set", "order", "grok"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert (Path(env["HOME"]) / ".config" / "review-loop" / "prefs.toml").is_file()


def test_help_json_defaults(world: World) -> None:
    from review_loop.orchestrator.cli.help import execute

    stated = execute(None)["defaults"]  # type: ignore[arg-type]
    defaults = world.ok("prefs")["defaults"]
    assert stated["reviewerOrder"] == ",".join(defaults["order"])
    assert stated["terminationGrace"].startswith(f"{defaults['graceMs']} ms ")
    assert stated["reviewerProgress"].startswith(f"every {defaults['livenessMs'] // 1000} seconds")
    # the order is the one used: with no prefs file, consult --host H asks its first two
    doc = world.ok("consult", "--host", "grok", "--question", "hi")
    assert [r["product"] for r in doc["results"]] == list(defaults["order"][:2])
