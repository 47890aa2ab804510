"""Peer selection as the seed's Peer Selection section says (contract and process tests).

- ``--fallback auto`` never swaps in a standard peer of this host (the seed's
  one-consult-per-peer recipe asks each peer in its own call, so the other peer's product
  is not visible there and must never answer in this peer's place);
- ``--peer-command=cc002`` launches the one named peer without a prior alias;
- the ``skipHost`` preference is honoured when ``--skip-host`` is not given;
- ``run`` takes its default reviewer from the preference order, without the host.

Process tests drive ``python -m review_loop`` with executable fake CLIs first on PATH.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator.workflows.consult import resolve_fallbacks, with_peer_command
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

THREE = ("claude", "codex", "grok")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(tmp_path / "repo", {"app.py": "def f(x):\n    return x[0]\n"})
    (root / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    return root


def run_json(args: tuple[str, ...], env: dict[str, str]) -> tuple[int, Any]:
    """``python -m review_loop ARGS``: the exit code and the one JSON document printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.stdout.strip(), proc.stderr  # one JSON document (parsed whole below)
    return proc.returncode, json.loads(proc.stdout)


def rl(*args: str, fakes: FakeCLIs, timeout_ms: str = "20000") -> tuple[int, Any]:
    env = fakes.env(path_only=True)
    env["REVIEW_LOOP_TIMEOUT_MS"] = timeout_ms
    return run_json(args, env)


def products_called(fakes: FakeCLIs) -> list[str]:
    return [str(call["product"]) for call in fakes.calls()]


# -- contract: what --fallback auto may pick --------------------------------------------


def test_contract_auto_leaves_out_the_host_and_its_standard_peers() -> None:
    prefs = Prefs()
    # the prefs order first, then the other real products in the registry's order
    assert resolve_fallbacks(prefs, ["auto"], host="claude") == ("gemini", "opencode", "qwen")
    assert resolve_fallbacks(prefs, ["auto"], host="gemini") == ("grok", "opencode", "qwen")
    # host unknown: any of the first three may be the other peer
    assert resolve_fallbacks(prefs, ["auto"]) == ("gemini", "opencode", "qwen")
    ordered = Prefs(order=("codex", "gemini", "grok", "claude"))
    assert resolve_fallbacks(ordered, ["auto"], host="codex") == ("claude", "opencode", "qwen")
    # a product named explicitly is kept as named, in the user's order (unless it is the
    # host's or a peer's: test_fallback_independence)
    assert resolve_fallbacks(prefs, ["gemini,auto"], host="claude") == (
        "gemini",
        "opencode",
        "qwen",
    )
    assert resolve_fallbacks(prefs, ["grok,auto"]) == ("grok", "gemini", "opencode", "qwen")


# Counts the entry_points.txt files a whole command opens (the look for third-party adapters).
SCAN_COUNTER = """
import atexit, sys
opened = []
sys.addaudithook(
    lambda event, args: event == "open"
    and str(args[0]).endswith("entry_points.txt")
    and opened.append(args[0])
)
atexit.register(lambda: print(len(opened), file=sys.stderr))
sys.argv = ["review-loop", *sys.argv[1:]]
from review_loop.orchestrator.cli import main
main()
"""


