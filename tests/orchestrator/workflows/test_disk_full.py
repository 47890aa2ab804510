"""Process tests: a delivered answer is never lost when its records cannot be written.

The repository lives on a small disk that a fake reviewer CLI fills (or makes read-only)
while it is answering, after review-loop has recorded the session and sent the prompt:

- ``consult``: the answer is still returned (``ok``, ``text``) with ``recordError``
  naming the path and the errno; the session record is finished in place, not left
  ``running``; no "unhandled errors in a TaskGroup".
- ``run``: ``RECORD_FAILED`` with the answer, the path and the errno; the answer is kept,
  signed, in the user's state directory; after space is freed ``run --continue`` records
  the round from it and the reviewer is not asked again (the fake's call log counts calls).
  A pending answer without a valid MAC is not believed: the reviewer is asked.

The disk is a real tmpfs (``mount -t tmpfs -o size=…``) where this machine allows mounting.
Where it does not, the same tests run on a plain directory whose writes fail with ENOSPC
once the fake CLI has "filled" it: a filesystem-filling wrapper around ``os.write``,
``os.pwrite`` and ``os.ftruncate`` of this process (no ``unittest.mock``) that refuses
writes to files under the disk's root while the disk is full. The injected variant always
runs, so both paths stay tested.

The fake CLI is a wrapper executable named ``codex`` first on PATH: it reads the prompt
(so review-loop has finished writing the record with the pid), fills the disk, then runs
the shared fake agent (``tests/fakes/fake_agent.py``) with that prompt and relays what it
prints. Its script and call log are baked into the wrapper, outside the disk.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.handoff.git import ensure_layout
from review_loop.orchestrator.workflows.consult import ConsultPlan, run_consult
from review_loop.orchestrator.workflows.pending_answer import PURPOSE, REPO_FILE
from review_loop.orchestrator.workflows.review_run import RunPlan, run_review
from review_loop.prefs import Prefs
from tests.fakes import FAKE_AGENT, FakeCLIs

DISK_SIZE = "1m"
BLOCKED = (
    "## Findings\n\n"
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|\n"
    "| F1 | [阻塞] | crash on empty input | app.py:2 | app.py | guard it | test passes |\n\n"
    "Verdict: BLOCKED\n"
)

WRAPPER = """#!{python}
import os, subprocess, sys
os.environ["FAKE_AGENT_SCRIPT"] = {script!r}
os.environ["FAKE_AGENT_LOG"] = {log!r}
prompt = sys.stdin.buffer.read()
action = open({control!r}).read().strip() if os.path.exists({control!r}) else ""
if action and prompt:  # a real question (not a --version probe): act once
    open({control!r}, "w").close()
else:
    action = ""
