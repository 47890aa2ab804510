"""The evidence digest of a working tree: the same bytes as the original ``review-loop``.

``docs/origins.md`` §3.6 defines it. The diff text is the tracked diff against the base
(``git diff <baseSha> -- <pathFilter, else the changed paths>``), then one chunk per
untracked file (``git diff --no-index -- /dev/null <file>``, or a fixed text for a
symlink), each chunk with trailing whitespace removed, joined by a blank line, plus a final
newline; the digest is its sha256. The original decodes every git output as UTF-8 with
U+FFFD for bad bytes and strips JavaScript whitespace, so we do exactly that too.

The original is slow in two places, and both are fixed here without changing a byte:

- **Changed tracked paths.** It lists them (``git diff --name-only``) and passes them all back
  as pathspecs; git matches pathspecs in quadratic time (2.8 s instead of 0.5 s for 10,000
  files). We run one ``git diff --raw -p -z``: the raw part gives the same list (a rename or
  copy is listed under its new path, as ``--name-only`` does), and the patch part equals the
  original's diff whenever the list would select the same pairs, i.e. there is no rename or
  copy (whose source the list would drop) and every path reads back as itself as a pathspec
  (valid UTF-8, no leading ``:``, no ``GIT_*_PATHSPECS`` in the environment). Otherwise we
  run the original's command exactly.
- **Untracked files.** It runs one git process per file. We build the ``--no-index`` chunk
  of an ordinary file in Python: header lines, C-quoted names (``core.quotePath``), mode
  from the executable bit, the blob id from ``blob <len>\\0<bytes>`` abbreviated the way git
  does in this repository, binary detection (a NUL in the first 8000 bytes), the
  ``@@ -0,0 +1,N @@`` hunk and ``\\ No newline at end of file``. A constant number of git
  processes proves it applies: ``git config`` (no diff or colour setting that changes the
  text), ``git check-attr`` (no diff driver, filter or line-ending conversion for the file),
  ``git rev-parse --short`` + ``git cat-file --batch-check`` (the abbreviation length, and
  that no existing object makes git print a longer one), and one real ``--no-index`` run
  per distinct shape of file as a calibration against the installed git. Anything not proven
  (odd configuration, attributes, files over 8 MiB, an object sharing the prefix, a failed
  calibration) goes through git, one process per file, as the original does.

Output is streamed: git's stdout is decoded incrementally and hashed as it arrives, and
only a run of trailing whitespace is held back (it is dropped if nothing follows it).

Where we knowingly differ from the original (none of it changes the digest of a tree the
original can digest):

- its output limits are not reproduced: it fails past 20 MiB of tracked diff and cuts an
  untracked chunk at 10 MiB (Node's ``maxBuffer``); we hash all of it;
- ``baseSha`` is the commit (``rev-parse <base>^{commit}``), where the original prints
  ``rev-parse <base>``, i.e. the tag object's id for an annotated tag;
- a filter with no path in it (``--paths ""``) is ``None``, where the original keeps ``[]``;
- a path whose name is not UTF-8, which the original loses (the U+FFFD name it looks up
  names no file), gets a chunk of its own and is listed C-quoted (:func:`path_name`);
- git runs locked down (``docs/reviewer-lockdown.md``): no textconv, external diff or
  repository-defined filter shapes the text.

The differences are in ``docs/origins.md`` §3.6.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from review_loop.agents.errors import InputError, ReviewLoopError
from review_loop.agents.evidence import JS_WHITESPACE, normalize_path_filter, path_name
from review_loop.orchestrator.handoff import git_lockdown
from review_loop.orchestrator.handoff.git import rev_parse

if TYPE_CHECKING:  # built where a caller needs the model (``evidence`` prints plain fields)
    from review_loop.agents.evidence_model import Evidence

__all__ = [
    "EvidenceSnapshot",
    "EvidenceStats",
    "GitCommandError",
    "attest_evidence",
    "compute_evidence",
    "path_name",
    "snapshot_evidence",
]

READ_SIZE = 1 << 16
FAST_MAX_BYTES = 8 << 20  # larger untracked files go through git, streamed
RETAIN_BUDGET = 32 << 20  # file contents kept between the proof and the emit pass
FIRST_FEW_BYTES = 8000  # git's buffer_is_binary window
MINIMUM_ABBREV = 4
SYMLINK_HEADER = "review-evidence untracked-symlink-v1"
# A name that is not UTF-8 is given to git as its bytes and printed C-quoted (path_name).
_QUOTE_PATH = ("-c", "core.quotePath=true")

# diff.* settings that cannot change the --no-index text of a pure addition (no context
# lines, one hunk, no colour). Any other diff.* key sends every untracked file to git.
_BENIGN_DIFF_KEYS = frozenset(
    {
        "algorithm",
        "autorefreshindex",
        "colormoved",
        "colormovedws",
        "context",
        "dirstat",
        "external",  # never used: every diff runs with --no-ext-diff (git_lockdown)
        "guitool",
        "ignoresubmodules",
        "indentheuristic",
        "interhunkcontext",
        "orderfile",
        "renamelimit",
        "renames",
        "statgraphwidth",
        "statnamewidth",
        "submodule",
        "suppressblankempty",
        "tool",
        "wserrorhighlight",
    }
)
# Environment that changes git diff output (or pathspec matching) behind our back; of what
# git_lockdown passes, GIT_EXTERNAL_DIFF and GIT_PAGER_IN_USE never reach git.
_DIFF_ENV = ("GIT_DIFF_OPTS",)
_PATHSPEC_ENV = (
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
)
# Attributes that change what git shows for a file; text/eol/crlf only matter with a CR.
_DIFF_ATTRS = frozenset({"diff", "binary", "filter", "ident", "working-tree-encoding"})
_EOL_ATTRS = frozenset({"text", "eol", "crlf"})

_C_ESCAPES = {
    0x07: b"\\a",
    0x08: b"\\b",
    0x09: b"\\t",
    0x0A: b"\\n",
    0x0B: b"\\v",
    0x0C: b"\\f",
    0x0D: b"\\r",
    0x22: b'\\"',
    0x5C: b"\\\\",
}
_NEEDS_QUOTE = re.compile(rb'[\x00-\x1f"\\\x7f]')
_NEEDS_QUOTE_FULLY = re.compile(rb'[\x00-\x1f"\\\x7f-\xff]')


class GitCommandError(ReviewLoopError):
    """A git command the evidence needs failed (the original tool throws here too)."""

    def __init__(self, what: str, returncode: int, stderr: bytes) -> None:
        self.what = what
        self.returncode = returncode
        detail = stderr.decode("utf-8", "replace").strip()
        super().__init__(f"{what} failed (exit {returncode}){': ' + detail if detail else ''}")


@dataclass
class EvidenceStats:
    """How the digest was computed (for tests and the benchmark; not part of the identity).

    Attributes:
        tracked_mode: ``"filtered"`` (a path filter was given), ``"single"`` (one
            ``git diff --raw -p`` was enough) or ``"exact"`` (the original's pathspec list
            had to be replayed).
        untracked_fast: untracked files whose chunk was built in Python.
        untracked_git: untracked files that went through ``git diff --no-index``.
        calibrations: ``--no-index`` runs used to check the Python chunks.
        symlinks: untracked symlinks.
        fallback_reason: why the untracked fast path was off, if it was.
    """

    tracked_mode: str = ""
    untracked_fast: int = 0
    untracked_git: int = 0
    calibrations: int = 0
    symlinks: int = 0
    fallback_reason: str | None = None


@dataclass(frozen=True)
class EvidenceSnapshot:
    """The evidence, the diff text (when kept) and how it was computed."""

    evidence: Evidence
    diff_text: str | None
    stats: EvidenceStats


def compute_evidence(
    repo: Path,
    base: str = "HEAD",
    paths: str | list[str] | None = None,
    *,
    source_round: int | None = None,
) -> tuple[Evidence, str]:
    """The evidence of ``repo``'s working tree against ``base``, and its diff text.

    Args:
        repo: the top level of the work tree (as the original, paths are relative to it).
        base: a revision naming the base commit.
        paths: the path filter (comma list or list); ``None`` for the whole tree.
        source_round: recorded as ``sourceRound``.

    Raises:
        InputError: ``base`` names no commit (names ``--base``).
        GitCommandError: git failed.
    """
    snap = snapshot_evidence(repo, base, paths, source_round=source_round, keep_text=True)
    assert snap.diff_text is not None
    return snap.evidence, snap.diff_text


def attest_evidence(
    repo: Path,
    base: str = "HEAD",
    paths: str | list[str] | None = None,
    *,
    source_round: int | None = None,
) -> Evidence:
    """Like :func:`compute_evidence` but streams: the diff text is hashed, never kept."""
    return snapshot_evidence(repo, base, paths, source_round=source_round).evidence


def snapshot_evidence(
    repo: Path,
    base: str = "HEAD",
    paths: str | list[str] | None = None,
    *,
    source_round: int | None = None,
    keep_text: bool = False,
    fast: bool = True,
) -> EvidenceSnapshot:
    """Compute the evidence; ``fast=False`` runs the original's commands one by one."""
    from review_loop.agents.evidence_model import Evidence

    fields, text, stats = _computed(repo, base, paths, keep_text=keep_text, fast=fast)
    evidence = Evidence(**fields, sourceRound=source_round)
    return EvidenceSnapshot(evidence=evidence, diff_text=text, stats=stats)


