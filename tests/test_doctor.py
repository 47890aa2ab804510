"""Contract, collaboration and process tests of ``review-loop doctor`` and of the flag check
every consult makes (a CLI version without a read-only flag is never run).

Contract tests: help pages are parsed into the flags they define (clap, commander, yargs;
prose is not a definition); every adapter requires exactly flags its ``build`` passes.
Collaboration tests: the dispatcher refuses a fake CLI whose ``--help`` lacks a flag
(``NOT_SUBMITTED`` naming it, the CLI never asked), and reads the help from the cache until
the executable changes. Process tests: ``review-loop doctor`` with fake CLIs, its exit codes,
and its table on a real pseudo-terminal (``script``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.adapters.base import (
    RequiredFlag,
    listed_flags,
    missing_flags,
    required_flags,
)
from review_loop.agents.models import AgentRequest, Capabilities, DeliveryState
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.fakes.fake_agent import GROK_BUILD_HELP, HELP
from tests.test_cli import git_repo, run_cli

CLAP = """Usage: codex exec [OPTIONS]

Options:
  -c, --config <key=value>
          Override a configuration value. Also see --sandbox below.
  -s, --sandbox <SANDBOX_MODE>
          Select the sandbox policy
      --ignore-rules
          Do not load execpolicy .rules files
"""
COMMANDER = """Options:
  --bare                                Minimal mode: skips hooks. Settings come from
                                        --settings, --agents, --plugin-dir.
  --disallowedTools, --disallowed-tools <tools...>  Tools to deny
  -p, --print                           Print response and exit
"""
YARGS = """Options:
  -o, --output-format             The format of the CLI output.  [string]
      --approval-mode             Set the approval mode  [string]
