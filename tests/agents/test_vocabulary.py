"""Contract tests of the adapter vocabulary's forms (``docs/performance.md``).

The run vocabulary and ``EnvPassthrough`` are frozen stdlib dataclasses (the check of
``EnvPassthrough`` cannot be skipped, by ``replace`` or by a pickle); the listing vocabulary
is NamedTuples with the fields and defaults it had.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter, product_names
from review_loop.adapters.base import SessionFile, SessionStore
from review_loop.agents import models
from review_loop.agents.models import (
    DeliveryState,
    EnvPassthrough,
    ReadOnlyResume,
    ResumeCommands,
    StoredSession,
)

RUN = ("AgentRequest", "Capabilities", "Invocation", "Completed", "Usage", "Reply", "Failure")


def fields_and_defaults(cls: type) -> list[tuple[str, object]]:
    defaults: dict[str, object] = cls._field_defaults  # type: ignore[attr-defined]
    return [(name, defaults.get(name, "<required>")) for name in cls._fields]  # type: ignore[attr-defined]


def test_contract_the_listing_vocabulary_keeps_its_fields_and_defaults() -> None:
    # As the dataclasses had them (StoredSession's source moved before title: defaults last)
    assert fields_and_defaults(StoredSession) == [
        ("product", "<required>"),
        ("session_id", "<required>"),
        ("cwd", "<required>"),
        ("updated", "<required>"),
        ("source", "<required>"),
        ("title", None),
    ]
    assert fields_and_defaults(ReadOnlyResume) == [
        ("interactive", "<required>"),
        ("headless", "<required>"),
        ("unavailable", None),
    ]
    assert fields_and_defaults(ResumeCommands) == [
        ("interactive", "<required>"),
        ("headless", "<required>"),
        ("read_only", None),
    ]
    assert fields_and_defaults(SessionStore) == [
        ("root", "<required>"),
        ("pattern", "<required>"),
        ("head_bytes", 8192),
        ("sidecars", ()),
    ]
    assert SessionFile(path=Path("f"), head=b"", mtime=0.0).sidecars == {}


def test_contract_listing_values_are_built_with_keywords_and_changed_by_replace() -> None:
    session = StoredSession(
        product="codex", session_id="s", cwd=None, updated="2026-01-01T00:00:00Z", source="x"
    )
    assert session.title is None
    later = session._replace(updated="2026-01-02T00:00:00Z")
    assert (later.updated, session.updated) == ("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")
    with pytest.raises(AttributeError):
        session.updated = "now"  # type: ignore[misc]


def test_contract_the_run_vocabulary_is_frozen_slotted_dataclasses() -> None:
    for name in RUN:
        cls = getattr(models, name)
        assert dataclasses.is_dataclass(cls)
        params = cls.__dataclass_params__  # type: ignore[union-attr]
        assert params.frozen and params.eq, name
        assert "__slots__" in vars(cls), name


def test_contract_env_passthrough_is_an_immutable_checked_value() -> None:
    allowed = EnvPassthrough(names=("A_KEY",), prefixes=("LC_",))
    assert allowed == EnvPassthrough(names=("A_KEY",), prefixes=("LC_",))
    assert allowed != EnvPassthrough(names=("A_KEY",))
    assert allowed != (("A_KEY",), ("LC_",))  # a value, not a tuple
    assert hash(allowed) == hash(EnvPassthrough(names=("A_KEY",), prefixes=("LC_",)))
    assert repr(allowed) == "EnvPassthrough(names=('A_KEY',), prefixes=('LC_',))"
    assert EnvPassthrough() == EnvPassthrough(names=(), prefixes=())
    with pytest.raises(TypeError):
        EnvPassthrough(("A_KEY",))  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        allowed.names = ("*",)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del allowed.prefixes  # type: ignore[misc]
    with pytest.raises(ValueError, match="is not a variable name"):
        dataclasses.replace(allowed, prefixes=("*",))
    for copied in (pickle.loads(pickle.dumps(allowed)), copy.copy(allowed), copy.deepcopy(allowed)):
        assert copied == allowed


def test_contract_an_unpickled_env_passthrough_passes_the_check_again() -> None:
    # A pickle whose words were changed must not build a value the constructor refuses.
    tampered = pickle.dumps(EnvPassthrough(names=("SAFE",))).replace(b"SAFE", b"S*FE")
    with pytest.raises(ValueError, match="is not a variable name"):
        pickle.loads(tampered)


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("prefixes", ""),
        ("names", "HOME"),
        ("prefixes", "LC_"),
        ("names", {"HOME"}),
        ("names", None),
    ],
)
def test_contract_env_passthrough_refuses_words_that_are_not_a_tuple(
    field: str, words: object
) -> None:
    # As the pydantic model it replaced: a string is no tuple of names. Taken as one,
    # prefixes="" would pass every variable (startswith("")) and names="HOME" would pass
    # "H", "OM" (``in`` on a string tests substrings).
    with pytest.raises(ValueError, match=f"EnvPassthrough.{field}: .* is not a tuple"):
        EnvPassthrough(**{field: words})  # type: ignore[arg-type]


def test_contract_env_passthrough_takes_a_list_as_a_tuple_of_its_own() -> None:
    words = ["A_KEY"]
    allowed = EnvPassthrough(names=words, prefixes=["LC_"])  # type: ignore[arg-type]
    words.append("SECRET")  # changing the list afterwards changes nothing
    assert allowed == EnvPassthrough(names=("A_KEY",), prefixes=("LC_",))
    assert hash(allowed) == hash(EnvPassthrough(names=("A_KEY",), prefixes=("LC_",)))
    assert not allowed.allows("SECRET")
    assert allowed.allows("LC_ALL")


@pytest.mark.parametrize("product", sorted(product_names()))
def test_contract_a_built_in_adapter_cannot_be_changed(product: str) -> None:
    adapter = get_adapter(product)
    with pytest.raises(AttributeError):
        adapter.default_executable = "sh"  # type: ignore[misc]
    assert adapter.name == product
    assert isinstance(adapter.env_passthrough, EnvPassthrough)


@pytest.mark.parametrize("state", [DeliveryState.DELIVERED, "DELIVERED", None, ["x"]])
def test_contract_a_failure_never_says_delivered(state: object) -> None:
    # The pydantic model refused it; a third-party adapter's Failure(state=DELIVERED)
    # would otherwise make a DELIVERED delivery with no reply.
    with pytest.raises(ValueError, match=r"Failure\.state: .* is not a failure's state"):
        models.Failure(state=state, reason="r")  # type: ignore[arg-type]


def test_contract_a_failure_s_state_is_its_member_as_the_model_made_it() -> None:
    failure = models.Failure(state="NOT_SUBMITTED", reason="r")  # type: ignore[arg-type]
    assert failure.state is DeliveryState.NOT_SUBMITTED
    changed = dataclasses.replace(failure, detail="d")  # replace checks again
    assert changed.state is DeliveryState.NOT_SUBMITTED
