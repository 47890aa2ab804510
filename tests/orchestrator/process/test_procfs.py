"""Contract and process tests: ``procfs`` answers exactly as psutil does, on live processes.

Session records and scratch-directory names store start times that were (and may still be)
written by psutil and are compared with ``==``; the reaper and the process layer pin a
process by its start against pid reuse. Each test starts real processes (a child, a zombie,
a process whose name holds ``)`` and spaces, a small tree) and compares procfs with psutil
for the same pid at the same moment. Every process started here is reaped before the test
ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from review_loop.orchestrator.process import procfs

pytestmark = pytest.mark.skipif(not procfs.LINUX, reason="reads /proc (Linux)")

SLEEPER = "import time; print('ready', flush=True); time.sleep(60)"
"""Says ``ready`` once it runs Python (before ``exec`` the environment is not yet its own)."""
ODD_NAME = "a) b (c)) d"
"""A command name with spaces and parentheses: ``/proc/<pid>/stat`` must be split at the
last ``)`` (15 bytes at most: the kernel's ``comm``)."""
RENAMED = f"""
import sys, time
with open('/proc/self/comm', 'w') as handle:
    handle.write({ODD_NAME!r})
print('ready', flush=True)
time.sleep(60)
"""
TREE = """
import subprocess, sys, time
kids = [subprocess.Popen([sys.executable, '-c', sys.argv[1]]) for _ in range(2)]
grand = subprocess.Popen([sys.executable, '-c',
    'import subprocess, sys, time; '
    'p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]); '
    'print(p.pid, flush=True); time.sleep(60)'], stdout=subprocess.PIPE)
print(grand.stdout.readline().decode().strip(), flush=True)
time.sleep(60)
"""


def _spawn(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *argv], env=env, stdout=subprocess.PIPE, start_new_session=True
    )


def _sleeper(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    child = _spawn("-c", SLEEPER, env=env)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    return child


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; each is killed (with its group) and reaped at the end."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            with_group = [proc.pid, *procfs.children(proc.pid, recursive=True)]
            for pid in with_group:
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=20)
        if proc.stdout is not None:
            proc.stdout.close()


def _same_as_psutil(pid: int) -> None:
    """Every procfs answer about ``pid`` equals psutil's for the same pid, bit for bit."""
    ps = psutil.Process(pid)
    assert procfs.start_time(pid) == ps.create_time()
    assert procfs.status(pid) == ps.status()
    assert procfs.ppid(pid) == ps.ppid()
    proc = procfs.Proc.of(pid)
    assert proc is not None
    assert proc.create_time() == ps.create_time()


def _wait_status(pid: int, wanted: str) -> None:
    deadline = time.monotonic() + 20
    while psutil.Process(pid).status() != wanted:
        assert time.monotonic() < deadline, f"pid {pid} never became {wanted}"
        time.sleep(0.02)


def test_contract_self_matches_psutil() -> None:
    _same_as_psutil(os.getpid())
    assert procfs.parents(os.getpid()) == [p.pid for p in psutil.Process().parents()]
    assert procfs.environ(os.getpid()) == psutil.Process().environ()
    assert procfs.boot_time() == psutil.boot_time()


def test_contract_child_start_time_and_environment(
    started: list[subprocess.Popen[bytes]],
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "ONE": "1", "MIXED": "a=b=c", "EMPTY": ""}
    child = _sleeper(env)
    started.append(child)
    _same_as_psutil(child.pid)
    seen = procfs.environ(child.pid)
    assert seen == psutil.Process(child.pid).environ()
    assert seen is not None and {k: seen[k] for k in env} == env
    assert procfs.running(child.pid) and not procfs.is_zombie(child.pid)
    assert child.pid in procfs.children(os.getpid())
    assert child.pid in procfs.pids()
    assert procfs.parents(child.pid)[0] == os.getpid()


def test_contract_zombie_keeps_its_start_time(started: list[subprocess.Popen[bytes]]) -> None:
    child = _spawn("-c", "pass")
    started.append(child)
    _wait_status(child.pid, psutil.STATUS_ZOMBIE)
    _same_as_psutil(child.pid)
    assert procfs.is_zombie(child.pid) and not procfs.running(child.pid)
    proc = procfs.Proc.of(child.pid)
    assert proc is not None and proc.is_running() and not proc.alive()
    with pytest.raises(psutil.ZombieProcess):  # every caller caught psutil.Error
        psutil.Process(child.pid).environ()
    assert procfs.environ(child.pid) is None and proc.environ() is None


