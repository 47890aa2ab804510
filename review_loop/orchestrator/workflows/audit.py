"""``review-loop audit``: the audit-implementation seed, driven by the tool.

1. Anchor: the repository that holds the target, the selector (``worktree:`` = advisory,
   with the live modified and untracked paths), the run-driver identity, and the concern
   configuration (validated before anything is recorded). Configuration the repository
   carries (``.review-loop/``) is read from the audited **base** commit and may only add
   to the built-in and the user's: the change under review cannot choose its own audit
   (``orchestrator/workflows/repo_config.py``); the result names what it changed
   (``configurationChanged``) and what was refused (``configurationRefused``).
2. Resolve the scope (stale base refused) into a start-input file in the scratch dir;
   start the run with it.
3. Read the selection back from the run's sealed input — never from the resolver again.
   Load the governing context (``orchestrator/workflows/governance.py``): the ``spx/local/``
   overlays per kind from the base commit (the auditing standard, like ``.review-loop/``),
   the decisions and specs that name a changed path or declare its audit ownership from
   the head, and
   give each concern its part, with the rule ids it may use (a configured rule catalog).
4. Dispatch every selected, installed concern agent through the dispatcher, read-only
   and in parallel, each with the complete changeset. Each is driven to a final result:
   an unparseable reply, or a completed one that leaves a path of its selection unsettled
   (neither audited, not applicable nor unsupported), is asked again once in the same
   session; still unsettled is BLOCKED naming the required units (a path nobody inspected
   never becomes an accounting record of an approved run). Each audited path carries the
   concern's read receipt (line count, last non-blank line), checked against the true
   body: a partial read is re-issued in that same ask, and still partial it is not
   inspected (so unsettled, so BLOCKED).
5. Persist through the journal's single writer, one record at a time in the seed's order:
   each concern's complete rows before its findings (only findings on touched text; the
   rest are returned as ``filed``; a rule id outside the catalog is withdrawn), required
   ``not-applicable`` / ``unsupported`` units for the paths a concern answered so, a
   ``missing-skill`` unit per selected concern that is not installed, an accounting
   record per path no concern claimed, and an optional ``coverage-gap`` unit per path no
   governing node governs (missing governance as coverage evidence).
6. Reconcile against the sealed inventory; finish with the status the evidence derives;
   render.

Any failure returns the seed's BLOCKED diagnostic with every field; once the run has
started it stays open (unsealed), so its token still locates the durable state.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import anyio

from review_loop.agents import verification as v
from review_loop.agents import verification_audit as va
from review_loop.agents.errors import ReviewLoopError
from review_loop.orchestrator.dispatcher import Dispatcher, PeerRequest, resolve_peer
from review_loop.orchestrator.handoff.files import atomic_write_bytes, make_dirs
from review_loop.orchestrator.journal import runs
from review_loop.orchestrator.journal.store import Appended, Existing, Refused
from review_loop.orchestrator.journal.writer import open_journal
from review_loop.orchestrator.workflows.governance import OVERLAY_DIR, Governance
from review_loop.orchestrator.workflows.governance import discover as discover_governance
from review_loop.prefs import Prefs

P = ParamSpec("P")
T = TypeVar("T")
Progress = Callable[[str], None]
CONCERNS_NAME = "audit-concerns.json"
CONCERNS_ENV = "REVIEW_LOOP_AUDIT_CONCERNS"


class AuditBlockedError(ReviewLoopError):
    """The audit stopped; ``fields`` are the BLOCKED diagnostic's."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields
        super().__init__(va.blocked_text(fields))


@dataclass(frozen=True, kw_only=True)
class AuditRequest:
    """What ``review-loop audit`` was asked.

    Attributes:
        selector: ``HEAD``, a branch, ``<base>...<head>``, optionally ``worktree:``-prefixed.
        directory: the checkout that holds the target (default: the current directory).
        concerns_file: an explicit concern configuration (beside the user's and the repo's).
        driver: the run-driver identity (six fields); required, never inferred: without
            it the audit is BLOCKED ``not-started`` (``--driver self`` names review-loop's).
        driver_problem: why a ``--driver`` file given is no identity (every missing field):
            the same BLOCKED ``not-started``, naming it (seed 002: a missing identity
            field is BLOCKED, never a usage error).
        timeout_ms: the per-concern deadline (default: the concern's, else prefs).
        deterministic: established deterministic-verification facts for the audited head
            (``{"head": <full id>, ...}``), retained in the sealed input; facts for another
            head, or none, are recorded as ``unestablished``.
        reconcile: the stage-7 reconciler (injected by tests; default the real one).
    """

    selector: str
    directory: str | None = None
    concerns_file: str | None = None
    driver: Mapping[str, str] | None = None
    driver_problem: str | None = None  # why a given --driver file is no identity
    timeout_ms: int | None = None
    deterministic: Mapping[str, Any] | None = None
    reconcile: Callable[[Path, str, str, str], tuple[dict[str, Any], int]] | None = None


async def _thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))


def _q(value: str) -> str:
    return va.shell_quote(value)


# --- anchor ---------------------------------------------------------------------------------


def live_paths(repo: Path) -> list[str]:
    """The modified and untracked paths of the working tree (both paths of a rename or
    copy), as ``git status --porcelain=v1 -z --untracked-files=all`` lists them, without
    ``.review-handoff/`` (an advisory audit's live paths).

    Raises:
        AuditBlockedError: git status failed.
    """
    from review_loop.orchestrator.handoff.git import git

    out = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", check=False)
    if out.returncode != 0:
        raise AuditBlockedError(
            command=f"git -C {_q(str(repo))} status --porcelain=v1 -z --untracked-files=all",
            exitCode=out.returncode,
            stderr=out.stderr.decode("utf-8", "replace").strip(),
        )
    fields = out.stdout.decode("utf-8", "surrogateescape").split("\0")
    paths: list[str] = []
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        paths.append(path)
        if "R" in status or "C" in status:  # the source path follows
            if index < len(fields) and fields[index]:
                paths.append(fields[index])
            index += 1
    return list(dict.fromkeys(p for p in paths if not p.startswith(".review-handoff/")))


