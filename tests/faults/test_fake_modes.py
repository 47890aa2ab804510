"""Process tests of the fakes themselves: the rows' grandchildren and helpers really exist.

In a row where a CLI answers, its grandchild or helper may already have been ended with
its session (that is the point), so the rows cannot prove it was ever there. These tests
run the fake CLI directly, without review-loop, and see what it leaves behind.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import SLEEPER, WAIT_S, Scanner, wait_until


@pytest.mark.parametrize(
    ("step", "own_session"),
    [({"mode": "grandchild"}, False), ({"mode": "ok-leaving", "leave": ["detached"]}, True)],
    ids=["grandchild", "detached-helper"],
)
def test_process_fake_that_answers_leaves_a_process_behind(
    step: dict[str, Any], own_session: bool, tmp_path: Path, fakes: FakeCLIs, scanner: Scanner
) -> None:
    fakes.script(codex=[{**step, "text": "done"}])
    output = tmp_path / "stdout"
    with output.open("w") as sink:  # a file, not a pipe: a grandchild holding it blocks no one
        done = subprocess.run(
            [str(fakes.bin / "codex"), "exec", "--json", "-"],
            input="question",
            stdout=sink,
            text=True,
            env=fakes.env(),
            timeout=WAIT_S,
            start_new_session=True,
        )
    assert done.returncode == 0 and "done" in output.read_text()
    helpers = wait_until(
        f"the process left by {step}",
        lambda: [p for p in scanner.tagged() if SLEEPER in " ".join(p.cmdline())],
    )
    assert len(helpers) == 1
    helper = helpers[0]
    # the grandchild stays in the CLI's session; the helper has left it (setsid)
    assert (os.getsid(helper.pid) == helper.pid) is own_session
    helper.kill()
    helper.wait(timeout=WAIT_S)
