"""The e2e tier through OUR public commands: ``review-loop consult`` / ``sessions`` as a
process, each real CLI from npm underneath, the fake model API on 127.0.0.1 behind it.

Per CLI (a throw-away HOME from ``cli_env``, PATH with ``.clis/node_modules/.bin`` first, a
temp git repo):

- ``consult`` returns the scripted answer and a session id; ``sessions`` lists it with its
  cwd, from our record and from the CLI's own store; ``consult --resume`` reaches the same
  session (the model sees the first turn again) and keeps the id; resuming an unknown id
  starts a new session, marked degraded;
- a scripted HTTP 401 is ``auth_failed`` (``NOT_SUBMITTED`` where the run proves nothing was
  processed) and a hang under ``--timeout`` is ``DELIVERY_UNKNOWN`` (exit 2), ended by its
  deadline, with nothing left running and the session id kept;
- a scripted tool call that tries to write a file leaves the repo untouched, also when the
  model first asks to leave the sandbox (codex) or plan mode (gemini);
- the npm grok 0.0.34 (no read-only mode) answers from a throw-away copy of the repo; an
  absolute path fails too: the repository is mounted read-only around it;
- after every test ``.review-handoff/`` is the only thing our tool added to the repo.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from review_loop.adapters.claude import project_dir_name
from tests.conftest import TOKEN_ENV, processes_with_token
from tests.e2e.conftest import GIT_ENV, ROOT, init_git_repo
from tests.e2e.helpers import Ran, run
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env

RESUMABLE = ("claude", "codex", "gemini")
EVERY_CLI = (*RESUMABLE, "grok")
RUN_TIMEOUT = 180.0
"""Our own bound on one ``review-loop`` process (gemini alone starts in 5-10 s under load)."""

CliBin = Callable[[str], Path]
PeerFor = Callable[..., "Peer"]


@dataclass
class Peer:
    """One real CLI wired to the fake API, and our command to drive it."""

    product: str
    api: FakeModelAPI
    env: dict[str, str]
    repo: Path
    home: Path

    def review_loop(self, *args: str, timeout: float = RUN_TIMEOUT) -> Ran:
        argv = [sys.executable, "-m", "review_loop", *args]
        return run(argv, env=self.env, cwd=self.repo, timeout=timeout)

    def consult(self, question: str, *extra: str) -> tuple[Ran, dict[str, Any]]:
        ran = self.review_loop(
            "consult", "--repo", str(self.repo), "--peer", self.product, "--question", question,
            *extra,
        )  # fmt: skip
        doc = ran.json()
        assert isinstance(doc, dict), ran.describe()
        return ran, doc

    def sessions(self) -> list[dict[str, Any]]:
        ran = self.review_loop("sessions", "--repo", str(self.repo), f"--product={self.product}")
        assert ran.returncode == 0, ran.describe()
        doc = ran.json()
        assert doc["ok"] is True and doc["count"] == len(doc["sessions"]), doc
        return list(doc["sessions"])

    def store_sessions(self, tmp_path: Path) -> list[dict[str, Any]]:
        """``sessions`` with our records moved out of the way: only the CLI's own store."""
        runtime = self.repo / ".review-handoff" / "runtime"
        aside = tmp_path / f"runtime-aside-{uuid.uuid4().hex[:8]}"
        runtime.rename(aside)
        try:
            return self.sessions()
        finally:
            aside.rename(runtime)


@pytest.fixture
def peer_for(cli_bin: CliBin, model_api: FakeModelAPI, cli_home: Path, git_repo: Path) -> PeerFor:
    """``peer_for("codex")`` → the real codex wired to this test's fake API, in ``git_repo``
    (or in ``repo=``)."""

    def make(product: str, *, repo: Path | None = None) -> Peer:
        binary = cli_bin(product)
        env = cli_env(product, model_api, cli_home)
        env["PATH"] = f"{binary.parent}{os.pathsep}{env['PATH']}"
        env["REVIEW_LOOP_HOME"] = os.environ["REVIEW_LOOP_HOME"]  # per test (tests/conftest)
        env["PYTHONPATH"] = str(ROOT)
        env.update(GIT_ENV)
        return Peer(product, model_api, env, repo or git_repo, cli_home)

    return make