@pytest.mark.parametrize(
    ("fallback", "scans"),
    [([], False), (["--fallback", "grok"], False), (["--fallback", "auto"], True)],
)
def test_process_only_fallback_auto_looks_for_third_party_adapters(
    repo: Path, tmp_path: Path, fallback: list[str], scans: bool
) -> None:
    # Listing every distribution's entry points costs each consult about a millisecond
    # (more in a large environment); only ``auto`` needs the full list of products.
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    done = subprocess.run(
        [sys.executable, "-c", SCAN_COUNTER, "consult", "--repo", str(repo), "--peer", "codex",
         "--question", "Q", *fallback],
        capture_output=True, text=True, env=fakes.env(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["text"] == "fine"
    assert (int(done.stderr.strip().splitlines()[-1]) > 0) is scans


def test_contract_standard_peers() -> None:
    prefs = Prefs()
    assert prefs.standard_peers("claude") == {"codex", "grok"}
    assert prefs.standard_peers("grok") == {"claude", "codex"}
    assert prefs.standard_peers(None) == set(THREE)


def test_contract_default_reviewer_follows_the_order_without_the_host() -> None:
    assert Prefs().default_reviewer() == "codex"  # the original's default, claude the host
    assert Prefs(order=("grok", "codex", "claude")).default_reviewer() == "grok"
    assert Prefs().default_reviewer("codex") == "claude"
    assert Prefs(order=("claude",)).default_reviewer() == "claude"  # nothing else to ask


def test_contract_peer_command_without_alias_launches_the_only_peer() -> None:
    def which(name: str) -> str | None:
        return f"/bin/{name}" if name in ("cc002", "codex002") else None

    prefs, peers = with_peer_command(Prefs(), ["claude"], "cc002", which)
    assert peers == ["cc002"] and prefs.peerCommands["cc002"].product == "claude"
    _, peers = with_peer_command(Prefs(), ["claude", "codex"], "codex002", which)
    assert peers == ["claude", "codex002"]
    # the seed's own name: claude's short name `cc`, also with two peers (T10)
    prefs, peers = with_peer_command(Prefs(), ["claude", "codex"], "cc002", which)
    assert peers == ["cc002", "codex"] and prefs.peerCommands["cc002"].product == "claude"
    for unclear in ("acct7", "ccx2"):  # no product or short name (`cc` then a letter)
        with pytest.raises(InputError, match="cannot tell which of the peers"):
            with_peer_command(Prefs(), ["claude", "codex"], unclear, lambda n: f"/bin/{n}")
    for bad in ("../cc002", ".cc002", "a/cc002"):  # still one plain file-name component
        with pytest.raises(InputError, match="--peer-command"):
            with_peer_command(Prefs(), ["claude"], bad, which)


# -- process: the seed's per-peer recipe ----------------------------------------------------

FALLBACK_TIMEOUT_S = "5"
"""``--timeout`` where the fallback must answer: one request's deadline is every attempt's,
so the swapped-in fake must start and answer within it too. 1 s was missed on a loaded
machine (the fallback then timed out as well, and the next product answered); the hanging
peer's deadline expiring is all these tests need of it."""


@pytest.mark.parametrize("host", [["--host", "claude"], []], ids=["host-claude", "no-host"])
def test_process_auto_fallback_never_answers_with_the_other_peer(
    repo: Path, tmp_path: Path, host: list[str]
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "hang"}], any_=[{"mode": "ok", "text": "swapped in"}])
    code, doc = rl(
        "consult", "--repo", str(repo), "--peer", "codex", "--fallback", "auto",
        "--question", "Q", "--timeout", FALLBACK_TIMEOUT_S, *host, fakes=fakes,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["product"] == "gemini"
    assert doc["fallbacks"] == [{"from": "codex", "to": "gemini", "reason": "timeout"}]
    assert products_called(fakes) == ["codex", "gemini"]  # grok, Peer B, never asked


def test_process_auto_fallback_with_only_the_standard_peers_installed_does_not_swap(
    repo: Path, tmp_path: Path
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes", products=THREE)
    fakes.script(codex=[{"mode": "hang"}], any_=[{"mode": "ok", "text": "must not answer"}])
    code, doc = rl(
        "consult", "--repo", str(repo), "--peer", "codex", "--fallback", "auto",
        "--host", "claude", "--question", "Q", "--timeout", "1", fakes=fakes, timeout_ms="1000",
    )  # fmt: skip
    assert code == 2
    assert (doc["status"], doc["code"], doc["fallbacks"]) == ("DELIVERY_UNKNOWN", "timeout", [])
    assert products_called(fakes) == ["codex"]


def test_process_peer_command_cc002_without_alias(repo: Path, tmp_path: Path) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    # Another Claude account's launcher; the default `claude` is gone, so only it can answer.
    shutil.move(fakes.bin / "claude", fakes.bin / "cc002")
    fakes.script(claude=[{"mode": "ok", "text": "from the second account"}])
    code, doc = rl(
        "consult", "--repo", str(repo), "--peer", "claude", "--peer-command=cc002",
        "--question", "Q", fakes=fakes,
    )  # fmt: skip
    assert code == 0, doc
    assert (doc["peer"], doc["product"], doc["text"]) == (
        "cc002",
        "claude",
        "from the second account",
    )
    assert products_called(fakes) == ["claude"]
    code, doc = rl(
        "consult", "--repo", str(repo), "--peer", "claude", "--peer-command=cc003",
        "--question", "Q", fakes=fakes,
    )  # fmt: skip
    assert code == 1 and "cc003" in doc["error"]  # no such executable, no alias


def test_process_peer_command_cc002_with_two_peers_launches_claude(
    repo: Path, tmp_path: Path
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    shutil.move(fakes.bin / "claude", fakes.bin / "cc002")
    fakes.script(
        claude=[{"mode": "ok", "text": "from cc002"}], codex=[{"mode": "ok", "text": "cx"}]
    )
    code, doc = rl(
        "consult", "--repo", str(repo), "--peer", "claude", "--peer", "codex",
        "--peer-command=cc002", "--question", "Q", fakes=fakes,
    )  # fmt: skip
    assert code == 0, doc
    answers = {(r["peer"], r["product"], r["text"]) for r in doc["results"]}
    assert answers == {("cc002", "claude", "from cc002"), ("codex", "codex", "cx")}
    assert sorted(products_called(fakes)) == ["claude", "codex"]


@pytest.mark.parametrize(
    ("saved", "flag", "expected"),
    [
        (None, [], ["claude", "codex"]),  # skipHost false (default): the host may be asked
        ("true", [], ["claude", "grok"]),
        ("true", ["--skip-host=false"], ["claude", "codex"]),  # the flag overrides prefs
        (None, ["--skip-host"], ["claude", "grok"]),
    ],
)
def test_process_skip_host_preference_is_honoured(
    repo: Path, tmp_path: Path, saved: str | None, flag: list[str], expected: list[str]
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    if saved is not None:
        code, _ = rl("prefs", "set", "skipHost", saved, fakes=fakes)
        assert code == 0
    code, doc = rl(
        "consult", "--repo", str(repo), "--host", "codex", *flag, "--question", "Q",
        fakes=fakes,
    )  # fmt: skip
    assert code == 0, doc
    assert [r["peer"] for r in doc["results"]] == expected


@pytest.mark.parametrize(
    ("order", "host", "reviewer"),
    [(None, [], "codex"), ("grok,codex,claude", [], "grok"), (None, ["--host", "codex"], "claude")],
)
def test_process_run_default_reviewer_follows_the_preference_order(
    repo: Path, tmp_path: Path, order: str | None, host: list[str], reviewer: str
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    if order is not None:
        code, _ = rl("prefs", "set", "order", order, fakes=fakes)
        assert code == 0
    verdict = (
        "## Findings\n\n| ID | 严重度 | 标题 | 证据 | Target files | Required fix "
        "| Acceptance check |\n|---|---|---|---|---|---|---|\n\nVerdict: PASS\n"
    )
    fakes.script(any_=[{"mode": "ok", "text": verdict}])
    code, doc = rl("run", "--repo", str(repo), *host, fakes=fakes)
    assert code == 0, doc
    assert products_called(fakes) == [reviewer]
    assert doc["reviewer"] == reviewer