def test_contract_name_with_parentheses_and_spaces(
    started: list[subprocess.Popen[bytes]],
) -> None:
    child = _spawn("-c", RENAMED)
    started.append(child)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    assert psutil.Process(child.pid).name() == ODD_NAME
    _same_as_psutil(child.pid)
    assert procfs.running(child.pid)


def test_contract_parse_stat_splits_at_the_last_parenthesis() -> None:
    line = b"42 (x) 1 2 (y) ) S 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n"
    info = procfs._parse_stat(line)
    assert info is not None
    assert (info.status, info.ppid, info.start) == ("sleeping", 7, 12345.0)
    assert procfs._parse_stat(b"42 (truncated") is None


def test_contract_vanished_pid_is_none(started: list[subprocess.Popen[bytes]]) -> None:
    child = _spawn("-c", "pass")
    started.append(child)
    pid = child.pid
    proc = procfs.Proc.of(pid)
    child.wait(timeout=20)
    never = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    for gone in (pid, never, 0, -1):
        if gone == pid and psutil.pid_exists(pid):
            continue  # reused already (a busy machine): the pid is someone else's
        assert procfs.start_time(gone) is None
        assert procfs.status(gone) is None
        assert procfs.ppid(gone) is None
        assert procfs.environ(gone) is None
        assert procfs.children(gone) == []
        assert procfs.parents(gone) == []
        assert not procfs.running(gone) and not procfs.is_zombie(gone)
        assert procfs.Proc.of(gone) is None
    assert proc is not None
    assert not proc.is_running() and not proc.alive() and proc.status() is None
    assert proc.environ() is None and proc.children() == []
    assert not proc.send_signal(signal.SIGTERM)


def test_contract_children_of_a_process_tree(started: list[subprocess.Popen[bytes]]) -> None:
    root = _spawn("-c", TREE, "import time; time.sleep(60)")
    started.append(root)
    assert root.stdout is not None
    great = int(root.stdout.readline())
    ps = psutil.Process(root.pid)
    direct = procfs.children(root.pid)
    assert sorted(direct) == sorted(p.pid for p in ps.children()) and len(direct) == 3
    every = procfs.children(root.pid, recursive=True)
    assert sorted(every) == sorted(p.pid for p in ps.children(recursive=True))
    assert len(every) == 4 and great in every
    assert sorted(procfs.descendants_by_scan(root.pid)) == sorted(every)
    assert procfs.ppid_map()[great] in direct
    for child in direct:  # parents before their children
        assert all(every.index(child) < every.index(g) for g in procfs.children(child))
    pinned = procfs.Proc.of(root.pid)
    assert pinned is not None
    assert {p.pid for p in pinned.children(recursive=True)} == set(every)
    assert all(p.create_time() == psutil.Process(p.pid).create_time() for p in pinned.children())


def test_process_pinned_handle_refuses_a_reused_pid(
    started: list[subprocess.Popen[bytes]],
) -> None:
    """A handle whose start no longer matches the pid (what pid reuse looks like) answers
    nothing and signals nothing; the live handle does signal."""
    child = _sleeper({"MARK": "m"})
    started.append(child)
    live = procfs.Proc.of(child.pid)
    assert live is not None
    stale = procfs.Proc(child.pid, live._start - 1)
    assert not stale.is_running() and not stale.alive() and stale.status() is None
    assert stale.environ() is None and stale.children() == []
    assert not stale.send_signal(signal.SIGTERM)
    assert child.poll() is None and procfs.running(child.pid)
    assert live.alive() and live.environ() == {"MARK": "m"}
    assert live == procfs.Proc.of(child.pid) and live != stale
    parent = procfs.Proc.of(os.getpid())
    assert parent is not None and parent.pin_later(child.pid) == live
    assert live.pin_later(os.getpid()) is None  # older than live: not its descendant
    assert live.send_signal(signal.SIGTERM)
    assert child.wait(timeout=20) == -signal.SIGTERM
    assert not live.is_running() and not live.send_signal(signal.SIGKILL)


