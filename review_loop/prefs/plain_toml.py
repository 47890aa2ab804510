"""The prefs file as review-loop writes it, read without :mod:`tomllib`.

Every command that runs reviewers reads the user's prefs file first, and importing
``tomllib`` to parse it cost about 2 ms of each (``docs/performance.md``). The file is
almost always what ``review-loop prefs`` wrote with ``tomli_w``: ``key = value`` lines and
``[peerCommands.NAME]`` tables holding strings, integers, booleans and arrays of them.
:func:`plain_toml` reads exactly that subset and gives up (``None``) on anything else;
``tomllib`` then reads the file and alone words every error. So it may only ever be
*stricter* than ``tomllib``: whatever it reads, ``tomllib.loads`` reads to the same value
(``tests/prefs/test_plain_toml.py`` holds the two together over generated and mutated
files).

Read: bare keys (``A-Z a-z 0-9 _ -``); ``[a.b]`` table headers of bare keys, each table
once; basic strings without escapes or control characters (no ``\\``, no tab); decimal
integers without sign, underscore or leading zero (at most 18 digits); ``true``/``false``;
arrays of those (over several lines, a trailing comma allowed). Anything else — a comment,
a quoted or dotted key, a literal or multi-line string, a float, a date, an inline table,
an array of tables, a nested array, ``\\r``, a byte-order mark, a key or table given twice,
a key that is a table and a value — gives ``None``.
"""

from __future__ import annotations

from typing import Any

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_BLANK = " \t"
_END_OF_VALUE = frozenset(" \t\n,]")  # what may follow a scalar (or the end of the text)
_MAX_DIGITS = 18  # far inside TOML's 64-bit integers


class _GiveUp(Exception):
    """Not plainly the subset: ``tomllib`` decides."""


def plain_toml(raw: bytes) -> dict[str, Any] | None:
    """``raw`` as ``tomllib.loads(raw.decode())`` reads it, or ``None`` (see above)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text or text.startswith("\ufeff"):
        return None
    try:
        return _Reader(text).document()
    except _GiveUp:
        return None


class _Reader:
    """One pass over the text; every method raises :class:`_GiveUp` on what it cannot read."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def document(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        table = root
        headers: set[tuple[str, ...]] = set()
        while True:
            self._skip(_BLANK + "\n")
            if self.pos >= len(self.text):
                return root
            if self.text[self.pos] == "[":
                path = self._header()
                if path in headers:
                    raise _GiveUp  # a table defined twice
                headers.add(path)
                table = self._table(root, path)
            else:
                key = self._key()
                self._skip(_BLANK)
                self._expect("=")
                self._skip(_BLANK)
                value = self._value(in_array=False)
                if key in table:
                    raise _GiveUp  # a key defined twice
                table[key] = value
            self._end_of_line()

    def _skip(self, characters: str) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in characters:
            pos += 1
        self.pos = pos

    def _expect(self, character: str) -> None:
        if not self.text.startswith(character, self.pos):
            raise _GiveUp
        self.pos += 1

    def _end_of_line(self) -> None:
        self._skip(_BLANK)
        if self.pos < len(self.text):
            self._expect("\n")

    def _key(self) -> str:
        start = self.pos
        self._skip_bare()
        if self.pos == start:
            raise _GiveUp  # a quoted key, a comment, or nothing a key starts with
        return self.text[start : self.pos]

    def _skip_bare(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _BARE:
            pos += 1
        self.pos = pos

    def _header(self) -> tuple[str, ...]:
        self._expect("[")
        if self.text.startswith("[", self.pos):
            raise _GiveUp  # an array of tables
        parts = []
        while True:
            self._skip(_BLANK)
            parts.append(self._key())
            self._skip(_BLANK)
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return tuple(parts)
            self._expect(".")

    @staticmethod
    def _table(root: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        table = root
        for part in path:
            found = table.setdefault(part, {})
            if type(found) is not dict:
                raise _GiveUp  # a value already has that name
            table = found
        if any(type(value) is not dict for value in table.values()):
            raise _GiveUp  # keys given to it before (only its sub-tables may exist)
        return table

    def _value(self, *, in_array: bool) -> Any:
        text, pos = self.text, self.pos
        first = text[pos : pos + 1]
        if first == '"':
            value: Any = self._string()
        elif first == "[" and not in_array:
            return self._array()  # nested arrays: given up on as an unknown start below
        elif text.startswith("true", pos):
            self.pos += 4
            value = True
        elif text.startswith("false", pos):
            self.pos += 5
            value = False
        elif first.isdigit() and first.isascii():
            value = self._integer()
        else:
            raise _GiveUp
        if self.pos < len(text) and text[self.pos] not in _END_OF_VALUE:
            raise _GiveUp  # 1.5, 1e3, 1979-05-27, true2, "a"b ...
        return value

    def _string(self) -> str:
        start = self.pos + 1
        end = self.text.find('"', start)
        if end < 0:
            raise _GiveUp
        value = self.text[start:end]
        if "\\" in value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            raise _GiveUp  # an escape, or a character TOML wants escaped
        self.pos = end + 1
        return value

    def _integer(self) -> int:
        start = self.pos
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in "0123456789":
            pos += 1
        digits = text[start:pos]
        if len(digits) > _MAX_DIGITS or (len(digits) > 1 and digits[0] == "0"):
            raise _GiveUp
        self.pos = pos
        return int(digits)

    def _array(self) -> list[Any]:
        self._expect("[")
        items: list[Any] = []
        while True:
            self._skip(_BLANK + "\n")
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            items.append(self._value(in_array=True))
            self._skip(_BLANK + "\n")
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                raise _GiveUp
