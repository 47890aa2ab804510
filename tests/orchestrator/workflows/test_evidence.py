"""Contract tests: the evidence digest equals the original tool's, byte for byte.

The oracle is :func:`reference_evidence`, a plain transcription of ``reference/origins.md``
§3.6 that runs the original's git commands, one process per untracked file, and decodes
and strips the way the original's JavaScript does. Every test builds a real repository
with ``git init`` in ``tmp_path`` and checks our fast paths against it (and against our
own ``fast=False`` path), over many kinds of file, name, configuration and attribute.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.errors import InputError
from review_loop.agents.evidence import (
    JS_WHITESPACE,
    Evidence,
    js_rstrip,
    js_sort_key,
    normalize_path_filter,
)
from review_loop.orchestrator.workflows import evidence as ev
from review_loop.orchestrator.workflows.evidence import (
    EvidenceSnapshot,
    attest_evidence,
    compute_evidence,
    snapshot_evidence,
)

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()

# ECMAScript \s (WhiteSpace + LineTerminator), written out independently of the module.
_JS_SPACE = set(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


# --- the oracle -------------------------------------------------------------------------


def _js_rstrip(text: str) -> str:
    end = len(text)
    while end and text[end - 1] in _JS_SPACE:
        end -= 1
    return text[:end]


def _js_normalize(items: Sequence[str] | None) -> list[str] | None:
    if not items:
        return None
    trimmed = []
    for item in items:
        start, end = 0, len(item)
        while start < end and item[start] in _JS_SPACE:
            start += 1
        while end > start and item[end - 1] in _JS_SPACE:
            end -= 1
        if item[start:end] and item[start:end] not in trimmed:
            trimmed.append(item[start:end])
    # Array.prototype.sort compares UTF-16 code units.
    return sorted(trimmed, key=lambda s: [ord(u) for u in _utf16_units(s)]) or None


def _utf16_units(text: str) -> str:
    raw = text.encode("utf-16-be", "surrogatepass")
    return "".join(chr(int.from_bytes(raw[i : i + 2], "big")) for i in range(0, len(raw), 2))


def reference_evidence(
    repo: Path, base: str = "HEAD", paths: str | list[str] | None = None
) -> tuple[dict[str, Any], str]:
    """§3.6 as the original runs it: one git process per step and per untracked file."""

    def git(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)

    def nul_list(out: bytes) -> list[str]:
        return [x for x in out.decode("utf-8", "replace").split("\0") if x]

    base_sha = git("rev-parse", base).stdout.decode().strip()
    path_filter = _js_normalize(paths.split(",") if isinstance(paths, str) else paths)
    spec = path_filter or []
    tracked = nul_list(git("diff", "--name-only", "-z", base_sha, "--", *spec).stdout)
    others = ["ls-files", "--others", "--exclude-standard", "-z"]
    untracked = nul_list(git(*others, *(["--", *spec] if spec else [])).stdout)
    chunks: list[str] = []
    tracked_diff = git("diff", base_sha, "--", *(spec or tracked))
    assert tracked_diff.returncode == 0, tracked_diff.stderr
    text = tracked_diff.stdout.decode("utf-8", "replace")
    if _js_rstrip(text).lstrip("".join(_JS_SPACE)):
        chunks.append(_js_rstrip(text))
    for name in untracked:
        where = os.path.join(os.fsencode(repo), name.encode())
        try:
            st = os.lstat(where)
        except FileNotFoundError:
            continue
        if os.path.isdir(where) and not os.path.islink(where):
            continue
        if os.path.islink(where):
            target = os.readlink(where).decode("utf-8", "replace")
            chunks.append(
                "review-evidence untracked-symlink-v1\n"
                f"path-bytes {len(name.encode())}\n{json.dumps(name, ensure_ascii=False)}\n"
                f"target-bytes {len(target.encode())}\n{json.dumps(target, ensure_ascii=False)}"
            )
            continue
        del st
        result = git("diff", "--no-index", "--", "/dev/null", name)
        if result.returncode != 0:
            if result.stdout:
                chunks.append(_js_rstrip(result.stdout.decode("utf-8", "replace")))
            elif result.returncode != 1:
                raise AssertionError(result.stderr)
    diff_text = "\n\n".join(chunks) + "\n" if chunks else ""
    evidence = {
        "baseSha": base_sha,
        "pathFilter": path_filter,
        "digest": hashlib.sha256(diff_text.encode()).hexdigest(),
        "coveredPaths": _js_normalize(list(dict.fromkeys([*tracked, *untracked]))) or [],
        "sourceRound": None,
    }
    return evidence, diff_text


# --- fixtures and helpers ----------------------------------------------------------------


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git configuration leaks into the repositories under test."""
    home = tmp_path_factory.mktemp("git-home")
    config = home / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS"):
        monkeypatch.delenv(var, raising=False)


