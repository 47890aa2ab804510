"""End-to-end: a hostile repository's committed review state is never believed or obeyed.

The repository is the CLI-configuration fixture of ``test_hostile_repo.py`` plus the
forged-state half (:func:`tests.e2e.hostile.forge_review_state`), committed and then CLONED,
as a reviewer meets a pull request: forged ``reviewer-session.json`` records naming a victim
process group this test started (``procStart: null``, ``pgid: 0``, ``pgid: 1``, the
victim's real pid and start time without its marker, ``pid: 1``), a PASS-archived packet and
its run state signed with another key, a converge ledger of PASS gates signed the same way,
and links under ``.review-handoff/`` leading out of the repository (``runtime/evil`` holding
one more forged record, the forged packet's ``events.jsonl``). With the real CLIs from npm
against the fake model API:

- every CLI answers ``review-loop consult`` in the clone; the start-up reaper took none of
  the forged records for its own (git tracks them) and left each as committed; the
  victim's process group and
  review-loop's caller (a shell in review-loop's own process group) are alive afterwards;
  nothing outside the clone changed (the link targets included); no canary fired;
- ``run --continue`` (alone, and naming the forged archive with ``--packet``) with the real
  codex does not return the forged PASS: the model API got
  the review request, the result is the reviewer's own verdict on a new packet, and it names
  the forged run state as untrusted and the committed files as tracked;
- ``ledger gate --gate agentic-review --result PASS`` is ``GATE_UNPROVEN``, the forged ledger
  and packet are reported untrusted, and the Task Completion Result is not ``COMPLETED``;
- ``fix-completion`` and ``close`` on a forged active packet (its ``events.jsonl`` a link
  out) are ``STATE_UNTRUSTED`` and write nothing, inside the packet or outside;
- the same consult through the embedding API (``open_dispatcher`` + ``dispatcher.consult``),
  on asyncio and on trio;
- nothing is left running.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TOKEN_ENV
from tests.e2e.conftest import GIT_ENV
from tests.e2e.helpers import Ran, run
from tests.e2e.hostile import (
    FORGED_RUN,
    ForgedState,
    HostileRepo,
    build_hostile_repo,
    forge_review_state,
)
from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    EVERY_CLI,
    RUN_TIMEOUT,
    Peer,
    PeerFor,
    assert_nothing_left,
    peer_for,
)
from tests.fakes.model_api import Reply

CALLER_SAID = "review-loop's caller is alive"
BLOCKED = (
    "## Findings\n\n"
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|\n"
    "| F1 | [阻塞] | planted review state | .review-handoff/ | .review-handoff | "
    "remove it | git ls-files .review-handoff is empty |\n\nVerdict: BLOCKED"
)


@dataclass(frozen=True)
class Hostile:
    """The hostile repository (built, forged, committed) and the fresh clone tests run in."""

    origin: HostileRepo
    forged: ForgedState
    clone: Path
    victim: subprocess.Popen[bytes]
    skip: tuple[Path, ...]
    """What the outside snapshot leaves out: the clone, and the CLI's own home."""

    def in_clone(self, path: Path) -> Path:
        return self.clone / path.relative_to(self.origin.repo)

    def snapshot(self) -> dict[str, tuple[object, ...]]:
        """Every path under the test's temp dir but the skipped ones, never followed."""
        root = self.clone.parent
        found: dict[str, tuple[object, ...]] = {}
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            dirs[:] = [d for d in dirs if here / d not in self.skip]
            for name in dirs + files:
                path = here / name
                info = path.lstat()
                if stat.S_ISLNK(info.st_mode):
                    found[str(path)] = ("link", os.readlink(path))
                elif stat.S_ISREG(info.st_mode):
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                    found[str(path)] = ("file", digest, info.st_mode, info.st_mtime_ns)
                else:
                    found[str(path)] = ("other", info.st_mode)
        return found

    def victim_alive(self) -> bool:
        if self.victim.poll() is not None:
            return False
        try:
            os.killpg(self.victim.pid, 0)  # its group is still there, led by it
        except ProcessLookupError:
            return False
        return True


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Hostile]:
    """Build, forge, commit, clone; the victim is a ``setsid`` group of this test's own."""
    # Without the test's token: assert_nothing_left counts what review-loop left; this
    # process is ended by pid below.
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    victim = subprocess.Popen(["setsid", "sleep", "600"], stdin=subprocess.DEVNULL, env=env)
    try:
        origin = build_hostile_repo(tmp_path / "hostile-repo", outside=tmp_path / "outside")
        forged = forge_review_state(origin, victim=victim.pid, targets=tmp_path / "targets")
        clone = tmp_path / "clone"
        subprocess.run(
            ["git", "clone", "-q", str(origin.repo), str(clone)],
            env={**os.environ, **GIT_ENV},
            check=True,
            timeout=60,
        )
        assert (clone / ".review-handoff" / "runtime" / "evil").is_symlink()  # carried
        skip = (clone, tmp_path / "home")
        yield Hostile(origin, forged, clone, victim, skip)
    finally:
        victim.kill()  # the test's own process, by pid
        victim.wait()


