"""Contract tests: ``@frozen_dataclass`` makes what ``@dataclass(frozen, slots, kw_only)`` makes.

The same class body is decorated both ways and every behaviour the code base or an embedder
can reach is compared side by side (``review_loop/agents/frozen_dataclass.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from dataclasses import field
from typing import Any

import pytest
from pydantic import TypeAdapter

from review_loop.agents.frozen_dataclass import frozen_dataclass


def _body() -> dict[str, Any]:
    """A class namespace with every kind of field the vocabulary uses."""

    def __post_init__(self: Any) -> None:
        if self.count < 0:
            raise ValueError("count must not be negative")
        if type(self.count) is bool:
            object.__setattr__(self, "count", int(self.count))

    return {
        "__doc__": "A value.",
        "__module__": __name__,
        "__annotations__": {
            "name": "str",
            "count": "int",
            "tags": "list[str]",
            "note": "str | None",
            "hidden": "str",
            "loose": "int",
        },
        "count": 0,
        "tags": field(default_factory=list),
        "note": None,
        "hidden": field(default="h", repr=False),
        "loose": field(default=0, compare=False),
        "__post_init__": __post_init__,
    }


def _both() -> tuple[Any, Any]:
    generated = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(
        type("Value", (), _body())
    )
    ours = frozen_dataclass(type("Value", (), _body()))
    return generated, ours


def _outcome(call: Any) -> tuple[str, str]:
    """What a call did: its value's repr, or the exception's type and message."""
    try:
        return ("ok", repr(call()))
    except Exception as error:
        return (type(error).__name__, str(error))


def test_contract_metadata_is_the_dataclass_s() -> None:
    generated, ours = _both()
    assert dataclasses.is_dataclass(ours)
    assert [
        (f.name, f.type, f.default, f.default_factory, f.repr, f.compare, f.kw_only)
        for f in dataclasses.fields(ours)
    ] == [
        (f.name, f.type, f.default, f.default_factory, f.repr, f.compare, f.kw_only)
        for f in dataclasses.fields(generated)
    ]
    for flag in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(ours.__dataclass_params__, flag) == getattr(
            generated.__dataclass_params__, flag
        ), flag
    assert ours.__slots__ == generated.__slots__
    assert ours.__match_args__ == generated.__match_args__ == ()
    assert ours.__doc__ == generated.__doc__
    assert ours.__init__.__qualname__ == "Value.__init__"
    assert not hasattr(ours(name="n"), "__dict__")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {"name": "n"}),
        ((), {"name": "n", "count": 2, "tags": ["a"], "note": "x", "hidden": "y", "loose": 3}),
        ((), {}),
        ((), {"count": 1}),
        ((), {"name": "n", "colour": "red"}),
        ((), {"colour": "red"}),
        (("n",), {}),
        ((), {"name": "n", "count": -1}),
        ((), {"name": "n", "count": True}),
    ],
)
def test_contract_construction_is_the_dataclass_s(args: tuple[Any, ...], kwargs: Any) -> None:
    generated, ours = _both()
    assert _outcome(lambda: ours(*args, **kwargs)) == _outcome(lambda: generated(*args, **kwargs))


def test_contract_missing_fields_are_worded_as_python_words_them() -> None:
    def make(names: str) -> tuple[type, type]:
        body = {"__annotations__": dict.fromkeys(names, "int"), "__module__": __name__}
        return (
            dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(type("M", (), body)),
            frozen_dataclass(type("M", (), dict(body))),
        )

    for names in ("a", "ab", "abc", "abcd"):
        generated, ours = make(names)
        assert _outcome(ours) == _outcome(generated), names


def test_contract_equality_hash_and_repr_are_the_dataclass_s() -> None:
    generated, ours = _both()
    values = [
        {"name": "n"},
        {"name": "n", "loose": 9},  # not compared
        {"name": "n", "note": "x"},
        {"name": "m", "tags": ["a", "b"], "hidden": "secret"},
    ]
    made = [(generated(**v), ours(**v)) for v in values]
    for g1, o1 in made:
        assert repr(o1) == repr(g1)
        assert _outcome(lambda o=o1: hash(o)) == _outcome(lambda g=g1: hash(g))
        for g2, o2 in made:
            assert (o1 == o2) == (g1 == g2)
            assert (o1 != o2) == (g1 != g2)
        assert o1 != g1  # another class: NotImplemented both ways
        assert (o1 == (o1.name,)) is False


def test_contract_the_hash_is_the_dataclass_s_over_compared_fields() -> None:
    body = {
        "__module__": __name__,
        "__annotations__": {"a": "int", "b": "tuple[str, ...]", "c": "int"},
        "b": (),
        "c": field(default=0, compare=False),
    }
    generated = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(
        type("H", (), dict(body))
    )
    ours = frozen_dataclass(type("H", (), dict(body)))
    for values in ({"a": 1}, {"a": 1, "b": ("x",)}, {"a": 1, "c": 7}):
        assert hash(ours(**values)) == hash(generated(**values))
    assert hash(ours(a=1)) == hash(ours(a=1, c=5))
    assert ours(a=1) == ours(a=1, c=5)


def test_contract_a_value_is_frozen_as_the_dataclass_s() -> None:
    generated, ours = _both()
    for cls in (generated, ours):
        value = cls(name="n")
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
            value.name = "m"
        with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
            value.x = 1  # not a field: refused (3.11's generated method fails with TypeError)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'note'"):
            del value.note
        assert value.name == "n"
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        ours(name="n").x = 1


def test_contract_replace_asdict_copy_and_pickle_work() -> None:
    _, ours = _both()
    value = ours(name="n", tags=["a"], note="x")
    assert dataclasses.replace(value, note="y") == ours(name="n", tags=["a"], note="y")
    with pytest.raises(ValueError, match="negative"):
        dataclasses.replace(value, count=-1)  # __post_init__ runs again
    assert dataclasses.asdict(value) == {
        "name": "n",
        "count": 0,
        "tags": ["a"],
        "note": "x",
        "hidden": "h",
        "loose": 0,
    }
    assert ours(name="a").tags is not ours(name="a").tags  # a factory per instance
    globals()["Value"] = ours  # pickle finds a class by its module and name
    try:
        for copied in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
            assert copied == value
            assert type(copied) is ours
            with pytest.raises(dataclasses.FrozenInstanceError):
                copied.name = "m"
    finally:
        del globals()["Value"]


def test_contract_a_value_inside_itself_prints_dots() -> None:
    shown = []
    for cls in _both():
        looped = cls(name="n")
        looped.tags.append(looped)
        shown.append(repr(looped))
    assert shown[0] == shown[1] == "Value(name='n', count=0, tags=[...], note=None, loose=0)"


def test_contract_pydantic_validates_dumps_and_describes_it_as_the_dataclass() -> None:
    generated, ours = _both()
    data = {"name": "n", "count": 2, "tags": ["a"], "note": None}
    assert TypeAdapter(ours).json_schema() == TypeAdapter(generated).json_schema()
    validated = TypeAdapter(ours).validate_python(data)
    assert validated == ours(name="n", count=2, tags=["a"])
    assert TypeAdapter(ours).dump_python(validated) == TypeAdapter(generated).dump_python(
        generated(name="n", count=2, tags=["a"])
    )
    with pytest.raises(ValueError, match="negative"):
        TypeAdapter(ours).validate_python({"name": "n", "count": -1})


def test_process_consult_s_value_classes_compile_no_code_when_they_are_defined() -> None:
    # @dataclass compiles each method with exec; the vocabulary's classes must not (the
    # start-up cost this module exists to remove). An audit hook sees every compile.
    probe = (
        "import sys\n"
        "import anyio, pathlib, review_loop.agents.frozen_dataclass, review_loop.agents.models\n"
        "compiled = []\n"
        "sys.addaudithook(lambda event, args: event == 'compile' and compiled.append(args[0]))\n"
        "import review_loop.agents.run_vocabulary, review_loop.agents.outcomes\n"
        "import review_loop.orchestrator.isolation, review_loop.orchestrator.isolation_wrapper\n"
        "import review_loop.prefs.view, review_loop.prefs.peer_command_view\n"
        "print([source for source in compiled if b'__create_fn__' in source])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True, text=True)
    assert done.stdout.strip() == "[]"


def _decorated_both_ways(body: dict[str, Any], bases: tuple[type, ...] = ()) -> list[Any]:
    """The class decorated each way, or the exception's type and message for each."""
    made: list[Any] = []
    for decorate in (
        dataclasses.dataclass(frozen=True, slots=True, kw_only=True),
        frozen_dataclass,
    ):
        try:
            made.append(decorate(type("Own", bases, {"__module__": __name__, **body})))
        except TypeError as error:
            made.append(("TypeError", str(error)))
    return made