class Repo:
    """A scratch repository."""

    def __init__(self, path: Path, *init_args: str) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", *init_args)

    def git(self, *args: str | bytes) -> bytes:
        result = subprocess.run(
            [b"git", *(os.fsencode(a) for a in args)], cwd=self.path, capture_output=True
        )
        assert result.returncode == 0, result.stderr.decode()
        return result.stdout

    def write(self, name: str | bytes, data: bytes | str = b"x\n", *, mode: int = 0o644) -> Path:
        raw = os.fsencode(name)
        target = os.path.join(os.fsencode(self.path), raw)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.chmod(target, mode)
        return Path(os.fsdecode(target))

    def symlink(self, name: str | bytes, target: str | bytes) -> None:
        where = os.path.join(os.fsencode(self.path), os.fsencode(name))
        os.makedirs(os.path.dirname(where), exist_ok=True)
        os.symlink(os.fsencode(target), where)

    def commit(self, message: str = "c") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path / "repo")
    made.write("README.md", "# readme\n")
    made.write("src/app.py", "print('hi')\n")
    made.commit("init")
    return made


def assert_matches(
    repo: Repo, base: str = "HEAD", paths: str | list[str] | None = None
) -> EvidenceSnapshot:
    """Fast path == our exact path == the oracle, for the text, the evidence and streaming."""
    expected, expected_text = reference_evidence(repo.path, base, paths)
    snap = snapshot_evidence(repo.path, base, paths, keep_text=True)
    assert snap.diff_text == expected_text
    assert snap.evidence.model_dump() == expected
    exact = snapshot_evidence(repo.path, base, paths, keep_text=True, fast=False)
    assert exact.diff_text == expected_text
    assert attest_evidence(repo.path, base, paths).model_dump() == expected
    return snap


# --- untracked files ---------------------------------------------------------------------


def test_clean_tree_has_the_digest_of_empty_text(repo: Repo) -> None:
    evidence, text = compute_evidence(repo.path)
    assert text == ""
    assert evidence.digest == EMPTY_SHA256
    assert evidence.coveredPaths == []
    assert evidence.pathFilter is None
    assert evidence.sourceRound is None
    assert evidence.baseSha == repo.git("rev-parse", "HEAD").decode().strip()


