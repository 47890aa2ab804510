"""Scope rules: the artifact registry's selection per path, and the reconciliation verdict.

Pure: the registry arrives as parsed JSON, the run's units as dicts. The resolver
(``review_loop.orchestrator.workflows.scope``) reads files and git; these functions only decide.

The registry is data (``review_loop/agents/data/artifact-registry.json`` plus the user's and
the repository's extension files), never a table of extensions in code. The repository's
layer only adds (:func:`add_repository_kinds`)::

    {"version": 1,
     "kinds": [{"name": "python",
                "artifacts": [{"role": "implementation", "plugin": "python",
                               "audit": "audit-python-code", "contract": "concern",
                               "detection": {"extensions": ["py"], "filenames": [],
                                             "path_globs": []}},
                              {"role": "architecture", "plugin": "python",
                               "audit": "audit-python-architecture", "contract": "concern"}]}]}

An artifact with ``detection`` matches a path whose suffix is in ``extensions`` or whose name
is in ``filenames``, *and* that matches every ``path_globs`` pattern in full. Within a kind
the most specific match wins (most globs; the first declared on a tie) and the kind's
detection-less artifacts follow it. Kinds are taken in declaration order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from review_loop.agents.errors import FormatError

CONTRACTS: Final = ("concern", "artifact-type")
ROLE_CONCERNS: Final[Mapping[str, str]] = {
    "implementation": "code",
    "tests": "tests",
    "architecture": "architecture",
}
FINAL_STATUSES: Final = frozenset({"audited", "not-applicable", "missing-skill", "unsupported"})
VERDICT_FIELDS: Final = ("unaccounted", "unexpected", "drifted", "nonfinal")


class RegistryError(FormatError):
    """A registry document that does not have the registry's shape; names the field."""


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise RegistryError(f"{where} must be a list of non-empty strings")
    return list(value)