"""


def test_contract_help_pages_are_read_into_the_flags_they_define() -> None:
    assert listed_flags(CLAP) == {"-c", "--config", "-s", "--sandbox", "--ignore-rules"}
    assert listed_flags(COMMANDER) == {
        "--bare", "--disallowedTools", "--disallowed-tools", "-p", "--print",
    }  # fmt: skip
    # --settings is only named in --bare's description: not a flag this version has
    assert "--settings" not in listed_flags(COMMANDER)
    assert listed_flags(YARGS) == {"-o", "--output-format", "--approval-mode"}


def test_contract_missing_flags_names_what_a_help_page_lacks_and_fails_closed() -> None:
    flags = (
        RequiredFlag("-s", "read-only", ("exec", "--help")),
        RequiredFlag("--ignore-rules", "lockdown", ("exec", "--help")),
        RequiredFlag("--json", "read-only", ("exec", "--help")),
    )
    assert missing_flags(flags, {("exec", "--help"): CLAP}) == (flags[2],)
    assert missing_flags(flags, {("exec", "--help"): None}) == flags  # no help: nothing listed
    assert missing_flags(flags, {}) == flags


PROBED = {"codex": Capabilities(), "claude": Capabilities(), "gemini": Capabilities()}
PROBED["grok"] = get_adapter("grok").capabilities(GROK_BUILD_HELP)


@pytest.mark.parametrize("product", ["claude", "codex", "gemini", "grok"])
def test_contract_every_required_flag_is_one_build_passes_and_the_fake_help_lists(
    product: str, tmp_path: Path
) -> None:
    adapter = get_adapter(product)
    capabilities = PROBED[product]
    flags = required_flags(adapter, capabilities)
    assert flags, f"{product} requires no flag"
    assert {flag.purpose for flag in flags} <= {"read-only", "lockdown"}
    request = AgentRequest(prompt="hi", cwd=tmp_path)
    argv = adapter.build(request, command=(product,), capabilities=capabilities).argv
    assert {flag.flag for flag in flags} <= set(argv)
    # the fake CLIs' help (what the other tiers run against) lists every one of them
    fake_help = GROK_BUILD_HELP if product == "grok" else HELP[product]
    assert not missing_flags(flags, dict.fromkeys({f.help_args for f in flags}, fake_help))


def test_contract_a_cli_without_a_read_only_mode_and_the_stand_in_require_no_flag() -> None:
    vibe = get_adapter("grok").capabilities("Usage: grok\n  --max-tool-rounds <rounds>  x\n")
    assert vibe.isolate_in_copy and required_flags(get_adapter("grok"), vibe) == ()
    assert required_flags(get_adapter("simulated"), Capabilities()) == ()
    assert "simulated" in product_names()


# -- the dispatcher refuses a version without the flag --------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


@pytest.mark.anyio
async def test_collaboration_a_cli_whose_help_lacks_a_read_only_flag_is_refused(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_AGENT_HELP_DROP", "-s")
    record = repo / ".review-handoff" / "runtime" / "doctor-test"
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        delivery = await d.consult(PeerRequest(peer="codex", prompt="Hi", record_dir=record))
    assert delivery.state is DeliveryState.NOT_SUBMITTED
    detail = delivery.attempts[-1].detail or ""
    assert "lacks -s (read-only; not in `codex exec --help`)" in detail, detail
    assert fakes.calls() == []  # never run without it, not even once


@pytest.mark.anyio
async def test_collaboration_a_cli_whose_help_fails_is_refused_and_asked_again_later(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def ask(n: int) -> tuple[DeliveryState, str]:
        record = repo / ".review-handoff" / "runtime" / f"doctor-help-{n}"
        async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
            delivery = await d.consult(PeerRequest(peer="gemini", prompt="Hi", record_dir=record))
        return delivery.state, delivery.attempts[-1].detail or ""

    monkeypatch.setenv("FAKE_AGENT_HELP_EXIT", "3")
    state, detail = await ask(1)
    assert state is DeliveryState.NOT_SUBMITTED
    assert "could not show its help (`gemini --help`: exit 3)" in detail, detail
    assert "--approval-mode" in detail and fakes.calls() == []
    monkeypatch.delenv("FAKE_AGENT_HELP_EXIT")  # a failed help is not cached: read again
    assert (await ask(2))[0] is DeliveryState.DELIVERED


@pytest.mark.anyio
async def test_collaboration_the_help_is_read_from_the_cache_until_the_executable_changes(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def ask(n: int) -> DeliveryState:
        record = repo / ".review-handoff" / "runtime" / f"doctor-test-{n}"
        async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
            delivery = await d.consult(PeerRequest(peer="claude", prompt="Hi", record_dir=record))
        return delivery.state

    assert await ask(1) is DeliveryState.DELIVERED
    monkeypatch.setenv("FAKE_AGENT_HELP_DROP", "--strict-mcp-config")
    # The same executable (path, size, mtime): its help is not run again.
    assert await ask(2) is DeliveryState.DELIVERED
    executable = fakes.bin / "claude"
    stat = executable.stat()
    os.utime(executable, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    # A new version (its mtime changed): probed again, and refused.
    assert await ask(3) is DeliveryState.NOT_SUBMITTED
    assert len(fakes.calls()) == 2


# -- review-loop doctor ----------------------------------------------------------------------


def _doctor(fakes: FakeCLIs, tmp_path: Path, **extra: str) -> tuple[int, dict[str, object]]:
    env = fakes.env(path_only=True)
    env.update(REVIEW_LOOP_HOME=str(tmp_path / "state"), HOME=str(tmp_path / "home"), **extra)
    code, document, stderr = run_cli("doctor", env=env, cwd=tmp_path)
    assert document is not None, stderr
    return code, document


def _rows(document: dict[str, object]) -> dict[str, dict[str, object]]:
    products = document["products"]
    assert isinstance(products, list)
    return {row["name"]: row for row in products}


def test_process_doctor_reports_each_product_and_refuses_the_one_missing_a_flag(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    code, document = _doctor(fakes, tmp_path, FAKE_AGENT_HELP_DROP="--permission-mode")
    rows = _rows(document)
    assert set(rows) == set(product_names())
    codex = rows["codex"]
    assert codex["executable"] == str(fakes.bin / "codex") and codex["version"] == "9.9.9"
    assert codex["usable"] is True and codex["flags"]["missing"] == []  # type: ignore[index]
    claude, grok = rows["claude"], rows["grok"]  # both rely on --permission-mode
    for row in (claude, grok):
        assert row["usable"] is False
        assert "lacks --permission-mode (read-only" in str(row["why"]), row
        assert [f["flag"] for f in row["flags"]["missing"]] == ["--permission-mode"]  # type: ignore[index]
    assert rows["simulated"]["offline"] is True
    assert code == 0 and document["ok"] is True
    assert document["usable"] == ["codex", "gemini"]  # never the offline stand-in
    assert {"reviewerSandbox", "isolatedCopy"} <= set(document["lockdown"])  # type: ignore[arg-type]
    skills = document["skills"]
    assert isinstance(skills, list) and skills and all("found" in s for s in skills)


def test_process_doctor_exits_2_when_no_reviewer_is_usable(fakes: FakeCLIs, tmp_path: Path) -> None:
    # every fake lacks one of its own flags: -s (codex), --approval-mode (gemini), and
    # --permission-mode (claude and grok)
    dropped = "-s,--approval-mode,--permission-mode"
    code, document = _doctor(fakes, tmp_path, FAKE_AGENT_HELP_DROP=dropped)
    assert code == 2 and document["ok"] is False and document["usable"] == []
    assert document["status"] == "no-reviewer"
    assert all(not r["usable"] for r in _rows(document).values() if not r["offline"])


def test_process_doctor_reports_a_missing_executable_with_the_path_searched(
    tmp_path: Path,
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes", products=("codex",))
    code, document = _doctor(fakes, tmp_path)
    claude = _rows(document)["claude"]
    assert claude["executable"] is None and claude["usable"] is False
    assert "'claude' is not in any directory on PATH" in str(claude["why"])
    assert code == 0 and document["usable"] == ["codex"]


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a terminal")
def test_process_doctor_prints_a_table_on_a_terminal_and_the_document_on_stdout(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    env = fakes.env(path_only=True)
    env.update(REVIEW_LOOP_HOME=str(tmp_path / "state"), HOME=str(tmp_path / "home"))
    command = f"{sys.executable} -m review_loop doctor"
    typescript = tmp_path / "typescript"
    ran = subprocess.run(
        ["script", "-qec", command, str(typescript)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    screen = ran.stdout.replace("\r\n", "\n")
    assert "reviewer   version  login" in screen
    assert "repository-code lockdown (private mount namespace)" in screen
    document = json.loads(screen[screen.index("\n{") :])  # the document follows the table
    assert document["ok"] is True
    # piped: the document only, no table
    code, piped, stderr = run_cli("doctor", env=env, cwd=tmp_path)
    assert code == 0 and "reviewer   version" not in stderr and piped["ok"] is True
