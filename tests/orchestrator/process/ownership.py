"""Helpers of the process-ownership tests: survivors by marker and by noted pid, victims,
owner processes to kill -9. Only processes a test started are ever signalled here."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import psutil

from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.process.run import MARKER_ENV
from tests.fakes import FakeCLIs

ROOT = Path(__file__).resolve().parents[3]
PASSTHROUGH = "FAKE_AGENT_SCRIPT FAKE_AGENT_LOG FAKE_GROK_VARIANT REVIEW_LOOP_TEST_TOKEN"
"""Names the fake CLIs need, for an environment allow-list (ignored where there is none)."""


def running(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    return False


def with_marker(marker: str) -> list[psutil.Process]:
    """Live processes carrying ``marker`` as the session marker in their own environment."""
    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if proc.environ().get(MARKER_ENV) == marker:
                found.append(proc)
    return found


def noted(fakes: FakeCLIs) -> list[psutil.Process]:
    """The processes the fake noted as left behind (``$FAKE_AGENT_SCRIPT.pids``) that run
    the fake's sleeper (a pid reused by something else does not count)."""
    path = Path(f"{fakes.script_path}.pids")
    if not path.exists():
        return []
    found = []
    for word in path.read_text().split():
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(int(word))
            if running(proc) and "time.sleep(3600)" in " ".join(proc.cmdline()):
                found.append(proc)
    return found


def noted_count(fakes: FakeCLIs) -> int:
    path = Path(f"{fakes.script_path}.pids")
    return len(path.read_text().split()) if path.exists() else 0


def wait_until(predicate: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Poll ``predicate`` (a callable) until true or ``seconds`` pass (hang-catching only)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def kill_all(procs: list[psutil.Process]) -> None:
    """Clean up after a failed assertion: SIGKILL processes this test started, by pid."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def victim(*, new_session: bool = True) -> subprocess.Popen[bytes]:
    """A process of the test's own (no review-loop marker): what must never be signalled."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=new_session
    )


OWNER_SCRIPT = """
import anyio, sys
from pathlib import Path
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
async def main():
    prefs = Prefs.validate({"graceMs": int(sys.argv[3])})
    async with open_dispatcher(repo=Path(sys.argv[1]), prefs=prefs, reap=False) as d:
        await d.consult(PeerRequest(peer="claude", prompt="x", record_dir=Path(sys.argv[2])))
anyio.run(main)
"""


def start_owner(repo: Path, record_dir: Path, grace_ms: int) -> subprocess.Popen[bytes]:
    """A review-loop process (dispatcher + one consult) to be killed with SIGKILL."""
    return subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(repo), str(record_dir), str(grace_ms)],
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )


def running_record(record_dir: Path, seconds: float = 30.0) -> dict[str, object]:
    """The session record once it says ``running`` (the process is recorded)."""
    path = record_dir / "reviewer-session.json"

    def ready() -> bool:
        return path.exists() and json.loads(path.read_text()).get("status") == "running"

    assert wait_until(ready, seconds), f"no running record at {path}"
    return dict(json.loads(path.read_text()))


def kill_owner_mid_session(
    repo: Path, *, grace_ms: int, marked: int, leader_too: bool = False
) -> tuple[dict[str, object], str]:
    """Run an owner until ``marked`` processes carry its session's marker, then SIGKILL it
    (and, with ``leader_too``, the session's recorded leader first). Returns the running
    record and the marker."""
    record_dir = repo / ".review-handoff" / "runtime" / "t" / "owned"
    owner = start_owner(repo, record_dir, grace_ms)
    try:
        record = running_record(record_dir)
        marker = str(record["marker"])
        assert wait_until(lambda: len(with_marker(marker)) >= marked)
        if leader_too:
            owner.send_signal(signal.SIGSTOP)  # frozen: it cannot react to the leader's end
            leader = psutil.Process(int(str(record["pid"])))
            leader.kill()  # the supervisor, where there is one, or the CLI itself
            assert wait_until(lambda: not running(leader))
    finally:
        owner.kill()  # SIGKILL: nothing runs in the owner
        owner.wait()
    return record, marker


KILLED_OWNER_SCRIPT = """
import anyio, sys
from pathlib import Path
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
async def main():
    async with open_dispatcher(repo=Path(sys.argv[1]), prefs=Prefs(), reap=False) as d:
        await d.consult(PeerRequest(peer=sys.argv[3], prompt="x", record_dir=Path(sys.argv[2])))
anyio.run(main)
"""


def kill_owner_once(
    repo: Path, peer: str, env: Mapping[str, str], check: Callable[[], None]
) -> None:
    """Run an owner (a dispatcher consulting ``peer``, no reap at its start) in ``env``
    until its session is recorded running and ``check()`` passes, SIGKILL it, and prove
    its session ended with it. What it left behind is the caller's to look at."""
    record_dir = repo / ".review-handoff" / "runtime" / "t" / "owned"
    argv = [sys.executable, "-c", KILLED_OWNER_SCRIPT, str(repo), str(record_dir), peer]
    env = {**env, "REVIEW_LOOP_ENV_PASSTHROUGH": PASSTHROUGH, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen(argv, env=env)
    marker = ""
    try:
        marker = str(running_record(record_dir)["marker"])
        check()
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    # the supervisor ends the session once its owner is gone
    assert wait_until(lambda: not with_marker(marker)), "the session outlived its owner"
    kill_all(with_marker(marker))


def open_fds() -> list[str]:
    """This process's open descriptors, as what each names (sorted, for a readable diff)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            found.append(f"{name} -> {os.readlink(f'/proc/self/fd/{name}')}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
    return sorted(found)


def my_children() -> list[int]:
    """This process's children, zombies included (read from /proc)."""
    return subreaper.children(os.getpid())


def spare_shape(pid: int) -> dict[str, object]:
    """What a spare is, read from /proc: its session and group, directory, own
    environment, and the kinds of the descriptors it holds (the control pipe among them,
    at the number its command line names)."""
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    control = next(w for w in cmdline if w.startswith(b"--control=")).split(b"=")[1].decode()
    fds = sorted(os.listdir(f"/proc/{pid}/fd"), key=int)
    return {
        "session": os.getsid(pid) == pid,
        "group": os.getpgid(pid) == pid,
        "cwd": os.readlink(f"/proc/{pid}/cwd"),
        "environ": Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")[0].split(b"=")[0],
        "fds": [os.readlink(f"/proc/{pid}/fd/{fd}").split(":[")[0] for fd in fds],
        "control": control in fds,
        "parent": subreaper.stat_of(pid) == ("S", os.getpid()),
    }


@contextlib.contextmanager
def descriptor_limit(room: int) -> Iterator[None]:
    """For the block, room for only ``room`` more descriptors: the limit just past the
    lowest free number (every number below it is taken). Put back afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest = os.open(os.devnull, os.O_RDONLY)
    os.close(lowest)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest + room, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
