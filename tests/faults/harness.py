"""What the fault-injection tier needs: a survivor scanner, the reviewer modes, launching.

Every process a fault test starts — ``review-loop`` itself, the fake CLIs, their
grandchildren, a helper that called ``setsid`` and closed its stdio — inherits the test's
:data:`TAG_ENV` value, so the scanner finds survivors by that tag alone, whatever group or
session they moved to. Every wait is bounded by a generous timeout, so a broken kill fails
the test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.fakes import FakeCLIs

TAG_ENV = "REVIEW_LOOP_FAULT_TAG"
GRACE_MS = 500
WAIT_S = 30.0  # hang-catching bound for every wait; never an assertion about speed
CLEAN_S = 10.0  # how long survivors may take to disappear once review-loop is done
PEER_A, PEER_B = "codex", "claude"
SLEEPER = "time.sleep(3600)"  # what the fakes' grandchildren and helpers run


@dataclass(frozen=True)
class Mode:
    """One row of the matrix: what each of the two reviewers does.

    Attributes:
        name: the row's id.
        a, b: the fake CLI step of peer A and of peer B (``tests/fakes/fake_agent.py``).
            B hangs when A answers, so the consult is still running when the fault comes.
        extra: processes besides the two CLIs that exist once the row is set up (the
            grandchild or helper of a CLI that answered may already have been ended with
            its session; ``test_fake_modes`` proves the fakes do start them).
        a_answers: A's answer arrives (and must be shown) before the fault.
        a_exits: A's CLI process exits on its own (it answered).
    """

    name: str
    a: dict[str, Any]
    b: dict[str, Any]
    extra: int = 0
    a_answers: bool = False
    a_exits: bool = False


HANG = {"mode": "hang"}
STUBBORN = {"mode": "stubborn"}
ESCAPER = {"mode": "setsid-grandchild"}
MODES = (
    Mode("hang", HANG, HANG),
    Mode("grandchild", {"mode": "grandchild"}, HANG, a_answers=True, a_exits=True),
    Mode("sigterm-ignoring", STUBBORN, STUBBORN),
    Mode("setsid-escaper", ESCAPER, ESCAPER, extra=2),
    Mode(
        "detached-helper",
        {"mode": "ok-leaving", "leave": ["detached"]},
        HANG,
        a_answers=True,
        a_exits=True,
    ),
)


@dataclass
class Tally:
    """Figures for the run's summary: rows run, survivors counted (before they were killed)."""

    rows: int = 0
    survivors: int = 0
    rows_with_survivors: list[str] = field(default_factory=list)


TALLY = Tally()


class Scanner:
    """Finds the processes carrying one test's tag; kills survivors by pid after counting."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def tagged(self, *, exclude: tuple[int, ...] = ()) -> list[psutil.Process]:
        """Live (non-zombie) processes whose environment carries this test's tag."""
        found = []
        skip = {os.getpid(), *exclude}
        for proc in psutil.process_iter(["pid", "status"]):
            if proc.pid in skip or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            with contextlib.suppress(psutil.Error, OSError):
                if proc.environ().get(TAG_ENV) == self.tag:
                    found.append(proc)
        return found

    def survivors(self, within: float = CLEAN_S) -> list[psutil.Process]:
        """The tagged processes still alive after waiting up to ``within`` for them to go."""
        deadline = time.monotonic() + within
        alive = self.tagged()
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = self.tagged()
        return alive

    def kill_survivors(self, row: str, *, count: bool = True) -> list[str]:
        """Describe and SIGKILL (by pid) every tagged survivor, counting them in the
        tally when ``count`` (a row of the matrix); returns the descriptions."""
        alive = self.tagged()
        described = []
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                described.append(f"{proc.pid} {' '.join(proc.cmdline())[:100]}")
                proc.kill()
        if not count:
            return described
        TALLY.rows += 1
        if alive:
            TALLY.survivors += len(alive)
            TALLY.rows_with_survivors.append(row)
        return described


def wait_until(
    what: str,
    check: Callable[[], Any],
    timeout: float = WAIT_S,
    describe: Callable[[], str] = lambda: "",
) -> Any:
    """Poll ``check`` until it returns something truthy; fail (not hang) after ``timeout``,
    saying what was seen (``describe``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = describe()
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; {seen}")
        time.sleep(0.05)


def describe_row(fakes: FakeCLIs, repo: Path, scanner: Scanner) -> str:
    """What a row looks like: records, the CLIs' logged calls, the tagged processes."""
    states = {name: (r.get("status"), r.get("pid")) for name, r in records(repo).items()}
    calls = [(c["product"], c["pid"]) for c in fakes.calls()]
    procs = [(p.pid, " ".join(_cmdline(p))[:80]) for p in scanner.tagged()]
    return f"records={states} calls={calls} tagged={procs}"


def records(repo: Path) -> dict[str, dict[str, Any]]:
    """Every session record under the repository's runtime, by its directory's path."""
    found = {}
    runtime = repo / ".review-handoff" / "runtime"
    for path in runtime.rglob("reviewer-session.json"):
        with contextlib.suppress(OSError, ValueError):
            found[str(path.parent.relative_to(runtime))] = json.loads(path.read_text())
    return found


def record_of(repo: Path, peer: str) -> dict[str, Any] | None:
    """The newest record of ``peer`` (directory names start with a sortable stamp)."""
    mine = sorted((name, r) for name, r in records(repo).items() if r.get("peer") == peer)
    return mine[-1][1] if mine else None


