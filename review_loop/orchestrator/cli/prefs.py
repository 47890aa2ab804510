"""``review-loop prefs``: show, set and reset the reviewer preferences."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from review_loop.prefs.document import KEYS

USAGE = [
    "review-loop prefs [show]",
    "review-loop prefs set order claude,codex,grok",
    "review-loop prefs set skipHost true|false",
    "review-loop prefs set timeoutMs|graceMs|livenessMs|stallMs N",
    "review-loop prefs set envPassthrough NAME,NAME (empty: none)",
    "review-loop prefs set skillDirs /DIR,~/DIR (empty: none)",
    "review-loop prefs set allowUnprotected true|false",
    "review-loop prefs alias NAME PRODUCT COMMAND [ARG ...]",
    "review-loop prefs unalias NAME",
    "review-loop prefs reset",
]
OUTPUT = "json"
SETTABLE = tuple(key for key in KEYS if key != "peerCommands")  # aliases: their own verbs


def configure(parser: argparse.ArgumentParser) -> None:
    """``prefs ACTION [ARGS...]``."""
    parser.add_argument("action", nargs="?", default="show")
    parser.add_argument("values", nargs=argparse.REMAINDER)


def _coerce(key: str, value: str) -> Any:
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import parse_bool

    if key in ("order", "envPassthrough", "skillDirs"):
        return [part.strip() for part in value.split(",") if part.strip()]
    if key in ("skipHost", "allowUnprotected"):
        return parse_bool(value, key)
    try:
        return int(value)
    except ValueError:
        raise InputError(key, f"{value!r} is not an integer", "milliseconds, e.g. 600000") from None


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Apply the action; every write is validated first and written atomically."""
    from review_loop.adapters import known_products
    from review_loop.agents.errors import InputError
    from review_loop.prefs import prefs_path

    path = prefs_path()
    known = known_products()
    action, values = args.action, list(args.values)
    if action == "show":  # read-only: the JSON form, no Prefs built
        from review_loop.prefs.document import defaults
        from review_loop.prefs.store import load_prefs_document

        if values:
            raise InputError("prefs show", f"unexpected arguments {values}")
        prefs = load_prefs_document(known)
        return {
            "ok": True,
            "path": str(path),
            "prefs": prefs,
            "defaults": defaults(),
            "changed": False,
        }
    from review_loop.prefs import Prefs, load_prefs, save_prefs
    from review_loop.prefs.store import parse_prefs

    if action == "reset":
        # Never reads the file: reset is how a prefs.toml that cannot be read is repaired.
        current = stored = Prefs()
    else:
        current = load_prefs(known)
        stored = load_prefs(known, path=path, env={})  # without env overrides, for writing
    if action == "reset":
        changed = Prefs()
    elif action == "set":
        if len(values) != 2 or values[0] not in SETTABLE:
            raise InputError(
                "prefs set", f"got {values}", f"KEY VALUE with KEY one of {', '.join(SETTABLE)}"
            )
        data = stored.document()
        data[values[0]] = _coerce(values[0], values[1])
        changed = parse_prefs(data, source="prefs set", known=known)
    elif action == "alias":
        if len(values) < 3:
            raise InputError("prefs alias", f"got {values}", "NAME PRODUCT COMMAND [ARG ...]")
        name, product, command = values[0], values[1], values[2:]
        data = stored.document()
        data["peerCommands"][name] = {"product": product, "command": command}
        changed = parse_prefs(data, source="prefs alias", known=known)
    elif action == "unalias":
        if len(values) != 1 or values[0] not in stored.peerCommands:
            raise InputError(
                "prefs unalias",
                f"no alias {values}",
                ", ".join(stored.peerCommands) or "none defined",
            )
        data = stored.document()
        del data["peerCommands"][values[0]]
        changed = parse_prefs(data, source="prefs unalias", known=known)
    else:
        raise InputError("prefs", f"unknown action {action!r}", "show, set, alias, unalias, reset")
    if changed is not None:
        save_prefs(changed, path=path)
        current = load_prefs(known)
    return {
        "ok": True,
        "path": str(path),
        "prefs": current.document(),
        "defaults": Prefs().document(),
        "changed": changed is not None,
    }
