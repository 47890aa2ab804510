"""``json.dumps(document, ensure_ascii=False, indent=2)``, byte for byte, about three times faster.

Python's C encoder does not indent (CPython 3.11-3.13), so every pretty document went
through the pure-Python encoder: with ``json.dumps`` instead, ``sessions`` over 2,000
records went from 1.01x to 1.26x the original tool's (``scripts/bench_startup.py``).
:func:`pretty` walks the document itself and leaves only the strings to the C encoder's own
string escaper (the one ``json.dumps`` uses), writing the same separators and indentation.
It knows the plain JSON types: a ``str``, ``None``, ``True``/``False``, an ``int``, a
``float``, a ``list``/``tuple`` and a ``dict`` with ``str`` keys, subclasses included (a
``StrEnum``), as ``json`` does. On anything else (another key type, an object ``json``
cannot encode, a very deep document) it hands the whole document to ``json.dumps``, which
prints it, or words the error, as before.
``tests/orchestrator/handoff/test_json_text.py`` holds the two together.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

_DEPTH = 64
"""Nesting past which ``json.dumps`` does the work (and reports a cycle as it always did)."""


class _Unplain(Exception):
    """A value :func:`pretty` leaves to ``json.dumps``."""


def pretty(document: Any) -> str:
    """``json.dumps(document, ensure_ascii=False, indent=2)``."""
    out: list[str] = []
    try:
        _value(document, out, "\n", 0)
    except _Unplain:
        return json.dumps(document, ensure_ascii=False, indent=2)
    return "".join(out)


def _float(value: float) -> str:
    # json.encoder's floatstr with allow_nan=True
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _leaf(value: Any) -> str:
    """A scalar as ``json.dumps`` writes it; raises :class:`_Unplain` for anything else."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):  # IntEnum too: json writes int.__repr__ of any int
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    raise _Unplain


class Written(dict[str, Any]):
    """A dict that may write itself: :meth:`text` is what :func:`pretty` would write for it
    at ``newline`` (``"\\n"`` and its indentation), or ``None`` to have it walked as any dict.

    For documents with many entries of one fixed shape (``sessions``): one formatted string
    per entry instead of a walk. Everywhere else it is the dict it holds (``json.dumps``
    writes it as such), and a test must hold :meth:`text` to :func:`pretty`'s walk.
    """

    __slots__ = ()

    def text(self, newline: str) -> str | None:
        """This dict as pretty JSON indented at ``newline``; ``None``: walk it instead."""
        return None


def _value(value: Any, out: list[str], newline: str, depth: int) -> None:
    if isinstance(value, Written) and (text := value.text(newline)) is not None:
        out.append(text)
        return
    if isinstance(value, dict):
        brackets = "{}"
    elif isinstance(value, list | tuple):
        brackets = "[]"
    else:
        out.append(_leaf(value))
        return
    if not value:
        out.append(brackets)
        return
    if depth >= _DEPTH:
        raise _Unplain
    inner = newline + "  "
    if brackets == "{}":
        _members(value, out, inner, depth + 1)
    else:
        _elements(value, out, inner, depth + 1)
    out.append(newline + brackets[1])


def _members(value: dict[Any, Any], out: list[str], inner: str, depth: int) -> None:
    separator = "{" + inner
    append = out.append
    for key, item in value.items():
        if not isinstance(key, str):
            raise _Unplain  # json converts other keys (or refuses them): leave it to json
        if type(item) is str:  # the common leaf, inline
            append(f"{separator}{encode_basestring(key)}: {encode_basestring(item)}")
        elif item is None:
            append(f"{separator}{encode_basestring(key)}: null")
        else:
            append(f"{separator}{encode_basestring(key)}: ")
            _value(item, out, inner, depth)
        separator = "," + inner


def _elements(value: list[Any] | tuple[Any, ...], out: list[str], inner: str, depth: int) -> None:
    separator = "[" + inner
    append = out.append
    for item in value:
        if type(item) is str:
            append(separator + encode_basestring(item))
        else:
            append(separator)
            _value(item, out, inner, depth)
        separator = "," + inner