def test_untracked_file_kinds(repo: Repo) -> None:
    repo.write("text.txt", "one\ntwo\nthree\n")
    repo.write("single.txt", "only\n")
    repo.write("empty.txt", "")
    repo.write("newline-only.txt", "\n")
    repo.write("blank-lines.txt", "\n\n\n")
    repo.write("no-eol.txt", "a\nb")
    repo.write("no-eol-one.txt", "lonely")
    repo.write("trailing-space.txt", "x   \n\t\n  ")
    repo.write("crlf.txt", "l1\r\nl2\r\n")
    repo.write("cr-only.txt", "a\rb\r")
    repo.write("binary.bin", b"\x00\x01\x02binary")
    repo.write("run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    repo.write("group-exec.sh", "x\n", mode=0o654)  # only the owner bit decides
    repo.write("deep/nested/dir/file.txt", "deep\n")
    repo.write("latin1.txt", b"caf\xe9\n")
    repo.write("utf8.txt", "日本語 😀\n")
    repo.write("bom.txt", "\ufeffhello\n")
    repo.write("js-space.txt", "ends with ideographic space\u3000\n")
    repo.write("not-js-space.txt", "ends with info separator\x1c\n")
    repo.write("bigger.txt", "".join(f"line {i}\n" for i in range(5000)))
    snap = assert_matches(repo)
    assert snap.stats.untracked_fast == 20
    assert snap.stats.untracked_git == 0
    assert snap.stats.fallback_reason is None
    assert snap.diff_text is not None
    # The last line of a chunk loses JavaScript whitespace only.
    assert "+ends with info separator\x1c\n\n" in snap.diff_text
    assert "+ends with ideographic space\n\n" in snap.diff_text


@pytest.mark.parametrize("quote_path", ["true", "false"])
def test_unusual_names_are_quoted_like_git(repo: Repo, quote_path: str) -> None:
    repo.git("config", "core.quotePath", quote_path)
    names = [
        "with space.txt",
        " leading space",
        "trailing space ",
        'double"quote',
        "single'quote",
        "back\\slash",
        "tab\there",
        "new\nline",
        "bell\x07",
        "esc\x1b[0m",
        "del\x7f",
        "ünïcödé.txt",
        "dir with space/inner file.txt",
        'dir"q/x',
        "日本/語.txt",
        "emoji 😀",
        ":colon-first",
        "-dash-first",
        "*star?[glob]",
        'quote and space "x"',
    ]
    for index, name in enumerate(names):
        repo.write(name, f"content {index}\n" if index % 3 else b"bin\x00ary")
    repo.write("no eol with space", "abc")
    snap = assert_matches(repo)
    assert snap.stats.untracked_git == 0
    assert snap.stats.untracked_fast == len(names) + 1


# A name that is not UTF-8 is where we differ from the original on purpose (it leaves the
# file out): tests/orchestrator/workflows/test_evidence_names.py.


def test_symlinks_use_the_fixed_text(repo: Repo) -> None:
    repo.write("target.txt", "t\n")
    repo.symlink("link-to-file", "target.txt")
    repo.symlink("dangling", "does/not/exist")
    repo.symlink("link to dir", "src")
    repo.symlink('odd "link"\n', 'target with "quotes"\tand tab')
    repo.symlink("unicode-link", "日本/😀")
    repo.symlink("bad-target", b"caf\xe9")
    snap = assert_matches(repo)
    assert snap.stats.symlinks == 6
    assert snap.diff_text is not None
    assert 'review-evidence untracked-symlink-v1\npath-bytes 12\n"link-to-file"\n' in (
        snap.diff_text
    )


def test_ignored_files_and_nested_repositories_are_left_out(repo: Repo, tmp_path: Path) -> None:
    repo.write(".gitignore", "*.log\nbuild/\n")
    repo.commit("ignore")
    repo.write("debug.log", "noise\n")
    repo.write("build/out.o", b"\x00obj")
    repo.write("kept.txt", "kept\n")
    nested = Repo(repo.path / "vendor" / "lib")
    nested.write("inner.txt", "inner\n")
    (repo.path / "empty-dir").mkdir()
    snap = assert_matches(repo)
    assert snap.evidence.coveredPaths == ["kept.txt", "vendor/lib/"]
    assert snap.diff_text is not None
    assert "debug.log" not in snap.diff_text
    assert "inner.txt" not in snap.diff_text


@pytest.mark.parametrize("nul_at", [0, 7999, 8000, 9000])
def test_binary_detection_window(repo: Repo, nul_at: int) -> None:
    data = bytearray(b"a" * 10000)
    data[nul_at] = 0
    repo.write("window.dat", bytes(data))
    snap = assert_matches(repo)
    assert snap.diff_text is not None
    assert ("Binary files" in snap.diff_text) == (nul_at < 8000)


def test_files_over_the_fast_limit_stream_through_git(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ev, "FAST_MAX_BYTES", 1000)
    repo.write("small.txt", "small\n")
    repo.write("large.txt", "".join(f"{i}\n" for i in range(1000)))
    snap = assert_matches(repo)
    assert (snap.stats.untracked_fast, snap.stats.untracked_git) == (1, 1)


def test_contents_re_read_past_the_retain_budget(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ev, "RETAIN_BUDGET", 10)
    for i in range(5):
        repo.write(f"f{i}.txt", f"file number {i}\n")
    snap = assert_matches(repo)
    assert snap.stats.untracked_fast == 5


def test_identical_content_to_a_tracked_blob(repo: Repo) -> None:
    repo.write("copy-of-readme.md", "# readme\n")  # this blob already exists
    repo.write("empty", "")
    snap = assert_matches(repo)
    assert snap.stats.untracked_git == 0


# --- configuration and attributes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "fast"),
    [
        ("diff.noprefix", "true", False),
        ("diff.mnemonicPrefix", "true", False),
        ("diff.srcPrefix", "SRC/", False),
        ("color.ui", "always", False),
        ("color.diff", "always", False),
        ("color.ui", "auto", True),
        ("diff.renames", "copies", True),
        ("diff.algorithm", "patience", True),
        ("diff.context", "1", True),
        ("core.abbrev", "12", True),
        ("core.abbrev", "no", True),
        ("core.abbrev", "4", True),
        ("core.quotePath", "off", True),
        ("core.fileMode", "false", True),
        ("core.bigFileThreshold", "1k", True),
    ],
)
def test_configuration(repo: Repo, key: str, value: str, fast: bool) -> None:
    repo.git("config", key, value)
    repo.write("a file.txt", "alpha\nbeta\n")
    repo.write("ü.bin", b"\x00\x01")
    repo.write("x.sh", "echo\n", mode=0o755)
    repo.write("big.txt", "b" * 2000 + "\n")
    repo.write("README.md", "# changed readme\n")
    snap = assert_matches(repo)
    assert (snap.stats.untracked_fast > 0) == fast, snap.stats