def _text(record: Mapping[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value:
        raise RegistryError(f"{where}.{name} must be a non-empty string")
    return value


def check_registry(document: Any, source: str) -> list[dict[str, Any]]:
    """Validate one registry document; returns its kinds, normalized.

    Raises:
        RegistryError: the document is not a registry (the message names ``source`` and the
            field).
    """
    if not isinstance(document, dict) or not isinstance(document.get("kinds"), list):
        raise RegistryError(f"{source}: a registry is an object with a 'kinds' list")
    kinds = []
    for index, kind in enumerate(document["kinds"]):
        where = f"{source}: kinds[{index}]"
        if not isinstance(kind, dict):
            raise RegistryError(f"{where} must be an object")
        name = _text(kind, "name", where)
        artifacts = kind.get("artifacts")
        if not isinstance(artifacts, list):
            raise RegistryError(f"{where}.artifacts must be a list")
        checked = []
        for position, artifact in enumerate(artifacts):
            place = f"{where}.artifacts[{position}]"
            if not isinstance(artifact, dict):
                raise RegistryError(f"{place} must be an object")
            entry: dict[str, Any] = {
                "role": _text(artifact, "role", place),
                "plugin": _text(artifact, "plugin", place),
                "audit": _text(artifact, "audit", place),
                "contract": artifact.get("contract", "concern"),
            }
            if entry["contract"] not in CONTRACTS:
                raise RegistryError(f"{place}.contract must be one of {', '.join(CONTRACTS)}")
            detection = artifact.get("detection")
            if detection is not None:
                if not isinstance(detection, dict):
                    raise RegistryError(f"{place}.detection must be an object")
                entry["detection"] = {
                    "extensions": [
                        ext.lstrip(".")
                        for ext in _strings(detection.get("extensions"), f"{place}.extensions")
                    ],
                    "filenames": _strings(detection.get("filenames"), f"{place}.filenames"),
                    "path_globs": _strings(detection.get("path_globs"), f"{place}.path_globs"),
                }
                if not entry["detection"]["extensions"] and not entry["detection"]["filenames"]:
                    raise RegistryError(f"{place}.detection needs extensions or filenames")
            checked.append(entry)
        kinds.append({"name": name, "replace": kind.get("replace") is True, "artifacts": checked})
    return kinds


def merge_registries(layers: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Later layers extend earlier ones: a kind of a known name appends its artifacts (or
    replaces them with ``"replace": true``); a new name is appended as a new kind."""
    merged: list[dict[str, Any]] = []
    index: dict[str, dict[str, Any]] = {}
    for kinds in layers:
        for kind in kinds:
            known = index.get(kind["name"])
            if known is None:
                entry = {"name": kind["name"], "artifacts": list(kind["artifacts"])}
                merged.append(entry)
                index[kind["name"]] = entry
            elif kind["replace"]:
                known["artifacts"] = list(kind["artifacts"])
            else:
                known["artifacts"].extend(kind["artifacts"])
    return merged


def skills_of(kinds: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every ``<plugin>:<audit>`` the kinds' artifacts name."""
    return {f"{a['plugin']}:{a['audit']}" for kind in kinds for a in kind["artifacts"]}


def add_repository_kinds(
    trusted: list[dict[str, Any]], kinds: Sequence[Mapping[str, Any]], source: str
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The reviewed repository's registry layer over the trusted (built-in and user) one:
    it may only add. Returns the merged kinds and one refusal per kind it may not add.

    A repository kind is refused whole when its name is a trusted kind's — merged in, it
    could replace that kind's artifacts or outrank its most specific detection, and so
    unselect a path — or when one of its artifacts names a trusted skill: a second concern
    of the same skill would shadow the trusted one's result. ``replace`` means nothing in
    this layer. Kinds of new names, naming new skills, are appended as they are.
    """
    names = {kind["name"] for kind in trusted}
    known = skills_of(trusted)
    merged = [dict(kind, artifacts=list(kind["artifacts"])) for kind in trusted]
    added: dict[str, dict[str, Any]] = {}
    refused: list[dict[str, str]] = []
    for kind in kinds:
        name = kind["name"]
        clash = sorted(skills_of([kind]) & known)
        if name in names or clash:
            reason = (
                f"kind {name!r} is built in or the user's; the repository may add kinds of "
                "new names only"
                if name in names
                else f"it names the built-in or user skill(s) {', '.join(clash)}"
            )
            refused.append({"path": source, "entry": f"kinds/{name}", "reason": reason})
            continue
        entry = added.get(name)
        if entry is None:
            entry = added[name] = {"name": name, "artifacts": []}
            merged.append(entry)
        entry["artifacts"].extend(kind["artifacts"])
    return merged, refused


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A full-match regex for a path glob: ``**`` spans segments, ``*``/``?`` stay in one."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            close = pattern.find("]", i + 2)
            if close < 0:
                out.append(re.escape(char))
                i += 1
                continue
            body = pattern[i + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = close + 1
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _detection_matches(path: str, detection: Mapping[str, Any]) -> bool:
    name = path.rsplit("/", 1)[-1]
    suffix = name.rsplit(".", 1)[-1] if "." in name.lstrip(".") else ""
    if suffix not in detection["extensions"] and name not in detection["filenames"]:
        return False
    return all(glob_regex(glob).match(path) for glob in detection["path_globs"])


def select_artifacts(path: str, kinds: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The registered artifacts ``path`` selects: per kind, the most specific detection match,
    then that kind's detection-less artifacts. A path matching no detection selects nothing."""
    selection: list[dict[str, str]] = []
    for kind in kinds:
        artifacts = kind["artifacts"]
        matched = [
            artifact
            for artifact in artifacts
            if "detection" in artifact and _detection_matches(path, artifact["detection"])
        ]
        if not matched:
            continue
        best = max(len(artifact["detection"]["path_globs"]) for artifact in matched)
        winner = next(a for a in matched if len(a["detection"]["path_globs"]) == best)
        for artifact in [winner, *(a for a in artifacts if "detection" not in a)]:
            selection.append(
                {
                    "kind": kind["name"],
                    "role": artifact["role"],
                    "plugin": artifact["plugin"],
                    "audit": artifact["audit"],
                    "contract": artifact["contract"],
                }
            )
    return selection


def reconcile(
    expected_paths: Sequence[str],
    resolved_paths: Sequence[str],
    scope_units: Sequence[Mapping[str, Any]],
    live_paths: Sequence[str] = (),
) -> dict[str, Any]:
    """The verdict comparing recorded coverage with the run's sealed inventory.

    ``live_paths`` (an advisory run's live list) are expected subjects beside the committed
    inventory, but drift is judged on the committed inventory alone. A ``missing-skill``
    unit names an absent skill, not a path, so it is never a recorded subject.
    """
    expected = list(expected_paths)
    expected += [path for path in live_paths if path not in expected]
    recorded = {
        str(unit.get("subject"))
        for unit in scope_units
        if unit.get("coverageStatus") != "missing-skill"
    }
    expected_set = set(expected)
    verdict: dict[str, Any] = {
        "expected": len(expected),
        "recorded": len(recorded),
        "unaccounted": [path for path in expected if path not in recorded],
        "unexpected": sorted(subject for subject in recorded if subject not in expected_set),
        "drifted": sorted(set(expected_paths) ^ set(resolved_paths)),
        "nonfinal": sorted(
            str(unit.get("unitId"))
            for unit in scope_units
            if unit.get("coverageRequirement") == "required"
            and unit.get("coverageStatus") not in FINAL_STATUSES
        ),
    }
    verdict["reconciled"] = not any(verdict[name] for name in VERDICT_FIELDS)
    return verdict
