"""Contract tests of ``json_text.pretty``: exactly ``json.dumps(ensure_ascii=False, indent=2)``.

Every pretty document the command line prints goes through it, so for any value at all it
must give the same text as ``json.dumps`` or raise the same error: generated JSON values
(seeded: any text, numbers of every kind, nesting, empty containers), the subclasses ``json``
accepts, and the values it refuses.
"""

from __future__ import annotations

import enum
import json
import math
import random
from typing import Any

import pytest

from review_loop.orchestrator.handoff.json_text import Written, pretty


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


TEXTS = ["", "a", "é", "😀", "\u2028", "\x00", "\x1f", '"', "\\", "/", "\ud800", "\udfff", "\x7f"]
NUMBERS = [0, -1, 2**63, -(2**70), 0.0, -0.0, 1.5, 1e300, 5e-324, math.nan, math.inf, -math.inf]


def text(rng: random.Random) -> str:
    return "".join(rng.choice(TEXTS) for _ in range(rng.randrange(4)))


def value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: any text (lone surrogates too), numbers of every kind, nesting."""
    kind = rng.randrange(9 if depth < 5 else 6)
    if kind < 6:
        return [None, True, False, rng.choice(NUMBERS), rng.randrange(-9, 9), text(rng)][kind]
    size = rng.randrange(4)
    if kind == 6:
        return [value(rng, depth + 1) for _ in range(size)]
    if kind == 7:
        return tuple(value(rng, depth + 1) for _ in range(size))
    return {text(rng): value(rng, depth + 1) for _ in range(size)}


@pytest.mark.parametrize("seed", range(20))
def test_contract_any_json_value_is_written_as_json_dumps_writes_it(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        document = value(rng)
        assert pretty(document) == dumps(document)


class Colour(enum.StrEnum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 7


class Ratio(float):
    pass


class Items(list[Any]):
    pass


class Table(dict[str, Any]):
    pass


def deep(levels: int) -> Any:
    value: Any = {"x": [1]}
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


ODD: list[Any] = [
    {Colour.RED: Colour.RED, "n": Size.BIG, "r": Ratio(0.5)},
    Items([Colour.RED, Table(a=Items())]),
    {"nan": math.nan, "inf": [math.inf, -math.inf], "tiny": 5e-324, "big": 10**40},
    {3: "int key", 2.5: "float key", None: "none key", True: "bool key"},  # json converts
    {"deep": deep(80)},  # past the nesting pretty walks itself
    '\u2028\x00\x1f\\"/é😀\udc80',
    [],
    {},
    [{}, [], {"": ""}],
]


@pytest.mark.parametrize("value", ODD, ids=range(len(ODD)))
def test_contract_subclasses_and_converted_keys_are_written_as_json_writes_them(
    value: Any,
) -> None:
    assert pretty(value) == dumps(value)


def test_contract_what_json_refuses_is_refused_with_json_s_error() -> None:
    circular: list[Any] = []
    circular.append(circular)
    for value in ({"a": object()}, {(1, 2): "tuple key"}, circular, {"s": {1, 2}}):
        with pytest.raises((TypeError, ValueError)) as expected:
            dumps(value)
        with pytest.raises(type(expected.value), match=str(expected.value)[:20]):
            pretty(value)


class Walked(Written):
    """A Written that declines to write itself."""


class Fixed(Written):
    def text(self, newline: str) -> str | None:
        return "WRITTEN" + newline.replace("\n", "|")


def test_contract_a_written_dict_writes_itself_or_is_walked() -> None:
    walked = Walked(a=[1, {"b": None}])
    assert pretty({"x": [walked]}) == dumps({"x": [walked]})
    assert pretty({"x": [Fixed(a=1)], "y": Fixed()}) == (
        '{\n  "x": [\n    WRITTEN|    \n  ],\n  "y": WRITTEN|  \n}'
    )
