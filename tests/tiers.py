"""The test tiers as pytest markers, set on every test at collection (``docs/testing.md``).

A test's tiers are

- its folder's: ``tests/e2e`` is ``e2e``, ``tests/faults`` ``faults``, ``tests/mcp`` ``mcp``,
  ``tests/differential`` ``differential``;
- its kind: the one its name starts with (``test_contract_…``, ``test_collaboration_…``,
  ``test_process_…``), else the kinds the first line of its module's docstring starts
  with ("Contract tests: …", "Contract and process tests of …"; "Unit" is ``contract``,
  "End-to-end" is ``e2e``);
- any tier marker the module or the test sets itself (``pytestmark = pytest.mark.e2e``).

A test module outside those folders whose docstring starts with no kind is a collection
error naming it: every test says what kind it is, once, and ``-m`` can select by it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

FOLDER_TIERS = {"e2e": "e2e", "faults": "faults", "mcp": "mcp", "differential": "differential"}
"""A folder under ``tests/`` whose every test is in a tier (the tiers that need a real CLI,
stop review-loop by signal, serve MCP, or compare with the originals)."""

TIERS = ("contract", "collaboration", "process", "e2e", "faults", "mcp", "differential")

_KIND_WORDS = {
    "contract": "contract",
    "unit": "contract",
    "collaboration": "collaboration",
    "process": "process",
    "differential": "differential",
    "end-to-end": "e2e",
    "end to end": "e2e",
}
_KIND = "|".join(re.escape(word) for word in _KIND_WORDS)
_LEADING_KINDS = re.compile(rf"^(?:{_KIND})(?:(?:, | and | or |, and )(?:{_KIND}))*\b", re.I)
_NAME_KIND = re.compile(r"^test_(contract|collaboration|process)_")


def module_kinds(docstring: str | None) -> frozenset[str]:
    """The tiers the first line of a test module's docstring starts with (maybe none)."""
    first = (docstring or "").strip().splitlines()[0] if (docstring or "").strip() else ""
    found = _LEADING_KINDS.match(first)
    if found is None:
        return frozenset()
    words = re.split(r", and |, | and | or ", found.group(0), flags=re.I)
    return frozenset(_KIND_WORDS[word.lower()] for word in words)


@cache
def _folder_tier(path: Path) -> str | None:
    try:
        parts = path.relative_to(TESTS).parts
    except ValueError:
        return None
    return FOLDER_TIERS.get(parts[0]) if len(parts) > 1 else None


def item_tiers(item: pytest.Item) -> frozenset[str]:
    """The tiers of one collected test (see the module docstring)."""
    path = Path(item.path).resolve()
    tiers = {tier for tier in TIERS if item.get_closest_marker(tier) is not None}
    folder = _folder_tier(path)
    if folder is not None:
        tiers.add(folder)
    name = _NAME_KIND.match(getattr(item, "originalname", None) or item.name)
    if name is not None:
        tiers.add(name.group(1))
    else:
        module = getattr(item, "module", None)
        tiers |= module_kinds(getattr(module, "__doc__", None))
    return frozenset(tiers)


def mark_tiers(items: list[pytest.Item]) -> None:
    """Add each test's tier markers; fail on a module that names no kind."""
    unnamed: set[str] = set()
    for item in items:
        tiers = item_tiers(item)
        if not tiers:
            unnamed.add(str(Path(item.path).resolve().relative_to(TESTS.parent)))
        for tier in sorted(tiers):
            if item.get_closest_marker(tier) is None:
                item.add_marker(getattr(pytest.mark, tier))
    if unnamed:
        raise pytest.UsageError(
            "test modules whose docstring does not start with their kind (e.g. "
            f'"Contract tests: …" or "Process tests of …"; one of {", ".join(_KIND_WORDS)}): '
            + ", ".join(sorted(unnamed))
        )