def load_concern_agents(
    repo: Path, explicit: str | None, env: Mapping[str, str] | None = None
) -> dict[str, va.ConcernAgent]:
    """The user's concern agents: ``$REVIEW_LOOP_HOME``'s file, then
    ``$REVIEW_LOOP_AUDIT_CONCERNS``, then ``explicit`` (a later entry of a name wins), each
    with the shared rule catalogs they set. The repository's own file is not among them:
    it is read from the audited base by :func:`add_repository_concerns`.

    Raises:
        AuditBlockedError: a configuration file is unreadable or malformed, or names a prompt file
            that cannot be read (``diagnostic: configuration error``).
    """
    del repo
    agents, catalog = load_user_concerns(explicit, env)
    if catalog:  # the shared catalog applies to every concern, beside its own rules
        agents = {name: _with_catalog(agent, catalog) for name, agent in agents.items()}
    return agents


def load_user_concerns(
    explicit: str | None, env: Mapping[str, str] | None = None
) -> tuple[dict[str, va.ConcernAgent], list[str]]:
    """The user's concern agents as configured, and the shared rule catalog they set.

    Raises:
        AuditBlockedError: as :func:`load_concern_agents`.
    """
    from review_loop.orchestrator.handoff.input_files import read_text
    from review_loop.prefs.home import state_home

    environ = os.environ if env is None else env
    sources = [path for path in [state_home(environ) / CONCERNS_NAME] if path.is_file()]
    for item in [environ.get(CONCERNS_ENV, ""), explicit or ""]:
        if item:
            sources.append(Path(item))
    agents: dict[str, va.ConcernAgent] = {}
    catalog: list[str] = []
    for source in sources:
        try:
            document = json.loads(read_text(source))
            entries = va.check_concern_config(document, str(source))
            catalog.extend(va.check_rule_catalog(document, str(source)) or ())
            for name, entry in entries.items():
                prompt = entry["prompt"]
                if prompt == "builtin":
                    text = va.BUILTIN_PROMPT
                else:
                    path = Path(prompt)
                    text = read_text(path if path.is_absolute() else source.parent / path)
                agents[name] = va.ConcernAgent(
                    entry["product"], text, entry["version"], entry["timeoutMs"], entry["rules"]
                )
        except (OSError, ValueError) as error:
            raise AuditBlockedError(
                command=f"read concern configuration {_q(str(source))}",
                stderr=str(error),
                diagnostic=f"configuration error: {source}",
            ) from None
    return agents, catalog


def _with_catalog(agent: va.ConcernAgent, catalog: Sequence[str]) -> va.ConcernAgent:
    return replace(agent, rules=tuple(dict.fromkeys((*catalog, *(agent.rules or ())))))


def add_repository_concerns(
    repo: Path,
    base: str,
    agents: Mapping[str, va.ConcernAgent],
    trusted_skills: set[str],
    refused: list[dict[str, str]],
    catalog: Sequence[str] = (),
) -> dict[str, va.ConcernAgent]:
    """The user's agents plus the repository's ``.review-loop/audit-concerns.json`` as it
    is in commit ``base``, which may only add: an agent for a skill nothing of the user's
    or the built-in registry names.

    Refused (appended to ``refused``, the user's entry kept): a name the user configures;
    any entry while the user configures ``*`` (the repository's would win over it); the
    repository's own ``*``; and a skill of the built-in or the user's registry, whose
    missing agent rejects the run (``missing-skill``) and must not be replaced by an agent,
    prompt and deadline the repository chose. Its rule catalog is never read (a catalog
    only narrows), and its agents get the user's shared ``catalog``.

    Raises:
        AuditBlockedError: the file at ``base`` is malformed, or names a prompt that is not
            a regular file inside the repository at ``base``.
    """
    from review_loop.orchestrator.workflows import repo_config

    path = repo_config.config_path(CONCERNS_NAME)
    where = f"{path} (base {base[:12]})"
    try:
        text = repo_config.read_at(repo, base, path)
        if text is None:
            return dict(agents)
        entries = va.check_concern_config(json.loads(text), where)
        merged = dict(agents)
        for name, entry in entries.items():
            reason = _repository_clash(name, agents, trusted_skills)
            if reason:
                refused.append({"path": path, "entry": f"concerns/{name}", "reason": reason})
                continue
            prompt = entry["prompt"]
            body = va.BUILTIN_PROMPT if prompt == "builtin" else _repo_prompt(repo, base, prompt)
            merged[name] = va.ConcernAgent(
                entry["product"], body, entry["version"], entry["timeoutMs"], tuple(catalog) or None
            )
    except (repo_config.RepoConfigError, ValueError) as error:
        raise AuditBlockedError(
            command=f"read concern configuration {where}",
            stderr=str(error),
            diagnostic=f"configuration error: {path}",
        ) from None
    return merged


def _repository_clash(
    name: str, agents: Mapping[str, va.ConcernAgent], trusted_skills: set[str]
) -> str | None:
    """Why the repository may not configure concern ``name`` (``None``: it may)."""
    if name in agents:
        return "the user configures this concern; the repository may not override it"
    if "*" in agents:
        return "the user's '*' configures every concern; the repository may not override it"
    if name == "*":
        return "'*' would configure the built-in and the user's concerns"
    if name in trusted_skills:
        return (
            "a built-in or user registry skill: only the user chooses its agent "
            "(configure it in your own audit-concerns.json)"
        )
    return None


