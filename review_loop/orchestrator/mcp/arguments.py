"""What the MCP server accepts of a tool call's arguments, before any of them is used.

The client is a language model: its arguments are untrusted text. Every call is checked
against the tool's input schema first, and a call that fails is answered with a tool error
naming the argument, what was wrong and what is accepted — never a crash, never a job:

- an argument the tool does not take is refused by name (it would be ignored silently);
- every string, list items included: no NUL character (no command line, path or file can
  carry one), no lone surrogate (not text: it has no UTF-8 form), and a size bound
  (:data:`TEXT_LIMIT` for the texts a tool forwards to reviewers, :data:`NAME_LIMIT` for
  everything else: paths, names, ids);
- a list of at most :data:`LIST_LIMIT` items.

The messages never echo a value whole: a hostile one is shown cut short, escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from review_loop.agents.errors import InputError
from review_loop.orchestrator.handoff.input_files import MAX_INPUT_BYTES, limit_text

TEXT_LIMIT: Final = MAX_INPUT_BYTES
"""The UTF-8 size bound of a text argument (``question``, ``body``): the CLI's file limit."""
TEXT_ARGUMENTS: Final = frozenset({"question", "body"})
NAME_LIMIT: Final = 4096
"""The bound, in UTF-8 bytes, of every other string (a path is at most 4096 bytes here)."""
LIST_LIMIT: Final = 64
_SHOWN = 60


def shown(value: object) -> str:
    """``value`` for a message: its ``repr``, escaped and cut to a few dozen characters."""
    text = ascii(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} characters)"


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Refuse ``arguments`` that ``schema`` (a tool's input schema) does not take, and any
    string or list that breaks the rules above.

    Raises:
        InputError: naming the argument (``peers[2]`` for a list item).
    """
    known = schema.get("properties", {})
    unknown = [name for name in arguments if name not in known]
    if unknown:
        names = ", ".join(shown(name) for name in unknown)
        raise InputError(
            "arguments",
            f"this tool takes no argument {names}",
            ", ".join(sorted(known)) or "none",
        )
    for name, value in arguments.items():
        limit = TEXT_LIMIT if name in TEXT_ARGUMENTS else NAME_LIMIT
        _check_value(name, value, limit)


def _check_value(field: str, value: object, limit: int) -> None:
    if isinstance(value, str):
        _check_string(field, value, limit)
    elif isinstance(value, list):
        if len(value) > LIST_LIMIT:
            raise InputError(
                field, f"{len(value)} items are too many", f"at most {LIST_LIMIT} items"
            )
        for index, item in enumerate(value):
            _check_value(f"{field}[{index}]", item, limit)
    elif isinstance(value, dict):
        raise InputError(field, "an object is not a value this tool takes", "its schema's type")


def _check_string(field: str, value: str, limit: int) -> None:
    if "\x00" in value:
        at = value.index("\x00")
        raise InputError(
            field, f"holds a NUL character (at index {at})", "text without NUL characters"
        )
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise InputError(
            field,
            f"holds a lone surrogate {shown(value[error.start : error.end])} at index "
            f"{error.start}, which is not text",
            "valid Unicode text (UTF-8 encodable)",
        ) from None
    if size > limit:
        words = limit_text(limit) if limit >= 1024 * 1024 else f"{limit} bytes"
        raise InputError(field, f"is {size} bytes long (UTF-8)", f"at most {words}")