if action == "fill-tmpfs":
    # Fill the disk for real: write until the kernel says ENOSPC.
    fd = os.open(os.path.join({root!r}, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    os.close(fd)
elif action == "read-only":
    subprocess.run(["mount", "-o", "remount,ro", {root!r}], check=True)
elif action == "fill-injected":
    open({flag!r}, "w").close()
done = subprocess.run(
    [{python!r}, {agent!r}, "--as=codex", *sys.argv[1:]], input=prompt, capture_output=True
)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
sys.exit(done.returncode)
"""


def _can_mount(probe: Path) -> str | None:
    """``None`` when a tmpfs can be mounted here, else the reason it cannot."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        return "mounting a tmpfs needs root and mount(8)"
    probe.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return f"mount -t tmpfs failed: {done.stderr.strip()}"
    subprocess.run(["umount", str(probe)], check=True)
    return None


class Disk:
    """A small disk holding the repository, which the fake CLI can fill or make read-only.

    ``kind`` is ``tmpfs`` (a real mount) or ``injected`` (ENOSPC from a wrapper around
    this process's writes to files under ``root``, active while ``flag`` exists).
    """

    def __init__(self, root: Path, kind: str, control: Path, flag: Path) -> None:
        self.root = root
        self.kind = kind
        self.control = control
        self.flag = flag

    def arm(self, action: str) -> None:
        """What the fake CLI does to the disk on its next call (before it answers)."""
        self.control.write_text(action)

    def fill_on_next_call(self) -> None:
        self.arm("fill-tmpfs" if self.kind == "tmpfs" else "fill-injected")

    def free(self) -> None:
        """Make room again, and keep the fake from filling the disk a second time."""
        self.arm("")
        (self.root / "filler").unlink(missing_ok=True)
        self.flag.unlink(missing_ok=True)

    def writable(self) -> None:
        subprocess.run(["mount", "-o", "remount,rw", str(self.root)], check=True)


def _injected_enospc(monkeypatch: pytest.MonkeyPatch, root: Path, flag: Path) -> None:
    """While ``flag`` exists, files under ``root`` cannot grow, as on a full disk.

    Like a full filesystem, it refuses only what needs new room: a write or a truncation
    past a file's current end. Rewriting bytes a file already has still works. It sees
    the writes review-loop makes with ``os.write`` (atomic replacements, appends, every
    record); a buffered Python file object writes below ``os.write`` and is not refused,
    which the real tmpfs variant covers.
    """

    def under_root(fd: int) -> bool:
        if not flag.exists():
            return False
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return False
        return target.startswith(str(root) + os.sep)

    def refuse() -> OSError:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real_write, real_pwrite, real_ftruncate = os.write, os.pwrite, os.ftruncate

    def write(fd: int, data: Any) -> int:
        if under_root(fd) and len(data):
            appending = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND
            size = os.fstat(fd).st_size
            start = size if appending else os.lseek(fd, 0, os.SEEK_CUR)
            if start + len(data) > size:
                raise refuse()
        return real_write(fd, data)

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if under_root(fd) and offset + len(data) > os.fstat(fd).st_size:
            raise refuse()
        return real_pwrite(fd, data, offset)

    def ftruncate(fd: int, length: int) -> None:
        if under_root(fd) and length > os.fstat(fd).st_size:
            raise refuse()
        real_ftruncate(fd, length)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "pwrite", pwrite)
    monkeypatch.setattr(os, "ftruncate", ftruncate)


@pytest.fixture(params=["tmpfs", "injected"])
def disk(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Disk]:
    root = tmp_path / "disk"
    kind = str(request.param)
    if kind == "tmpfs":
        reason = _can_mount(tmp_path / "probe")
        if reason is not None:
            pytest.skip(f"{reason}; the injected-ENOSPC variant covers this test")
        root.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(root)], check=True
        )
    else:
        root.mkdir()
        _injected_enospc(monkeypatch, root, tmp_path / "disk-is-full")
    try:
        yield Disk(root, kind, tmp_path / "disk-action", tmp_path / "disk-is-full")
    finally:
        if kind == "tmpfs":
            subprocess.run(["umount", "-l", str(root)], check=True)