def _repo_prompt(repo: Path, base: str, prompt: str) -> str:
    """A prompt file the repository's own concern file names, as commit ``base`` has it:
    a regular file inside the repository, never a link, a device or the user's file.

    Raises:
        RepoConfigError: the path is absolute, climbs out, is absent or not a regular file.
    """
    from review_loop.orchestrator.workflows import repo_config

    concerns = repo_config.config_path(CONCERNS_NAME)
    target = repo_config.inside(concerns, prompt)
    if target is None:
        raise repo_config.RepoConfigError(
            prompt,
            base,
            f"the repository's own {CONCERNS_NAME} may name only a regular file inside the "
            "repository (or 'builtin'); put other prompts in your own file",
        )
    text = repo_config.read_at(repo, base, target)
    if text is None:
        raise repo_config.RepoConfigError(target, base, "no such file in the base commit")
    return text


# --- the workflow ---------------------------------------------------------------------------


@dataclass
class _Context:
    repo: Path
    scratch: Path
    selector: str
    committed: str
    advisory: bool
    driver: dict[str, str]
    token: str | None = None
    catalog: tuple[str, ...] = ()  # the user's shared rule catalog
    identity: str = ""
    base: str = ""
    head: str = ""

    def locator(self) -> str:
        return (
            f"--verification-type audit --scope-type changeset --scope {_q(self.identity)} "
            f"--run {_q(self.token or '')}"
        )

    def command(self, verb: str) -> str:
        return f"review-loop verification run {verb} -C {_q(str(self.repo))} {self.locator()}"


def _payload_file(ctx: _Context, index: int, payload: Mapping[str, Any]) -> Path:
    folder = ctx.scratch / "payloads"
    path = folder / f"{index:04d}.json"

    def write() -> None:
        make_dirs(folder)
        atomic_write_bytes(
            path, json.dumps(payload, ensure_ascii=False).encode("utf-8"), durable=False
        )

    _recording(ctx.token, path, write)
    return path


async def _dispatch(
    dispatcher: Dispatcher,
    ctx: _Context,
    installed: Sequence[tuple[va.Concern, va.ConcernAgent]],
    changed: Sequence[str],
    live: Sequence[str],
    timeout_ms: int | None,
    governance: Governance,
    expected: Mapping[str, va.ReadReceipt | None],
) -> list[va.ConcernResult]:
    requests = []
    prompts = []
    for concern, agent in installed:
        prompt = va.concern_prompt(
            agent,
            concern,
            repository=str(ctx.repo),
            base=ctx.base,
            head=ctx.head,
            changed_paths=changed,
            live_paths=live,
            governance=governance.context(concern.kind, concern.paths),
        )
        prompts.append(prompt)
        folder = ctx.scratch / "concerns" / concern.skill.replace(":", "__").replace("/", "_")
        _recording(ctx.token, folder, partial(make_dirs, folder))
        requests.append(
            PeerRequest(
                peer=agent.product,
                prompt=prompt,
                record_dir=folder,
                timeout_ms=agent.timeout_ms or timeout_ms,
            )
        )
    deliveries = await dispatcher.fan_out(requests) if requests else []
    return [
        await _final_result(dispatcher, ctx, concern, agent, request, delivery, expected)
        for (concern, agent), request, delivery in zip(installed, requests, deliveries, strict=True)
    ]


async def _ask_again(
    dispatcher: Dispatcher,
    agent: va.ConcernAgent,
    request: PeerRequest,
    session: str | None,
    prompt: str,
    folder: str,
) -> va.ConcernResult:
    """The same session asked again; its reply parsed (a failed delivery is a reply error)."""
    retry = await dispatcher.consult(
        PeerRequest(
            peer=agent.product,
            prompt=prompt,
            record_dir=request.directory / folder,
            resume_session_id=session,
            timeout_ms=request.timeout_ms,
        )
    )
    if not retry.ok or retry.reply is None:
        raise va.ConcernReplyError(f"{retry.state.value}: {retry.reason or ''}")
    return va.parse_concern_reply(retry.reply.text)


async def _final_result(
    dispatcher: Dispatcher,
    ctx: _Context,
    concern: va.Concern,
    agent: va.ConcernAgent,
    request: PeerRequest,
    delivery: Any,
    expected: Mapping[str, va.ReadReceipt | None],
) -> va.ConcernResult:
    """Drive one concern to a final result (seed 002), or raise the BLOCKED diagnostic.

    An unparseable reply is asked again once; so is a completed result that leaves paths
    of its selection unsettled (neither audited, not applicable nor unsupported): a path
    nobody inspected must not become an accounting record and let the run approve. An
    audited path whose read receipt does not match its body (``expected``, from the true
    body) was read partially: the read is re-issued in the same ask; still partial, the
    path is not inspected, so unsettled, so BLOCKED.
    """
    # A required unit that cannot reach a final status is named by its unitId (seed).
    units = ", ".join(concern.unit_id(path) for path in concern.paths)
    command = f"dispatch {concern.skill} to {agent.product} (read-only) for {units}"
    if not delivery.ok or delivery.reply is None:
        raise AuditBlockedError(
            runToken=ctx.token,
            command=command,
            stderr=f"{delivery.state.value}: {delivery.reason or ''} {delivery.detail}".strip(),
        )
    session = delivery.sessionId
    try:
        try:
            result = va.parse_concern_reply(delivery.reply.text)
        except va.ConcernReplyError as error:
            again = (
                f"Your answer was not the response contract ({error}). Answer again "
                f"with the JSON object only.\n\n{va.RESPONSE_CONTRACT}\n"
            )
            result = await _ask_again(dispatcher, agent, request, session, again, "again")
        unsettled = va.unsettled_paths(concern, result)
        partial = va.partial_reads(concern, result, expected)
        if unsettled or partial:
            prompt = va.unsettled_prompt(unsettled, list(partial))
            result = await _ask_again(dispatcher, agent, request, session, prompt, "unsettled")
    except va.ConcernReplyError as error:
        raise AuditBlockedError(
            runToken=ctx.token, command=command, stderr=f"unparseable concern reply: {error}"
        ) from None
    if result.status == "failed":
        raise AuditBlockedError(runToken=ctx.token, command=f"{command}: {result.failure}")
    # Still partial after the re-issued read: recorded as not inspected (then unsettled).
    partial = va.partial_reads(concern, result, expected)
    result = va.without_paths(result, partial)
    if unsettled := va.unsettled_paths(concern, result):
        raise AuditBlockedError(
            runToken=ctx.token, command=command, stderr=_unsettled_text(concern, unsettled, partial)
        )
    return result