def _same_outcome(call: Any, ours: Any, generated: Any) -> bool:
    return _outcome(lambda: call(ours)) == _outcome(lambda: call(generated))


def test_contract_methods_the_class_defines_are_kept_as_the_dataclass_keeps_them() -> None:
    def own_repr(self: Any) -> str:
        return "own repr"

    def own_eq(self: Any, other: Any) -> bool:
        return True

    def own_hash(self: Any) -> int:
        return 7

    fields = {"__annotations__": {"a": "int"}, "a": 0}
    bodies: list[dict[str, Any]] = [
        {"__repr__": own_repr},
        {"__eq__": own_eq},  # Python sets __hash__ = None beside it: dataclass writes one
        {"__eq__": own_eq, "__hash__": own_hash},
        {"__hash__": own_hash},
        {"__hash__": None},  # said to be unhashable: kept
    ]
    for body in bodies:
        generated, ours = _decorated_both_ways({**fields, **body})
        for call in (
            lambda cls: repr(cls(a=1)),
            lambda cls: cls(a=1) == cls(a=2),
            lambda cls: hash(cls(a=1)),
        ):
            assert _same_outcome(call, ours, generated), body
    for name in ("__setattr__", "__delattr__"):  # refused by a frozen dataclass, with its words
        generated, ours = _decorated_both_ways({**fields, name: own_repr})
        assert ours == generated == ("TypeError", f"Cannot overwrite attribute {name} in class Own")


