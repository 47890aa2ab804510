"""Contract test: ``review-loop sessions`` prints exactly the bytes it always printed.

The listing, the record reader and the JSON writer of ``sessions`` were rewritten for
start-up (``docs/performance.md``): a plain reader stands for the pydantic models, ``os.scandir``
for globbing, a C-leaf indenting writer for ``json.dumps(indent=2)``. The golden files were
written by the code before that rewrite; each run of the real process over one hostile,
varied repository (ours and the original's records, lax values read as the original's,
foreign and broken files, links, a FIFO, a committed record, ties, non-ASCII text, a CLI's
own store) must print them byte for byte, the repository path aside.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import review_loop
from review_loop.adapters import get_adapter
from review_loop.adapters.claude import project_dir_name
from review_loop.agents.models import ReadOnlyResume, ResumeCommands, StoredSession
from review_loop.orchestrator.handoff.json_text import Written, pretty
from review_loop.orchestrator.sessions.listing import Listed, read_only_resume, session_document

GOLDEN = Path(__file__).parents[2] / "golden" / "sessions_output"
UUID = "0c6f1a52-1f5e-4c1e-9d55-{:012d}"


def ours(product: str, session: str | None, updated: str, **more: Any) -> dict[str, Any]:
    """A record as review-loop writes it (``SessionRecord``)."""
    return {
        "product": product,
        "sessionId": session,
        "updated": updated,
        "cwd": "<repo>",
        "peer": product,
        "command": [product],
        "status": "finished",
        "state": "DELIVERED",
        "reason": None,
        "pid": 4242,
        "pgid": 4242,
        "marker": "m",
        "procStart": 12.5,
        "ownerPid": 4000,
        "ownerStart": 11.0,
        "startedAt": updated,
        "finishedAt": updated,
        "attempt": 1,
        **more,
    }


def original(product: str, session: Any, updated: str) -> dict[str, Any]:
    """A record as the original Node tool writes it."""
    return {"product": product, "sessionId": session, "updated": updated}


def at(minute: int) -> str:
    """A distinct time per record: ties are listed in directory order, which differs
    between file systems, so a golden file holds none."""
    return f"2026-11-29T10:{minute:02d}:00.000Z"


RECORDS: dict[str, Any] = {
    "main/p01": ours("claude", UUID.format(1), at(1)),
    "main/p02": ours("codex", UUID.format(2), at(2), command=["codex", "--profile", "a b"]),
    "main/p03": ours("codex", UUID.format(3), at(3), status="running", state=None),  # unproven
    "main/p04": ours(
        "claude", UUID.format(4), at(4), status="interrupted", state="DELIVERY_UNKNOWN"
    ),
    "main/p05": original("codex", UUID.format(5), at(5)),
    "main/p06": original("claude", UUID.format(6), at(6)),
    "main/p07": ours("codex", UUID.format(2), at(7), extra={"a": [1, 2]}),  # same session, newer
    "main/p08": ours("codex", UUID.format(8), at(8), ownerPid="12"),  # lax: read as the original's
    "main/p09": ours(
        "codex", UUID.format(9), at(9), pid=3.0, attempt=True
    ),  # lax too: the original's
    "main/p10": ours("codex", UUID.format(10), at(10), status="weird"),  # read as the original's
    "main/p11": ours("codex", None, at(11)),  # no session id: not listed
    "main/p12": original("codex", 5, at(12)),  # foreign: skipped
    "main/p13": [1, 2],  # not an object
    "main/p14": "not json {",
    "main/p15": ours("gemini", "gemini-sess-é✓\u2028\x01", at(13), cwd="/elsewhere/naïve 'dir'"),
    "main/p16": ours("codex", UUID.format(16), at(14), peer=None),  # refused: read as original
    "main/p17": {**original("codex", UUID.format(17), at(15)), "cwd": 3},  # original despite cwd
    "main/p18": ours("grok", UUID.format(18), "not a time"),
    "main/p19": ours("codex", UUID.format(19), at(16), command="codex"),  # refused: original
    "main/p20": ours("codex", UUID.format(20), at(17), state="DELIVERED", status="lost"),
    "dev/p21": ours("claude", UUID.format(21), at(18), title="ignored"),
    ".hidden/p22": original("codex", UUID.format(22), at(19)),
    "dev/.p23": original("codex", UUID.format(23), at(20)),
    "dev/p24": ours("claude", UUID.format(24), at(21), status="running", state=None),  # in store
}


def build(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The repository, and an environment whose HOME holds a claude store."""
    repo = tmp_path / "my repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    runtime = repo / ".review-handoff" / "runtime"
    for relative, record in RECORDS.items():
        path = runtime / relative / "reviewer-session.json"
        path.parent.mkdir(parents=True)
        if isinstance(record, dict) and record.get("cwd") == "<repo>":
            record = {**record, "cwd": str(repo)}
        text = record if isinstance(record, str) else json.dumps(record)
        path.write_text(text, encoding="utf-8")
    outside = tmp_path / "outside"
    (outside / "p1").mkdir(parents=True)
    (outside / "p1" / "reviewer-session.json").write_text(
        json.dumps(original("codex", UUID.format(90), at(58)))
    )
    (runtime / "linked").symlink_to(outside)  # a branch directory that is a link
    (runtime / "main" / "p91").symlink_to(outside / "p1")  # a packet directory that is a link
    (runtime / "main" / "p92").mkdir()
    (runtime / "main" / "p92" / "reviewer-session.json").symlink_to(
        outside / "p1" / "reviewer-session.json"
    )
    (runtime / "main" / "p93").mkdir()
    os.mkfifo(runtime / "main" / "p93" / "reviewer-session.json")
    (runtime / "main" / "p94").mkdir()  # a packet directory without a record
    (runtime / "main" / "loose.json").write_text("{}")  # a file among packet directories
    committed = runtime / "main" / "p95" / "reviewer-session.json"
    committed.parent.mkdir()
    committed.write_text(json.dumps(original("codex", UUID.format(95), at(59))))
    subprocess.run([*git, "add", "-f", str(committed)], check=True)
    subprocess.run([*git, "commit", "-qm", "planted"], check=True)
    home = tmp_path / "home"
    store = home / ".claude" / "projects" / project_dir_name(str(repo))
    store.mkdir(parents=True)
    for number, when in ((24, 1_800_000_000), (80, 1_800_000_100)):
        line = {"type": "user", "cwd": str(repo), "message": {"content": f"question {number}"}}
        session = store / f"{UUID.format(number)}.jsonl"
        session.write_text(json.dumps(line) + "\n")
        os.utime(session, (when, when))
    env = {**os.environ, "HOME": str(home), "PATH": os.environ["PATH"]}
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("CODEX_HOME", None)
    return repo, env


