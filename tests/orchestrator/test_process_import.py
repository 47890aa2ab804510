"""Process test: the process layer defines its classes without compiling code.

``@dataclass`` writes and compiles each class's methods with ``exec`` when the class is
defined (about 0.45 ms a class), on every reviewer command's start. The process layer's
classes are plain slotted classes, or ``@frozen_dataclass`` (``Started``): an audit hook
sees no dataclass method compiled while the layer is imported.
"""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import anyio, anyio.abc, anyio.lowlevel, pathlib, subprocess
import review_loop.agents.frozen_dataclass, review_loop.agents.models
compiled = []
sys.addaudithook(lambda event, args: event == "compile" and compiled.append(args[0]))
assert "review_loop.orchestrator.process" not in sys.modules  # imported here, watched
import review_loop.orchestrator.process
print([source for source in compiled if b"__create_fn__" in source])
"""


def test_process_the_process_layer_compiles_no_dataclass_method_at_import() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, check=True, text=True)
    assert done.stdout.strip() == "[]"