def evidence_document(
    repo: Path, base: str = "HEAD", paths: str | list[str] | None = None
) -> dict[str, Any]:
    """``attest_evidence(repo, base, paths).model_dump()``, without building the model.

    The ``evidence`` command prints only this. The fields are computed here from git's
    output, so they are trusted and not validated again; the keys are in the model's field
    order (a contract test checks both against the model).
    """
    fields, _, _ = _computed(repo, base, paths, keep_text=False, fast=True)
    return {**fields, "sourceRound": None}


def _computed(
    repo: Path,
    base: str,
    paths: str | list[str] | None,
    *,
    keep_text: bool,
    fast: bool,
) -> tuple[dict[str, Any], str | None, EvidenceStats]:
    """The evidence's fields but ``sourceRound``, the diff text (when kept) and the stats."""
    base_sha = rev_parse(repo, base or "HEAD", field="--base")
    path_filter = normalize_path_filter(paths)
    stats = EvidenceStats()
    writer = _DiffTextWriter(keep_text)
    git = _Git.locked(repo)
    others = _GitProcess(
        git,
        ["ls-files", "--others", "--exclude-standard", "-z", *_dashdash(path_filter)],
    )
    try:
        tracked = _tracked_chunk(git, base_sha, path_filter, writer, stats, fast=fast)
        untracked_raw = others.read_all("git ls-files --others")
    finally:
        others.close()
    _exact_name_chunks(git, base_sha, tracked, writer)
    untracked = _split_nul(untracked_raw)
    _untracked_chunks(git, base_sha, untracked, writer, stats, fast=fast)
    digest, text = writer.finish()
    listed = dict.fromkeys(path_name(raw) for raw in [*tracked, *untracked])
    covered = normalize_path_filter(list(listed)) or []
    fields = {"baseSha": base_sha, "pathFilter": path_filter, "digest": digest}
    return {**fields, "coveredPaths": covered}, text, stats


