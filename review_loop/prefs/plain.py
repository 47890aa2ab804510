"""Prefs as plain data: the fast path for commands that only read them (``prefs show``).

:func:`plain_prefs` returns what ``Prefs.model_validate(data).model_dump(mode="json")``
would, for a mapping whose every value is plainly valid, without importing pydantic. On
anything unusual (an unknown key, a wrong type, a value out of range, an unknown product)
it returns ``None`` and the caller validates with the pydantic model, which alone words
the errors. So this path can only be stricter than the model, never looser: the model
stays the contract, and ``tests/prefs/test_plain_prefs.py`` checks that both agree on
every input that passes here (``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from review_loop.prefs import defaults as d

if TYPE_CHECKING:
    from review_loop.prefs.model import ProductSet

_Check = Callable[[Any], Any]


def defaults() -> dict[str, Any]:
    """``Prefs().model_dump(mode="json")``: every key, in the model's field order."""
    return {
        "order": list(d.DEFAULT_ORDER),
        "skipHost": False,
        "peerCommands": {},
        "timeoutMs": d.DEFAULT_TIMEOUT_MS,
        "graceMs": d.DEFAULT_GRACE_MS,
        "livenessMs": d.DEFAULT_LIVENESS_MS,
        "envPassthrough": [],
        "skillDirs": [],
        "allowUnprotected": False,
    }


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list | tuple) or any(type(item) is not str for item in value):
        return None
    return list(value)


def _integer(low: int, high: int) -> _Check:
    def check(value: Any) -> int | None:
        return value if type(value) is int and low <= value <= high else None

    return check


def _order(value: Any) -> list[str] | None:
    names = _strings(value)
    return names if names and len(set(names)) == len(names) else None


def _skip_host(value: Any) -> bool | None:
    return value if type(value) is bool else None


def _peer_commands(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    found: dict[str, Any] = {}
    for name, entry in value.items():
        if type(name) is not str or not d.ALIAS_RE.match(name) or not isinstance(entry, dict):
            return None
        command = _strings(entry.get("command"))
        if set(entry) != {"product", "command"} or type(entry["product"]) is not str:
            return None
        if not command or not all(command):
            return None
        found[name] = {"product": entry["product"], "command": command}
    return found


def _env_passthrough(value: Any) -> list[str] | None:
    names = _strings(value)
    if names is None or len(set(names)) != len(names):
        return None
    return names if all(d.ENV_NAME_RE.fullmatch(name) for name in names) else None


def _skill_dirs(value: Any) -> list[str] | None:
    entries = _strings(value)
    return entries if entries is not None and all(map(d.is_skill_dir, entries)) else None


_CHECKS: dict[str, _Check] = {
    "order": _order,
    "skipHost": _skip_host,
    "peerCommands": _peer_commands,
    "timeoutMs": _integer(d.MIN_TIMEOUT_MS, d.MAX_TIMEOUT_MS),
    "graceMs": _integer(0, d.MAX_TIMEOUT_MS),
    "livenessMs": _integer(1, d.MAX_TIMEOUT_MS),
    "envPassthrough": _env_passthrough,
    "skillDirs": _skill_dirs,
    "allowUnprotected": _skip_host,  # the same check: a plain boolean
}


def plain_prefs(data: Mapping[str, Any], known: ProductSet) -> dict[str, Any] | None:
    """The prefs' JSON form when ``data`` is plainly valid and names known products, else None."""
    document = defaults()
    for key, value in data.items():
        check = _CHECKS.get(key)
        checked = None if check is None else check(value)
        if checked is None:
            return None
        document[key] = checked
    aliases = document["peerCommands"]
    if not all(product in known for product in document["order"]):
        return None
    if any(entry["product"] not in known or name in known for name, entry in aliases.items()):
        return None
    return document
