"""Contract and process tests of consult's early spare (``orchestrator/early_spare.py``).

``consult`` starts its session's supervisor before it imports the dispatcher and the async
runtime (:func:`early_spare.held` around the command), with the standard library alone
(:mod:`.pidfd_start`); the dispatcher's pool adopts it (``Supervisors.prestart``) and the
session runs in it. These tests run real supervisors and real fake CLIs:

- contract (in this process): the held spare has the pool's spare's shape; leaving the
  block unadopted kills and reaps it and closes every descriptor; adoption is once only,
  never in a forked child (whose block leaves its parent's spare alone); a second block
  starts none; no pidfds or no supervisor, no early spare; out of descriptors at each step,
  nothing is left; a pool adopts it and a session runs in it (asyncio and trio), and a
  pool closed unused ends it;
- process (a whole ``review-loop consult``): the session runs in the spare started before
  the dispatcher and anyio were imported (the record's pid and marker are that spare's),
  and on every failure path — a refused repository, a refused input, an exception, an
  interruption, SIGTERM or SIGINT during start-up — the process has no child left, not
  even a zombie, when it exits.

An idle spare's environment is only its marker (the no-survivor fixture's token is not in
it), so these tests count this process's children (zombies included) instead.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import warnings
from contextlib import nullcontext
from pathlib import Path

import pytest

from review_loop.agents.models import Invocation
from review_loop.orchestrator import early_spare, pidfd_start, subreaper
from review_loop.orchestrator.early_spare import MARKER_ENV, adopt, held
from review_loop.orchestrator.process import Started, open_supervisors, run_process
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo
from tests.orchestrator.ownership import (
    descriptor_limit,
    my_children,
    open_fds,
    spare_shape,
    wait_until,
)

needs_pidfd = pytest.mark.skipif(
    not early_spare.available(), reason="needs the session supervisor and pidfds (Linux 5.3+)"
)
GRACE = 0.5


# --- contract: held, adopt, end ----------------------------------------------------------


@needs_pidfd
@pytest.mark.parametrize("leaving", [None, ValueError, KeyboardInterrupt])
def test_a_spare_left_unadopted_is_killed_and_reaped_with_its_descriptors(
    leaving: type[BaseException] | None,
) -> None:
    """Leaving the block without adopting the spare — normally, by an exception, by an
    interruption — kills it, reaps it (no zombie) and closes its pidfd, pipes and control
    pipe before the block is left."""
    before_fds, before_children = open_fds(), my_children()
    with pytest.raises(leaving) if leaving is not None else nullcontext(), held() as begun:
        assert begun is not None
        assert my_children() == [*before_children, begun.popen.pid]
        if leaving is not None:
            raise leaving
    assert my_children() == before_children  # killed and reaped: not even a zombie
    assert open_fds() == before_fds


@needs_pidfd
@pytest.mark.anyio
async def test_the_early_spare_is_the_pool_s_spare(tmp_path: Path) -> None:
    """The held spare is what the pool starts as its spare: the supervisor's command with
    this process as its owner, a session and group of its own, ``/``, its marker alone as
    its environment, three pipes and its control pipe, this process as its parent."""

    def idle(pid: int) -> dict[str, object]:
        assert wait_until(lambda: subreaper.stat_of(pid) == ("S", os.getpid()), 20)
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return {**spare_shape(pid), "command": [*command[:6], command[6]]}

    async with open_supervisors() as pool:
        assert pool.spare_pid is not None
        usual = idle(pool.spare_pid)
    with held() as begun:
        assert begun is not None
        assert idle(begun.popen.pid) == usual
        environ = Path(f"/proc/{begun.popen.pid}/environ").read_bytes()
    assert environ == f"{MARKER_ENV}={begun.marker}\0".encode()
    assert usual["command"] == [
        *(word.encode() for word in subreaper.supervisor_argv(owner=os.getpid(), control=0)[:6]),
        f"--owner={os.getpid()}".encode(),
    ]


@needs_pidfd
def test_it_is_adopted_once_and_then_no_longer_the_block_s_to_end() -> None:
    """:func:`adopt` hands the spare over once; the block then leaves it running (it is
    the adopter's), and the adopter's ``end`` reaps it."""
    before_fds, before_children = open_fds(), my_children()
    with held() as begun:
        assert begun is not None
        assert adopt() is begun
        assert adopt() is None
    assert subreaper.running(begun.popen.pid)  # the block did not end an adopted spare
    begun.end()
    assert my_children() == before_children
    assert open_fds() == before_fds


@needs_pidfd
def test_a_forked_child_neither_adopts_nor_ends_its_parent_s_spare() -> None:
    """After ``fork()`` the child finds no spare to adopt, and ending its copy closes only
    its own descriptors: the parent's spare runs on, and the parent still adopts it."""
    with held() as begun:
        assert begun is not None
        child = os.fork()
        if child == 0:
            nothing = adopt() is None
            begun.end()  # the child's copies only
            os._exit(0 if nothing else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert subreaper.stat_of(begun.popen.pid) is not None
        assert subreaper.running(begun.popen.pid)
        assert adopt() is begun
    begun.end()
    assert not subreaper.running(begun.popen.pid)


@needs_pidfd
def test_a_forked_child_leaving_the_block_leaves_subprocess_no_wait_for_it() -> None:
    """A forked child that leaves the block as usual closes its copies, and its copy of
    the ``Popen`` is not left to ``subprocess``: no "still running" warning when it goes,
    and no later ``waitpid`` on a pid that is not the child's (the parent's supervisor,
    or by then one of the child's own children with that number)."""
    with held() as begun:
        assert begun is not None
        child = os.fork()
    if child == 0:
        code = 1
        try:
            spare = begun.popen.pid
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                del begun
                gc.collect()
            warned = [w for w in caught if f"subprocess {spare} " in str(w.message)]
            listed = [p for p in subprocess._active if p.pid == spare]  # type: ignore[attr-defined]
            code = 0 if not warned and not listed else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@needs_pidfd
def test_a_second_block_starts_none_and_ends_not_the_first_s() -> None:
    before_children = my_children()
    with held() as first:
        assert first is not None
        with held() as second:
            assert second is None
        assert subreaper.running(first.popen.pid)
        assert my_children() == [*before_children, first.popen.pid]
    assert my_children() == before_children


@pytest.mark.parametrize("missing", ["pidfd", "supervisor"])
def test_without_pidfds_or_supervisors_there_is_no_early_spare(
    missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a pidfd cannot watch it, or sessions run unsupervised, there is no early
    spare: the pool starts its own later, as before."""
    monkeypatch.setattr(pidfd_start if missing == "pidfd" else subreaper, "_available", False)
    before = my_children()
    with held() as begun:
        assert begun is None
        assert my_children() == before
        assert adopt() is None


@needs_pidfd
def test_out_of_descriptors_there_is_no_spare_and_nothing_is_left() -> None:
    """With the descriptor limit just past this process's descriptors by 0 to 15 (the
    control pipe, the three pipes, Popen's own pipe and the pidfd are refused in turn),
    the block either holds a spare or none, and leaves no descriptor and no child."""
    before_fds, before_children = open_fds(), my_children()
    outcomes = []
    for room in range(16):
        with descriptor_limit(room), held() as begun:
            outcomes.append(begun is not None)
        assert open_fds() == before_fds
        assert my_children() == before_children
    assert outcomes[0] is False and outcomes[-1] is True, outcomes


CONTROL_READER = r"""
import os
from review_loop.orchestrator.early_spare import held
from tests.orchestrator.ownership import wait_until
from review_loop.orchestrator import subreaper

with held() as begun:
    pid = begun.popen.pid
    assert wait_until(lambda: subreaper.stat_of(pid) == ("S", os.getpid()), 20)
    command = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    control = next(w for w in command if w.startswith(b"--control=")).split(b"=")[1].decode()
    theirs = os.readlink(f"/proc/{pid}/fd/{control}")
    ours = os.readlink(f"/proc/self/fd/{begun.control}")
    print(control, theirs == ours)
"""


@needs_pidfd
def test_process_without_stdin_the_spare_reads_its_control_pipe() -> None:
    """Started with descriptor 0 closed, this process's first pipe is 0: the control
    pipe's read end must not be passed as 0, where the spare's own stdin pipe goes; the
    spare's ``--control`` names our control pipe."""
    done = subprocess.run(
        [sys.executable, "-c", CONTROL_READER],
        preexec_fn=lambda: os.close(0),  # the child starts without a stdin
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=60,  # hang-catching only
    )
    assert done.returncode == 0, done.stderr[-2000:]
    control, same = done.stdout.split()
    assert int(control) > 2 and same == "True", done.stdout


class _InterruptedOnce:
    """Stands for ``early_spare._lock``: a ``KeyboardInterrupt`` as it is released the
    first time (where a SIGINT's handler runs once the start's calls return)."""

    def __init__(self, lock: object) -> None:
        self.lock = lock
        self.interrupted = False

    def __enter__(self) -> None:
        self.lock.__enter__()  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)  # type: ignore[attr-defined]
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt


@needs_pidfd
@pytest.mark.parametrize("where", ["making the control pipe non-blocking", "releasing the lock"])
def test_an_interruption_just_after_the_start_leaves_nothing(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``KeyboardInterrupt`` once the supervisor runs but before the block holds it —
    as its control pipe is made non-blocking, or as the lock is released — ends it there:
    no child, no descriptor, and the next block starts a spare again."""
    before_fds, before_children = open_fds(), my_children()
    if where == "releasing the lock":
        monkeypatch.setattr(early_spare, "_lock", _InterruptedOnce(early_spare._lock))
    else:
        real, calls = os.set_blocking, []

        def set_blocking(fd: int, blocking: bool) -> None:
            calls.append(fd)
            if len(calls) == 1:
                raise KeyboardInterrupt
            real(fd, blocking)

        monkeypatch.setattr(os, "set_blocking", set_blocking)
    with pytest.raises(KeyboardInterrupt), held():
        pytest.fail("the block is not entered")
    monkeypatch.undo()
    assert my_children() == before_children
    assert open_fds() == before_fds
    with held() as again:
        assert again is not None
    assert my_children() == before_children


# --- collaboration: the pool adopts it ---------------------------------------------------


def claude(tmp_path: Path) -> Invocation:
    return Invocation(argv=("claude", "-p"), stdin=b"early", cwd=tmp_path)


@needs_pidfd
@pytest.mark.anyio
async def test_the_pool_adopts_it_and_the_session_runs_in_it(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """Opened inside the block, the pool's spare is the early one (no other supervisor is
    started); the session runs in it with its marker; nothing is left afterwards."""
    async with open_supervisors() as warm:  # the runtime's own descriptors, opened once
        await run_process(claude(tmp_path), deadline=30, grace=GRACE, supervisors=warm)
    before_fds, before_children = open_fds(), my_children()
    started: list[Started] = []

    async def on_started(info: Started) -> None:
        started.append(info)

    with held() as begun:
        assert begun is not None
        async with open_supervisors() as pool:
            assert pool.spare_pid == begun.popen.pid
            assert my_children() == [*before_children, begun.popen.pid]  # no other
            done = await run_process(
                claude(tmp_path),
                deadline=30,
                grace=GRACE,
                on_started=on_started,
                supervisors=pool,
            )
    assert done.returncode == 0, done
    assert json.loads(done.stdout)["result"] == "FAKE-ANSWER from claude: early"
    assert [(s.pid, s.marker) for s in started] == [(begun.popen.pid, begun.marker)]
    assert my_children() == before_children
    assert open_fds() == before_fds


@needs_pidfd
@pytest.mark.anyio
async def test_a_pool_closed_unused_ends_the_adopted_spare(tmp_path: Path) -> None:
    async with open_supervisors():  # the runtime's own descriptors, opened once
        pass
    before_fds, before_children = open_fds(), my_children()
    with held() as begun:
        assert begun is not None
        async with open_supervisors() as pool:
            assert pool.spare_pid == begun.popen.pid
        assert my_children() == before_children  # the pool ended and reaped it
    assert open_fds() == before_fds


# --- process: a whole consult --------------------------------------------------------------

# Runs ``review-loop consult`` as ``python -m review_loop`` does (``cli.entry``: os._exit
# once atexit ran), noting every child started through pidfd_start (and what was imported
# by then), optionally failing or signalling itself when the module named in argv[3] is
# imported, and writing at exit the children this process still has (zombies included).
HARNESS = r"""
import atexit, json, os, signal, sys
from review_loop.orchestrator import pidfd_start, subreaper

out, action, at = sys.argv[1:4]
seen = {"starts": [], "left": None}
real_start = pidfd_start.start


def start(argv, **options):
    popen, pidfd = real_start(argv, **options)
    heavy = ("anyio", "review_loop.orchestrator.dispatcher")
    seen["starts"].append({
        "pid": popen.pid,
        "supervisor": subreaper.LAUNCH in argv,
        "marker": options["env"].get("REVIEW_LOOP_SESSION_MARKER"),
        "imported": [name for name in heavy if name in sys.modules],
    })
    return popen, pidfd


pidfd_start.start = start
acted = []


def hook(event, args):
    if event != "import" or args[0] != at or acted:
        return
    acted.append(at)
    if action == "raise":
        raise RuntimeError("broken on purpose")
    if action == "interrupt":
        raise KeyboardInterrupt
    if action in ("SIGTERM", "SIGINT"):
        os.kill(os.getpid(), getattr(signal, action))


def report():
    seen["left"] = subreaper.children(os.getpid())
    with open(out, "w") as handle:
        json.dump(seen, handle)


atexit.register(report)
sys.addaudithook(hook)
sys.argv = ["review-loop", *sys.argv[4:]]
from review_loop.orchestrator.cli import entry
entry()  # as the console script: os._exit after atexit (which reports)
"""
DISPATCHER = "review_loop.orchestrator.dispatcher"


def consult(
    tmp_path: Path, repo: Path, words: list[str], action: str = "none", at: str = DISPATCHER
) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    out = tmp_path / "seen.json"
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(out), action, at, "consult", *words],
        cwd=repo,
        env=fakes.env(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,  # hang-catching only
    )
    return done, json.loads(out.read_text())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"a.txt": "a\n"})


def early_start(seen: dict[str, object]) -> dict[str, object]:
    """The first child started: the early spare, started before the heavy imports."""
    starts = seen["starts"]
    assert isinstance(starts, list) and starts, seen
    first = starts[0]
    assert first["supervisor"] is True and first["imported"] == [], seen
    return dict(first)


@needs_pidfd
def test_process_a_consult_s_session_runs_in_the_early_spare(tmp_path: Path, repo: Path) -> None:
    """The session's record names the spare started before the dispatcher and anyio were
    imported (its pid and its marker), and the process has no child left when it exits.
    (The CLI's version probe, run once per fresh world, has a supervisor of its own.)"""
    done, seen = consult(tmp_path, repo, ["--peer", "codex", "--question", "?"])
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["text"] == "fine"
    record = json.loads(Path(document["sessionRecordPath"]).read_text())
    spare = early_start(seen)
    assert (record["pid"], record["marker"]) == (spare["pid"], spare["marker"])
    assert seen["left"] == []


FAILURES = {
    "refused-repository": (["--repo", "{plain}"], "none", 1),
    "refused-input": (["--timeout", "soon"], "none", 1),
    "exception": ([], "raise", 1),
    "interruption": ([], "interrupt", 128 + signal.SIGINT),
    "SIGTERM": ([], "SIGTERM", 128 + signal.SIGTERM),
    "SIGINT": ([], "SIGINT", 128 + signal.SIGINT),
}


@needs_pidfd
@pytest.mark.parametrize("case", list(FAILURES))
def test_process_a_consult_that_fails_in_start_up_leaves_no_process(
    case: str, tmp_path: Path, repo: Path
) -> None:
    """Refused (a directory outside any repository, a timeout that is no number), broken
    (an import raising), interrupted (``KeyboardInterrupt``), or sent SIGTERM / SIGINT
    while the dispatcher is imported: the spare started first is gone — killed and
    reaped — before the process exits, and the command answers as it always did."""
    extra, action, code = FAILURES[case]
    plain = tmp_path / "plain"
    plain.mkdir()
    words = ["--peer", "codex", "--question", "?", *(w.format(plain=plain) for w in extra)]
    done, seen = consult(tmp_path, repo, words, action)
    assert done.returncode == code, (done.stdout, done.stderr[-2000:])
    early_start(seen)
    assert seen["left"] == []
    if code == 1:
        error = json.loads(done.stdout)["error"]
        expected = {"refused-repository": str(plain), "refused-input": "--timeout"}
        assert expected.get(case, "broken on purpose") in error
    elif action != "interrupt":
        document = json.loads(done.stdout)
        assert (document["status"], document["signal"]) == ("interrupted", action)
