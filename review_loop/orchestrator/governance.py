"""The governing context of an audit (seed 002, stage 3 "Load"), read from the head commit.

- **Overlays**: the repository's declared ``spx/local/`` overlays for a concern's kind:
  ``auditing.md``, ``auditing-<kind>*.md``, ``<kind>.md`` and ``<kind>-*.md`` (the
  spec-tree skills' convention: ``python.md``, ``python-tests.md``, ...).
- **Governing nodes**: the decisions and specs under ``spx/`` (outside ``spx/local/``) whose
  text names a changed path: their evidence links to it.
- **Ungoverned paths**: changed paths no node names, reported as evidence of missing
  governance (never silently dropped).

Everything is read with ``git`` from the audited head commit, never from the working tree,
and only as text handed to the read-only concern agents: nothing in it runs. Each file is
capped (:data:`MAX_FILE_CHARS`) and so is the number of nodes (:data:`MAX_NODES`).
"""

from __future__ import annotations

import fnmatch
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
    links: dict[str, list[str]] = field(default_factory=dict)  # node -> changed paths named
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
            named = ", ".join(p for p in self.links[node] if p in wanted)
            parts.append(f"### governing node {node} (names {named})\n{self.nodes[node]}")
        return "\n\n".join(parts)

    def report(self) -> dict[str, object]:
        """The result document's ``governance`` field."""
        return {
            "overlays": sorted(self.overlays),
            "nodes": {node: sorted(named) for node, named in sorted(self.links.items())},
            "ungoverned": self.ungoverned,
        }


def _capped(text: str) -> str:
    if len(text) <= MAX_FILE_CHARS:
        return text
    return text[:MAX_FILE_CHARS] + f"\n[... cut at {MAX_FILE_CHARS} characters]"


def discover(repo: Path, head: str, changed: Sequence[str]) -> Governance:
    """Read the overlays and the governing nodes of ``changed`` at ``head``."""
    from review_loop.orchestrator.git import git

    listed = git(repo, "ls-tree", "-r", "-z", "--name-only", head, "--", "spx", check=False)
    files = [p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p]

    def show(path: str) -> str | None:
        out = git(repo, "show", f"{head}:{path}", check=False)
        return _capped(out.stdout.decode("utf-8", "replace")) if out.returncode == 0 else None

    overlays = {}
    for path in files:
        if path.startswith(OVERLAY_DIR) and path.endswith(".md"):
            text = show(path)
            if text is not None:
                overlays[path] = text
    nodes: dict[str, str] = {}
    links: dict[str, list[str]] = {}
    targets = [p for p in changed if not p.startswith(SPX_DIR)]
    patterns = [arg for p in targets for arg in ("-e", p)]
    found = git(repo, "grep", "-l", "-z", "-F", *patterns, head, "--", "spx", check=False)
    hits = [h.removeprefix(f"{head}:") for h in found.stdout.decode("utf-8", "replace").split("\0")]
    candidates = [p for p in hits if p.endswith(".md") and not p.startswith(OVERLAY_DIR)]
    for path in sorted(candidates)[:MAX_NODES] if targets else []:
        text = show(path)
        named = [p for p in targets if text is not None and p in text]
        if text is not None and named:
            nodes[path] = text
            links[path] = named
    governed = {p for named in links.values() for p in named}
    ungoverned = [p for p in targets if p not in governed]
    return Governance(overlays, nodes, links, ungoverned)
