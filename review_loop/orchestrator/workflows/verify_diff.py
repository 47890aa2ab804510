"""``verify-diff``: a fresh, read-only executor judges a git diff; we apply its edits.

The seed (``seeds/000_a61d05858c837abb.txt``) is the spec; the pure rules live in
:mod:`review_loop.agents.verify_diff`. This module does the I/O and runs the loop:

- explicit-args mode (Steps 1–5): ``missing target`` / ``empty diff``; scenarios fixed
  once per run (``--scenarios-file`` or one read-only call that sees the framing); then
  per iteration a fresh executor session whose prompt never contains the framing, the
  verdict parsed in the seed's order, edits applied by us (each ``old_string`` matched
  exactly once against the re-read file), and the frontmatter and scope rails;
- auto-derive mode (A1–A3): changed files grouped by skill, one loop per skill (in name
  order), per-entry ``file`` checked against the skill's files, the aggregate verdict.

A dispatch that times out, fails or answers nothing ends the loop with ``dispatch error``;
nothing here ever judges the diff in the executor's place.

Decisions beyond the seed, each to keep a promise the seed makes:

- Staged changes are refused, before the run and before every dispatch: the seed forbids
  them because they would corrupt the verdict.
- The explicit-args scope rail compares against the working tree as it was when the run
  started: a path the caller had already changed is an offender only if it changed
  during the run, and is put back to its start-of-run content (a path clean at the start
  gets the seed's ``git checkout HEAD --``). The caller's other uncommitted work is never
  reverted.
- Before any revert, the content being discarded is copied under the run's record
  directory (``.review-handoff/runtime/verify-diff/<stamp>/reverted/``).
- A ``--target`` that is neither a file in the working tree nor a deletion ``git diff``
  shows is ``missing target``; a deleted target with a non-empty diff is judged (the
  executor sees an empty file and the deletion's diff).
- The tree is hostile input: every file is read and written through
  :mod:`review_loop.orchestrator.handoff.tree_files` (no link anywhere on the path, never under
  ``.git``, regular files only, bounded). A file not read is named in the result's
  ``skipped_files`` (and in the prompt as not read, never as its content); an edit not
  written in ``refused_edits``, each ``{"path", "reason"}``. Both keys appear only when
  they have entries, so a document of the seed's shape is unchanged otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import anyio

from review_loop.agents import verify_diff as vd
from review_loop.agents.errors import InputError, StateError
from review_loop.orchestrator.dispatcher import Dispatcher, PeerRequest
from review_loop.orchestrator.handoff.files import (
    atomic_write_bytes,
    atomic_write_json,
    file_stamp,
    make_dirs,
    utc_now,
)
from review_loop.orchestrator.handoff.git import ensure_layout, git, rev_parse
from review_loop.orchestrator.handoff.tree_files import (
    TreeFileRefusedError,
    git_identities,
    read_tree_file,
    relative_path,
    remove_tree_file,
    write_tree_file,
)

RUNS_DIR = "verify-diff"
P = ParamSpec("P")
T = TypeVar("T")
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyDiffPlan:
    """One validated invocation.

    Attributes:
        description, fix_direction, target: the framing; which are non-blank picks the
            mode (all three: explicit-args, none: auto-derive, else ``incomplete args``).
        base: the git ref the working tree is compared with.
        max_iterations: the loop's upper bound (per skill in auto-derive mode).
        executor: the product (or peer-command alias) that judges the diff.
        scenarios: scenarios given by the caller; otherwise one read-only call derives them.
        timeout_ms: each dispatch's deadline (default: prefs).
    """

    description: str | None = None
    fix_direction: str | None = None
    target: str | None = None
    base: str = "HEAD"
    max_iterations: int = 1
    executor: str
    scenarios: tuple[vd.Scenario, ...] | None = None
    timeout_ms: int | None = None

    @property
    def mode(self) -> vd.Mode:
        """The mode the framing fields select."""
        return vd.select_mode(self.description, self.fix_direction, self.target)


def stderr_line(text: str) -> None:
    """The default progress sink: one line on stderr."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


