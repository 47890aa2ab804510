"""Builders of valid verification payloads, shared by the journal and CLI tests."""

from __future__ import annotations

import copy
from typing import Any


def producer(skill: str = "audit-python-code", role: str = "leaf-skill") -> dict[str, str]:
    return {
        "producerKind": "skill",
        "agentName": "auditor",
        "agentOwningPluginName": "spec-tree",
        "skillName": skill,
        "skillOwningPluginName": "python",
        "invocationRole": role,
    }


def unit(
    path: str = "src/a.py",
    *,
    concern: str = "code",
    status: str = "audited",
    requirement: str = "required",
    kind: str | None = None,
    parent: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An audit scope unit whose ``unitId`` is its scope key."""
    payload: dict[str, Any] = {
        "unitId": f"implementation:python:{concern}:{path}",
        "auditClass": "implementation",
        "auditKind": kind or concern,
        "subject": path,
        "coverageRequirement": requirement,
        "coverageStatus": status,
        "priorContext": {
            "changedFilePartition": path,
            "languagePartition": "python",
            "concernPartition": concern,
        },
        "expectedProducer": producer(f"audit-python-{concern}"),
        "recordedByRunDriver": producer("audit-implementation", "run-driver"),
        "producerProvenance": {
            "agentOwningPluginVersion": "1.0",
            "skillOwningPluginVersion": "2.0",
        },
    }
    if parent is not None:
        payload["parentUnitId"] = parent
    payload.update(extra)
    return payload


def gap(path: str) -> dict[str, Any]:
    """The accounting record of a path no concern claimed."""
    payload = unit(
        path, concern="code", kind="coverage-gap", status="skipped", requirement="optional"
    )
    payload["unitId"] = f"implementation:unknown:coverage-gap:{path}"
    del payload["producerProvenance"]
    del payload["priorContext"]["languagePartition"]
    return payload


def finding(
    unit_payload: dict[str, Any], rule: str = "no-bare-except", **extra: Any
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "unitId": unit_payload["unitId"],
        "producerIdentity": copy.deepcopy(unit_payload["expectedProducer"]),
        "producerProvenance": {
            "agentOwningPluginVersion": "1.0",
            "skillOwningPluginVersion": "2.0",
        },
        "rule": rule,
        "severity": "blocking",
        "location": f"{unit_payload['subject']}:3",
        "message": "a bare except hides errors",
        "evidence": {"observed": "except:", "expected": "except ValueError:"},
    }
    payload.update(extra)
    return payload


def finding_key(finding_payload: dict[str, Any]) -> str:
    return f"{finding_payload['unitId']}:{finding_payload['rule']}"