# --- the diff text ---------------------------------------------------------------------


class _DiffTextWriter:
    """``"\\n\\n".join(rstripped chunks) + "\\n"``, hashed as it is written.

    A chunk is fed in pieces; trailing JavaScript whitespace is held back until something
    else follows, and dropped at the end of the chunk. ``end(force=False)`` drops a chunk
    that had nothing but whitespace (the original's ``if (trackedDiff.trim())``);
    ``end(force=True)`` keeps it as an empty chunk (``if (out.stdout)``).
    """

    def __init__(self, keep_text: bool) -> None:
        self._hash = hashlib.sha256()
        self._parts: list[str] | None = [] if keep_text else None
        self._chunks = 0
        self._started = False
        self._pending: list[str] = []
        self._mark: tuple[hashlib._Hash, int, int] | None = None

    def _emit(self, text: str) -> None:
        if text:
            self._hash.update(text.encode("utf-8"))
            if self._parts is not None:
                self._parts.append(text)

    def begin(self) -> None:
        self._started = False
        self._pending.clear()
        parts = len(self._parts) if self._parts is not None else 0
        self._mark = (self._hash.copy(), parts, self._chunks)

    def feed(self, text: str) -> None:
        kept = text.rstrip(JS_WHITESPACE)
        if not kept:
            if text:
                self._pending.append(text)
            return
        if not self._started:
            self._started = True
            if self._chunks:
                self._emit("\n\n")
        if self._pending:
            self._emit("".join(self._pending))
            self._pending.clear()
        self._emit(kept)
        if len(kept) < len(text):
            self._pending.append(text[len(kept) :])

    def end(self, *, force: bool) -> None:
        if self._started or force:
            if not self._started and self._chunks:
                self._emit("\n\n")
            self._chunks += 1
        self._started = False
        self._pending.clear()

    def discard(self) -> None:
        """Forget everything since :meth:`begin` (the original ignores a chunk here)."""
        assert self._mark is not None
        self._hash, parts, self._chunks = self._mark
        if self._parts is not None:
            del self._parts[parts:]
        self._started = False
        self._pending.clear()

    def finish(self) -> tuple[str, str | None]:
        if self._chunks:
            self._emit("\n")
        text = "".join(self._parts) if self._parts is not None else None
        return self._hash.hexdigest(), text