def normalised(text: str, repo: Path) -> str:
    """The output without what differs between checkouts: the repository's path and the
    package's (gemini's read-only resume names the policy file shipped in it)."""
    policy = Path(review_loop.__file__).parent / "adapters" / "gemini_read_only.toml"
    for path, placeholder in ((policy, "<policy>"), (repo, "<repo>")):
        for form in (shlex.quote(str(path)), str(path)):
            text = text.replace(json.dumps(form, ensure_ascii=False)[1:-1], placeholder)
    return text


ARGVS = {
    "all": [],
    "claude": ["--product=claude"],
    "codex": ["--product", "codex"],
}


@pytest.mark.parametrize("name", list(ARGVS))
def test_contract_sessions_prints_the_golden_bytes(tmp_path: Path, name: str) -> None:
    repo, env = build(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", "sessions", "--repo", str(repo), *ARGVS[name]],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = normalised(done.stdout.decode("utf-8"), repo)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("REVIEW_LOOP_UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("product", ["claude", "codex", "gemini", "grok"])
def test_contract_read_only_resume_is_the_read_only_commands_asdict(product: str) -> None:
    commands = get_adapter(product).resume_commands("s-1", (product,))
    assert commands.read_only is not None
    document = read_only_resume(product, commands)
    # ReadOnlyResume is a NamedTuple (agents/models.py): _asdict is its fields in order
    assert list(document.items()) == list(commands.read_only._asdict().items())
    bare = ResumeCommands(interactive="tool --resume s", headless="tool -p --resume s")
    unavailable = read_only_resume("tool", bare)
    assert list(unavailable) == list(ReadOnlyResume._fields)


def listed(**session: Any) -> Listed:
    fields = {
        "product": "claude",
        "session_id": UUID.format(7),
        "cwd": '/r/it\'s "here"',
        "updated": at(1),
        "title": "Fix é ✓\u2028 {x}",
        "source": "claude",
        **session,
    }
    return Listed(StoredSession(**fields), "main/p1", ("claude", "--x"), "finished")


ENTRIES = [
    listed(),
    listed(cwd=None, title=None),
    listed(product="codex", session_id='a\\b"c\x00'),
    listed(product="grok", title=""),  # grok's npm variant: commands without read-only
]


@pytest.mark.parametrize("item", ENTRIES, ids=range(len(ENTRIES)))
def test_contract_an_entry_writes_itself_as_json_dumps_writes_it(item: Listed) -> None:
    entry = session_document(item)
    assert isinstance(entry, Written) and entry.text("\n") is not None  # the template ran
    for document in (entry, [entry], {"sessions": [entry, {"a": [entry]}]}):
        assert pretty(document) == json.dumps(document, ensure_ascii=False, indent=2)


def test_contract_an_entry_not_of_its_shape_is_walked_as_any_dict() -> None:
    def odd(change: Any) -> dict[str, Any]:
        entry = session_document(listed())
        change(entry)
        return entry

    changes = [
        lambda e: e.update(title=3),  # a third-party adapter's title, not a string
        lambda e: e.update(extra="x"),
        lambda e: e.pop("status"),
        lambda e: e["resume"].update(more=None),
        lambda e: e.update(resume=["not", "a", "dict"]),
        lambda e: e["resumeReadOnly"].update(unavailable=False),
        lambda e: e.update(cwd=e.pop("cwd")),  # same keys, another order
    ]
    for change in changes:
        entry = odd(change)
        assert isinstance(entry, Written) and entry.text("\n") is None
        assert pretty([entry]) == json.dumps([entry], ensure_ascii=False, indent=2)


def test_contract_an_unknown_product_is_exit_1_naming_the_accepted_ones(tmp_path: Path) -> None:
    repo, env = build(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "review_loop",
            "sessions",
            "--repo",
            str(repo),
            "--product",
            "kodex",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    error = json.loads(done.stdout)
    assert error["ok"] is False
    assert error["error"].startswith("--product: unknown product 'kodex' (accepted: claude, codex")
    assert done.stderr.splitlines()[-1].endswith("(did you mean codex?)")
