"""Inputs are bounded: file inputs have a size limit, an empty path flag is refused.

- Contract tests of ``review_loop.orchestrator.handoff.input_files``: at most the limit + 1 bytes
  are read, a source past the limit is refused naming it, text reads as ``read_text`` does.
- Process tests: ``--question-file /dev/zero`` (an endless file) is refused at the limit,
  with the flag and the limit named, under an address-space limit that an unbounded read
  would exceed (so a regression fails here instead of eating the machine); a regular file
  one byte past the limit is refused the same way; ``--repo ""`` is refused naming the
  flag for ``consult``, ``run``, ``evidence`` and ``sessions`` run in a checkout (which an
  empty path would silently mean), nothing written there, no reviewer called.
- Collaboration tests (in-process CLI): every other file flag is refused past the limit
  naming itself, and every other path flag refused when empty.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.handoff import input_files
from review_loop.orchestrator.handoff.input_files import MAX_INPUT_BYTES, InputTooLargeError
from tests.fakes import FakeCLIs
from tests.gitrepo import guarded_change

LIMIT_WORDS = "16 MiB (16777216 bytes)"


# -- the bounded reader ---------------------------------------------------------------------


def test_contract_a_file_at_the_limit_is_read_one_past_it_is_refused(tmp_path: Path) -> None:
    exact, over = tmp_path / "exact", tmp_path / "over"
    exact.write_bytes(b"x" * 10)
    over.write_bytes(b"x" * 11)
    assert input_files.read_bytes(exact, limit=10) == b"x" * 10
    with pytest.raises(InputTooLargeError) as refused:
        input_files.read_bytes(over, limit=10)
    assert refused.value.filename == str(over) and refused.value.limit == 10
    assert "larger than the input limit" in str(refused.value)


def test_contract_an_endless_source_stops_at_the_limit() -> None:
    with pytest.raises(InputTooLargeError) as refused:
        input_files.read_bytes("/dev/zero", limit=1024)
    assert refused.value.filename == "/dev/zero"


class _Counting(io.BytesIO):
    """A binary stream that counts what was asked of it."""

    asked = 0

    def read(self, size: int | None = -1) -> bytes:
        self.asked += size if size is not None and size >= 0 else 1 << 62
        return super().read(size)


def test_contract_no_more_than_the_limit_plus_one_is_asked_for() -> None:
    stream = io.TextIOWrapper(_Counting(b"y" * 100), encoding="utf-8")
    with pytest.raises(InputTooLargeError):
        input_files.read_stream_text(stream, "stdin", limit=10)
    assert stream.buffer.asked == 11  # type: ignore[attr-defined]


def test_contract_text_reads_as_read_text_does(tmp_path: Path) -> None:
    source = tmp_path / "crlf.txt"
    source.write_bytes("a\r\nb\rc\nd é".encode())
    assert input_files.read_text(source) == source.read_text(encoding="utf-8")
    stdin = io.TextIOWrapper(io.BytesIO(source.read_bytes()), encoding="utf-8")
    assert input_files.read_stream_text(stdin, "stdin") == source.read_text(encoding="utf-8")
    assert input_files.read_stream_text(io.StringIO("plain"), "stdin") == "plain"
    with pytest.raises(InputTooLargeError):
        input_files.read_stream_text(io.StringIO("x" * 11), "stdin", limit=10)


def test_contract_the_limit_in_words() -> None:
    assert input_files.limit_text() == LIMIT_WORDS
    assert MAX_INPUT_BYTES == 16 * 1024 * 1024


# -- through the command line ----------------------------------------------------------------


def _address_space_of_one_gib() -> None:
    # An unbounded read of /dev/zero fails here (MemoryError) instead of growing until the
    # kernel kills it: the test fails quickly without the bound, never hangs.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _process(cwd: Path, *argv: str) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_address_space_of_one_gib,
        check=False,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def _over_the_limit(path: Path) -> Path:
    with path.open("wb") as handle:  # sparse: one byte past the limit, nothing on disk
        handle.truncate(MAX_INPUT_BYTES + 1)
    return path


def _written(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if ".git" not in p.parts)


@pytest.mark.parametrize("source", ["/dev/zero", "over-the-limit"])
def test_process_question_file_past_the_limit_is_refused_naming_it(
    source: str, tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = guarded_change(tmp_path / "repo")
    path = source if source.startswith("/") else str(_over_the_limit(tmp_path / "big.txt"))
    before = _written(repo)
    code, document, stderr = _process(
        repo, "consult", "--repo", str(repo), "--peer", "codex", "--question-file", path
    )
    assert code == 1 and document["ok"] is False, (document, stderr[-2000:])
    assert document["error"].startswith("--question-file: ")
    assert path in document["error"] and LIMIT_WORDS in document["error"]
    assert "Traceback" not in stderr
    assert _written(repo) == before and fakes.calls() == []


EMPTY_REPO = {
    "consult": ["consult", "--repo", "", "--peer", "codex", "--question", "Q"],
    "run": ["run", "--repo", "", "--reviewer", "codex"],
    "evidence": ["evidence", "--repo", ""],
    "sessions": ["sessions", "--repo", ""],
}


@pytest.mark.parametrize("command", EMPTY_REPO)
def test_process_an_empty_repo_is_refused_not_the_current_directory(
    command: str, tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = guarded_change(tmp_path / "repo")  # the cwd: what "" used to mean
    before = _written(repo)
    code, document, stderr = _process(repo, *EMPTY_REPO[command])
    assert code == 1 and document["ok"] is False, (document, stderr[-2000:])
    assert document["error"].startswith("--repo: is empty"), document
    assert _written(repo) == before and fakes.calls() == []


def _in_process(*argv: str) -> tuple[int, dict[str, Any]]:
    out: list[str] = []
    code = cli_run(list(argv), stdout=out.append)
    assert len(out) == 1, out
    return code, json.loads(out[0])


def _file_flags(repo: Path, big: str) -> dict[str, list[str]]:
    r = str(repo)
    plan = repo.parent / "plan.md"
    plan.write_text("Ship it.\n")
    framing = ["--description", "d", "--fix-direction", "f", "--target", "app.py"]
    return {
        "--body-file": ["fix-completion", "--repo", r, "--packet", "p.md", "--body-file", big],
        "--scenarios-file": ["verify-diff", "--repo", r, *framing, "--scenarios-file", big],
        "--plan": ["converge", "--repo", r, "--plan", big],
        "--host-position": ["converge", "--repo", r, "--plan", str(plan), "--host-position", big],
        "--driver": ["audit", "HEAD", r, "--driver", big],
        "--deterministic-verification": [
            "audit",
            "HEAD",
            r,
            "--driver",
            "self",
            "--deterministic-verification",
            big,
        ],
    }


@pytest.mark.parametrize(
    "flag",
    [
        "--body-file",
        "--scenarios-file",
        "--plan",
        "--host-position",
        "--driver",
        "--deterministic-verification",
    ],
)
def test_collaboration_every_file_flag_is_bounded(
    flag: str, tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = guarded_change(tmp_path / "repo")
    big = str(_over_the_limit(tmp_path / "big"))
    before = _written(repo)
    code, document = _in_process(*_file_flags(repo, big)[flag])
    assert code == 1 and document["error"].startswith(f"{flag}: "), document
    assert LIMIT_WORDS in document["error"]
    assert _written(repo) == before and fakes.calls() == []


def test_collaboration_journal_input_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = guarded_change(tmp_path / "repo")
    big = str(_over_the_limit(tmp_path / "big"))
    argv = ["verification", "run", "start", "-C", str(repo), "--verification-type"]
    argv += ["audit", "--scope-type", "file", "--scope", "app.py", "--input", big]
    code = cli_run(argv, stdout=lambda text: None)
    err = capsys.readouterr().err
    assert code == 1 and "could not read the recorded run input" in err, err
    assert LIMIT_WORDS in err and big in err


def _empty_flags(repo: Path) -> dict[str, list[str]]:
    r = str(repo)
    framing = ["--description", "d", "--fix-direction", "f"]
    return {
        "--packet": ["close", "--repo", r, "--packet", "", "--reason", "accept-concerns"],
        "--target": ["verify-diff", "--repo", r, *framing, "--target", ""],
        "--body-file": ["fix-completion", "--repo", r, "--packet", "p.md", "--body-file", ""],
        "--question-file": ["consult", "--repo", r, "--peer", "codex", "--question-file", ""],
        "--plan": ["converge", "--repo", r, "--plan", ""],
        "DIR": ["audit", "HEAD", "", "--driver", "self"],
        "--skill-dir": ["preflight", "--repo", r, "--skill-dir", ""],
        "--dir": ["shim", "spx", "--dir", ""],
    }


@pytest.mark.parametrize(
    "flag",
    [
        "--packet",
        "--target",
        "--body-file",
        "--question-file",
        "--plan",
        "DIR",
        "--skill-dir",
        "--dir",
    ],
)
def test_collaboration_every_empty_path_flag_is_refused(
    flag: str, tmp_path: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = guarded_change(tmp_path / "repo")
    monkeypatch.chdir(repo)
    before = _written(repo)
    code, document = _in_process(*_empty_flags(repo)[flag])
    assert code == 1 and document["error"].startswith(f"{flag}: is empty"), document
    assert _written(repo) == before and fakes.calls() == []


def test_collaboration_an_empty_verification_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = guarded_change(tmp_path / "repo")
    monkeypatch.chdir(repo)
    before = _written(repo)
    argv = ["verification", "run", "start", "-C", "", "--verification-type", "audit"]
    argv += ["--scope-type", "file", "--scope", "app.py", "--input", "stdin"]
    code = cli_run(argv, stdout=lambda text: None)
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("-C/--directory: is empty"), err
    assert _written(repo) == before
    assert os.getcwd() == str(repo)


def test_collaboration_audit_input_and_concerns_are_bounded(
    tmp_path: Path, fakes: FakeCLIs, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = guarded_change(tmp_path / "repo")
    big = str(_over_the_limit(tmp_path / "big"))
    with pytest.raises(SystemExit) as exited:  # scope exits with its own codes
        cli_run(["scope", "resolve", "HEAD", "--repo", str(repo), "--audit-input", big])
    err = capsys.readouterr().err
    assert exited.value.code == 1 and "--audit-input: cannot read" in err, err
    assert LIMIT_WORDS in err
    _, document = _in_process("audit", "HEAD", str(repo), "--driver", "self", "--concerns", big)
    assert document["status"] == "BLOCKED" and LIMIT_WORDS in document["stderr"], document
    assert fakes.calls() == []