def test_contract_a_subclass_is_the_dataclass_s() -> None:
    fields = {"__annotations__": {"b": "str"}, "b": "x"}
    base_fields = {"__annotations__": {"a": "int"}}
    frozen_base: Any = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(
        type("Base", (), {"__module__": __name__, **base_fields})
    )
    our_base = frozen_dataclass(type("Base", (), {"__module__": __name__, **base_fields}))
    for base in (frozen_base, our_base):
        generated, ours = _decorated_both_ways(fields, (base,))
        for call in (
            lambda cls: cls(a=1),
            lambda cls: cls(b="y"),
            lambda cls: cls(a=1) == cls(a=1, b="x"),
            lambda cls: hash(cls(a=1)) == hash((1, "x")),
            lambda cls: [f.name for f in dataclasses.fields(cls)],
            lambda cls: copy.deepcopy(cls(a=1)),
            lambda cls: dataclasses.replace(cls(a=1), a=2),
        ):
            assert _same_outcome(call, ours, generated)
        with pytest.raises(dataclasses.FrozenInstanceError):
            ours(a=1).a = 2
    mutable_base: Any = dataclasses.dataclass(
        type("Base", (), {"__module__": __name__, **base_fields})
    )
    generated, ours = _decorated_both_ways(fields, (mutable_base,))
    assert (
        ours == generated == ("TypeError", "cannot inherit frozen dataclass from a non-frozen one")
    )


@pytest.mark.parametrize("made", [field(default=0, init=False), field(default=0, kw_only=False)])
def test_contract_a_field_its_init_cannot_set_is_refused_when_defined(made: Any) -> None:
    body = {"__module__": __name__, "__annotations__": {"a": "int"}, "a": made}
    with pytest.raises(TypeError, match=r"Own\.a: .*use @dataclass"):
        frozen_dataclass(type("Own", (), body))