async def _thread(func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return await anyio.to_thread.run_sync(lambda: func(*args, **kwargs))


# -- the repository -----------------------------------------------------------------------


def normalize_target(repo: Path, target: str) -> str:
    """``--target`` as a path relative to the repository root (``/``-separated).

    Normalised as text, never resolved
    (:func:`~review_loop.orchestrator.handoff.tree_files.relative_path`): a link inside the
    repository is not followed to name another file.

    Raises:
        InputError: the path leaves the repository, names its root, or is inside ``.git``.
    """
    raw = target.strip()
    try:
        relative = relative_path(repo, Path(raw))
    except TreeFileRefusedError:
        if Path(os.path.normpath(repo / raw)) == Path(os.path.normpath(repo)):
            raise InputError(
                "--target", f"{raw!r} is not a file of the work tree", "one file path"
            ) from None
        raise InputError(
            "--target", f"{raw!r} is outside the repository {str(repo)!r}", "a file in --repo"
        ) from None
    if any(part.casefold() == ".git" for part in relative.split("/")):
        raise InputError("--target", f"{raw!r} is not a file of the work tree", "one file path")
    return relative


def _decoded(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _shown(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def _git_dirs(repo: Path) -> frozenset[tuple[int, int]]:
    """The git dir and common dir of ``repo``, which no read or write may enter."""
    out = git(repo, "rev-parse", "--absolute-git-dir", "--git-common-dir").stdout
    found = [Path(line) for line in out.decode("utf-8", "surrogateescape").splitlines()]
    return git_identities(p if p.is_absolute() else repo / p for p in found)


@dataclass(frozen=True, slots=True)
class Tree:
    """The working tree, read and written the way the loop needs (synchronous).

    Every read and write goes through :mod:`~review_loop.orchestrator.handoff.tree_files`; what it
    refuses is collected in ``skipped`` (path -> reason) and ``refused`` (edits), which
    :meth:`report` adds to the result.
    """

    repo: Path
    base: str
    protected: frozenset[tuple[int, int]] = frozenset()
    skipped: dict[str, str] = field(default_factory=dict)
    refused: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def open(cls, repo: Path, base: str) -> Tree:
        """The tree of ``repo`` against ``base``, its git dir and common dir protected."""
        return cls(repo, base, _git_dirs(repo))

    def _git(self, *args: str, check: bool = True) -> bytes:
        return git(self.repo, "--literal-pathspecs", *args, check=check).stdout

    def diff(self, paths: Sequence[str]) -> str:
        """``git diff <base> -- <paths>`` (all paths when empty)."""
        out = self._git("diff", "--no-color", "--no-ext-diff", self.base, "--", *paths)
        return out.decode("utf-8", "replace")

    def _names(self, *args: str) -> list[str]:
        out = self._git("diff", "--name-only", "-z", "--no-renames", *args)
        return [name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]

    def changed_since_base(self) -> list[str]:
        """``git diff --name-only <base>``."""
        return self._names(self.base)

    def unstaged(self) -> list[str]:
        """``git diff --name-only``: the working tree against the index."""
        return self._names()

    def staged(self) -> list[str]:
        """Paths whose index entry differs from ``HEAD``."""
        return self._names("--cached")

    def refuse_staged(self, *, during_run: bool = False) -> None:
        """Raise when anything is staged (the verdict would be corrupt).

        Raises:
            InputError: before the run.
            StateError: during the run (edits applied so far stay in the working tree).
        """
        staged = self.staged()
        if not staged:
            return
        shown = ", ".join(staged[:5]) + (" …" if len(staged) > 5 else "")
        advice = "unstage them (git restore --staged -- <path>) and run verify-diff again"
        if during_run:
            raise StateError(
                "staged-changes",
                f"changes were staged while verify-diff was running ({shown}); the run "
                f"stopped before its next dispatch, edits applied so far stay in the "
                f"working tree; {advice}",
            )
        raise InputError(
            "--repo",
            f"{len(staged)} path(s) have staged changes ({shown}); verify-diff compares the "
            "working tree with --base and staged content would corrupt the verdict",
            advice,
        )

    def tracked(self, path: str) -> bool:
        """Whether the index has ``path`` (intent-to-add entries count)."""
        return bool(self._git("ls-files", "-z", "--", path))

    def read(self, path: str, *, note: bool = True) -> bytes | None:
        """The file's bytes, or ``None`` when it is missing or refused (then, with
        ``note``, named in ``skipped`` with why: a link, not a regular file, too large,
        under ``.git``). ``note=False``: a read for a comparison, never for a prompt."""
        try:
            return read_tree_file(self.repo, path, protected=self.protected)
        except TreeFileRefusedError as refused:
            if note:
                self.skipped.setdefault(path, refused.reason)
        except OSError:
            pass
        return None

    def shown(self, path: str, data: bytes | None) -> str | None:
        """What the prompt shows for ``path``: its text, a note when it was not read, or
        ``None`` when it is missing."""
        if data is not None:
            return _shown(data)
        reason = self.skipped.get(path)
        return None if reason is None else f"(not read by review-loop: {reason})"

    def editable(self, path: str) -> str | None:
        """The file's text, to apply an edit to; ``None`` when it is missing, not UTF-8,
        or refused (then the edit is named in ``refused`` with why)."""
        try:
            return _decoded(read_tree_file(self.repo, path, protected=self.protected))
        except TreeFileRefusedError as refused:
            self._refuse(path, refused.reason)
        except OSError:
            pass
        return None

    def write(self, path: str, data: bytes) -> bool:
        """Replace the file atomically, keeping its mode; ``False`` when it was refused
        (a link on the way, ``.git``, not a regular file: named in ``refused``) or failed,
        and nothing was written."""
        try:
            write_tree_file(self.repo, path, data, protected=self.protected)
        except TreeFileRefusedError as refused:
            self._refuse(path, refused.reason)
            return False
        except OSError as error:
            self._refuse(path, f"cannot be written: {error.strerror or error}")
            return False
        return True

    def _refuse(self, path: str, reason: str) -> None:
        entry = {"path": path, "reason": reason}
        if entry not in self.refused:
            self.refused.append(entry)

    def restore(self, path: str, data: bytes | None) -> None:
        """Put ``data`` back (``None``: the file did not exist)."""
        if data is None:
            try:
                remove_tree_file(self.repo, path, protected=self.protected)
            except OSError as error:
                self._refuse(path, f"cannot be removed: {error}")
        else:
            self.write(path, data)

    def report(self, document: dict[str, Any]) -> dict[str, Any]:
        """``document`` with ``skipped_files`` and ``refused_edits`` added when not empty."""
        if self.skipped:
            document["skipped_files"] = [
                {"path": path, "reason": reason} for path, reason in self.skipped.items()
            ]
        if self.refused:
            document["refused_edits"] = list(self.refused)
        return document

    def revert(self, path: str, backup_dir: Path, fallback: bytes | None) -> None:
        """Copy the file under ``backup_dir``, then ``git checkout HEAD -- <path>``; when
        ``HEAD`` has no such path, put ``fallback`` (its start-of-run content) back."""
        current = self.read(path, note=False)
        if current is not None:
            atomic_write_bytes(backup_dir / path, current)
        done = git(self.repo, "--literal-pathspecs", "checkout", "HEAD", "--", path, check=False)
        if done.returncode != 0:
            self.restore(path, fallback)

    def snapshot(self, paths: Sequence[str], *, note: bool = True) -> dict[str, bytes | None]:
        """Each path's current bytes (``note``: as :meth:`read`)."""
        return {path: self.read(path, note=note) for path in paths}


def scope_offenders(tree: Tree, target: str, baseline: dict[str, bytes | None]) -> list[str]:
    """Paths other than ``target`` changed since the run started (sorted).

    ``baseline`` holds the start-of-run content of every path ``git diff --name-only``
    listed then; a path not in it was clean, so listing it now means it changed.
    """
    now = set(tree.unstaged())
    offenders = []
    for path in sorted((now | set(baseline)) - {target}):
        if path not in baseline or tree.read(path, note=False) != baseline[path]:
            offenders.append(path)
    return offenders


# -- one run ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Run:
    """What every loop of one invocation shares: dispatcher, plan, records, progress."""

    dispatcher: Dispatcher
    plan: VerifyDiffPlan
    tree: Tree
    root: Path
    progress: Progress

    @classmethod
    def open(
        cls, dispatcher: Dispatcher, plan: VerifyDiffPlan, tree: Tree, progress: Progress
    ) -> _Run:
        ensure_layout(dispatcher.repo)
        stamp = f"{file_stamp(utc_now())}-{os.getpid()}"
        root = dispatcher.repo / ".review-handoff" / "runtime" / RUNS_DIR / stamp
        make_dirs(root)  # never through a link under .review-handoff/
        progress(f"{vd.PROGRESS_PREFIX} records: {root}")
        return cls(dispatcher, plan, tree, root, progress)

    async def ask(self, prompt: str, record_dir: Path, what: str) -> str | None:
        """One fresh read-only session; its answer, or ``None`` for a dispatch error."""
        await _thread(self.tree.refuse_staged, during_run=True)
        await _thread(atomic_write_bytes, record_dir / "prompt.md", prompt.encode("utf-8"))
        delivery = await self.dispatcher.consult(
            PeerRequest(
                peer=self.plan.executor,
                prompt=prompt,
                record_dir=record_dir,
                timeout_ms=self.plan.timeout_ms,
            )
        )
        text = delivery.reply.text if delivery.ok and delivery.reply is not None else ""
        if not text.strip():
            reason = delivery.reason or "empty answer"
            self.progress(
                f"{vd.PROGRESS_PREFIX} {what}: dispatch error "
                f"({delivery.peer}: {delivery.state.value}, {reason})"
            )
            return None
        await _thread(atomic_write_bytes, record_dir / "reply.md", text.encode("utf-8"))
        return text

    def finish(self, document: dict[str, Any]) -> dict[str, Any]:
        """The final document (with what the tree refused), recorded as ``result.json``."""
        document = self.tree.report(document)
        atomic_write_json(self.root / "result.json", document)
        return document


async def run_verify_diff(
    dispatcher: Dispatcher, plan: VerifyDiffPlan, *, progress: Progress = stderr_line
) -> dict[str, Any]:
    """Run verify-diff in the mode the framing selects; the seed's final JSON document.

    Raises:
        InputError: a bad ``--target``/``--base``/``--max-iterations``, or staged changes.
        StateError: changes were staged during the run.
    """
    mode = plan.mode
    if mode == "incomplete":
        return vd.early_result("incomplete args").to_json()
    if plan.max_iterations < 1:
        raise InputError(
            "--max-iterations", f"{plan.max_iterations} is not a positive integer", "1 or more"
        )
    if mode == "explicit-args":
        return await _explicit(dispatcher, plan, progress)
    return await _auto(dispatcher, plan, progress)


# -- explicit-args mode -------------------------------------------------------------------


async def _explicit(
    dispatcher: Dispatcher, plan: VerifyDiffPlan, progress: Progress
) -> dict[str, Any]:
    repo = dispatcher.repo
    target = normalize_target(repo, plan.target or "")
    deleted = False
    try:
        await _thread(read_tree_file, repo, target, protected=_git_dirs(repo))
    except TreeFileRefusedError as refused:
        if refused.kind == "directory":
            raise InputError("--target", f"{target!r} is a directory", "one file path") from None
        missing = vd.early_result("missing target").to_json()
        return {**missing, "skipped_files": [refused.to_json()]}
    except FileNotFoundError:
        deleted = True  # a deletion the diff shows is judged like any change (below)
    except OSError:
        return vd.early_result("missing target").to_json()
    tree = await _thread(Tree.open, repo, rev_parse(repo, plan.base))
    await _thread(tree.refuse_staged)
    diff = await _thread(tree.diff, [target])
    if deleted and not diff.strip():  # neither in the tree nor in the diff: no target
        return vd.early_result("missing target").to_json()
    if not diff.strip():
        if not await _thread(tree.tracked, target):
            progress(
                f"{vd.PROGRESS_PREFIX} {target} is not tracked, and git diff does not show "
                f"untracked files; `git add -N -- {target}` makes it visible without staging it"
            )
        return vd.early_result("empty diff").to_json()
    run = await _thread(_Run.open, dispatcher, plan, tree, progress)
    baseline = await _thread(lambda: tree.snapshot(tree.unstaged(), note=False))
    start = baseline.get(target, tree.read(target))
    scenarios = plan.scenarios
    if scenarios is None:
        scenarios = await _derive_scenarios(run, target, tree.shown(target, start) or "")
        if scenarios is None:
            return run.finish(vd.Tally().result("skipped", "dispatch error").to_json())
    await _thread(atomic_write_json, run.root / "scenarios.json", [s.to_json() for s in scenarios])
    result = await _explicit_loop(run, target, diff, vd.render_scenarios(scenarios), baseline)
    return run.finish(result.to_json())


async def _derive_scenarios(run: _Run, target: str, text: str) -> tuple[vd.Scenario, ...] | None:
    """Step 2, once per run: one read-only call; ``None`` on a dispatch error."""
    plan = run.plan
    description, direction = plan.description or "", plan.fix_direction or ""
    prompt = vd.scenarios_prompt(description, direction, target, vd.head_lines(text))
    reply = await run.ask(prompt, run.root / "scenarios", "scenarios")
    if reply is None:
        return None
    scenarios = vd.parse_scenarios_reply(reply)
    if scenarios is None:
        run.progress(
            f"{vd.PROGRESS_PREFIX} scenarios: the answer held no valid scenarios; using the "
            "median scenario built from the target file (never the Finding's framing)"
        )
        scenarios = vd.fallback_scenarios(vd.frontmatter_description(text))
    return scenarios


async def _explicit_loop(
    run: _Run, target: str, diff: str, scenarios: str, baseline: dict[str, bytes | None]
) -> vd.Result:
    tree, plan = run.tree, run.plan
    board = vd.IterationBoard.explicit(plan.max_iterations, run.progress)
    board.register()
    tally = vd.Tally()
    previous: vd.Verdict | None = None
    start_content = baseline.get(target, tree.read(target))

    def stop(iteration: int, result: vd.Result) -> vd.Result:
        board.close(iteration, vd.exit_note(result, iteration))
        return result

    for iteration in range(1, plan.max_iterations + 1):
        board.start(iteration)
        before = await _thread(tree.read, target)
        if iteration >= 2:
            diff = await _thread(tree.diff, [target])
        prompt = vd.executor_prompt(tree.shown(target, before) or "", diff, scenarios)
        where = run.root / f"iter-{iteration}"
        reply = await run.ask(prompt, where, f"iteration {iteration}")
        verdict = _judged(reply, tally, iteration, previous)
        if isinstance(verdict, vd.Result):
            return stop(iteration, verdict)
        applied = await _thread(_apply_to_target, tree, target, verdict.suggested_edits)
        tally.applied_edits_count += applied
        if applied:
            after = _decoded(await _thread(tree.read, target))
            if after is not None and vd.frontmatter_broken(after, _decoded(before)):
                await _thread(tree.revert, target, run.root / "reverted", start_content)
                return stop(iteration, tally.result("conflict", "frontmatter broken", [target]))
            offenders = await _thread(scope_offenders, tree, target, baseline)
            if offenders:
                await _thread(_revert_offenders, tree, offenders, baseline, run.root)
                return stop(iteration, tally.result("conflict", "scope violation", offenders))
        board.complete(iteration, f"{applied} edit(s) applied")
        previous = verdict
    return tally.result("unresolved")


def _judged(
    reply: str | None,
    tally: vd.Tally,
    iteration: int,
    previous: vd.Verdict | None,
    *,
    auto: bool = False,
) -> vd.Verdict | vd.Result:
    """The iteration's verdict to apply (recorded in ``tally``), or the result that ends the
    loop here: no reply, no valid verdict, converged, or divergent gaps (Step 3 (b))."""
    if reply is None:
        return tally.result("skipped", "dispatch error")
    verdict = vd.parse_verdict(reply, auto=auto)
    if isinstance(verdict, str):
        return tally.result("skipped", verdict)
    tally.record(verdict)
    action = vd.decide(verdict, iteration, previous)
    if action == "converged":
        return tally.result("converged")
    if action == "divergent":
        return tally.result("skipped", "divergent gaps")
    return verdict


def _apply_to_target(tree: Tree, target: str, edits: Sequence[vd.Edit]) -> int:
    """Apply ``edits`` in order, re-reading the file before each; the number that landed."""
    applied = 0
    for edit in edits:
        current = tree.editable(target)
        if current is None:
            continue
        updated = vd.apply_edit(current, edit.old_string, edit.new_string)
        if updated is not None and tree.write(target, updated.encode("utf-8")):
            applied += 1
    return applied


def _revert_offenders(
    tree: Tree, offenders: Sequence[str], baseline: dict[str, bytes | None], root: Path
) -> None:
    for path in offenders:
        if path in baseline:
            current = tree.read(path, note=False)
            if current is not None:
                atomic_write_bytes(root / "reverted" / path, current)
            tree.restore(path, baseline[path])
        else:
            tree.revert(path, root / "reverted", None)


# -- auto-derive mode ---------------------------------------------------------------------


async def _auto(dispatcher: Dispatcher, plan: VerifyDiffPlan, progress: Progress) -> dict[str, Any]:
    repo = dispatcher.repo
    tree = await _thread(Tree.open, repo, rev_parse(repo, plan.base))
    await _thread(tree.refuse_staged)
    if not (await _thread(tree.diff, [])).strip():
        return vd.auto_early_result("empty diff").to_json()
    groups, non_skill = vd.group_by_skill(await _thread(tree.changed_since_base))
    if not groups:
        return vd.auto_early_result("no skill files in diff", non_skill).to_json()
    run = await _thread(_Run.open, dispatcher, plan, tree, progress)
    # Seed: "Auto-derive pre-registers N skills x Max iterations task rows total", so every
    # skill's rows are shown pending before the first skill's loop starts.
    boards = {
        name: vd.IterationBoard.for_skill(name, plan.max_iterations, run.progress)
        for name in groups
    }
    for board in boards.values():
        board.register()
    per_skill = {
        name: await _skill_loop(run, group, boards[name]) for name, group in groups.items()
    }
    return run.finish(vd.aggregate(non_skill, per_skill).to_json())


async def _skill_loop(run: _Run, group: vd.SkillGroup, board: vd.IterationBoard) -> vd.SkillVerdict:
    """One skill's loop over its rows on ``board`` (registered by the caller, up front)."""
    tree, plan = run.tree, run.plan
    files = group.files
    tally = vd.Tally()
    previous: vd.Verdict | None = None
    start = await _thread(tree.snapshot, files)
    shown = {path: tree.shown(path, data) for path, data in start.items()}
    edited_last: list[str] = []
    diff = ""

    def stop(iteration: int, result: vd.Result) -> vd.SkillVerdict:
        board.close(iteration, vd.exit_note(result, iteration))
        return verdict_of(result)

    def verdict_of(result: vd.Result) -> vd.SkillVerdict:
        intent = tally.first.inferred_intent if tally.first is not None else None
        return vd.SkillVerdict(
            primary_file=group.primary_file, files=files, inferred_intent=intent, result=result
        )

    for iteration in range(1, plan.max_iterations + 1):
        board.start(iteration)
        for path in edited_last:
            shown[path] = tree.shown(path, await _thread(tree.read, path))
        diff = await _thread(tree.diff, files)
        prompt = vd.auto_executor_prompt(group.name, diff, shown)
        where = run.root / f"skill-{_safe_name(group.name)}" / f"iter-{iteration}"
        reply = await run.ask(prompt, where, f"{group.name} iter {iteration}")
        verdict = _judged(reply, tally, iteration, previous, auto=True)
        if isinstance(verdict, vd.Result):
            return stop(iteration, verdict)
        applied, edited, before, out_of_scope = await _thread(
            _apply_in_skill, tree, set(files), verdict.suggested_edits
        )
        tally.applied_edits_count += applied
        broken = []
        for path in edited:
            text = _decoded(await _thread(tree.read, path))
            if text is not None and vd.frontmatter_broken(text, before[path]):
                broken.append(path)
        if broken:
            for path in broken:
                await _thread(tree.revert, path, run.root / "reverted", start[path])
            return stop(iteration, tally.result("conflict", "frontmatter broken", broken))
        if out_of_scope:
            return stop(iteration, tally.result("conflict", "scope violation", out_of_scope))
        board.complete(iteration, f"{applied} edit(s) applied")
        previous = verdict
        edited_last = edited
    return verdict_of(tally.result("unresolved"))


def _apply_in_skill(
    tree: Tree, allowed: set[str], edits: Sequence[vd.Edit]
) -> tuple[int, list[str], dict[str, str], list[str]]:
    """Apply in-scope edits in order; returns (landed, edited paths, each edited path's
    text before its first edit, out-of-scope paths never written)."""
    applied = 0
    edited: list[str] = []
    before: dict[str, str] = {}
    out_of_scope: list[str] = []
    for edit in edits:
        path = edit.file or ""
        if path not in allowed:
            if path not in out_of_scope:
                out_of_scope.append(path)
            continue
        current = tree.editable(path)
        if current is None:
            continue
        updated = vd.apply_edit(current, edit.old_string, edit.new_string)
        if updated is None or not tree.write(path, updated.encode("utf-8")):
            continue
        before.setdefault(path, current)
        applied += 1
        if path not in edited:
            edited.append(path)
    return applied, edited, before, out_of_scope


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "_"


__all__ = ["Tree", "VerifyDiffPlan", "normalize_target", "run_verify_diff", "scope_offenders"]
