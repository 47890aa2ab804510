"""Contract test: importing an adapter compiles none of its patterns (``docs/performance.md``).

``sessions`` imports every built-in adapter to read its CLI's store and matches almost none
of their patterns; they are strings, compiled by ``re`` on first use (its cache). The test
counts the ``re.compile`` calls made by the adapters' own modules while a fresh interpreter
imports them all.
"""

from __future__ import annotations

import json
import subprocess
import sys

from review_loop.adapters.registry import BUILTINS

PROBE = """
import json, re, sys
compiled = []
original = re.compile
def counting(pattern, flags=0):
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if caller.startswith("review_loop."):
        compiled.append(caller)
    return original(pattern, flags)
re.compile = counting
import importlib
for target in json.loads(sys.argv[1]):
    importlib.import_module(target.partition(":")[0])
print(json.dumps(compiled))
"""


def test_contract_importing_every_builtin_adapter_compiles_no_pattern() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(BUILTINS.values()))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == []
