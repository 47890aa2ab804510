"""Differential (contract) tests: spx's whole ``verification run`` surface, drop-in.

``golden/spx_surface/*.json`` hold the REAL spx's outputs (0.6.25 @ 5af72b12bb11, built as
:mod:`tests.differential.record_spx` says, node 20) on every scenario of
:mod:`tests.differential.spx_surface`: option forms, value cases, locators, payloads,
idempotency keys, ``finish`` forms. Recorded by ``python -m tests.differential.record_surface
--spx <spx/bin/spx.js>``. These tests play the same command lines through review-loop's
entry point and compare them exactly as :mod:`tests.differential.test_spx_drop_in` does
(:func:`~tests.differential.test_spx_drop_in.step_differences`). spx is not needed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.differential import spx_surface
from tests.differential.record_surface import SPX_GOLDEN
from tests.differential.spx_scenarios import Invoke, play
from tests.differential.test_spx_drop_in import review_loop, step_differences

__all__ = ["review_loop"]  # the fixture, shared with test_spx_drop_in


def _recorded(name: str) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads((SPX_GOLDEN / f"{name}.json").read_text())
    return recorded


def test_contract_every_surface_scenario_is_the_real_spx() -> None:
    assert sorted(p.stem for p in SPX_GOLDEN.glob("*.json")) == sorted(spx_surface.SCENARIOS)
    for name in spx_surface.SCENARIOS:
        recorded = _recorded(name)
        assert recorded["spx"] == "0.6.25" and "5af72b12bb11" in recorded["original"]


@pytest.mark.parametrize("scenario", sorted(spx_surface.SCENARIOS))
def test_contract_the_spx_surface(review_loop: Invoke, tmp_path: Path, scenario: str) -> None:
    theirs = _recorded(scenario)["steps"]
    ours = play(scenario, review_loop, tmp_path / "run", spx_surface.SCENARIOS)
    found = step_differences(scenario, theirs, ours)
    assert not found, "\n".join(found)