def test_environment_that_changes_diff_output(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=1")
    repo.write("a.txt", "a\n")
    snap = assert_matches(repo)
    assert snap.stats.untracked_fast == 0
    assert snap.stats.fallback_reason == "environment GIT_DIFF_OPTS"


def test_autocrlf_sends_only_files_with_cr_to_git(repo: Repo) -> None:
    repo.git("config", "core.autocrlf", "true")
    repo.write("dos.txt", "a\r\nb\r\n")
    repo.write("unix.txt", "a\nb\n")
    snap = assert_matches(repo)
    assert (snap.stats.untracked_fast, snap.stats.untracked_git) == (1, 1)


def test_attributes(repo: Repo) -> None:
    # diff=upper names a driver with no textconv: its files still go through git. (A
    # textconv driver never runs: tests/orchestrator/handoff/test_git_lockdown.py.)
    repo.write(
        ".gitattributes",
        "*.bin binary\n*.up diff=upper\n*.crlf text eol=crlf\n*.auto text=auto\n"
        "*.enc working-tree-encoding=UTF-16\n*.ling linguist-generated\n",
    )
    repo.commit("attributes")
    repo.write("data.bin", "looks like text\n")
    repo.write("shout.up", "quiet words\n")
    repo.write("dos.crlf", "a\r\nb\r\n")
    repo.write("unix.crlf", "a\nb\n")
    repo.write("dos.auto", "c\r\nd\r\n")
    repo.write("plain.auto", "plain\n")
    repo.write("wide.enc", "hi\n".encode("utf-16"))
    repo.write("gen.ling", "generated\n")
    snap = assert_matches(repo)
    # Fast: unix.crlf, plain.auto, gen.ling. Git: the driver, binary, CR and encoding ones.
    assert (snap.stats.untracked_fast, snap.stats.untracked_git) == (3, 5)


def test_abbreviation_lengthened_by_a_colliding_object(repo: Repo) -> None:
    repo.git("config", "core.abbrev", "4")
    existing = repo.git("rev-parse", "HEAD:README.md").decode().strip()
    for i in range(2_000_000):
        data = f"collide {i}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:4] == existing[:4]:
            break
    else:  # pragma: no cover - 2M tries miss a 16-bit prefix with negligible odds
        pytest.fail("no collision found")
    repo.write("collides.txt", data)
    repo.write("plain.txt", "plain\n")
    snap = assert_matches(repo)
    assert snap.stats.untracked_git >= 1
    assert snap.diff_text is not None
    long_index = "index 0000.." + hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:5]
    assert long_index in snap.diff_text


