"""The governing context of an audit (seed 002, stage 3 "Load"), read from the head commit.

- **Overlays**: the repository's declared ``spx/local/`` overlays for a concern's kind:
  ``auditing.md``, ``auditing-<kind>*.md``, ``<kind>.md`` and ``<kind>-*.md`` (the
  spec-tree skills' convention: ``python.md``, ``python-tests.md``, ...).
- **Governing nodes**: the decisions and specs under ``spx/`` (outside ``spx/local/``) that
  govern a changed path, through either link the seed names:

  - an **evidence link**: the node's text names the path;
  - **declared audit ownership**: the node's front matter lists it under ``audits:``
    (a path, a directory ending in ``/``, or an ``fnmatch`` pattern where ``*`` also
    crosses ``/``), as a YAML list or one inline value::

        ---
        audits:
          - src/guard.py
          - src/checks/
        ---

- **Ungoverned paths**: changed paths no node governs, reported and recorded as coverage
  evidence (an optional ``coverage-gap`` unit each, see ``workflows/audit.py``).

Everything is read with ``git`` from the audited head commit — the overlays from the base
when the audit names it (:func:`discover`'s ``overlays_at``) — never from the working tree,
and only as text handed to the read-only concern agents: nothing in it runs. Each file is
capped (:data:`MAX_FILE_CHARS`) and so is the number of nodes (:data:`MAX_NODES`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SPX_DIR = "spx/"
OVERLAY_DIR = "spx/local/"
MAX_FILE_CHARS = 20_000
MAX_NODES = 50


@dataclass(frozen=True)
class Governance:
    """What stage 3 found at the head commit."""

    overlays: dict[str, str] = field(default_factory=dict)  # path -> text
    nodes: dict[str, str] = field(default_factory=dict)  # path -> text
    links: dict[str, list[str]] = field(default_factory=dict)  # node -> changed paths governed
    owned: dict[str, list[str]] = field(default_factory=dict)  # node -> paths it declares
    ungoverned: list[str] = field(default_factory=list)

    def overlays_for(self, kind: str) -> list[str]:
        """The overlay paths that apply to ``kind`` (the general auditing one first)."""
        names = ("auditing.md", f"auditing-{kind}*.md", f"{kind}.md", f"{kind}-*.md")
        out: list[str] = []
        for pattern in names:
            for path in sorted(self.overlays):
                name = path.removeprefix(OVERLAY_DIR)
                if "/" not in name and fnmatch.fnmatch(name, pattern) and path not in out:
                    out.append(path)
        return out

    def context(self, kind: str, paths: Iterable[str]) -> str:
        """The governing-context section of one concern's prompt."""
        wanted = set(paths)
        overlays = self.overlays_for(kind)
        nodes = [n for n, named in self.links.items() if wanted & set(named)]
        if not overlays and not nodes:
            return (
                "--- governing context ---\n"
                "No governing decision, spec or spx/local/ overlay applies to these paths "
                "at the head commit."
            )
        parts = ["--- governing context (from the head commit; read-only text) ---"]
        for path in overlays:
            parts.append(f"### overlay {path}\n{self.overlays[path]}")
        for node in nodes:
            owned = [p for p in self.owned.get(node, []) if p in wanted]
            named = [p for p in self.links[node] if p in wanted and p not in owned]
            how = [f"names {', '.join(named)}"] if named else []
            how += [f"declares audit ownership of {', '.join(owned)}"] if owned else []
            parts.append(f"### governing node {node} ({'; '.join(how)})\n{self.nodes[node]}")
        return "\n\n".join(parts)

    def report(self) -> dict[str, object]:
        """The result document's ``governance`` field."""
        return {
            "overlays": sorted(self.overlays),
            "nodes": {node: sorted(named) for node, named in sorted(self.links.items())},
            "ownership": {node: sorted(owned) for node, owned in sorted(self.owned.items())},
            "ungoverned": self.ungoverned,
        }


def _capped(text: str) -> str:
    if len(text) <= MAX_FILE_CHARS:
        return text
    return text[:MAX_FILE_CHARS] + f"\n[... cut at {MAX_FILE_CHARS} characters]"


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*(?:\n|\Z)", re.S)
_AUDITS_KEY = re.compile(r"^audits[ \t]*:[ \t]*(.*?)[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*?)[ \t]*$")