def awkward_repo(tmp_path: Path) -> Path:
    """A repo whose path has a space, a quote and brackets, and escapes to more than 200
    characters (claude then cuts its project dir name and appends a hash)."""
    return init_git_repo(tmp_path / "my 'quoted' repo [x]" / ("a" * 120) / ("b" * 60))


def assert_uuid(value: object) -> str:
    assert isinstance(value, str), value
    uuid.UUID(value)
    return value


def assert_only_handoff_added(repo: Path) -> None:
    """Nothing in the repo changed; the only addition is our ignored ``.review-handoff/``."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert status == "!! .review-handoff/\n", status
    assert sorted(p.name for p in repo.iterdir()) == [".git", ".review-handoff", "README.md"]


def assert_nothing_left(peer: Peer) -> None:
    """No process of this test survives its ``review-loop`` run, and no scratch copy."""
    survivors = processes_with_token(os.environ[TOKEN_ENV])
    described = []
    for proc in survivors:
        with contextlib.suppress(psutil.Error):
            described.append((proc.pid, " ".join(proc.cmdline())[:120]))
    assert not survivors, f"still running after review-loop returned: {described}"
    assert not list((peer.home / "tmp").glob("review-loop-isolated-*"))  # TMPDIR of the run


def said_by(messages: list[tuple[str, str]], role: str, text: str) -> bool:
    return any(r == role and text in t for r, t in messages)


# ----------------------------------------------------------------------------- sessions


@pytest.mark.parametrize("product", RESUMABLE)
def test_consult_lists_and_resumes_the_session(
    product: str, peer_for: PeerFor, tmp_path: Path
) -> None:
    peer = peer_for(product, repo=awkward_repo(tmp_path))
    api, repo = peer.api, peer.repo
    api.script(f"first answer from {product}", f"second answer from {product}")

    ran, first = peer.consult("Is README.md clear enough? (first question)")

    assert ran.returncode == 0, ran.describe()
    assert (first["ok"], first["status"], first["product"]) == (True, "advisory", product), first
    assert first["text"] == f"first answer from {product}"
    sid = assert_uuid(first["sessionId"])
    assert first["cwd"] == str(repo)
    (turn,) = api.turns()
    assert "(first question)" in turn.last_user_text
    assert not said_by(turn.messages, "assistant", "first answer")

    # sessions: our record (merged with the CLI store's entry for the same id)
    (entry,) = peer.sessions()
    assert (entry["product"], entry["sessionId"], entry["cwd"]) == (product, sid, str(repo))
    assert entry["source"] == "review-loop" and entry["status"] == "finished", entry
    assert entry["packetId"].startswith("consult-sessions/"), entry
    assert sid in entry["resume"]["headless"] and sid in entry["resume"]["interactive"]
    # ... and the CLI's own store alone, read by the adapter
    (stored,) = peer.store_sessions(tmp_path)
    assert (stored["sessionId"], stored["cwd"], stored["source"]) == (sid, str(repo), "cli-store")
    assert stored["packetId"] is None, stored
    if product == "claude":  # the long-path branch: name cut at 200, then -<base36 hash>
        (transcript,) = (peer.home / ".claude" / "projects").glob(f"*/{sid}.jsonl")
        assert transcript.parent.name == project_dir_name(str(repo))
        assert len(transcript.parent.name) > 200

    ran, second = peer.consult("And the second point? (second question)", "--resume", sid)

    assert ran.returncode == 0, ran.describe()
    assert second["ok"] is True, second
    assert second["text"] == f"second answer from {product}"
    assert second["sessionId"] == sid
    assert "degraded" not in second, second
    _, resumed = api.turns()
    assert said_by(resumed.messages, "user", "(first question)"), resumed.messages
    assert said_by(resumed.messages, "assistant", f"first answer from {product}")
    assert "(second question)" in resumed.last_user_text
    (entry,) = peer.sessions()  # still one session: both consult records carry its id
    assert entry["sessionId"] == sid
    assert_only_handoff_added(repo)


WIDE_RESUME_WINDOW = """
import sys
from review_loop.orchestrator import dispatcher
dispatcher.RESUME_NOT_FOUND_WINDOW_MS = 600_000
sys.argv = ["review-loop", *sys.argv[1:]]
from review_loop.orchestrator.cli import main
main()
"""
"""``review-loop`` with the 5 s "session not found" window widened: a real CLI's start alone
takes longer than 5 s on a loaded machine (claude's did), and the window's two sides are the
dispatcher's policy tests (a refusal at once degrades; a late one keeps the resume)."""


@pytest.mark.parametrize("product", ["claude", "codex"])
def test_resuming_an_unknown_session_starts_a_new_one(product: str, peer_for: PeerFor) -> None:
    # The CLI's own "not found" refusal (claude: "No conversation found with session ID",
    # codex: "no rollout found for thread id") is recognised: the command starts a new
    # session and says so. How fast the real CLI refuses is the machine's load, not ours:
    # the window is widened here (WIDE_RESUME_WINDOW).
    peer = peer_for(product)
    peer.api.script(f"fresh answer from {product}")
    unknown = "0f0e0d0c-0b0a-4908-8706-050403020100"

    argv = [sys.executable, "-c", WIDE_RESUME_WINDOW, "consult", "--repo", str(peer.repo)]
    argv += ["--peer", product, "--question", "anything", "--resume", unknown]
    ran = run(argv, env=peer.env, cwd=peer.repo, timeout=RUN_TIMEOUT)
    doc = ran.json()
    assert isinstance(doc, dict), ran.describe()

    assert ran.returncode == 0, ran.describe()
    assert (doc["ok"], doc["text"]) == (True, f"fresh answer from {product}"), doc
    assert (doc.get("degraded"), doc.get("degradedReason")) == (True, "session_not_found"), doc
    assert assert_uuid(doc["sessionId"]) != unknown
    assert len(peer.api.turns()) == 1  # the refused resume never reached the model
    assert [e["sessionId"] for e in peer.sessions()] == [doc["sessionId"]]
    assert_only_handoff_added(peer.repo)


# ----------------------------------------------------------------------------- failures

DELIVERY_OF_401 = {
    # the provider refused the first request: claude counted no token, codex printed no
    # item; gemini's error document and grok 0.0.34's transcript (it exits 0 with "Sorry, I
    # encountered an error: ..." and drops earlier tool rounds) cannot prove it
    "claude": "NOT_SUBMITTED",
    "codex": "NOT_SUBMITTED",
    "gemini": "DELIVERY_UNKNOWN",
    "grok": "DELIVERY_UNKNOWN",
}


@pytest.mark.parametrize("product", EVERY_CLI)
def test_http_401_is_auth_failed(product: str, peer_for: PeerFor) -> None:
    peer = peer_for(product)
    peer.api.default = Reply.error(401, "fake 401 bad key")

    ran, doc = peer.consult("anything")

    assert ran.returncode == 2, ran.describe()
    delivery = DELIVERY_OF_401[product]
    # ``status`` is the original tool's (DELIVERY_UNKNOWN for every failure)
    assert (doc["ok"], doc["status"], doc["delivery"]) == (False, "DELIVERY_UNKNOWN", delivery)
    assert doc["code"] == "auth_failed", doc
    assert "fake 401 bad key" in doc["error"], doc
    assert doc["recordPath"] is None
    assert len(doc["attempts"]) == 1, doc["attempts"]  # a refusal is never re-sent as it was
    if product in RESUMABLE:  # the session the request went out in, to resume it later
        assert_uuid(doc["sessionId"])
    turns = peer.api.turns()
    assert turns and all(t.reply == "error 401" for t in turns)  # the request left the machine
    assert not list((peer.repo / ".review-handoff" / "runtime" / "consults").iterdir())
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


HANG_TIMEOUT_S = {"gemini": 30}
"""``--timeout`` per CLI, default 15 s; the point is a timeout while the request hangs, so the
CLI must have started and sent its request before it: gemini needs 5-10 s for that on a
loaded machine, claude and grok missed 3 s there."""


@pytest.mark.parametrize("product", EVERY_CLI)
def test_hang_times_out_as_delivery_unknown(product: str, peer_for: PeerFor) -> None:
    peer = peer_for(product)
    peer.api.default = Reply.hang()
    timeout = HANG_TIMEOUT_S.get(product, 15)

    ran, doc = peer.consult("anything", "--timeout", str(timeout))

    assert ran.returncode == 2, ran.describe()
    assert (doc["ok"], doc["status"], doc["delivery"], doc["code"]) == (
        False,
        "DELIVERY_UNKNOWN",
        "DELIVERY_UNKNOWN",
        "timeout",
    ), doc
    (attempt,) = doc["attempts"]
    assert attempt["timedOut"] is True, attempt
    # Not ended before its deadline. That the deadline ended it: the fake API never answers,
    # so only the deadline can end the request, and a run it did not end is killed by this
    # test's own bound (RUN_TIMEOUT) and fails. No upper bound in seconds: a loaded machine
    # would decide it, not review-loop.
    assert attempt["elapsedMs"] >= timeout * 1000, attempt
    assert [t.reply for t in peer.api.turns()] == ["hang"]  # it timed out mid-request
    if product in RESUMABLE:  # the session exists: its id is kept, to resume and find out
        sid = assert_uuid(doc["sessionId"])
        assert attempt["sessionId"] == sid
        assert [e["sessionId"] for e in peer.sessions()] == [sid]
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


# ----------------------------------------------------------------------------- read-only


def write_attempts() -> list[Any]:
    """(product, tool, arguments for the file ``target``, what the model is told back).

    The last item is the evidence of which read-only layer stopped the write: claude's
    ``--tools Read,Grep,Glob`` (the tool is not there), codex's read-only sandbox (the
    command runs and fails; asking to run it unsandboxed is refused), gemini's admin-tier
    policy from the adapter (the tool is not there; plan mode alone would answer "Access
    denied: plan path ...").
    """

    def case(
        product: str, tool: str, args: Callable[[Path], Any], denial: str, how: str = ""
    ) -> Any:
        return pytest.param(product, tool, args, denial, id=f"{product}-{tool}{how}")

    return [
        case(
            "claude",
            "Write",
            lambda t: {"file_path": str(t), "content": "pwned\n"},
            "No such tool available: Write",
        ),
        case(
            "claude",
            "Bash",
            lambda t: {"command": f"touch {t}", "description": "make it"},
            "No such tool available: Bash",
        ),
        case("codex", "exec_command", lambda t: {"cmd": f"touch {t}"}, "Read-only file system"),
        case(  # asking to leave the sandbox: approval_policy="never" refuses
            "codex",
            "exec_command",
            lambda t: {
                "cmd": f"touch {t}",
                "sandbox_permissions": "require_escalated",
                "justification": "needed",
            },
            "you cannot ask for escalated permissions if the approval policy is Never",
            "-escalated",
        ),
        case(
            "gemini",
            "write_file",
            lambda t: {"file_path": str(t), "content": "pwned\n"},
            'Tool \\"write_file\\" not found',  # the JSON error quoted as text
        ),
    ]


@pytest.mark.parametrize(("product", "tool", "arguments", "denial"), write_attempts())
def test_a_write_attempt_leaves_the_repo_untouched(
    product: str,
    tool: str,
    arguments: Callable[[Path], Mapping[str, Any]],
    denial: str,
    peer_for: PeerFor,
) -> None:
    peer = peer_for(product)
    target = peer.repo / "pwned.txt"
    peer.api.script(Reply.tool_then(tool, arguments(target), then=None))  # then: quote result

    ran, doc = peer.consult("Please create pwned.txt")

    assert ran.returncode == 0, ran.describe()
    # the CLI really ran the tool call and came back with its result
    assert [t.reply for t in peer.api.turns()] == ["tool", "text"], ran.describe()
    assert doc["ok"] is True and doc["text"].startswith("TOOL RESULT: "), doc
    assert not target.exists(), f"{tool} wrote the file; the model was told: {doc['text']}"
    assert denial in doc["text"], doc["text"]
    assert_only_handoff_added(peer.repo)


def test_gemini_cannot_leave_plan_mode_to_write(peer_for: PeerFor) -> None:
    # Headless, gemini 0.61's own plan.toml ALLOWS exit_plan_mode ("Plan approved. Switching
    # to YOLO mode"), after which write_file and run_shell_command run unasked. The adapter's
    # admin-tier policy must deny the way out (and the writing tools themselves).
    peer = peer_for("gemini")
    target = peer.repo / "pwned.txt"
    peer.api.script(
        Reply.tool("exit_plan_mode", {"plan_filename": "plan.md"}),
        Reply.tool("write_file", {"file_path": str(target), "content": "pwned\n"}),
        Reply.tool("run_shell_command", {"command": f"touch {target}"}),
        Reply.answer("done"),
    )

    ran, doc = peer.consult("Please create pwned.txt")

    assert ran.returncode == 0, ran.describe()
    assert doc["ok"] is True and doc["text"] == "done", doc
    turns = peer.api.turns()
    assert [t.reply for t in turns] == ["tool", "tool", "tool", "text"], ran.describe()
    results = [
        part["functionResponse"]
        for turn in turns[1:]
        for part in turn.body["contents"][-1]["parts"]
        if "functionResponse" in part
    ]
    assert [r["name"] for r in results] == ["exit_plan_mode", "write_file", "run_shell_command"]
    assert all("error" in r["response"] for r in results), results
    assert not target.exists()
    assert_only_handoff_added(peer.repo)


# ----------------------------------------------------------------------------- grok 0.0.34


def test_grok_answers_from_a_throwaway_copy(peer_for: PeerFor) -> None:
    peer = peer_for("grok")
    peer.api.script("the grok answer")

    ran, doc = peer.consult("Is README.md clear enough?")

    assert ran.returncode == 0, ran.describe()
    assert (doc["ok"], doc["text"], doc["sessionId"]) == (True, "the grok answer", None), doc
    (turn,) = peer.api.turns("chat")
    system = turn.all_text
    assert "review-loop-isolated-" in system, system[-2000:]  # it ran in the copy ...
    assert f"Current working directory: {peer.repo}\n" not in system  # ... not in the repo
    assert peer.sessions() == []  # 0.0.34 keeps no sessions, so none is listed
    assert not (peer.repo / ".grok").exists()  # 0.0.34 drops .grok/ where it runs: the copy
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


def test_grok_create_file_writes_only_into_the_copy(peer_for: PeerFor) -> None:
    peer = peer_for("grok")
    call = Reply.tool_then("create_file", {"path": "pwned.txt", "content": "pwned\n"}, then=None)
    peer.api.script(call)

    ran, doc = peer.consult("Please create pwned.txt")

    assert ran.returncode == 0, ran.describe()
    assert [t.reply for t in peer.api.turns()] == ["tool", "text"], ran.describe()
    assert doc["ok"] is True, doc
    assert "pwned.txt" in doc["text"] and "+pwned" in doc["text"], doc  # the write happened ...
    assert not (peer.repo / "pwned.txt").exists()  # ... in the copy, which is gone
    assert not (peer.repo / ".grok").exists()
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


def test_grok_cannot_write_into_the_repo_by_absolute_path(
    peer_for: PeerFor,
) -> None:
    peer = peer_for("grok")
    target = peer.repo / "pwned.txt"
    peer.api.script(
        Reply.tool_then("create_file", {"path": str(target), "content": "pwned\n"}, then=None)
    )

    ran, doc = peer.consult(f"Please create {target}")

    assert ran.returncode == 0, ran.describe()
    assert [t.reply for t in peer.api.turns()] == ["tool", "text"], ran.describe()
    assert not target.exists(), f"grok wrote into the real repo: {doc.get('text')}"
    assert_only_handoff_added(peer.repo)
