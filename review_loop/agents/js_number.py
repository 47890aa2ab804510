"""Numbers as JavaScript's ``Number(text)`` reads them: the original review-loop's parser.

The original reads ``REVIEW_LOOP_TIMEOUT_MS`` and ``--rounds`` with ``Number()``, so a
client may write ``500``, ``1e3``, ``1500.5``, `` 800 `` or ``0x1f4``; review-loop takes the
same texts.
"""

from __future__ import annotations

import math
import re

# A decimal (sign, fraction, exponent) or an unsigned 0x / 0o / 0b integer.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def js_number(text: str) -> float | None:
    """The finite number ``Number(text)`` gives, or ``None`` (NaN, ``Infinity``).

    Blanks around the number are ignored and the empty text is not a number (``Number("")``
    is 0 in JavaScript, but the original treats an empty value as absent before it gets
    here).
    """
    stripped = text.strip()
    if _RADIX.fullmatch(stripped):
        return float(int(stripped, 0))
    if not _DECIMAL.fullmatch(stripped):
        return None
    number = float(stripped)
    return number if math.isfinite(number) else None


def plain(number: float) -> int | float:
    """``number`` as JSON prints it in JavaScript: an integer when it is whole."""
    return int(number) if number.is_integer() else number