def test_contract_psutil_fallback_agrees(
    started: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without /proc the same functions answer through psutil, with the same values."""
    child = _sleeper({"K": "v"})
    started.append(child)
    _wait_status(child.pid, "sleeping")  # stays so: the two reads see the same state
    pids = (os.getpid(), child.pid)
    read = {pid: _answers(pid) for pid in pids}
    monkeypatch.setattr(procfs, "LINUX", False)
    assert {pid: _answers(pid) for pid in pids} == read
    assert procfs.boot_time() == psutil.boot_time()
    assert procfs.start_time(-1) is None and procfs.environ(-1) is None


def _answers(pid: int) -> tuple[object, ...]:
    proc = procfs.Proc.of(pid)
    assert proc is not None
    return (
        procfs.start_time(pid),
        procfs.status(pid),
        procfs.ppid(pid),
        procfs.parents(pid),
        procfs.environ(pid),
        sorted(procfs.children(pid)),
        proc.create_time(),
        proc.alive(),
    )


AS_NOBODY = """
import json, os, sys
sys.path.insert(0, ".")  # the copy, entered as root before the switch to nobody
from review_loop.orchestrator.process import procfs
owner = int(sys.argv[1])
print(json.dumps([procfs.environ(owner), procfs.status(owner), procfs.start_time(owner)]))
"""


@pytest.fixture
def world_readable() -> Iterator[Path]:
    """A directory nobody can read (pytest's ``tmp_path`` lies under a private one)."""
    path = Path(tempfile.mkdtemp(prefix="procfs-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as nobody")
def test_process_another_users_environment_is_unreadable(world_readable: Path) -> None:
    """Run as nobody, procfs reads root's start time and state but not its environment:
    ``None``, where psutil raises AccessDenied (which every caller caught)."""
    python = shutil.which("python3", path="/usr/bin:/bin")  # the venv's may be under /root
    if python is None:
        pytest.skip("needs /usr/bin/python3 (procfs is stdlib only) to act as nobody")
    package = world_readable / "review_loop"
    room = package / "orchestrator" / "process"
    room.mkdir(parents=True)
    for init in (package, package / "orchestrator", room):
        (init / "__init__.py").write_text("")
    for name in ("procfs.py", "subreaper.py"):
        source = Path(procfs.__file__).with_name(name)
        (room / name).write_text(source.read_text())
    for path in world_readable.rglob("*"):
        path.chmod(0o755)
    reply = subprocess.run(
        [python, "-I", "-S", "-c", AS_NOBODY, str(os.getpid())],
        cwd=world_readable,
        env={},
        user=65534,
        group=65534,
        extra_groups=[],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert reply.returncode == 0, reply.stderr
    environ, state, started = json.loads(reply.stdout)
    assert environ is None
    assert state == "sleeping"  # this process, waiting for the child
    assert started == psutil.Process().create_time()


def test_contract_unreadable_is_not_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process whose stat cannot be read (``/proc`` mounted ``hidepid=1``; a mount no test
    can make) exists: :func:`status` says so, and the review lock stays its owner's."""
    from review_loop.orchestrator.workflows import review_store

    def denied(pid: int) -> procfs._Stat | None:
        raise PermissionError(13, "Permission denied", f"/proc/{pid}/stat")

    monkeypatch.setattr(procfs, "_stat", denied)
    assert procfs.status(os.getpid()) == procfs.UNREADABLE
    assert not procfs.running(os.getpid()) and procfs.start_time(os.getpid()) is None
    assert procfs.Proc.of(os.getpid()) is None
    assert review_store._pid_alive(os.getpid())


def test_contract_every_process_on_the_machine_matches_psutil() -> None:
    """Start times of every process here (many tick values) equal psutil's, bit for bit."""
    compared = 0
    for pid in procfs.pids():
        try:
            expected = psutil.Process(pid).create_time()
        except psutil.Error:
            continue  # gone meanwhile
        seen = procfs.start_time(pid)
        if seen is None and not psutil.pid_exists(pid):
            continue
        assert seen == expected, pid
        compared += 1
    assert compared > 1


@pytest.mark.parametrize(
    "block",
    [
        b"A=1\0B=2\0",
        b"A=1\0\0B=2\0",  # an empty entry ends the block: trailing garbage is ignored
        b"NOEQUALS\0=novalue\0A==x=\0A=again\0",  # no name, no "=", a repeated name
        b"U=\xff\xfe\xc3\0V=\xc3\xa9\0",  # not UTF-8, and UTF-8
        b"W=no terminator",
        b"",
    ],
)
def test_contract_environment_block_parsed_as_psutil(block: bytes) -> None:
    from psutil._common import parse_environ_block

    text = block.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    assert procfs._parse_environ(block) == parse_environ_block(text)