def _unsettled_text(
    concern: va.Concern, unsettled: Sequence[str], partial: Mapping[str, str]
) -> str:
    """The BLOCKED stderr for units no final result covers, partial reads named apart."""
    silent = [p for p in unsettled if p not in partial]
    parts = []
    if silent:
        missing = ", ".join(concern.unit_id(path) for path in silent)
        parts.append(
            f"no final result for the required unit(s) {missing}: asked again, the "
            "concern still names neither their coverage nor a failed operation"
        )
    if partial:
        reads = "; ".join(f"{concern.unit_id(p)}: {why}" for p, why in partial.items())
        parts.append(
            "not inspected: no complete read of the body of the required unit(s) "
            f"(the read was re-issued once): {reads}"
        )
    return "; ".join(parts)


def _expected_receipts(
    token: str | None, repo: Path, head: str, inventory: Sequence[str], live: Sequence[str]
) -> dict[str, va.ReadReceipt | None]:
    """The read receipt of each inventory path's true body (``None``: none is asked).

    A committed path's body is its blob at ``head`` (a regular file only: a link, a
    submodule or a deletion has no body to read there); a live path of an advisory audit
    is the working-tree file, read without following a link. Git runs hardened
    (``repo_config.HARDENED``): nothing the repository configures runs.

    Raises:
        AuditBlockedError: git could not list or read the head bodies (the run stays open;
            no read goes unchecked).
    """
    from review_loop.orchestrator.handoff.files import read_each
    from review_loop.orchestrator.handoff.git import git
    from review_loop.orchestrator.workflows.repo_config import HARDENED

    receipts: dict[str, va.ReadReceipt | None] = dict.fromkeys(inventory)
    live_set = set(live)
    for path, body in read_each(repo, [p for p in inventory if p in live_set]):
        receipts[path] = va.receipt_of(body) if body is not None else None
    committed = [p for p in inventory if p not in live_set]
    if not committed:
        return receipts
    listed = git(
        repo, *HARDENED, "--literal-pathspecs", "ls-tree", "-z", "--full-tree", head, "--",
        *committed, check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        raise AuditBlockedError(
            runToken=token,
            command=f"git -C {_q(str(repo))} ls-tree -z --full-tree {head} -- <inventory>",
            exitCode=listed.returncode,
            stderr=listed.stderr.decode("utf-8", "replace").strip(),
        )
    blobs: dict[str, str] = {}  # path -> blob id, regular files only
    for entry in listed.stdout.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if not name or not meta:
            continue
        mode, kind, oid = meta.decode("ascii", "replace").split(" ")
        path = name.decode("utf-8", "surrogateescape")
        if kind == "blob" and mode in ("100644", "100755") and path in receipts:
            blobs[path] = oid
    if not blobs:
        return receipts
    # one `cat-file --batch` for every body: "<oid> blob <size>\n<bytes>\n" each
    batch = git(
        repo, *HARDENED, "cat-file", "--batch", check=False,
        input_bytes="".join(f"{oid}\n" for oid in blobs.values()).encode("ascii"),
    )  # fmt: skip
    out, at = batch.stdout, 0
    for path in blobs:
        header_end = out.find(b"\n", at)
        header = out[at:header_end].split(b" ")
        if batch.returncode != 0 or header_end < 0 or len(header) != 3 or header[1] != b"blob":
            raise AuditBlockedError(  # the unreadable subject path (seed 002)
                runToken=token,
                command=f"git -C {_q(str(repo))} cat-file --batch: {head}:{path}",
                exitCode=batch.returncode,
                stderr=batch.stderr.decode("utf-8", "replace").strip() or "no blob read",
            )
        size = int(header[2])
        receipts[path] = va.receipt_of(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return receipts


@dataclass
class _Plan:
    """Stage 6's records in the seed's order, and what the result reports beside them."""

    records: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    filed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)

    def unit(self, unit: dict[str, Any]) -> None:
        """Append one scope row, keyed by its unit id."""
        self.records.append(("scope", unit["unitId"], unit))


def _plan(
    ctx: _Context,
    concerns: Sequence[va.Concern],
    agents: Mapping[str, va.ConcernAgent],
    results: Mapping[str, va.ConcernResult],
    inventory: Sequence[str],
    selection: Sequence[Mapping[str, Any]],
    touched: Callable[[va.ReturnedFinding], bool],
    version: str,
) -> _Plan:
    """Every record, in the seed's order: concern by concern, then the unclaimed paths.

    A selected concern that is not installed gets its ``missing-skill`` unit; every path
    no concern claimed gets an accounting record.
    """
    plan = _Plan()
    for concern in concerns:
        agent = agents.get(concern.skill) or agents.get("*")
        if agent is None:
            plan.unit(va.missing_skill_unit(concern, ctx.driver))
            plan.summary.append({"skill": concern.skill, "status": "missing-skill"})
            continue
        result = results[concern.skill]
        provenance = {
            "agentOwningPluginVersion": version,
            "skillOwningPluginVersion": agent.version,
            "toolVersion": agent.product,
        }
        audited, units = _plan_units(plan, ctx, concern, result, inventory, provenance)
        findings = _plan_findings(plan, ctx, concern, agent, result, units, touched, provenance)
        plan.notes.extend(f"{concern.skill}: {w}" for w in result.withdrawn)
        plan.summary.append(
            {
                "skill": concern.skill,
                "product": agent.product,
                "status": result.status,
                "audited": audited,
                "findings": findings,
            }
        )
    auditors = va.artifact_type_auditors(selection)
    for path in inventory:
        if path not in plan.claimed:
            plan.unit(va.accounting_unit(path, auditors.get(path), ctx.driver))
    return plan


def _plan_units(
    plan: _Plan,
    ctx: _Context,
    concern: va.Concern,
    result: va.ConcernResult,
    inventory: Sequence[str],
    provenance: Mapping[str, str],
) -> tuple[int, dict[str, dict[str, Any]]]:
    """One concern's complete rows; returns how many it audited and its unit per path.

    Only paths of its own selection count (a claim outside it is a note). Paths it judged
    not applicable, or cannot audit, are required units of their own (unsupported rejects
    the run), never accounting.
    """
    mine = set(concern.paths)
    audited = [p for p in inventory if p in result.audited and p in mine]
    for path in result.audited:
        if path not in mine:
            plan.notes.append(
                f"{concern.skill}: claimed {path!r}, which its selection does not name"
            )
    units = {}
    for path in audited:
        unit = va.path_unit(concern, path, ctx.driver, provenance)
        units[path] = unit
        plan.unit(unit)
    plan.claimed.update(audited)
    for status, paths in (
        ("not-applicable", result.not_applicable),
        ("unsupported", result.unsupported),
    ):
        for path in (p for p in inventory if p in paths and p in mine):
            plan.unit(va.path_unit(concern, path, ctx.driver, provenance, status))
            plan.claimed.add(path)
    return len(audited), units


def _plan_findings(
    plan: _Plan,
    ctx: _Context,
    concern: va.Concern,
    agent: va.ConcernAgent,
    result: va.ConcernResult,
    units: Mapping[str, dict[str, Any]],
    touched: Callable[[va.ReturnedFinding], bool],
    provenance: Mapping[str, str],
) -> int:
    """One concern's findings after its rows; returns how many were recorded.

    A rule id outside the catalog, or a path the concern did not audit, is withdrawn (a
    note); a finding off the touched text is returned as ``filed``; a repeat of a unit's
    rule adds its location to the recorded finding.
    """
    allowed = va.allowed_rules(agent, None)
    recorded: dict[str, dict[str, Any]] = {}
    for finding in result.findings:
        if allowed is not None and finding.rule not in allowed:
            plan.notes.append(
                f"{concern.skill}: finding {finding.rule} at {finding.location} withdrawn: "
                "its rule id is not in the rule catalog"
            )
            continue
        owner = units.get(finding.path)
        if owner is None:
            plan.notes.append(
                f"{concern.skill}: finding {finding.rule} at {finding.location} withdrawn: "
                "it names no path the concern audited"
            )
            continue
        key = f"{owner['unitId']}:{finding.rule}"
        if not touched(finding):
            plan.filed.append(va.filed_line(key, finding, ctx.token or "", ctx.base, ctx.head))
            continue
        if key in recorded:
            recorded[key]["message"] += f" (also at {finding.location})"
            continue
        payload = va.finding_payload(owner, finding, provenance)
        recorded[key] = payload
        plan.records.append(("finding", key, payload))
    return len(recorded)


async def _persist(
    ctx: _Context, run: runs.RunAddress, records: Sequence[tuple[str, str, dict[str, Any]]]
) -> None:
    async with open_journal(run.log) as journal:
        for index, (verb, key, payload) in enumerate(records):
            source = await _thread(_payload_file, ctx, index, payload)
            mutation = (
                runs.finding_mutation("audit", key, payload)
                if verb == "finding"
                else runs.scope_mutation("audit", run.selector, key, payload)
            )
            try:
                outcome = await journal.record(mutation)
            except (OSError, ReviewLoopError) as error:
                outcome = Refused(error)
            if isinstance(outcome, Refused):
                raise AuditBlockedError(
                    runToken=ctx.token,
                    command=(
                        f"{ctx.command(f'{verb} add')} --idempotency-key {_q(key)} "
                        f"--payload {_q(str(source))}"
                    ),
                    payloadSource=str(source),
                    payloadKey=key,
                    exitCode=1,
                    stderr=runs.rejection_text(verb, "audit", outcome.error),
                )
            assert isinstance(outcome, Appended | Existing)


def _touched_text(
    repo: Path, base: str, head: str, live: Sequence[str]
) -> Callable[[va.ReturnedFinding], bool]:
    from review_loop.orchestrator.handoff.git import git

    diff = git(
        repo,
        "-c",
        "core.quotepath=off",
        "diff",
        "-U0",
        "--no-renames",
        "--no-ext-diff",
        f"{base}..{head}",
        "--",
        check=False,
    )
    deleted = git(
        repo,
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "--diff-filter=D",
        f"{base}..{head}",
        "--",
        check=False,
    )
    ranges = va.changed_lines(diff.stdout.decode("utf-8", "replace"))
    gone = [p for p in deleted.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
    return lambda finding: va.is_touched(finding, ranges, gone, live)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("review-loop")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def _recording(token: str | None, path: Path, write: Callable[[], object]) -> None:
    """Do one run-recording write; a refused write stops the audit right there (seed).

    Raises:
        AuditBlockedError: ``diagnostic: configuration error <path>``, nothing retried elsewhere.
    """
    try:
        write()
    except OSError as error:
        raise AuditBlockedError(
            runToken=token,
            command=f"write {_q(str(path))}",
            exitCode=1,
            stderr=f"{type(error).__name__}: {error}",
            diagnostic=f"configuration error: {path}",
        ) from None


def _deterministic(facts: Mapping[str, Any] | None, head: str, notes: list[str]) -> Any:
    """The facts retained for ``head``; ``unestablished`` when none are for this subject."""
    if not facts:
        return "unestablished"
    if facts.get("head") != head:
        notes.append(
            f"deterministic verification facts name head {facts.get('head')!r}, not the "
            f"audited head {head}: recorded as unestablished"
        )
        return "unestablished"
    return {"status": "established", **facts}


async def _reconcile(
    ctx: _Context,
    run: runs.RunAddress,
    selection: Sequence[Mapping[str, Any]],
    reconcile: Callable[[Path, str, str, str], tuple[dict[str, Any], int]],
    say: Progress,
) -> None:
    """Stage 7: exit 0 goes on to finish; only ``unaccounted`` goes back to stage 6 once.

    Paths the reconciler names as unaccounted get their accounting records (the rows the
    run still lacks), then the run is reconciled again. Drift, an unexpected subject or a
    non-final required unit is BLOCKED at once: no inspection repairs those.

    Raises:
        AuditBlockedError: the reconciler failed, or the run is still not reconciled.
    """
    from review_loop.orchestrator.workflows import scope

    command = (
        f"review-loop scope resolve {_q(ctx.committed)} --repo {_q(str(ctx.repo))} "
        f"--reconcile-run {_q(ctx.token or '')} --scope-identity {_q(ctx.identity)}"
    )
    for attempt in (1, 2):
        try:
            verdict, code = await _thread(
                reconcile, ctx.repo, ctx.committed, ctx.token or "", ctx.identity
            )
        except scope.StaleBaseError as error:
            raise AuditBlockedError(
                runToken=ctx.token,
                command=command,
                exitCode=3,
                stderr=scope.dump(error.diagnostic()),
            ) from None
        except scope.ScopeResolutionError as error:
            raise AuditBlockedError(
                runToken=ctx.token,
                command=command,
                exitCode=2,
                stderr=f"{scope.RECONCILE_PREFIX}: {error}",
            ) from None
        if code == 0:
            return
        fields = [f for f in ("drifted", "unexpected", "nonfinal", "unaccounted") if verdict[f]]
        if fields != ["unaccounted"] or attempt == 2:
            raise AuditBlockedError(
                runToken=ctx.token,
                command=command,
                exitCode=code,
                stderr=scope.dump(verdict),
                diagnostic=f"unreconciled: {', '.join(fields)}",
            )
        say(
            f"[review-loop] audit: {len(verdict['unaccounted'])} unaccounted paths: back to stage 6"
        )
        auditors = va.artifact_type_auditors(selection)
        rows = [
            va.accounting_unit(path, auditors.get(path), ctx.driver)
            for path in verdict["unaccounted"]
        ]
        await _persist(ctx, run, [("scope", unit["unitId"], unit) for unit in rows])


async def run_audit(
    request: AuditRequest,
    *,
    prefs: Prefs,
    progress: Progress | None = None,
    open_dispatcher: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """Run the whole audit; returns the result document or the BLOCKED document."""
    say = progress or (lambda line: None)
    try:
        return await _audit(request, prefs=prefs, say=say, open_dispatcher=open_dispatcher)
    except AuditBlockedError as blocked:
        fields = {
            "runToken": blocked.fields.get("runToken") or "not-started",
            "command": blocked.fields.get("command"),
            "payloadSource": blocked.fields.get("payloadSource"),
            "payloadKey": blocked.fields.get("payloadKey"),
            "exitCode": blocked.fields.get("exitCode"),
            "stderr": blocked.fields.get("stderr"),
            "diagnostic": blocked.fields.get("diagnostic"),
        }
        return {"ok": False, "status": "BLOCKED", "blocked": str(blocked), **fields}


async def _audit(
    request: AuditRequest,
    *,
    prefs: Prefs,
    say: Progress,
    open_dispatcher: Callable[..., Any] | None,
) -> dict[str, Any]:
    """The seed's steps, in order; any step stops the audit with ``AuditBlockedError``."""
    from review_loop.orchestrator.workflows import repo_config, scope

    _refuse_incomplete(request)
    ctx, agents, live = await _anchor(request, prefs)
    notes: list[str] = []
    refused: list[dict[str, str]] = []
    resolved, start_path = await _resolve(ctx, request, live, notes, refused)
    agents = await _repository_configuration(ctx, prefs, agents, refused, say)
    changed = repo_config.changed([*resolved["changed_paths"], *live], also=(OVERLAY_DIR,))
    for entry in changed:
        say(f"[review-loop] audit: the change edits {entry['path']}; its base version was used")
    started = await _start(ctx, start_path)
    say(f"[review-loop] audit: run {ctx.token} started over {len(started['resolvedScope'])} paths")
    run = runs.address(ctx.repo, "audit", "changeset", ctx.identity, started["runToken"])
    sealed = await _read_sealed(ctx, run)
    concerns = va.concerns_from_selection(sealed.selection)
    # Stage 3: the governing context, read from the head commit once the run is open.
    # The overlays (the auditing standard) from the base, as .review-loop/ (repo_config).
    governance = await _thread(
        partial(discover_governance, overlays_at=ctx.base), ctx.repo, ctx.head, sealed.inventory
    )
    results = await _dispatch_concerns(
        ctx, request, prefs, say, open_dispatcher, concerns, agents, sealed, governance
    )
    plan = await _persist_plan(ctx, run, concerns, agents, results, sealed, governance, say)
    notes.extend(plan.notes)
    # Stage 7: reconcile against the sealed inventory; only exit 0 reaches finish.
    await _reconcile(ctx, run, sealed.selection, request.reconcile or scope.reconcile_run, say)
    finished, projection = await _finish(ctx, run)
    deterministic = resolved["deterministicVerification"]
    eligible, why = va.gate_eligibility(ctx.advisory, ctx.head, deterministic)
    return {
        "ok": True,
        "runToken": ctx.token,
        "runFile": started["locator"]["runTarget"],
        "scopeIdentity": ctx.identity,
        "advisory": ctx.advisory,
        "deterministicVerification": deterministic,
        "gateEligible": eligible,  # reusable gate evidence (seed 002), whatever the status
        "gateEligibility": why,
        "governance": governance.report(),
        "configurationChanged": changed,
        "configurationRefused": refused,
        "terminalStatus": finished.get("terminalStatus"),
        "concerns": plan.summary,
        "filed": plan.filed or ["filed: none"],
        "notes": notes,
        "scratch": str(ctx.scratch),
        "projection": projection,
    }


def _refuse_incomplete(request: AuditRequest) -> None:
    """Stage 1: a selector and a run-driver identity are required before anything else.

    Raises:
        AuditBlockedError: ``not-started``, naming what is missing and what is accepted.
    """
    if not request.selector.strip():
        raise AuditBlockedError(
            command="review-loop audit", stderr="no selector: HEAD, a branch, or <base>...<head>"
        )
    if not request.driver:
        # Seed 002: accept the identity generically, never infer it; without it nothing starts.
        why = request.driver_problem or "no run-driver identity"
        raise AuditBlockedError(
            command="review-loop audit "
            + " ".join(_q(t) for t in (request.selector, request.directory) if t),
            stderr=f"{why}: --driver FILE with the six producer fields "
            f"({', '.join(va.DRIVER_FIELDS)}), or --driver self for review-loop's own",
        )


async def _anchor(
    request: AuditRequest, prefs: Prefs
) -> tuple[_Context, dict[str, va.ConcernAgent], list[str]]:
    """Stage 1: the repository, the concern configuration (validated), the live paths of
    an advisory selector, and the scratch directory; nothing of the run exists yet.

    Raises:
        AuditBlockedError: not a repository, a configuration error, or an unwritable scratch dir.
    """
    from review_loop.orchestrator.handoff.files import file_stamp, utc_now
    from review_loop.orchestrator.handoff.git import ensure_layout, repo_root

    directory = request.directory or os.getcwd()
    try:
        repo = repo_root(directory)
    except ReviewLoopError as error:
        raise AuditBlockedError(
            command=f"git -C {_q(directory)} rev-parse --show-toplevel",
            exitCode=128,
            stderr=str(error),
        ) from None
    advisory = request.selector.startswith("worktree:")
    committed = request.selector.removeprefix("worktree:")
    driver = dict(request.driver or {})
    agents, catalog = load_user_concerns(request.concerns_file)
    if catalog:  # the shared catalog applies to every concern, beside its own rules
        agents = {name: _with_catalog(agent, catalog) for name, agent in agents.items()}
    _check_products(agents, prefs)
    live = await _thread(live_paths, repo) if advisory else []
    scratch = repo / ".review-handoff" / "runtime" / "audit" / file_stamp(utc_now())

    def make_scratch() -> None:
        ensure_layout(repo)
        make_dirs(scratch)

    await _thread(_recording, None, scratch, make_scratch)
    ctx = _Context(repo, scratch, request.selector, committed, advisory, driver)
    ctx.catalog = tuple(catalog)
    return ctx, agents, live


def _check_products(agents: Mapping[str, va.ConcernAgent], prefs: Prefs) -> None:
    """Every concern agent's product resolves (installed or not) under ``prefs``.

    Raises:
        AuditBlockedError: ``configuration error: concern configuration``, naming the concern.
    """
    for name, agent in agents.items():
        try:
            resolve_peer(agent.product, prefs, field=f"concern {name}")
        except ReviewLoopError as error:
            raise AuditBlockedError(
                command=f"resolve the product of concern {name}",
                stderr=str(error),
                diagnostic="configuration error: concern configuration",
            ) from None


async def _repository_configuration(
    ctx: _Context,
    prefs: Prefs,
    agents: dict[str, va.ConcernAgent],
    refused: list[dict[str, str]],
    say: Progress,
) -> dict[str, va.ConcernAgent]:
    """Stage 1, once the base is resolved: the repository's concern agents from the base
    commit, added beneath the user's (see :func:`add_repository_concerns`), each refusal
    said on stderr.

    Raises:
        AuditBlockedError: the base's file is malformed, or a product does not resolve.
    """
    from review_loop.agents.scope_rules import skills_of
    from review_loop.orchestrator.workflows import scope

    try:
        trusted = skills_of(await _thread(scope.load_registry, ctx.repo))
    except scope.ScopeResolutionError as error:
        raise AuditBlockedError(command="load the artifact registry", stderr=str(error)) from None
    merged = await _thread(
        add_repository_concerns, ctx.repo, ctx.base, agents, trusted, refused, ctx.catalog
    )
    _check_products({k: v for k, v in merged.items() if k not in agents}, prefs)
    for entry in refused:
        say(
            f"[review-loop] audit: refused {entry['entry']} of the repository's {entry['path']}: "
            f"{entry['reason']}"
        )
    return merged


async def _resolve(
    ctx: _Context,
    request: AuditRequest,
    live: Sequence[str],
    notes: list[str],
    refused: list[dict[str, str]],
) -> tuple[dict[str, Any], Path]:
    """Stage 2: resolve the scope (stale base refused) into the start-input file.

    The repository's artifact registry is read from the resolved base and may only add
    kinds (its refused ones are appended to ``refused``). Sets the context's base, head and
    scope identity; the deterministic-verification facts
    are retained only for the audited head (else ``unestablished``, with a note).

    Raises:
        AuditBlockedError: the scope does not resolve (exit 2), a stale base (exit 3), or a write
            into the scratch dir is refused.
    """
    from review_loop.orchestrator.workflows import scope

    audit_input: dict[str, Any] = {
        "selector": request.selector,
        "repository": str(ctx.repo),
        "advisory": ctx.advisory,
        "runDriver": ctx.driver,
        "deterministicVerification": "unestablished",
    }
    if ctx.advisory:
        audit_input["live_paths"] = live
    input_path = ctx.scratch / "audit-input.json"
    start_path = ctx.scratch / "start-input.json"
    _recording(
        None,
        input_path,
        lambda: atomic_write_bytes(
            input_path, json.dumps(audit_input, sort_keys=True).encode(), durable=False
        ),
    )
    resolve_command = (
        f"review-loop scope resolve {_q(ctx.committed)} --repo {_q(str(ctx.repo))} "
        f"--audit-input {_q(str(input_path))} --scratch-dir {_q(str(ctx.scratch))} "
        f"--output {_q(str(start_path))}"
    )
    try:
        resolved = await _thread(
            partial(scope.resolve, refused=refused), ctx.repo, ctx.committed, audit_input
        )
    except scope.StaleBaseError as error:
        raise AuditBlockedError(
            command=resolve_command, exitCode=3, stderr=scope.dump(error.diagnostic())
        ) from None
    except scope.ScopeResolutionError as error:
        raise AuditBlockedError(
            command=resolve_command, exitCode=2, stderr=f"{scope.ERROR_PREFIX}: {error}"
        ) from None
    ctx.base, ctx.head = resolved["base"], resolved["head"]
    resolved["deterministicVerification"] = _deterministic(request.deterministic, ctx.head, notes)
    _recording(
        None,
        start_path,
        lambda: atomic_write_bytes(start_path, (scope.dump(resolved) + "\n").encode("utf-8")),
    )
    ctx.identity = scope.scope_identity(resolved)
    return resolved, start_path


async def _start(ctx: _Context, start_path: Path) -> dict[str, Any]:
    """Stage 2: open the run with the start-input file; sets the context's run token.

    Raises:
        AuditBlockedError: ``not-started``, with the start command and the store's refusal.
    """
    start_command = (
        f"review-loop verification run start -C {_q(str(ctx.repo))} --verification-type audit "
        f"--scope-type changeset --scope {_q(ctx.identity)} --input {_q(str(start_path))}"
    )
    try:
        started = await _thread(
            runs.start,
            ctx.repo,
            "audit",
            "changeset",
            ctx.identity,
            str(start_path),
            emit=lambda e: None,
        )
    except ReviewLoopError as error:
        raise AuditBlockedError(command=start_command, exitCode=1, stderr=str(error)) from None
    ctx.token = started["runToken"]
    return started


@dataclass(frozen=True)
class _Sealed:
    """What the run's sealed input holds: the selection and the inventory it covers."""

    selection: list[Mapping[str, Any]]
    changed: list[str]
    live: list[str]
    inventory: list[str]


async def _read_sealed(ctx: _Context, run: runs.RunAddress) -> _Sealed:
    """Stage 3-4: the selection from the run's sealed input, never from the resolver again.

    Raises:
        AuditBlockedError: the sealed input cannot be read or is not JSON (the run stays open).
    """
    from review_loop.orchestrator.workflows import scope

    try:
        sealed = json.loads((await _thread(runs.read_input, run))["content"])
    except (ReviewLoopError, ValueError) as error:
        raise AuditBlockedError(
            runToken=ctx.token, command=ctx.command("input"), exitCode=1, stderr=str(error)
        ) from None
    changed = list(sealed.get("changed_paths") or [])
    live = list(sealed.get(scope.LIVE_PATHS_KEY) or [])
    return _Sealed(
        selection=sealed.get(scope.SELECTION_KEY) or [],
        changed=changed,
        live=live,
        inventory=changed + [p for p in live if p not in changed],
    )


async def _dispatch_concerns(
    ctx: _Context,
    request: AuditRequest,
    prefs: Prefs,
    say: Progress,
    open_dispatcher: Callable[..., Any] | None,
    concerns: Sequence[va.Concern],
    agents: Mapping[str, va.ConcernAgent],
    sealed: _Sealed,
    governance: Governance,
) -> dict[str, va.ConcernResult]:
    """Stage 5: every installed selected concern, read-only, in parallel; by skill.

    Raises:
        AuditBlockedError: a concern did not reach a final result (see ``_dispatch``).
    """
    installed = [(c, a) for c in concerns if (a := agents.get(c.skill) or agents.get("*"))]
    if open_dispatcher is None:
        from review_loop.orchestrator.dispatcher import open_dispatcher as default_opener

        open_dispatcher = default_opener
    say(f"[review-loop] audit: dispatching {len(installed)} of {len(concerns)} selected concerns")
    expected = await _thread(
        _expected_receipts, ctx.token, ctx.repo, ctx.head, sealed.inventory, sealed.live
    )
    async with open_dispatcher(repo=ctx.repo, prefs=prefs, progress=say) as dispatcher:
        results = await _dispatch(
            dispatcher,
            ctx,
            installed,
            sealed.changed,
            sealed.live,
            request.timeout_ms,
            governance,
            expected,
        )
    return {concern.skill: result for (concern, _), result in zip(installed, results, strict=True)}


async def _persist_plan(
    ctx: _Context,
    run: runs.RunAddress,
    concerns: Sequence[va.Concern],
    agents: Mapping[str, va.ConcernAgent],
    results: Mapping[str, va.ConcernResult],
    sealed: _Sealed,
    governance: Governance,
    say: Progress,
) -> _Plan:
    """Stage 6: plan every record, then persist them one at a time in the seed's order.

    Raises:
        AuditBlockedError: the journal refused a record (its payload file and key are named).
    """
    touched = await _thread(_touched_text, ctx.repo, ctx.base, ctx.head, sealed.live)
    plan = _plan(
        ctx, concerns, agents, results, sealed.inventory, sealed.selection, touched, _version()
    )
    # Missing governance is coverage evidence (seed 002), a unit per ungoverned path.
    for path in governance.ungoverned:
        plan.unit(va.governance_gap_unit(path, ctx.driver))
    await _persist(ctx, run, plan.records)
    say(f"[review-loop] audit: {len(plan.records)} records persisted")
    return plan


async def _finish(ctx: _Context, run: runs.RunAddress) -> tuple[dict[str, Any], Any]:
    """After stage 7: finish with the status the evidence derives, then render the run.

    Raises:
        AuditBlockedError: the store refused to finish or render (the run stays open).
    """
    state = await _thread(run.log.state)
    status = v.expected_audit_status(state.view, run.selector)
    try:
        finished = await _thread(runs.finish, run, status, emit=lambda e: None)
        projection = await _thread(runs.render, run)
    except ReviewLoopError as error:
        raise AuditBlockedError(
            runToken=ctx.token,
            command=f"{ctx.command('finish')} --terminal-status {status}",
            exitCode=1,
            stderr=str(error),
        ) from None
    return finished, projection