def test_disambiguate_config_refuses_self_matches(repo: Repo) -> None:
    repo.git("config", "core.disambiguate", "blob")
    repo.write("copy.md", "# readme\n")  # blob exists: only a git run can prove its prefix
    repo.write("new.md", "brand new\n")
    snap = assert_matches(repo)
    assert (snap.stats.untracked_fast, snap.stats.untracked_git) == (1, 1)


def test_calibration_mismatch_sends_everything_to_git(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_build = ev._ChunkBuilder._build

    def wrong(self: ev._ChunkBuilder, cand: Any) -> bytes | None:
        built = real_build(self, cand)
        return None if built is None else built.replace(b"new file mode", b"new  file mode")

    monkeypatch.setattr(ev._ChunkBuilder, "_build", wrong)
    repo.write("a.txt", "a\n")
    repo.write("b.txt", "b\n")
    snap = assert_matches(repo)
    assert snap.stats.untracked_fast == 0
    assert snap.stats.fallback_reason == "calibration against git --no-index failed"


def test_git_processes_do_not_grow_with_untracked_files(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[list[bytes]] = []
    real_popen = subprocess.Popen

    def counting_popen(args: Any, *rest: Any, **kwargs: Any) -> Any:
        spawned.append(list(args))
        return real_popen(args, *rest, **kwargs)

    for i in range(200):
        repo.write(f"many/f{i:03}.txt", f"file {i}\n")
    monkeypatch.setattr(subprocess, "Popen", counting_popen)
    snap = snapshot_evidence(repo.path)
    monkeypatch.undo()
    assert snap.stats.untracked_fast == 200
    assert len(spawned) <= 8, [a[3:5] for a in spawned]


# --- tracked changes, filters, bases -------------------------------------------------------


def test_tracked_changes_in_one_git_diff(repo: Repo) -> None:
    repo.write("keep.txt", "keep\n")
    repo.write("gone.txt", "gone\n")
    repo.write("mode.sh", "echo\n")
    repo.write("type.txt", "becomes a link\n")
    repo.write("img.png", b"\x89PNG\x00\x00")
    repo.write("spaced name.txt", "old\n")
    repo.write("ünï.txt", "old\n")
    repo.commit("more")
    repo.write("README.md", "# readme\nmore\n")
    (repo.path / "gone.txt").unlink()
    os.chmod(repo.path / "mode.sh", 0o755)
    (repo.path / "type.txt").unlink()
    repo.symlink("type.txt", "keep.txt")
    repo.write("img.png", b"\x89PNG\x00\x01")
    repo.write("spaced name.txt", "new\n")
    repo.write("ünï.txt", "new\n")
    repo.write("staged.txt", "staged\n")
    repo.git("add", "staged.txt")
    repo.write("trailing.txt", "tail   \n\n\n")
    repo.git("add", "trailing.txt")
    snap = assert_matches(repo)
    assert snap.stats.tracked_mode == "single"


def test_rename_replays_the_original_pathspec_list(repo: Repo) -> None:
    repo.write("old-name.txt", "".join(f"{i}\n" for i in range(50)))
    repo.commit("to rename")
    repo.git("mv", "old-name.txt", "new-name.txt")
    snap = assert_matches(repo)
    assert snap.stats.tracked_mode == "exact"
    assert snap.diff_text is not None
    # The original lists only the new path, so git never sees the pair as a rename.
    assert "rename from" not in snap.diff_text


def test_leading_colon_name_replays_the_original_pathspec_list(repo: Repo) -> None:
    repo.write(":magic", "before\n")
    repo.commit("colon")
    repo.write(":magic", "after\n")
    snap = assert_matches(repo)
    assert snap.stats.tracked_mode == "exact"


@pytest.mark.parametrize(
    "paths",
    [
        "src",
        "src,README.md",
        " README.md , src ,, src ",
        ["dir with space", 'q"uote.txt'],
        "*.md",
        "nothing-matches",
        "src/app.py,untracked dir/new file.txt",
    ],
)
def test_path_filters(repo: Repo, paths: str | list[str]) -> None:
    repo.write("dir with space/a b.txt", "a b\n")
    repo.write('q"uote.txt', "q\n")
    repo.commit("more")
    repo.write("README.md", "# changed\n")
    repo.write("src/app.py", "print('changed')\n")
    repo.write("dir with space/a b.txt", "changed\n")
    repo.write('q"uote.txt', "changed\n")
    repo.write("untracked dir/new file.txt", "new\n")
    repo.write("src/new.py", "new\n")
    snap = assert_matches(repo, paths=paths)
    assert snap.evidence.pathFilter == normalize_path_filter(paths)
    assert snap.stats.tracked_mode == "filtered"


def test_base_other_than_head(repo: Repo) -> None:
    repo.write("second.txt", "2\n")
    repo.commit("second")
    repo.write("third.txt", "3\n")
    repo.commit("third")
    repo.write("second.txt", "2 changed\n")
    repo.write("untracked.txt", "u\n")
    snap = assert_matches(repo, base="HEAD~2")
    assert snap.evidence.baseSha == repo.git("rev-parse", "HEAD~2").decode().strip()
    assert snap.evidence.coveredPaths == ["second.txt", "third.txt", "untracked.txt"]
    head = snapshot_evidence(repo.path, "HEAD")
    assert not head.evidence.same_snapshot(snap.evidence)


def test_a_bad_base_names_the_flag(repo: Repo) -> None:
    with pytest.raises(InputError) as caught:
        compute_evidence(repo.path, "no-such-branch")
    assert caught.value.field == "--base"


def test_sha256_repository(tmp_path: Path) -> None:
    probe = subprocess.run(
        ["git", "init", "-q", "--object-format=sha256", str(tmp_path / "probe")],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("this git cannot make sha256 repositories")
    made = Repo(tmp_path / "r", "--object-format=sha256")
    made.write("a.txt", "a\n")
    made.commit()
    made.write("a.txt", "a2\n")
    made.write("new.txt", "new\n")
    made.write("b.bin", b"\x00")
    snap = assert_matches(made)
    assert len(snap.evidence.baseSha) == 64
    assert snap.stats.untracked_fast == 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_trees(repo: Repo, seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [*"abcXYZ019 -_.", '"', "\\", "\t", "\n", "é", "日", "😀", "\x7f", "\x01"]
    contents = [
        b"",
        b"\n",
        b"plain\n",
        b"no eol",
        b"\r\n\r\n",
        b"\x00",
        b"\xff\xfe\xfd",
        "ünï\u3000\n".encode(),
        b"  \n \t ",
    ]
    for i in range(40):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))).strip("/")
        parts = [f"d{rng.randint(0, 2)}"] if rng.random() < 0.3 else []
        chunks = [rng.choice(contents) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.2:
            chunks.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))))
        path = "/".join([*parts, f"{i}{name}"])
        repo.write(path, b"".join(chunks), mode=rng.choice([0o644, 0o755]))
    assert_matches(repo)