def _utf8_decoder() -> codecs.IncrementalDecoder:
    # Python's "replace" substitutes U+FFFD per maximal ill-formed subsequence, as the
    # WHATWG decoder behind Node's Buffer.toString("utf8") does.
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _split_nul(data: bytes) -> list[bytes]:
    return [item for item in data.split(b"\0") if item]


def _dashdash(path_filter: Sequence[str] | None) -> list[str]:
    return ["--", *path_filter] if path_filter else []


# --- git processes ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Git:
    """The git of one evidence computation: the work tree, its configuration and the
    locked-down environment (``git_lockdown``: the repository's own filter drivers reset,
    read once for all the computation's commands)."""

    root: Path
    env: dict[str, str]
    config: bytes = b""  # ``git config -z --show-scope --list``

    @classmethod
    def locked(cls, repo: Path) -> _Git:
        plain = cls(repo, git_lockdown.environment())
        config = _run_git(plain, ["config", "-z", "--show-scope", "--list"], "git config --list")
        env = git_lockdown.environment(git_lockdown.driver_overrides(config))
        return cls(repo, env, config)


class _GitProcess:
    """One ``git -C repo ...`` whose stdout is read in pieces; stderr goes to a temp file."""

    def __init__(
        self, git: _Git, args: Sequence[str | bytes], env: dict[str, str] | None = None
    ) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self.proc = subprocess.Popen(
                git_lockdown.argv(git.root, args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=git.env if env is None else env,
            )
        except FileNotFoundError:
            self._stderr.close()
            raise _no_git() from None
        except BaseException:
            self._stderr.close()
            raise

    def chunks(self) -> Iterator[bytes]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while data := os.read(fd, READ_SIZE):
            yield data

    def read_all(self, what: str) -> bytes:
        data = b"".join(self.chunks())
        returncode = self.proc.wait()
        if returncode != 0:
            raise GitCommandError(what, returncode, self.stderr())
        return data

    def wait(self) -> int:
        return self.proc.wait()

    def stderr(self) -> bytes:
        self._stderr.seek(0)
        return self._stderr.read(64 << 10)

    def close(self) -> None:
        """Stop the process if it is still running (it is ours) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc.wait()
        self._stderr.close()


def _no_git() -> InputError:
    return InputError("git", "the git executable is not on PATH", "an installed git")


def _run_git(
    git: _Git, args: Sequence[str | bytes], what: str, stdin: bytes | None = None
) -> bytes:
    """Run a short git command to completion (``communicate`` feeds stdin safely)."""
    try:
        result = subprocess.run(
            git_lockdown.argv(git.root, args),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            env=git.env,
            check=False,
        )
    except FileNotFoundError:
        raise _no_git() from None
    if result.returncode != 0:
        raise GitCommandError(what, result.returncode, result.stderr)
    return result.stdout


# --- tracked ---------------------------------------------------------------------------


def _tracked_chunk(
    git: _Git,
    base_sha: str,
    path_filter: list[str] | None,
    writer: _DiffTextWriter,
    stats: EvidenceStats,
    *,
    fast: bool,
) -> list[bytes]:
    """Write the tracked chunk; return the changed paths as ``--name-only`` lists them.

    The paths are git's bytes; the original's pathspecs are those bytes decoded (a name
    that is not UTF-8 then matches nothing: :func:`_exact_name_chunks` adds it).
    """
    if not fast:
        listed = _run_git(
            git,
            ["diff", "--name-only", "-z", base_sha, "--", *(path_filter or [])],
            "git diff --name-only",
        )
        raw_names = _split_nul(listed)
        names = [_decode(raw) for raw in raw_names]
        stats.tracked_mode = "exact"
        _stream_chunk(git, ["diff", base_sha, "--", *(path_filter or names)], writer)
        return raw_names

    proc = _GitProcess(git, ["diff", "--raw", "-p", "-z", base_sha, "--", *(path_filter or [])])
    try:
        pieces = proc.chunks()
        raw_names, renamed, rest = _read_raw_section(pieces)
        names = [_decode(raw) for raw in raw_names]
        replay = path_filter is None and (
            renamed
            or any(git.env.get(var) for var in _PATHSPEC_ENV)
            or any(raw.startswith(b":") or _decode(raw).encode() != raw for raw in raw_names)
        )
        if replay:
            proc.close()
            stats.tracked_mode = "exact"
            _stream_chunk(git, ["diff", base_sha, "--", *names], writer)
            return raw_names
        stats.tracked_mode = "filtered" if path_filter else "single"
        decoder = _utf8_decoder()
        writer.begin()
        writer.feed(decoder.decode(rest))
        for data in pieces:
            writer.feed(decoder.decode(data))
        writer.feed(decoder.decode(b"", final=True))
        returncode = proc.wait()
        if returncode != 0:
            raise GitCommandError("git diff", returncode, proc.stderr())
        writer.end(force=False)
        return raw_names
    finally:
        proc.close()


def _exact_name_chunks(
    git: _Git, base_sha: str, tracked: list[bytes], writer: _DiffTextWriter
) -> None:
    """One more chunk per changed tracked path whose name is not UTF-8.

    The original decodes such a name with U+FFFD and passes it back as a pathspec, which
    matches nothing: its change was in neither the diff nor the digest. This chunk is git's
    diff of that one path, named by its bytes (a literal pathspec, ``core.quotePath`` on)
    and with full blob ids, so the digest binds both the name and the content (whose text
    is decoded with U+FFFD like every other chunk). A tree with only UTF-8 names gets none.
    """
    env = {k: v for k, v in git.env.items() if k not in _PATHSPEC_ENV}
    for raw in tracked:
        if _is_utf8(raw):
            continue
        args: list[str | bytes] = ["--literal-pathspecs", *_QUOTE_PATH, "diff"]
        args += ["--full-index", base_sha, "--", raw]
        _stream_chunk(git, args, writer, env)


def _read_raw_section(pieces: Iterator[bytes]) -> tuple[list[bytes], bool, bytes]:
    """Consume ``--raw -z`` records up to the separator NUL.

    Returns the path ``--name-only`` would print for each record (the new path of a rename
    or copy), whether any rename or copy was seen, and the bytes after the separator.
    """
    buf = bytearray()
    pos = 0
    names: list[bytes] = []
    renamed = False
    paths_due = 0
    for data in pieces:
        buf += data
        while (end := buf.find(b"\0", pos)) >= 0:
            token = bytes(buf[pos:end])
            pos = end + 1
            if paths_due:
                paths_due -= 1
                if not paths_due:
                    names.append(token)
            elif not token:
                return names, renamed, bytes(buf[pos:])
            else:
                status = token.rsplit(b" ", 1)[-1][:1]
                paths_due = 2 if status in (b"R", b"C") else 1
                renamed = renamed or paths_due == 2
        del buf[:pos]
        pos = 0
    if buf or paths_due or names:
        raise GitCommandError("git diff --raw -p (unexpected output)", 0, bytes(buf[:200]))
    return names, renamed, b""


def _stream_chunk(
    git: _Git,
    args: Sequence[str | bytes],
    writer: _DiffTextWriter,
    env: dict[str, str] | None = None,
) -> None:
    """The original's tracked chunk: whole stdout, pushed only if not blank."""
    proc = _GitProcess(git, args, env)
    try:
        decoder = _utf8_decoder()
        writer.begin()
        for data in proc.chunks():
            writer.feed(decoder.decode(data))
        writer.feed(decoder.decode(b"", final=True))
        returncode = proc.wait()
        if returncode != 0:
            raise GitCommandError("git diff", returncode, proc.stderr())
        writer.end(force=False)
    finally:
        proc.close()


# --- untracked -------------------------------------------------------------------------


@dataclass
class _Candidate:
    """An untracked regular file that may get a Python-built chunk."""

    name: bytes  # the path git will be given (the decoded name re-encoded)
    mode: bytes
    size: int
    oid: str = ""
    shape: tuple[object, ...] = ()
    has_cr: bool = False
    data: bytes | None = None
    fast: bool = True


@dataclass
class _Settings:
    """What the repository configuration allows."""

    quote_fully: bool = True
    autocrlf: bool = False
    big_file_threshold: int = 512 << 20
    self_match_ok: bool = True
    reason: str | None = None


def _untracked_chunks(
    git: _Git,
    base_sha: str,
    untracked: list[bytes],
    writer: _DiffTextWriter,
    stats: EvidenceStats,
    *,
    fast: bool,
) -> None:
    """One chunk per untracked path, in git's order.

    A name that is not UTF-8 is where the original loses a file: it looks up the name
    decoded with U+FFFD, finds nothing, and leaves the file out. Here it is looked up by
    its bytes and gets a chunk of its own: ``git diff --no-index --full-index`` with the
    name C-quoted (a symlink: the fixed text, names as :func:`path_name` writes them).
    """
    root = os.fsencode(git.root)
    plan: list[tuple[str, bytes, _Candidate | None]] = []
    candidates: list[_Candidate] = []
    for encoded in untracked:
        try:
            st = os.lstat(root + b"/" + encoded)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode):
            plan.append(("symlink", encoded, None))
        elif not _is_utf8(encoded):
            plan.append(("bytes", encoded, None))
        elif fast and stat.S_ISREG(st.st_mode):
            mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
            candidate = _Candidate(name=encoded, mode=mode, size=st.st_size)
            candidates.append(candidate)
            plan.append(("file", encoded, candidate))
        else:
            plan.append(("git", encoded, None))

    builder: _ChunkBuilder | None = None
    if candidates:
        builder = _ChunkBuilder.prepare(git, root, base_sha, candidates, stats)

    for kind, encoded, item in plan:
        if kind == "symlink":
            stats.symlinks += 1
            writer.begin()
            writer.feed(_symlink_chunk(root, encoded))
            writer.end(force=True)
            continue
        if isinstance(item, _Candidate) and builder is not None:
            chunk = builder.chunk(item)
            if chunk is not None:
                stats.untracked_fast += 1
                writer.begin()
                writer.feed(_decode(chunk))
                writer.end(force=True)
                continue
        stats.untracked_git += 1
        _stream_no_index(git, encoded, writer, exact=kind == "bytes")


