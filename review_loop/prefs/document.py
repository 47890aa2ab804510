"""The one reader of prefs: a mapping (the TOML file's table) checked into the JSON form.

:func:`checked` takes what the user wrote and returns the prefs' JSON form (every key, in
:class:`~review_loop.prefs.model.Prefs`'s field order, lists for tuples), or raises a
:class:`~review_loop.agents.errors.PrefsError` that names the key, what was wrong with it
and what is accepted. ``prefs show`` prints that form as it is; every other reader builds a
:class:`~review_loop.prefs.model.Prefs` from it (``Prefs.from_document``).

Plain Python, not a pydantic model: the prefs are read by the commands a host runs many
times per task (``prefs show``, ``consult``), and importing pydantic alone costs about as
much as the rest of such a command. The rules are a table, one check per key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from review_loop.agents.errors import PrefsError
from review_loop.prefs import defaults as d

__all__ = ["KEYS", "ProductSet", "checked", "defaults"]

KEYS = (
    "order",
    "skipHost",
    "peerCommands",
    "timeoutMs",
    "graceMs",
    "livenessMs",
    "stallMs",
    "envPassthrough",
    "skillDirs",
    "allowUnprotected",
)
"""Every key of the prefs file, in the JSON form's order."""


class ProductSet(Protocol):
    """The registered product names: cheap membership, full iteration for messages."""

    def __contains__(self, name: object, /) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...


class _Refused(Exception):
    """One key's value refused: where below the key (``""``, ``".0"``), why, what is accepted."""

    def __init__(self, problem: str, accepted: str | None = None, where: str = "") -> None:
        super().__init__(problem)
        self.problem, self.accepted, self.where = problem, accepted, where


def defaults() -> dict[str, Any]:
    """The JSON form of the defaults (``Prefs().document()``): every key, in order."""
    return {
        "order": list(d.DEFAULT_ORDER),
        "skipHost": False,
        "peerCommands": {},
        "timeoutMs": d.DEFAULT_TIMEOUT_MS,
        "graceMs": d.DEFAULT_GRACE_MS,
        "livenessMs": d.DEFAULT_LIVENESS_MS,
        "stallMs": d.DEFAULT_STALL_MS,
        "envPassthrough": [],
        "skillDirs": [],
        "allowUnprotected": False,
    }


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        raise _Refused(f"{value!r} is not a list", "a list of strings")
    for index, item in enumerate(value):
        if type(item) is not str:
            raise _Refused(f"{item!r} is not a string", "a string", f".{index}")
    return list(value)


# What a hand-edited file may say for a boolean or an integer besides TOML's own types: the
# spellings earlier releases accepted (``skipHost = "yes"``, ``timeoutMs = "600000"``).
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _boolean(value: Any) -> bool:
    if type(value) is bool:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    word = value.strip().lower() if isinstance(value, str) else None
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise _Refused(f"{value!r} is not a boolean", "true or false")