def unfinished(repo: Path) -> list[tuple[str, str]]:
    """Records still saying ``starting`` or ``running``: what no record may be left as."""
    return [
        (name, r["status"])
        for name, r in records(repo).items()
        if r.get("status") in ("starting", "running")
    ]


def ignores_sigterm(pid: int) -> bool:
    """Whether ``pid`` has set SIGTERM to ignored (``SigIgn`` in /proc), i.e. is stubborn."""
    try:
        return signal.SIGTERM in signal_mask(pid, "SigIgn")
    except OSError:
        return False


def row_is_set_up(fakes: FakeCLIs, repo: Path, scanner: Scanner, mode: Mode) -> bool:
    """Both reviewers launched (their CLIs logged the call) and recorded as running, A's
    answer in when it answers, every extra process there, a SIGTERM-ignoring CLI already
    ignoring it. The CLIs are found by the pids they logged, whatever wraps them."""
    a, b = record_of(repo, PEER_A), record_of(repo, PEER_B)
    if a is None or b is None or b.get("status") != "running" or not a.get("pid"):
        return False
    if mode.a_answers and a.get("status") != "finished":
        return False
    called = {call["product"]: call["pid"] for call in fakes.calls()}
    if set(called) < {PEER_A, PEER_B}:
        return False
    procs = scanner.tagged()
    live = {p.pid for p in procs}
    clis = [called[PEER_B]] + ([] if mode.a_exits else [called[PEER_A]])
    helpers = [p for p in procs if SLEEPER in " ".join(_cmdline(p))]
    if not all(pid in live for pid in clis) or len(helpers) < mode.extra:
        return False
    if mode.a is STUBBORN:
        return all(ignores_sigterm(pid) for pid in clis)
    return True


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def script_row(fakes: FakeCLIs, mode: Mode) -> None:
    """Tell the fake CLIs what to do for this row (the answer text names the peer)."""
    fakes.script(
        **{
            PEER_A: [{**mode.a, "text": f"answer from {PEER_A}"}],
            PEER_B: [{**mode.b, "text": f"answer from {PEER_B}"}],
            "gemini": [{"mode": "ok", "text": "answer from gemini"}],
        }
    )


def write_prefs(home: Path, grace_ms: int = GRACE_MS) -> None:
    """Small grace, a long deadline (the fault ends the run, never the deadline)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "prefs.toml").write_text(
        f"graceMs = {grace_ms}\ntimeoutMs = 120000\nlivenessMs = 600000\n"
    )


# The child starts with TERM, HUP and INT at their defaults whatever the test runner set
# (a runner in a background job ignores INT), ignores those listed in argv[1] (as `nohup`
# ignores HUP), then becomes `python -m review_loop`.
_EXEC = (
    "import os, signal, sys\n"
    "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "for s in filter(None, sys.argv[1].split(',')):\n"
    "    signal.signal(int(s), signal.SIG_IGN)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'review_loop', *sys.argv[2:]])\n"
)


def launch(
    args: list[str],
    env: dict[str, str],
    *,
    ignored: tuple[signal.Signals, ...] = (),
    stderr: Any = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """Start ``review-loop ARGS`` as a real process (``sys.executable -m review_loop``),
    with the ``ignored`` signals ignored from the start."""
    return subprocess.Popen(
        [sys.executable, "-c", _EXEC, ",".join(str(int(s)) for s in ignored), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        text=True,
    )


def signal_mask(pid: int, field: str) -> set[signal.Signals]:
    """The signals in ``/proc/<pid>/status`` ``field`` (``SigCgt`` caught, ``SigIgn``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            bits = int(line.split()[1], 16)
            return {s for s in signal.Signals if s < 64 and bits & (1 << (s - 1))}
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def consult_args(repo: Path, *peers: str) -> list[str]:
    """``consult`` of ``peers`` at once on ``repo``."""
    args = ["consult", "--repo", str(repo), "--question", "Is the change right?"]
    for peer in peers:
        args += ["--peer", peer]
    return args


def finish(proc: subprocess.Popen[str], timeout: float = WAIT_S) -> tuple[str, str]:
    """Wait for ``proc`` (bounded: killed and failed after ``timeout``); stdout, stderr."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"review-loop did not exit within {timeout:.0f} s") from None


@contextlib.contextmanager
def stopped_on_failure(proc: subprocess.Popen[str]) -> Iterator[None]:
    """If the block fails, stop ``proc`` (SIGTERM, then bounded) and re-raise the failure."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(AssertionError):
            finish(proc)
        raise


def launch_row(
    mode: Mode, repo: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> subprocess.Popen[str]:
    """Start the two-peer ``consult`` of the ``mode`` row and wait until the row is set up
    (or review-loop ended first); review-loop is stopped if the wait fails."""
    script_row(fakes, mode)
    proc = launch(consult_args(repo, PEER_A, PEER_B), env)
    with stopped_on_failure(proc):
        wait_until(
            f"the {mode.name} row to be set up",
            lambda: proc.poll() is not None or row_is_set_up(fakes, repo, scanner, mode),
            describe=lambda: describe_row(fakes, repo, scanner),
        )
    return proc


def one_document(stdout: str) -> dict[str, Any]:
    """The single JSON document on stdout; fails on none, on two, on trailing text."""
    decoder = json.JSONDecoder()
    text = stdout.strip()
    assert text, "nothing on stdout"
    document, end = decoder.raw_decode(text)
    assert not text[end:].strip(), f"more than one document on stdout: {text[end:][:200]!r}"
    assert isinstance(document, dict)
    return document