def _symlink_chunk(root: bytes, encoded: bytes) -> str:
    """The original's symlink text; a link whose name is not UTF-8 (which the original
    leaves out) has its true byte counts and both names as :func:`path_name` writes them."""
    target_raw = os.readlink(root + b"/" + encoded)
    if _is_utf8(encoded):
        name, target = encoded.decode("utf-8"), _decode(target_raw)
        sizes = (len(name.encode("utf-8")), len(target.encode("utf-8")))
    else:
        name, target = path_name(encoded), path_name(target_raw)
        sizes = (len(encoded), len(target_raw))
    return "\n".join(
        [
            SYMLINK_HEADER,
            f"path-bytes {sizes[0]}",
            json.dumps(name, ensure_ascii=False),
            f"target-bytes {sizes[1]}",
            json.dumps(target, ensure_ascii=False),
        ]
    )


def _no_index_args(encoded: bytes, *, exact: bool = False) -> list[str | bytes]:
    if exact:  # a name that is not UTF-8: named by its bytes, content by its full blob id
        return [*_QUOTE_PATH, "diff", "--no-index", "--full-index", "--", "/dev/null", encoded]
    return ["diff", "--no-index", "--", "/dev/null", encoded]


def _stream_no_index(
    git: _Git, encoded: bytes, writer: _DiffTextWriter, *, exact: bool = False
) -> None:
    """The original's per-file chunk: ``git diff --no-index -- /dev/null <file>``.

    Exit 1 with output: the chunk. Exit 0: ignored (the original only reads stdout from
    the error it catches). Any other exit without output: an error.
    """
    proc = _GitProcess(git, _no_index_args(encoded, exact=exact))
    try:
        decoder = _utf8_decoder()
        writer.begin()
        seen = False
        for data in proc.chunks():
            seen = True
            writer.feed(decoder.decode(data))
        writer.feed(decoder.decode(b"", final=True))
        returncode = proc.wait()
        if returncode == 0:
            writer.discard()
        elif seen:
            writer.end(force=True)
        elif returncode == 1:
            writer.end(force=False)
        else:
            raise GitCommandError(
                f"untracked diff for {_decode(encoded)!r}", returncode, proc.stderr()
            )
    finally:
        proc.close()