def review_loop_in_caller(peer: Peer, clone: Path, *args: str) -> tuple[Ran, dict[str, Any]]:
    """``review-loop ARGS`` run by a shell in the same process group (review-loop's caller);
    the shell says it is alive once review-loop is done."""
    script = f'"$@"; rc=$?; echo "{CALLER_SAID} rc=$rc" >&2; exit $rc'
    argv = ["sh", "-c", script, "sh", sys.executable, "-m", "review_loop", *args]
    ran = run(argv, env=peer.env, cwd=clone, timeout=RUN_TIMEOUT)
    doc = ran.json()
    assert isinstance(doc, dict), ran.describe()
    assert f"{CALLER_SAID} rc={ran.returncode}" in ran.stderr, ran.describe()
    return ran, doc


def assert_records_untrusted(hostile: Hostile) -> None:
    """The reaper believed no forged record in the clone: git tracks them, so they are the
    repository's, never this user's sessions (docs/performance.md) — none was
    rewritten, and every tracked file under ``.review-handoff/`` is as committed."""
    for name, path in hostile.forged.records.items():
        if name == "linked":  # reached only through a link: never read, never rewritten
            continue
        record = json.loads(hostile.in_clone(path).read_text())
        assert record["status"] != "lost" and "reason" not in record, (name, record)
    tracked = ("status", "--porcelain", "--untracked-files=no", "--", ".review-handoff")
    status = subprocess.run(
        ["git", "-C", str(hostile.clone), *tracked],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == "", status.stdout


def assert_unharmed(hostile: Hostile, before: dict[str, tuple[object, ...]]) -> None:
    assert hostile.victim_alive(), "a process group review-loop did not start was signalled"
    after = hostile.snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert changed == [], f"written outside the repository: {changed}"
    assert hostile.origin.fired() == [], f"the repository ran code: {hostile.origin.fired()}"
    for link, target in hostile.forged.links.items():  # refused, never replaced
        assert os.readlink(hostile.clone / link) == str(target)


# ----------------------------------------------------------------------------- consult


@pytest.mark.parametrize("product", EVERY_CLI)
def test_consult_in_the_hostile_clone_answers_and_harms_nothing(
    product: str,
    peer_for: PeerFor,  # noqa: F811  (the fixture imported above)
    hostile: Hostile,
) -> None:
    peer = peer_for(product, repo=hostile.clone)
    peer.api.script(Reply.answer(f"Reviewed by {product}: nothing to add."))
    before = hostile.snapshot()

    ran, doc = review_loop_in_caller(
        peer, hostile.clone, "consult", "--repo", str(hostile.clone), "--peer", product,
        "--question", "Review README.md, please.",
    )  # fmt: skip

    assert ran.returncode == 0 and doc["ok"] is True, ran.describe()
    assert doc["text"] == f"Reviewed by {product}: nothing to add.", doc
    assert peer.api.turns(), "no request reached the model"
    assert_unharmed(hostile, before)
    assert_records_untrusted(hostile)
    assert_nothing_left(peer)


# ----------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize("named", [False, True], ids=["continue", "continue-packet"])
def test_run_continue_in_the_clone_asks_the_reviewer_instead_of_the_forged_pass(
    named: bool,
    peer_for: PeerFor,  # noqa: F811
    hostile: Hostile,
) -> None:
    peer = peer_for("codex", repo=hostile.clone)
    peer.api.script(BLOCKED)
    forged_state = hostile.in_clone(hostile.forged.state)
    packet = ["--packet", hostile.forged.packet_id] if named else []  # the forged archive itself
    before = hostile.snapshot()

    ran, doc = review_loop_in_caller(
        peer, hostile.clone, "run", "--continue", *packet, "--reviewer", "codex",
        "--repo", str(hostile.clone),
    )  # fmt: skip

    assert doc.get("verdict") != "PASS" and doc.get("status") != "already_archived", doc
    assert len(peer.api.turns()) == 1, "the review needs a real reviewer call"
    assert (ran.returncode, doc["status"], doc["verdict"], doc["round"]) == (
        0,
        "blocked",
        "BLOCKED",
        1,
    ), ran.describe()
    assert doc["packetId"] != hostile.forged.packet_id
    assert {"path": str(forged_state), "reason": "no valid MAC"} in doc["untrusted"], doc
    assert str(forged_state.relative_to(hostile.clone)) in doc["tracked"], doc["tracked"]
    assert_unharmed(hostile, before)
    assert_records_untrusted(hostile)
    assert_nothing_left(peer)


def test_typed_gate_and_forged_ledger_in_the_clone_prove_nothing(
    peer_for: PeerFor,  # noqa: F811
    hostile: Hostile,
) -> None:
    peer = peer_for("codex", repo=hostile.clone)
    ledger = hostile.in_clone(hostile.forged.ledger)
    forged_state = hostile.in_clone(hostile.forged.state)
    before = hostile.snapshot()
    common = ("--run", FORGED_RUN, "--repo", str(hostile.clone))

    ran, gate = review_loop_in_caller(
        peer, hostile.clone, "ledger", "gate", "--gate", "agentic-review", "--result", "PASS",
        *common,
    )  # fmt: skip

    assert ran.returncode == 2 and gate["ok"] is False, ran.describe()
    assert gate["status"] == "GATE_UNPROVEN" and gate["typedResult"] == "PASS", gate
    untrusted = {u["path"]: u["reason"] for u in gate["untrusted"]}
    assert untrusted.get(str(ledger)) == "no valid MAC", gate["untrusted"]
    assert untrusted.get(str(forged_state)) == "no valid MAC", gate["untrusted"]

    ran, result = review_loop_in_caller(peer, hostile.clone, "ledger", "result", *common)

    assert ran.returncode == 2 and result["result"] != "COMPLETED", result
    assert "agentic-review" not in result["provenGates"], result
    assert {"path": str(ledger), "reason": "no valid MAC"} in result["untrusted"], result
    assert peer.api.turns() == []  # no reviewer was asked, and nothing was believed
    assert_unharmed(hostile, before)
    assert_nothing_left(peer)


FIX = (
    "# Fix Completion\n\n## Fix Conclusion\nNothing.\n## Original Findings Snapshot\nnone\n"
    "## Finding Status\nnone\n## Verification\nnone\n## Re-review Instructions\nnone\n"
)


def test_fix_completion_and_close_refuse_the_forged_active_packet(
    peer_for: PeerFor,  # noqa: F811
    hostile: Hostile,
    tmp_path: Path,
) -> None:
    # Both write a new signed state and append to the packet's (linked) events.jsonl: on a
    # forged packet that would launder it, and write outside the repository.
    peer = peer_for("codex", repo=hostile.clone)
    packet = hostile.clone / ".review-handoff" / "active" / f"{hostile.forged.active_id}.md"
    packet_bytes = packet.read_bytes()
    body = tmp_path / "home" / "fix.md"  # the CLI's home is left out of the snapshot
    body.write_text(FIX)
    before = hostile.snapshot()
    packet_arg = ("--packet", hostile.forged.active_id, "--repo", str(hostile.clone))

    for args in (
        ("fix-completion", *packet_arg, "--body-file", str(body)),
        ("close", *packet_arg, "--reason", "accept-concerns"),
    ):
        ran, doc = review_loop_in_caller(peer, hostile.clone, *args)
        assert ran.returncode == 2 and doc["status"] == "STATE_UNTRUSTED", ran.describe()
        assert "no valid MAC" in doc["message"], doc

    assert packet.read_bytes() == packet_bytes
    assert peer.api.turns() == []
    assert_unharmed(hostile, before)
    assert_nothing_left(peer)


# ----------------------------------------------------------------------------- embedded


@pytest.mark.anyio
async def test_embedded_consult_in_the_hostile_clone(
    peer_for: PeerFor,  # noqa: F811
    hostile: Hostile,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from review_loop import PeerRequest, load_prefs, open_dispatcher

    peer = peer_for("codex", repo=hostile.clone)
    for key, value in peer.env.items():  # this process is the caller: the CLI's world
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    peer.api.script(Reply.answer("Reviewed in process: nothing to add."))
    before = hostile.snapshot()

    async with open_dispatcher(
        repo=hostile.clone, prefs=load_prefs(), progress=lambda _: None
    ) as dispatcher:
        reaped = list(dispatcher.reaped)
        delivery = await dispatcher.consult(
            PeerRequest(peer="codex", prompt="Review README.md, please.")
        )

    assert delivery.ok and delivery.reply is not None, delivery
    assert delivery.reply.text == "Reviewed in process: nothing to add."
    assert_unharmed(hostile, before)
    assert reaped == [], reaped  # committed records are the repository's, not sessions
    assert_records_untrusted(hostile)
    assert_nothing_left(peer)