def declared_ownership(text: str) -> list[str]:
    """The ``audits:`` patterns of a node's front matter (none when it declares none)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return []
    lines = match[1].splitlines()
    for index, line in enumerate(lines):
        key = _AUDITS_KEY.match(line)
        if key is None:
            continue
        inline = key[1]
        if inline.startswith("[") and inline.endswith("]"):
            return [_unquote(v) for v in inline[1:-1].split(",") if v.strip()]
        if inline:
            return [_unquote(inline)]
        items = []
        for item in lines[index + 1 :]:
            found = _LIST_ITEM.match(item)
            if found is None:
                break
            items.append(_unquote(found[1]))
        return [i for i in items if i]
    return []


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def owns(pattern: str, path: str) -> bool:
    """Whether a declared ``audits:`` pattern covers ``path``."""
    if pattern.endswith("/"):
        return path.startswith(pattern)
    return path == pattern or fnmatch.fnmatchcase(path, pattern)


def discover(
    repo: Path, head: str, changed: Sequence[str], *, overlays_at: str | None = None
) -> Governance:
    """Read the governing nodes of ``changed`` at ``head``, and the overlays at
    ``overlays_at`` (default ``head``).

    The audit passes its base as ``overlays_at``: an overlay is the repository's auditing
    standard, configuration like ``.review-loop/``, so the change under review must not
    bring the standard it is judged by (``orchestrator/workflows/repo_config.py``). Decisions and
    specs come from the head: a change brings its own.
    """
    from review_loop.orchestrator.handoff.git import git

    def listed(rev: str) -> list[str]:
        out = git(repo, "ls-tree", "-r", "-z", "--name-only", rev, "--", "spx", check=False)
        return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]

    def show(path: str, rev: str = head) -> str | None:
        out = git(repo, "show", f"{rev}:{path}", check=False)
        return _capped(out.stdout.decode("utf-8", "replace")) if out.returncode == 0 else None

    standard = overlays_at or head
    overlays = {}
    for path in listed(standard):
        if path.startswith(OVERLAY_DIR) and path.endswith(".md"):
            text = show(path, standard)
            if text is not None:
                overlays[path] = text
    nodes: dict[str, str] = {}
    links: dict[str, list[str]] = {}
    targets = [p for p in changed if not p.startswith(SPX_DIR)]
    patterns = [arg for p in targets for arg in ("-e", p)]
    found = git(repo, "grep", "-l", "-z", "-F", *patterns, head, "--", "spx", check=False)
    hits = [h.removeprefix(f"{head}:") for h in found.stdout.decode("utf-8", "replace").split("\0")]
    # nodes declaring audit ownership: an ``audits:`` key (in their front matter, checked below)
    declaring = git(
        repo, "grep", "-l", "-z", "-E", "^audits[[:space:]]*:", head, "--", "spx", check=False
    )
    declared = [
        h.removeprefix(f"{head}:") for h in declaring.stdout.decode("utf-8", "replace").split("\0")
    ]
    candidates = {
        p for p in (*hits, *declared) if p.endswith(".md") and not p.startswith(OVERLAY_DIR)
    }
    owned: dict[str, list[str]] = {}
    for path in sorted(candidates)[:MAX_NODES] if targets else []:
        text = show(path)
        if text is None:
            continue
        patterns = declared_ownership(text)
        mine = [p for p in targets if any(owns(pattern, p) for pattern in patterns)]
        named = [p for p in targets if p in text or p in mine]
        if named:
            nodes[path] = text
            links[path] = named
        if mine:
            owned[path] = mine
    governed = {p for named in links.values() for p in named}
    ungoverned = [p for p in targets if p not in governed]
    return Governance(overlays, nodes, links, owned, ungoverned)


GAP_UNIT_PREFIX = "implementation:governance:coverage-gap:"


def host_document(
    governance: Governance, *, base: str, head: str, inventory: Sequence[str], kinds: Sequence[str]
) -> dict[str, object]:
    """What ``review-loop scope governance`` prints: stage 3's governing context for a host
    driving the journal by hand (seed 002, "discover governing nodes ... through the
    product-tree evidence links and declared audit ownership").

    Fields: ``base``/``head`` (full ids); ``paths`` (the changed paths, and the live ones of
    an advisory selector); ``overlays`` (``[{path, text}]``, from the base); ``overlaysByKind``
    (each selected kind's overlay paths, the general one first); ``nodes``
    (``[{path, names, owns, text}]``: the paths the node's text names, the paths its
    ``audits:`` front matter owns, from the head); ``ungoverned`` (paths no node governs);
    ``coverageGaps`` (the optional ``coverage-gap`` unit id each ungoverned path gets, the
    seed's "preserve missing governance as coverage evidence").
    """
    nodes = []
    for path in sorted(governance.links):
        owned = sorted(governance.owned.get(path, []))
        named = sorted(p for p in governance.links[path] if p not in owned)
        nodes.append({"path": path, "names": named, "owns": owned, "text": governance.nodes[path]})
    return {
        "ok": True,
        "base": base,
        "head": head,
        "paths": list(inventory),
        "overlays": [{"path": p, "text": t} for p, t in sorted(governance.overlays.items())],
        "overlaysByKind": {kind: governance.overlays_for(kind) for kind in kinds},
        "nodes": nodes,
        "ungoverned": governance.ungoverned,
        "coverageGaps": [
            {"unitId": f"{GAP_UNIT_PREFIX}{p}", "subject": p} for p in governance.ungoverned
        ],
    }