def _no_index_bytes(git: _Git, encoded: bytes) -> tuple[int, bytes]:
    proc = _GitProcess(git, _no_index_args(encoded))
    try:
        data = b"".join(proc.chunks())
        return proc.wait(), data
    finally:
        proc.close()


@dataclass
class _ChunkBuilder:
    """Builds ``git diff --no-index -- /dev/null <file>`` output for proven files."""

    root: bytes
    settings: _Settings
    null_abbrev: bytes
    abbrev: int
    verified: dict[bytes, bytes] = field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        git: _Git,
        root: bytes,
        base_sha: str,
        candidates: list[_Candidate],
        stats: EvidenceStats,
    ) -> _ChunkBuilder | None:
        """Run the proofs; ``None`` when the fast path is off for every file."""
        settings = _read_settings(git.config)
        if settings.reason is None:
            settings.reason = next(
                (f"environment {var}" for var in _DIFF_ENV if git.env.get(var)), None
            )
        if settings.reason is not None:
            stats.fallback_reason = settings.reason
            return None
        algo = {40: "sha1", 64: "sha256"}.get(len(base_sha))
        if algo is None:
            stats.fallback_reason = "unknown object format"
            return None
        limit = min(FAST_MAX_BYTES, settings.big_file_threshold)
        retained = 0
        for cand in candidates:
            if cand.size >= limit:
                cand.fast = False
                continue
            data = _read_file(root + b"/" + cand.name)
            if data is None or len(data) != cand.size:
                cand.fast = False
                continue
            cand.oid = _blob_oid(algo, data)
            cand.has_cr = b"\r" in data
            if cand.has_cr and settings.autocrlf:
                cand.fast = False
                continue
            cand.shape = _shape(cand, data, settings.quote_fully)
            if retained + len(data) <= RETAIN_BUDGET:
                cand.data = data
                retained += len(data)

        live = [c for c in candidates if c.fast]
        if live:
            _apply_attributes(git, live)
            live = [c for c in live if c.fast]
        if not live:
            return None
        hexsz = len(base_sha)
        null_abbrev = _run_git(
            git, ["rev-parse", "--short", "0" * hexsz], "git rev-parse --short"
        ).strip()
        abbrev = len(null_abbrev)
        if null_abbrev != b"0" * abbrev:
            stats.fallback_reason = "unexpected abbreviation of the null id"
            return None
        if not _prove_abbrev(git, live, abbrev, hexsz, settings.self_match_ok):
            stats.fallback_reason = "objects share the abbreviated null id"
            return None
        builder = cls(root=root, settings=settings, null_abbrev=null_abbrev, abbrev=abbrev)
        if not builder._calibrate(git, live, stats):
            stats.fallback_reason = "calibration against git --no-index failed"
            return None
        return builder

    def _calibrate(self, git: _Git, live: list[_Candidate], stats: EvidenceStats) -> bool:
        """Compare one file of each shape with the real git; keep its output."""
        seen: set[tuple[object, ...]] = set()
        for cand in live:
            if not cand.fast or cand.shape in seen:
                continue
            seen.add(cand.shape)
            built = self._build(cand)
            if built is None:
                cand.fast = False
                continue
            stats.calibrations += 1
            returncode, real = _no_index_bytes(git, cand.name)
            if returncode != 1 or real != built:
                return False
            self.verified[cand.name] = real
        return True

    def chunk(self, cand: _Candidate) -> bytes | None:
        """The chunk bytes, or ``None`` when this file must go through git."""
        if not cand.fast:
            return None
        if cand.name in self.verified:
            return self.verified.pop(cand.name)
        return self._build(cand)

    def _build(self, cand: _Candidate) -> bytes | None:
        data = cand.data
        if data is None:
            data = _read_file(self.root + b"/" + cand.name)
            if data is None or _blob_oid(_algo_of(cand.oid), data) != cand.oid:
                return None  # changed since it was proven
        quote_fully = self.settings.quote_fully
        label_a = _quote_two(b"a/", cand.name, quote_fully)
        label_b = _quote_two(b"b/", cand.name, quote_fully)
        out = [
            b"diff --git " + label_a + b" " + label_b + b"\n",
            b"new file mode " + cand.mode + b"\n",
            b"index " + self.null_abbrev + b".." + cand.oid[: self.abbrev].encode() + b"\n",
        ]
        if not data:
            pass
        elif b"\0" in data[:FIRST_FEW_BYTES]:
            out.append(b"Binary files /dev/null and " + label_b + b" differ\n")
        else:
            tab = b"\t" if b" " in label_b else b""
            lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            count = b"" if lines == 1 else b"," + str(lines).encode()
            out.append(b"--- /dev/null\n+++ " + label_b + tab + b"\n")
            out.append(b"@@ -0,0 +1" + count + b" @@\n")
            if data.endswith(b"\n"):
                out.append(b"+" + data[:-1].replace(b"\n", b"\n+") + b"\n")
            else:
                out.append(b"+" + data.replace(b"\n", b"\n+"))
                out.append(b"\n\\ No newline at end of file\n")
        return b"".join(out)


