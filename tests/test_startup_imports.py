"""Contract tests of start-up: each quick command imports only what it needs.

Hosts call ``review-loop`` many times per task, and each call pays its whole start-up
(``docs/performance.md``). Each quick command runs here as a whole process; the test fails when,
at its exit, a module on the command's forbidden list has been imported. A list, not a
timer: the figures are ``scripts/bench_startup.py``'s.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

# What no read-only quick command needs: the async runtime, process control, logging
# back-ends and the HTTP client are for commands that run reviewers.
# logging is imported when the first diagnostic is logged, not by to_stderr().
RUNTIME = {"anyio", "asyncio", "trio", "psutil", "structlog", "httpx", "logging"}
DISPATCH = {
    "review_loop.orchestrator.dispatcher",
    "review_loop.orchestrator.process.run",
    "review_loop.orchestrator.process.reaper",
    "review_loop.orchestrator.process.subreaper",
}
# pydantic builds the shapes; help and prefs show print plain data and never need it.
PYDANTIC = {"pydantic", "pydantic_core", "review_loop.agents.models"}
OTHER_WORKFLOWS = {
    "review_loop.agents.review",
    "review_loop.agents.review_packet",
    "review_loop.agents.converge",
    "review_loop.agents.verification",
    "review_loop.agents.verify_diff",
    "review_loop.orchestrator.workflows.evidence",
    "review_loop.orchestrator.workflows.review_run",
    "review_loop.orchestrator.workflows.converge_gates",
}

# What the two plainest commands do without: no process, no distribution scan, no dataclasses
# (prefs show prints the prefs' JSON form: no Prefs is built).
PLAIN = {"subprocess", "importlib.metadata", "dataclasses", "inspect", "review_loop.prefs.model"}

FORBIDDEN: dict[str, set[str]] = {
    # help lists every product, third-party ones too: importlib.metadata reads the entry points
    "help": RUNTIME | DISPATCH | PYDANTIC | (PLAIN - {"importlib.metadata"}) | {"tomllib"},
    # built-in products only: no scan of installed distributions
    "prefs show": RUNTIME | DISPATCH | PYDANTIC | PLAIN | {"tomli_w"},
    # records are read by their exact JSON types, no pydantic (orchestrator/sessions/records.py);
    # uuid (and platform) and hashlib only where a session id is made or an old gemini read;
    # the adapters' listing vocabulary and EnvPassthrough have modules of their own: the run
    # vocabulary (agents.models, seven dataclasses) is not loaded;
    "sessions": RUNTIME
    | DISPATCH
    | {"pydantic", "pydantic_core", "review_loop.agents.outcomes", "uuid", "platform", "hashlib"}
    | {"review_loop.agents.models"}
    | {"shutil"},  # argparse asks no terminal width (cli.new_parser)
    # the fields it computed are printed as they are: no model built (and no adapters)
    "evidence": RUNTIME | DISPATCH | PYDANTIC | {"review_loop.adapters.base"},
    # a signed ledger is shown without the models; git runs, hence subprocess; the run's
    # paths are a dataclass (converge_store.RunPaths: dataclasses costs it a few ms of ~180)
    "ledger show": RUNTIME
    | DISPATCH
    | PYDANTIC
    | OTHER_WORKFLOWS
    | (PLAIN - {"subprocess", "dataclasses", "inspect"})
    | {"secrets", "review_loop.agents.outcomes"},
    # the core builds plain values; pydantic models only at the embedding API
    # (importlib.resources is allowed: the prompt templates are read through it, ~1.5 ms)
    "consult": {
        "trio",
        "httpx",
        "pydantic",
        "pydantic_core",
        "psutil",
        # resumeReadOnly has its own module
        "review_loop.orchestrator.sessions.listing",
        "review_loop.orchestrator.sessions.records",
        # only a request without a record directory names one with uuid (dispatcher._place)
        "uuid",
        # datetime is allowed: files.iso_utc prints stamps with it (its import is ~1 ms)
    }
    | OTHER_WORKFLOWS,
}


# Runs the command as ``python -m review_loop`` does and, at exit, writes ``sys.modules``:
# ``-X importtime`` would miss a module loaded with importlib.import_module (lazy names).
HARNESS = """
import atexit, json, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["review-loop", *sys.argv[2:]]
runpy.run_module("review_loop", run_name="__main__", alter_sys=True)
"""


def imported_modules(argv: list[str], cwd: Path, env: dict[str, str]) -> set[str]:
    """Every module one whole ``review-loop`` process has imported when it exits."""
    out = cwd.parent / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(out), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
    assert json.loads(done.stdout)["ok"] is True  # the command did its work
    return set(json.loads(out.read_text()))


@functools.cache
def metadata_modules() -> set[str]:
    """What importing ``importlib.metadata`` (the adapters' entry-point lookup) brings in.

    A command that lists every product (``help``, ``sessions``) asks importlib.metadata for
    third-party adapters; the stdlib modules it imports are its own, not the command's.
    """
    probe = "import json, sys; before = set(sys.modules); import importlib.metadata; "
    probe += "print(json.dumps(sorted(set(sys.modules) - before)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout)) - {"importlib.metadata"}


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository with a change, a recorded session, and fake CLIs first on PATH."""
    repo = committed_repo(tmp_path / "repo", {"app.py": "print(1)\n"})
    (repo / "app.py").write_text("print(2)\n")
    record = repo / ".review-handoff" / "runtime" / "main" / "p1" / "reviewer-session.json"
    record.parent.mkdir(parents=True)
    record.write_text(
        json.dumps({"product": "codex", "sessionId": "s-1", "updated": "2026-11-29T10:00:00Z"})
    )
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "ok"}])
    return repo, fakes.env(dict(os.environ))


ARGV = {
    "help": ["help"],
    "prefs show": ["prefs", "show"],
    "sessions": ["sessions"],
    "evidence": ["evidence"],
    "ledger show": ["ledger", "show"],
    "consult": ["consult", "--peer", "codex", "--question", "Ship it?"],
}


@pytest.mark.parametrize("command", list(FORBIDDEN))
def test_contract_quick_commands_import_only_what_they_need(
    command: str, world: tuple[Path, dict[str, str]]
) -> None:
    repo, env = world
    imported = imported_modules(ARGV[command], repo, env)
    assert "review_loop.orchestrator.cli" in imported  # the list is real, not empty
    if "importlib.metadata" in imported:  # what the registry's entry-point lookup brings
        imported -= metadata_modules()
    unneeded = sorted(FORBIDDEN[command] & imported)
    assert not unneeded, f"`review-loop {command}` imports {unneeded} (docs/performance.md)"


def test_contract_prefs_show_with_a_prefs_file_stays_without_pydantic(
    world: tuple[Path, dict[str, str]], user_state: Path
) -> None:
    repo, env = world
    (user_state / "prefs.toml").write_text('order = ["codex", "claude"]\ntimeoutMs = 60000\n')
    imported = imported_modules(["prefs", "show"], repo, env)
    assert not PYDANTIC & imported
    assert "review_loop.prefs.model" not in imported  # the JSON form is printed as read
