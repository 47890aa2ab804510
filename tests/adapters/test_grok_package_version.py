"""Contract tests: the npm grok's version is read from its installed package, the one
thing that tells it (its ``--help`` names none; its ``--version`` prints ``1.0.1``, a
constant of its source, in 0.0.34).

``doctor`` reads the file the adapter names (``tests/e2e/test_doctor_real.py`` against the
real CLI); here, which file and what is read from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from review_loop.adapters import get_adapter
from review_loop.adapters.base import package_file, package_version

GROK = get_adapter("grok")
PACKAGE = Path("/lib/node_modules/@vibe-kit/grok-cli")


def test_the_npm_grok_s_package_json_is_beside_its_dist_directory() -> None:
    assert package_file(GROK, PACKAGE / "dist" / "index.js") == PACKAGE / "package.json"
    # Grok Build's native executable (or anything else) names no package file
    assert package_file(GROK, Path("/home/u/.grok/bin/grok")) is None
    assert package_file(GROK, PACKAGE / "index.js") is None


def test_only_the_grok_cli_package_s_version_is_taken() -> None:
    own = {"name": "@vibe-kit/grok-cli", "version": "0.0.34", "bin": {"grok": "dist/index.js"}}
    assert package_version(GROK, json.dumps(own)) == "0.0.34"
    other = {**own, "name": "some-other-cli"}
    assert package_version(GROK, json.dumps(other)) is None
    assert package_version(GROK, json.dumps({**own, "version": 34})) is None
    assert package_version(GROK, "not json") is None


def test_an_adapter_without_the_hooks_names_no_file() -> None:
    codex = get_adapter("codex")
    assert package_file(codex, PACKAGE / "dist" / "index.js") is None
    assert package_version(codex, '{"name": "@vibe-kit/grok-cli", "version": "0.0.34"}') is None