def _algo_of(oid: str) -> str:
    return "sha1" if len(oid) == 40 else "sha256"


def _blob_oid(algo: str, data: bytes) -> str:
    digest = hashlib.new(algo, b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _read_file(path: bytes) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(FAST_MAX_BYTES + 1)
    except OSError:
        return None


def _shape(cand: _Candidate, data: bytes, quote_fully: bool) -> tuple[object, ...]:
    """What decides the form of the chunk; one file per shape is checked against git."""
    if not data:
        kind = "empty"
    elif b"\0" in data[:FIRST_FEW_BYTES]:
        kind = "binary"
    elif data.endswith(b"\n"):
        kind = "text-one" if data.count(b"\n") == 1 else "text"
    else:
        kind = "text-nonl-one" if b"\n" not in data else "text-nonl"
    pattern = _NEEDS_QUOTE_FULLY if quote_fully else _NEEDS_QUOTE
    return (kind, cand.mode, bool(pattern.search(cand.name)), b" " in cand.name, cand.has_cr)


def _quote_two(prefix: bytes, name: bytes, quote_fully: bool) -> bytes:
    """git's ``quote_two_c_style``: C-quote ``prefix + name`` as one string if needed."""
    whole = prefix + name
    pattern = _NEEDS_QUOTE_FULLY if quote_fully else _NEEDS_QUOTE
    if not pattern.search(whole):
        return whole
    out = bytearray(b'"')
    for byte in whole:
        if byte < 0x20 or byte in (0x22, 0x5C, 0x7F) or (quote_fully and byte >= 0x80):
            out += _C_ESCAPES.get(byte) or b"\\%03o" % byte
        else:
            out.append(byte)
    out += b'"'
    return bytes(out)


def _git_bool(value: str | None) -> bool | None:
    if value is None:
        return True
    lowered = value.strip().lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off", ""):
        return False
    try:
        return int(lowered) != 0
    except ValueError:
        return None


def _git_size(value: str | None) -> int | None:
    match = re.fullmatch(r"\s*(\d+)\s*([kmg]?)\s*", (value or "").lower())
    if not match:
        return None
    return int(match[1]) << {"": 0, "k": 10, "m": 20, "g": 30}[match[2]]


def _read_settings(config: bytes) -> _Settings:
    """Read the configuration that decides whether Python may build the chunks."""
    settings = _Settings()
    for _scope, key, value in git_lockdown.config_entries(config):
        section, _, rest = key.partition(".")
        if section == "diff":
            if "." not in rest and rest not in _BENIGN_DIFF_KEYS:
                settings.reason = f"config {key}"
        elif section == "color" and rest in ("ui", "diff"):
            if (value or "").strip().lower() == "always":
                settings.reason = f"config {key}=always"
        elif key == "core.quotepath":
            quote = _git_bool(value)
            if quote is None:
                settings.reason = f"config {key}={value}"
            else:
                settings.quote_fully = quote
        elif key == "core.autocrlf":
            lowered = (value or "").strip().lower()
            settings.autocrlf = lowered == "input" or bool(_git_bool(value))
        elif key == "core.bigfilethreshold":
            size = _git_size(value)
            if size is None:
                settings.reason = f"config {key}={value}"
            else:
                settings.big_file_threshold = size
        elif key == "core.disambiguate":
            settings.self_match_ok = False
    return settings


def _apply_attributes(git: _Git, live: list[_Candidate]) -> None:
    """Send to git every file with an attribute that could change its diff."""
    query = b"".join(c.name + b"\0" for c in live)
    out = _run_git(git, ["check-attr", "-z", "--stdin", "--all"], "git check-attr", query)
    tokens = out.split(b"\0")
    by_name = {c.name: c for c in live}
    for i in range(0, len(tokens) - 2, 3):
        path, attr = tokens[i], _decode(tokens[i + 1])
        cand = by_name.get(path)
        if cand is None:
            continue
        if attr in _DIFF_ATTRS or (attr in _EOL_ATTRS and cand.has_cr):
            cand.fast = False


def _prove_abbrev(
    git: _Git, live: list[_Candidate], abbrev: int, hexsz: int, self_match_ok: bool
) -> bool:
    """Prove git would print ``abbrev`` hex digits for each blob id; demote the rest.

    ``rev-parse --short`` of the null id printed ``abbrev`` digits: that is the configured
    length unless git had to lengthen it because an object starts with as many zeros,
    which cannot be when no object starts with one digit fewer. A blob gets exactly
    ``abbrev`` digits when no other object shares that prefix.
    """
    lines: list[bytes] = []
    zero_check = abbrev - 1 >= MINIMUM_ABBREV and abbrev < hexsz
    if zero_check:
        lines.append(b"0" * (abbrev - 1))
    lines.extend(c.oid[:abbrev].encode() for c in live)
    out = _run_git(
        git,
        ["cat-file", "--batch-check", "--buffer"],
        "git cat-file --batch-check",
        b"".join(line + b"\n" for line in lines),
    )
    answers = out.split(b"\n")
    if zero_check:
        if not answers or not answers[0].endswith(b" missing"):
            return False
        answers = answers[1:]
    for cand, answer in zip(live, answers, strict=False):
        if answer.endswith(b" missing"):
            continue
        if self_match_ok and answer.split(b" ", 1)[0] == cand.oid.encode():
            continue
        cand.fast = False
    return True
