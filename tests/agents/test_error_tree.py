"""Contract tests of the error tree (``review_loop.agents.errors``).

Every exception class the package defines is a ``ReviewLoopError``, is named ``…Error``,
and is drawn in the tree of ``agents/errors.py``'s docstring under the parent it derives
from, except a few that never reach a caller (:data:`NEVER_RAISED_TO_A_CALLER`). The
command line's one rule for the document of an exception (``errorType`` only for a crash)
stands on the tree.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import review_loop
from review_loop.agents import errors
from review_loop.agents.errors import FormatError, InputError, ReviewLoopError
from review_loop.orchestrator import cli

NEVER_RAISED_TO_A_CALLER = {
    # Run by path as its own process, with the standard library only (-I -S: nothing of
    # review-loop can be imported there); its main() turns it into exit 97 and a line.
    "review_loop.orchestrator.sandbox.wrapper.IsolationError",
    # Private control flow, caught in the module that raises it: "not plain, let the
    # general path decide" (json.dumps, the model path, the template's writer), or "this
    # key refused" (the prefs reader turns it into a PrefsError naming the key).
    "review_loop.orchestrator.handoff.json_text._Unplain",
    "review_loop.orchestrator.workflows.ledger_view._Unusual",
    "review_loop.prefs.document._Refused",
    "review_loop.orchestrator.sessions.listing._NotText",
}

_TREE_LINE = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w*)\b")


def package_exceptions() -> Iterator[type[BaseException]]:
    """Every exception class defined at the top level of a module of the package."""
    seen: set[type[BaseException]] = set()
    for found in pkgutil.walk_packages(review_loop.__path__, "review_loop."):
        module = importlib.import_module(found.name)  # scripts run by path guard __main__
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and value not in seen
            ):
                seen.add(value)
                yield value


def qualified(kind: type[BaseException]) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def drawn_tree() -> dict[str, str | None]:
    """The tree drawn in ``agents/errors.py``: each class name -> its drawn parent."""
    doc = errors.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in block.splitlines():
        match = _TREE_LINE.match(line.removeprefix("    "))
        if match is None:
            continue  # a description's continuation line
        depth = len(match["indent"]) // 4
        assert depth <= len(path), f"drawn deeper than its parent: {line!r}"
        del path[depth:]
        name = match["name"]
        assert name not in parents, f"{name} is drawn twice"
        parents[name] = path[-1] if path else None
        path.append(name)
    return parents


def tree_parent(kind: type[BaseException]) -> str | None:
    """The one base of ``kind`` in the tree (``None`` for the root)."""
    ours = [base for base in kind.__bases__ if issubclass(base, ReviewLoopError)]
    assert len(ours) <= 1, f"{qualified(kind)} has two parents in the tree: {ours}"
    return ours[0].__name__ if ours else None


def test_contract_every_exception_of_the_package_is_a_review_loop_error() -> None:
    outside = [
        qualified(kind)
        for kind in package_exceptions()
        if not issubclass(kind, ReviewLoopError) and qualified(kind) not in NEVER_RAISED_TO_A_CALLER
    ]
    assert outside == []


def test_contract_every_error_class_is_named_error() -> None:
    names = [kind.__name__ for kind in package_exceptions() if issubclass(kind, ReviewLoopError)]
    assert [name for name in names if not name.endswith("Error")] == []


def test_contract_every_error_class_is_drawn_under_its_parent() -> None:
    drawn = drawn_tree()
    classes = [kind for kind in package_exceptions() if issubclass(kind, ReviewLoopError)]
    assert {kind.__name__: tree_parent(kind) for kind in classes} == drawn


def test_contract_the_allow_list_names_only_classes_that_exist_outside_the_tree() -> None:
    outside = {
        qualified(kind) for kind in package_exceptions() if not issubclass(kind, ReviewLoopError)
    }
    assert outside >= NEVER_RAISED_TO_A_CALLER


def test_contract_error_names_are_unique() -> None:
    names = [kind.__name__ for kind in package_exceptions() if issubclass(kind, ReviewLoopError)]
    assert sorted(names) == sorted(set(names))


class _Raising:
    """A command module whose ``execute`` raises ``error``."""

    USAGE = ("raise",)
    OUTPUT = "json"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def configure(self, parser: argparse.ArgumentParser) -> None:
        return None

    def execute(self, args: argparse.Namespace) -> Mapping[str, Any]:
        raise self.error


def executed(error: Exception) -> tuple[int, dict[str, Any]]:
    written: list[str] = []
    code = cli._execute(_Raising(error), "raise", ["raise"], written.append)
    assert len(written) == 1
    return code, json.loads(written[0])


@pytest.mark.parametrize(
    ("error", "error_type"),
    [
        (InputError("--peer", "unknown", "claude"), None),
        (cli.UsageError("review-loop raise: unrecognized arguments"), None),
        (FormatError("the reply holds no JSON object"), "FormatError"),
        (ValueError("boom"), "ValueError"),
        (KeyError("k"), "KeyError"),
    ],
)
def test_contract_the_command_line_names_the_type_of_a_crash_only(
    error: Exception, error_type: str | None
) -> None:
    code, document = executed(error)
    assert code == 1
    assert document.get("ok") is False
    assert document.get("errorType") == error_type