# --- it writes nothing ---------------------------------------------------------------------


def _tree_state(root: Path) -> dict[str, tuple[int, int]]:
    state = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            state[full] = (st.st_size, st.st_mtime_ns)
    return state


def test_writes_nothing(repo: Repo) -> None:
    repo.write("README.md", "# changed\n")
    repo.write("new.txt", "new\n")
    repo.write("copy.md", "# readme\n")
    before = _tree_state(repo.path)
    compute_evidence(repo.path)
    attest_evidence(repo.path, paths="new.txt")
    snapshot_evidence(repo.path, fast=False)
    assert _tree_state(repo.path) == before


# --- pieces: the writer, the model, JavaScript semantics -------------------------------------


def _write(chunks: list[tuple[list[str], bool]]) -> str:
    writer = ev._DiffTextWriter(keep_text=True)
    for pieces, force in chunks:
        writer.begin()
        for piece in pieces:
            writer.feed(piece)
        writer.end(force=force)
    digest, text = writer.finish()
    assert text is not None
    assert digest == hashlib.sha256(text.encode()).hexdigest()
    return text


def test_writer_joins_rstripped_chunks() -> None:
    assert _write([]) == ""
    assert _write([(["a\n"], False)]) == "a\n"
    assert _write([(["a  ", " \n", "b \n\n"], False), (["c"], True)]) == "a   \nb\n\nc\n"
    assert _write([([" \n "], False), (["x"], False)]) == "x\n"  # blank tracked: dropped
    assert _write([(["x"], False), ([" \n "], True), (["y"], True)]) == "x\n\n\n\ny\n"
    assert _write([(["\n lead", "ing"], False)]) == "\n leading\n"