def _whole_number(value: Any) -> int | None:
    """``value`` as an integer when it is one: an int, a float without fraction, digits."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _integer(low: int, high: int, accepted: str | None = None) -> Callable[[Any], int]:
    words = accepted or f"an integer from {low} to {high}"

    def check(value: Any) -> int:
        number = _whole_number(value)
        if number is None:
            raise _Refused(f"{value!r} is not an integer", words)
        if not low <= number <= high:
            raise _Refused(f"{value!r} is out of range", words)
        return number

    return check


def _stall(value: Any) -> int:
    """0 (off) or a stall time from 1 s to 1 day, in milliseconds."""
    words = (
        f"0 (off) or an integer of milliseconds from {d.MIN_STALL_MS} (1 s) to "
        f"{d.MAX_TIMEOUT_MS} (1 day)"
    )
    number = _integer(0, d.MAX_TIMEOUT_MS, words)(value)
    if 0 < number < d.MIN_STALL_MS:
        raise _Refused(f"{value!r} is out of range", words)
    return number


def _order(value: Any) -> list[str]:
    names = _strings(value)
    if not names:
        raise _Refused("order must name at least one product", "a non-empty list of products")
    if len(set(names)) != len(names):
        raise _Refused("order must not repeat a product", "each product at most once")
    return names


def _peer_commands(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _Refused(f"{value!r} is not a table", "a table of alias = {product, command}")
    found: dict[str, Any] = {}
    for name, entry in value.items():
        if type(name) is not str or not d.ALIAS_RE.match(name):
            raise _Refused(
                f"alias {name!r} must match {d.ALIAS_RE.pattern}", "a name like codex002"
            )
        found[name] = _peer_command(name, entry)
    return found


def _peer_command(name: str, entry: Any) -> dict[str, Any]:
    accepted = "product = a product name, command = a non-empty list of non-empty words"
    if not isinstance(entry, Mapping):
        raise _Refused(f"{entry!r} is not a table", accepted, f".{name}")
    for key in entry:
        if key not in ("product", "command"):
            raise _Refused(f"unknown key {key!r}", "product, command", f".{name}.{key}")
    for key in ("product", "command"):
        if key not in entry:
            raise _Refused("missing", accepted, f".{name}.{key}")
    if type(entry["product"]) is not str:
        raise _Refused(
            f"{entry['product']!r} is not a string", "a product name", f".{name}.product"
        )
    try:
        command = _strings(entry["command"])
    except _Refused as refused:
        raise _Refused(
            refused.problem, refused.accepted, f".{name}.command{refused.where}"
        ) from None
    if not command or not all(command):
        raise _Refused("every word of command must be non-empty", accepted, f".{name}.command")
    return {"product": entry["product"], "command": command}


def _env_passthrough(value: Any) -> list[str]:
    names = _strings(value)
    for name in names:
        if not d.ENV_NAME_RE.fullmatch(name):
            raise _Refused(
                f"{name!r} is not an environment variable name",
                f"exact names matching {d.ENV_NAME_RE.pattern}; no patterns",
            )
    if len(set(names)) != len(names):
        raise _Refused("envPassthrough must not repeat a name", "each name at most once")
    return names


def _skill_dirs(value: Any) -> list[str]:
    entries = _strings(value)
    for entry in entries:
        if not d.is_skill_dir(entry):
            raise _Refused(f"{entry!r} is not an absolute directory", "/path or ~/path")
    return entries


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "order": _order,
    "skipHost": _boolean,
    "peerCommands": _peer_commands,
    "timeoutMs": _integer(d.MIN_TIMEOUT_MS, d.MAX_TIMEOUT_MS, d.TIMEOUT_RANGE),
    "graceMs": _integer(0, d.MAX_TIMEOUT_MS),
    "livenessMs": _integer(1, d.MAX_TIMEOUT_MS),
    "stallMs": _stall,
    "envPassthrough": _env_passthrough,
    "skillDirs": _skill_dirs,
    "allowUnprotected": _boolean,
}


def checked(data: Mapping[str, Any], *, source: str, known: ProductSet | None) -> dict[str, Any]:
    """The JSON form of ``data``, every key checked; ``known`` also checks the products.

    Raises:
        PrefsError: an unknown key, a value of the wrong type or out of range, a product no
            adapter answers to, an alias that shadows a product. The field reads
            ``<source>: <key>`` (``order[1]``, ``peerCommands.codex002.product``).
    """
    document = defaults()
    for key, value in data.items():
        check = _CHECKS.get(key)
        if check is None:
            raise PrefsError(f"{source}: {key}", "unknown key", ", ".join(KEYS))
        try:
            document[key] = check(value)
        except _Refused as refused:
            raise PrefsError(
                f"{source}: {key}{refused.where}", refused.problem, refused.accepted
            ) from None
    if known is not None:
        _check_products(document, known, source)
    return document


def _check_products(document: Mapping[str, Any], known: ProductSet, source: str) -> None:
    def accepted() -> str:
        return ", ".join(sorted(known))

    for index, product in enumerate(document["order"]):
        if product not in known:
            raise PrefsError(
                f"{source}: order[{index}]", f"unknown product {product!r}", accepted()
            )
    for alias, peer in document["peerCommands"].items():
        if peer["product"] not in known:
            raise PrefsError(
                f"{source}: peerCommands.{alias}.product",
                f"unknown product {peer['product']!r}",
                accepted(),
            )
        if alias in known:
            raise PrefsError(
                f"{source}: peerCommands.{alias}",
                "an alias must not shadow a product name",
                "a new name such as codex002",
            )
