"""Contract tests of the test tiers (``tests/tiers.py``): what marks each test, once.

A test takes its kind from its name's prefix, else from its module docstring's first line,
and its folder's tier on top; every tier is a marker registered in ``pyproject.toml``.
"""

from __future__ import annotations

import tomllib

import pytest

from tests.tiers import FOLDER_TIERS, TESTS, TIERS, item_tiers, module_kinds


@pytest.mark.parametrize(
    ("first_line", "kinds"),
    [
        ("Contract tests: the adapter.", {"contract"}),
        ("Contract test of ``base.shell_join``.", {"contract"}),
        ("Contract: ``files.iso_utc`` prints what datetime prints.", {"contract"}),
        ("Unit tests: the Codex adapter.", {"contract"}),
        ("Process and contract tests of supervisors.", {"process", "contract"}),
        (
            "Contract, process and collaboration tests: isolation.",
            {"contract", "process", "collaboration"},
        ),
        ("Collaboration tests through the command line.", {"collaboration"}),
        ("End-to-end: the real npm grok.", {"e2e"}),
        ("End to end: the real claude CLI.", {"e2e"}),
        ("Differential (contract) tests: a drop-in.", {"differential"}),
        # a kind named later in the line is prose, not the module's declared kind
        ("The review run end to end: against fake reviewer CLIs.", set()),
        ("The stop contract around the matrix.", set()),
        ("Contractual obligations.", set()),
        ("", set()),
    ],
)
def test_a_module_s_kinds_are_the_ones_its_docstring_starts_with(
    first_line: str, kinds: set[str]
) -> None:
    assert module_kinds(f"{first_line}\n\nMore text: process tests too.") == kinds


def test_contract_a_test_named_by_its_kind_is_that_kind(request: pytest.FixtureRequest) -> None:
    assert item_tiers(request.node) == {"contract"}


def test_process_a_kind_prefix_overrides_the_module_s_kind(request: pytest.FixtureRequest) -> None:
    assert item_tiers(request.node) == {"process"}
    assert request.node.get_closest_marker("process") is not None
    assert request.node.get_closest_marker("contract") is None


def test_an_unprefixed_test_takes_its_module_s_kind(request: pytest.FixtureRequest) -> None:
    assert item_tiers(request.node) == {"contract"}
    assert request.node.get_closest_marker("contract") is not None


def test_every_tier_is_a_registered_marker_and_every_tier_folder_exists() -> None:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    registered = {line.split(":", 1)[0] for line in markers}
    assert set(TIERS) <= registered
    assert "--strict-markers" in config["tool"]["pytest"]["ini_options"]["addopts"]
    assert all((TESTS / folder).is_dir() for folder in FOLDER_TIERS)
    assert set(FOLDER_TIERS.values()) <= set(TIERS)
