"""``@frozen_dataclass``: a frozen, slotted, keyword-only stdlib dataclass, defined cheaply.

``@dataclass(frozen=True, slots=True, kw_only=True)`` writes the source of ``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` for each class
and compiles it with ``exec`` when the class is defined: about 0.45 ms a class on
Python 3.11, paid by every process that imports the class, before anything runs
(``consult`` defines about fifteen of them: ``docs/performance.md``). This decorator
makes the same class with the same behaviour, but its methods are closures written once in
this module (compiled once, into its bytecode cache) over the class's field names: about a
tenth of the cost to define, under a microsecond more to build an instance.

What it makes is a stdlib dataclass in every way the code base and its embedders use one:
``dataclasses.is_dataclass``/``fields``/``replace``/``asdict`` work, ``__dataclass_params__``
says ``frozen``, ``eq``, ``init``, ``repr``, ``__slots__`` is the fields, pydantic validates
and describes it as a stdlib dataclass (it reads ``__dataclass_fields__``), and mypy checks it
as a frozen keyword-only dataclass (:func:`typing.dataclass_transform`). Its methods behave as
the generated ones (``tests/agents/test_frozen_dataclass.py`` compares the two side by side):

- ``__init__``: keyword arguments only; a missing required field or an unknown keyword is a
  ``TypeError``; ``field(default_factory=...)`` is called per instance; ``__post_init__``
  runs last when the class defines it;
- ``__eq__``: the same class and equal fields (``compare=True`` ones), else ``NotImplemented``;
  ``__hash__``: the hash of those fields' tuple (a list field makes it unhashable, as before);
- ``__repr__``: ``Name(field=value, ...)`` over the ``repr=True`` fields;
- assigning or deleting any attribute raises ``dataclasses.FrozenInstanceError``;
- ``copy``, ``deepcopy`` and ``pickle`` round-trip it (``__getstate__``/``__setstate__``).

As ``@dataclass`` does, a method the class defines itself (``__repr__``, ``__eq__``,
``__hash__``, ...) is kept, its own ``__setattr__``/``__delattr__`` is refused, and a
dataclass base must be frozen (a subclass of one made here or by ``@dataclass`` works).
Only what these classes need is supported: no ``order``, no ``InitVar``, no field its
``__init__`` does not take as a keyword (``init=False``, ``kw_only=False``: refused with a
``TypeError`` when the class is defined); a class that asks for more keeps ``@dataclass``.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

_T = TypeVar("_T", bound=type)
_MISSING: Any = dataclasses.MISSING
_FrozenInstanceError = dataclasses.FrozenInstanceError
_set = object.__setattr__
_in_repr: set[tuple[int, int]] = set()  # (id, thread): a value inside itself prints "..."


class _Spec:
    """What the shared methods read about one class (computed once, when it is defined)."""

    __slots__ = (
        "cls",
        "compared",
        "defaults",
        "factories",
        "hashed",
        "known",
        "names",
        "post_init",
        "required",
        "shown",
    )
    cls: type
    names: tuple[str, ...]
    factories: dict[str, Callable[[], Any]]

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        for f in fields:
            if not f.init or f.kw_only is False:  # the shared __init__ takes keywords only
                raise TypeError(
                    f"{cls.__qualname__}.{f.name}: @frozen_dataclass makes keyword-only fields"
                    " its __init__ sets; for init=False or kw_only=False use @dataclass"
                )
        self.cls = cls
        self.names = tuple(f.name for f in fields)
        self.known = frozenset(self.names)
        self.defaults = {f.name: f.default for f in fields if f.default is not _MISSING}
        self.factories = {
            f.name: f.default_factory  # type: ignore[misc]  # not MISSING: filtered
            for f in fields
            if f.default_factory is not _MISSING
        }
        self.required = self.known - self.defaults.keys() - self.factories.keys()
        self.compared = tuple(f.name for f in fields if f.compare)
        self.hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        self.shown = tuple(f.name for f in fields if f.repr)
        self.post_init = hasattr(cls, "__post_init__")


@dataclass_transform(
    eq_default=True,
    frozen_default=True,
    kw_only_default=True,
    field_specifiers=(dataclasses.field,),
)
def frozen_dataclass(cls: _T) -> _T:
    """``cls`` as ``@dataclass(frozen=True, slots=True, kw_only=True)`` makes it (see above).

    Raises:
        TypeError: what ``@dataclass`` itself refuses (a field without a default after
            nothing, a mutable default, ...), refused by ``@dataclass`` with its own words.
    """
    kept = _own_methods(cls)  # read before @dataclass copies the class for its slots
    # Under a dataclass base, dataclass's own check that it is frozen too (it then compiles
    # __setattr__/__delattr__, replaced below); no such base: no code compiled at all.
    based = any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])
    made: Any = dataclasses.dataclass(  # fields, slots, __match_args__
        cls, init=False, repr=False, eq=False, frozen=based, kw_only=True, slots=True
    )
    for function in _methods(_Spec(made)):
        if function.__name__ in kept:
            continue
        function.__qualname__ = f"{made.__qualname__}.{function.__name__}"
        setattr(made, function.__name__, function)
    params = made.__dataclass_params__  # what @dataclass(frozen=True) would have recorded
    params.init = params.repr = params.eq = params.frozen = True
    return made  # type: ignore[no-any-return]


def _own_methods(cls: type) -> set[str]:
    """The methods ``cls`` defines itself that ``@dataclass`` keeps (it writes only the rest).

    Raises:
        TypeError: ``__setattr__``/``__delattr__``, which a frozen ``@dataclass`` refuses.
    """
    own = cls.__dict__
    for name in ("__setattr__", "__delattr__"):
        if name in own:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    kept = {
        n for n in ("__init__", "__repr__", "__eq__", "__getstate__", "__setstate__") if n in own
    }
    explicit = own.get("__hash__", _MISSING)  # None beside an own __eq__: Python's, not the class's
    if not (explicit is _MISSING or (explicit is None and "__eq__" in own)):
        kept.add("__hash__")
    return kept


def _methods(spec: _Spec) -> tuple[Callable[..., Any], ...]:
    """The class's methods: closures over ``spec`` (their code is compiled once, here)."""
    owner: Any = spec.cls
    names, known = spec.names, spec.known
    compared, hashed, shown = spec.compared, spec.hashed, spec.shown
    defaults, factories, post_init = spec.defaults, spec.factories, spec.post_init

    def __init__(self: Any, **values: Any) -> None:
        if not (spec.required <= values.keys() <= known):
            _refuse(spec, values)
        for name in names:
            if name in values:
                _set(self, name, values[name])
            elif name in defaults:
                _set(self, name, defaults[name])
            else:
                _set(self, name, factories[name]())
        if post_init:
            self.__post_init__()

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple([getattr(self, n) for n in compared]) == tuple(
            [getattr(other, n) for n in compared]
        )

    def __hash__(self: Any) -> int:
        return hash(tuple([getattr(self, n) for n in hashed]))

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in _in_repr:  # a value met again inside itself
            return "..."
        _in_repr.add(key)
        try:
            fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        finally:
            _in_repr.discard(key)
        return f"{self.__class__.__qualname__}({fields})"

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in known:
            raise _FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in known:
            raise _FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]  # slots, no __dict__: pickle, copy

    def __setstate__(self: Any, state: list[Any]) -> None:
        for name, value in zip(names, state, strict=True):
            _set(self, name, value)

    return (
        __init__,
        __eq__,
        __hash__,
        __repr__,
        __setattr__,
        __delattr__,
        __getstate__,
        __setstate__,
    )


def _refuse(spec: _Spec, values: dict[str, Any]) -> None:
    """The ``TypeError`` the generated ``__init__`` raises for these keywords."""
    where = f"{spec.cls.__qualname__}.__init__()"
    unknown = [name for name in values if name not in spec.known]
    if unknown:
        raise TypeError(f"{where} got an unexpected keyword argument {unknown[0]!r}")
    missing = [name for name in spec.names if name in spec.required and name not in values]
    quoted = [repr(name) for name in missing]  # as CPython words it: 'a', 'b', and 'c'
    if len(quoted) > 2:
        quoted = [", ".join(quoted[:-1]) + ",", quoted[-1]]
    listed = " and ".join(quoted)
    plural = "s" if len(missing) > 1 else ""
    raise TypeError(
        f"{where} missing {len(missing)} required keyword-only argument{plural}: {listed}"
    )
