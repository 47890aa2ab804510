"""A command line read without argparse, when it is plainly one argparse reads the same way.

``consult`` is run many times per task, and argparse (with gettext and locale, which it
imports) and the parser it builds cost about a millisecond and a half of each run
(``docs/performance.md``). Its command line is nearly always a few ``--option value``
pairs: :func:`plain_namespace` reads exactly those and gives up on anything else, and
argparse reads what it gave up on — and alone words every error. So the plain reader may
only ever be *stricter* than argparse: whatever it accepts, argparse accepts with the same
values (``tests/test_cli_plain_args.py`` holds the two together over thousands of command
lines).

Accepted: each word is ``--name value`` or ``--name=value`` where ``--name`` is one of the
command's option strings exactly (argparse runs with ``allow_abbrev=False``) and ``value``
is not empty and does not start with ``-`` (argparse may read such a word as an option, a
negative number, or ``--``). A repeated option appends to its list; a single-valued option
given twice, a positional word, an unknown or abbreviated option, a value missing at the
end: ``None``, for argparse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any


class PlainOption:
    """One option a command reads plainly: its spellings, where it goes, how it repeats.

    ``repeated``: ``action="append", default=[]`` (else ``action="store", default=None``).
    A small class, not a ``NamedTuple``: it is defined on every ``consult``, and a
    ``NamedTuple`` costs ten times as much to define.
    """

    __slots__ = ("dest", "repeated", "strings")

    def __init__(self, strings: tuple[str, ...], dest: str, *, repeated: bool = False) -> None:
        self.strings = strings
        self.dest = dest
        self.repeated = repeated


def plain_namespace(words: Sequence[str], options: Sequence[PlainOption]) -> SimpleNamespace | None:
    """``words`` read as argparse would read them with ``options``, or ``None`` (see above).

    The namespace holds every option's ``dest``: its value(s), else ``None`` or ``[]``.
    """
    by_string: Mapping[str, PlainOption] = {s: option for option in options for s in option.strings}
    values: dict[str, Any] = {option.dest: [] if option.repeated else None for option in options}
    given: set[str] = set()
    index = 0
    while index < len(words):
        name, equals, value = words[index].partition("=")
        if equals:
            index += 1
        elif index + 1 < len(words):
            value = words[index + 1]
            index += 2
        else:
            return None  # the last word is an option without its value (or a positional)
        option = by_string.get(name)
        if option is None or not value or value.startswith("-"):
            return None
        if option.repeated:
            values[option.dest].append(value)
        elif option.dest in given:
            return None  # argparse keeps the last; refusing is never wrong
        else:
            given.add(option.dest)
            values[option.dest] = value
    return SimpleNamespace(**values)