def test_writer_discard_restores_the_hash() -> None:
    writer = ev._DiffTextWriter(keep_text=False)
    writer.begin()
    writer.feed("kept")
    writer.end(force=True)
    writer.begin()
    writer.feed("dropped")
    writer.discard()
    digest, text = writer.finish()
    assert text is None
    assert digest == hashlib.sha256(b"kept\n").hexdigest()


def test_evidence_identity_ignores_audit_fields() -> None:
    one = Evidence(baseSha="a" * 40, pathFilter=None, digest="d", coveredPaths=["x"])
    two = one.model_copy(update={"coveredPaths": [], "sourceRound": 3})
    assert one.same_snapshot(two)
    assert not one.same_snapshot(one.model_copy(update={"digest": "e"}))
    assert not one.same_snapshot(one.model_copy(update={"pathFilter": ["x"]}))
    assert list(one.model_dump()) == [
        "baseSha",
        "pathFilter",
        "digest",
        "coveredPaths",
        "sourceRound",
    ]
    with pytest.raises(ValueError):  # noqa: PT011 - pydantic's frozen error is a ValueError
        one.digest = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, None),
        ("", None),
        (" , ,", None),
        ([], None),
        ("b,a,b", ["a", "b"]),
        (" a ,\u3000b\ufeff", ["a", "b"]),
        ("\x1cx", ["\x1cx"]),  # not JavaScript whitespace
        (["z", "y"], ["y", "z"]),
        ("\uff5e,😀", ["😀", "\uff5e"]),  # UTF-16 order, not code point order
    ],
)
def test_normalize_path_filter(given: str | list[str] | None, expected: list[str] | None) -> None:
    assert normalize_path_filter(given) == expected
    if given is not None:
        listed = given.split(",") if isinstance(given, str) else given
        assert _js_normalize(listed) == expected


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    return found


def test_javascript_semantics_match_node(node: str) -> None:
    """Decoding, trimming, sorting and JSON.stringify, checked against Node itself."""
    rng = random.Random(7)
    blobs = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(300)]
    blobs += [b"\xed\xa0\x80", b"\xf0\x80\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"a\xc0\xafb"]
    strings = ["a\u3000\ufeff \n", "x\x1c\x1d\x85", "😀\uff5e", 'q"\\\n\t\x01\x7f\u2028']
    script = r"""
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const decoded = input.blobs.map((h) => Buffer.from(h, "hex").toString("utf8"));
const out = {
  decoded: decoded.map((s) => Buffer.from(s, "utf8").toString("hex")),
  rstripped: decoded.map((s) => Buffer.from(s.replace(/\s*$/, ""), "utf8").toString("hex")),
  trimmed: input.strings.map((s) => s.trim()),
  sorted: [...input.strings, ...decoded].sort().map((s) => Buffer.from(s).toString("hex")),
  json: input.strings.map((s) => JSON.stringify(s)),
};
process.stdout.write(JSON.stringify(out));
"""
    payload = json.dumps({"blobs": [b.hex() for b in blobs], "strings": strings})
    result = subprocess.run(
        [node, "-e", script], input=payload.encode(), capture_output=True, check=True
    )
    answer = json.loads(result.stdout)
    decoded = [b.decode("utf-8", "replace") for b in blobs]
    assert answer["decoded"] == [s.encode().hex() for s in decoded]
    assert answer["rstripped"] == [js_rstrip(s).encode().hex() for s in decoded]
    assert answer["trimmed"] == [s.strip(JS_WHITESPACE) for s in strings]
    assert answer["sorted"] == [
        s.encode().hex() for s in sorted([*strings, *decoded], key=js_sort_key)
    ]
    assert answer["json"] == [json.dumps(s, ensure_ascii=False) for s in strings]