@pytest.fixture
def fakes(tmp_path: Path, disk: Disk, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """The fake ``codex`` wrapper first on PATH; its script and log outside the disk."""
    clis = FakeCLIs(tmp_path / "fakes", products=())
    wrapper = clis.bin / "codex"
    wrapper.write_text(
        WRAPPER.format(
            python=sys.executable,
            agent=str(FAKE_AGENT),
            script=str(clis.script_path),
            log=str(clis.log_path),
            control=str(disk.control),
            flag=str(disk.flag),
            root=str(disk.root),
        )
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{clis.bin}:{os.environ['PATH']}")
    return clis


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(disk: Disk) -> Path:
    """A small committed repository on the disk (no hook samples: the disk is small)."""
    root = disk.root / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main", "--template=")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    (root / "app.py").write_text("def f(x):\n    return x[0]\n")
    _git(root, "add", "app.py")
    _git(root, "commit", "-qm", "init")
    (root / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    return root


def rl(repo: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    out: list[str] = []
    code = cli_run([argv[0], "--repo", str(repo), *argv[1:]], stdout=out.append)
    assert len(out) == 1, out
    return code, json.loads(out[0])


def _record(path: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text())
    return data


# -- consult ---------------------------------------------------------------------------------


def test_process_consult_disk_fills_while_answering_answer_printed_with_path_and_errno(
    repo: Path, fakes: FakeCLIs, disk: Disk
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "the delivered answer"}])
    disk.fill_on_next_call()
    code, doc = rl(repo, "consult", "--peer", "codex", "--question", "Q")
    assert code == 0, json.dumps(doc)
    assert doc["ok"] is True and doc["text"] == "the delivered answer", doc
    assert "TaskGroup" not in json.dumps(doc)
    failed = doc["recordError"]
    assert failed["errno"] == "ENOSPC", failed
    assert failed["path"].startswith(str(repo)), failed
    assert failed["path"] in failed["message"]
    assert len(fakes.calls()) == 1
    # Written in place although no temporary file fits: finished, not left running.
    record = _record(doc["sessionRecordPath"])
    assert record["status"] == "finished" and record["state"] == "DELIVERED", record


@pytest.mark.anyio
async def test_process_consult_disk_full_through_the_embedding_api(
    repo: Path, fakes: FakeCLIs, disk: Disk
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": "answer from the API"}])
    disk.fill_on_next_call()
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        doc = await run_consult(dispatcher, ConsultPlan(peers=("codex",), question="Q"))
    assert doc["ok"] is True and doc["text"] == "answer from the API", doc
    assert doc["recordError"]["errno"] == "ENOSPC"
    assert doc["recordPath"] is None  # the Markdown record could not be written
    assert _record(doc["sessionRecordPath"])["status"] == "finished"
    assert len(fakes.calls()) == 1


def test_process_consult_read_only_disk_answer_printed(
    repo: Path,
    fakes: FakeCLIs,
    disk: Disk,
    user_state: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if disk.kind != "tmpfs":
        pytest.skip("a read-only disk needs a real mount (root ignores file modes)")
    # The fake remounts the disk read-only for everyone: it must run outside the reviewer
    # sandbox, whose private mount namespace (rightly) keeps that from the real disk.
    no_namespace = tmp_path / "no-namespace"
    no_namespace.mkdir()
    (no_namespace / "unshare").write_text("#!/bin/sh\nexit 1\n")
    (no_namespace / "unshare").chmod(0o755)
    monkeypatch.setenv("PATH", f"{no_namespace}{os.pathsep}{os.environ['PATH']}")
    (user_state / "prefs.toml").write_text("allowUnprotected = true\n")
    fakes.script(codex=[{"mode": "ok", "text": "read-only but answered"}])
    disk.arm("read-only")
    try:
        code, doc = rl(repo, "consult", "--peer", "codex", "--question", "Q")
    finally:
        disk.writable()
    assert code == 0, doc
    assert doc["ok"] is True and doc["text"] == "read-only but answered", doc
    assert doc["recordError"]["errno"] == "EROFS", doc
    assert doc["recordError"]["path"].startswith(str(repo))
    assert len(fakes.calls()) == 1


# -- run ---------------------------------------------------------------------------------------


def test_process_run_disk_full_keeps_the_answer_and_continue_does_not_ask_again(
    repo: Path, fakes: FakeCLIs, disk: Disk, user_state: Path
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": BLOCKED}])
    disk.fill_on_next_call()
    code, doc = rl(repo, "run")
    assert code == 2, doc
    assert doc["status"] == "RECORD_FAILED", doc
    assert doc["text"] == BLOCKED and doc["verdict"] == "BLOCKED"
    assert doc["recordError"]["errno"] == "ENOSPC", doc
    assert doc["recordError"]["path"] in doc["message"]
    kept = Path(doc["answerKept"])
    assert kept.is_relative_to(user_state / "pending"), kept  # the repository was full
    assert state_auth.verify(PURPOSE, json.loads(kept.read_text()))
    assert len(fakes.calls()) == 1
    runtime = repo / ".review-handoff" / "runtime"
    records = list(runtime.rglob("reviewer-session.json"))
    assert [_record(r)["status"] for r in records] == ["finished"]

    disk.free()
    code, doc = rl(repo, "run", "--continue")
    assert code == 0, doc
    assert doc["status"] == "blocked" and doc["verdict"] == "BLOCKED", doc
    assert doc["openBlocking"] == ["F1"]
    assert "nobody was asked" in doc["warning"]
    assert len(fakes.calls()) == 1  # the delivered answer was used, not paid for twice
    assert not kept.exists()


@pytest.mark.anyio
async def test_process_run_disk_full_through_the_embedding_api(
    repo: Path, fakes: FakeCLIs, disk: Disk
) -> None:
    fakes.script(codex=[{"mode": "ok", "text": BLOCKED}])
    disk.fill_on_next_call()
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as dispatcher:
        failed = await run_review(dispatcher, RunPlan())
        assert failed["status"] == "RECORD_FAILED" and failed["text"] == BLOCKED, failed
        disk.free()
        recorded = await run_review(dispatcher, RunPlan(cont=True))
    assert recorded["status"] == "blocked" and recorded["verdict"] == "BLOCKED", recorded
    assert len(fakes.calls()) == 1


def test_process_forged_pending_answer_is_not_believed(
    repo: Path, fakes: FakeCLIs, disk: Disk
) -> None:
    if disk.kind != "injected":
        pytest.skip("independent of the disk: runs once")
    fakes.script(codex=[{"mode": "ok", "text": BLOCKED}])
    disk.fill_on_next_call()
    code, doc = rl(repo, "run")
    assert code == 2 and doc["status"] == "RECORD_FAILED", doc
    disk.free()
    kept = Path(doc["answerKept"])
    forged = json.loads(kept.read_text())
    forged["text"] = BLOCKED.replace("BLOCKED", "NO_FINDINGS").replace("| F1 |", "| F0 |")
    runtime = next((repo / ".review-handoff" / "runtime").rglob("auto-run-state.json")).parent
    (runtime / REPO_FILE).write_text(json.dumps(forged))
    kept.unlink()
    code, doc = rl(repo, "run", "--continue")
    assert code == 0, doc
    assert doc["verdict"] == "BLOCKED", doc  # the reviewer's real answer, asked again
    assert len(fakes.calls()) == 2
    assert any(entry["path"].endswith(REPO_FILE) for entry in doc["untrusted"]), doc


# -- a disk that is full before anything is asked ----------------------------------------------


def _fill_now(disk: Disk) -> None:
    """Fill the disk before the command starts (as the fake would, but now)."""
    if disk.kind == "injected":
        disk.flag.touch()
        return
    fd = os.open(disk.root / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_process_consult_on_a_full_disk_asks_nobody_and_names_path_and_errno(
    repo: Path, fakes: FakeCLIs, disk: Disk
) -> None:
    ensure_layout(repo)  # as an earlier command left it
    _fill_now(disk)
    code, doc = rl(repo, "consult", "--peer", "codex", "--question", "Q")
    assert code == 2, doc
    assert doc["ok"] is False and doc["code"] == "record failed", doc
    assert doc["recordError"]["errno"] == "ENOSPC"
    assert doc["recordError"]["path"].endswith("reviewer-session.json")
    assert doc["recordError"]["path"] in doc["error"]
    assert fakes.calls() == []  # no record, no launch: nothing was sent


def test_process_run_on_a_full_disk_asks_nobody_and_names_path_and_errno(
    repo: Path, fakes: FakeCLIs, disk: Disk
) -> None:
    fakes.script(codex=[{"mode": "fail"}])
    code, doc = rl(repo, "run")  # a packet and its state; the reviewer fails (asked once)
    assert code == 2 and doc["status"] == "DELIVERY_UNKNOWN", doc
    _fill_now(disk)
    code, doc = rl(repo, "run", "--continue")
    assert code == 1, doc
    assert "TaskGroup" not in doc["error"]
    assert str(repo) in doc["error"], doc
    assert "No space left on device" in doc["error"] or "ENOSPC" in doc["error"], doc
    assert len(fakes.calls()) == 1  # nobody was asked on the full disk
    code, doc = rl(repo, "run")  # a new packet cannot be created either
    assert code == 1 and str(repo) in doc["error"], doc
    packets = list((repo / ".review-handoff" / "active").rglob("*.md"))
    assert all(packet.stat().st_size > 0 for packet in packets), packets  # none torn
    disk.free()
    code, doc = rl(repo, "run", "--continue")  # nothing half-written is left in the way
    assert code == 2 and doc["status"] == "DELIVERY_UNKNOWN", doc
    assert len(fakes.calls()) == 2
