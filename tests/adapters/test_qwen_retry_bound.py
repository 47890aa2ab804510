"""Contract tests: every Qwen Code run gets review-loop's system defaults that bound a
refused request, and never the caller's switch for retrying a 429 without a count.

qwen silently ignores a missing defaults file and then retries a 429 past the deadline
(``tests/e2e/test_refusals_new_clis_real.py``), so what the file must say is checked here.
"""

from __future__ import annotations

import json
from pathlib import Path

from review_loop.adapters import get_adapter
from review_loop.agents.models import AgentRequest, Capabilities, Invocation
from review_loop.orchestrator.process.environment import child_environment

DEFAULTS = Path(__file__).parents[2] / "review_loop" / "adapters" / "qwen_defaults.json"
REPO = Path("/repo")


def build() -> Invocation:
    request = AgentRequest(prompt="review", cwd=REPO)
    return get_adapter("qwen").build(request, command=("qwen",), capabilities=Capabilities())


def test_every_run_gets_the_system_defaults_that_bound_a_429() -> None:
    assert build().env == {"QWEN_CODE_SYSTEM_DEFAULTS_PATH": str(DEFAULTS)}
    settings = json.loads(DEFAULTS.read_text())
    # no restart of a refused attempt after qwen's own seven tries
    assert settings["model"]["generationConfig"] == {"maxRetries": 0}
    # qwen 0.24's settings version: an older or missing one makes qwen rewrite the file
    assert settings["$version"] == 4
    assert set(settings) == {"$version", "model"}


def test_the_unattended_retry_switch_never_reaches_qwen() -> None:
    invocation = build()
    caller = {
        "PATH": "/usr/bin",
        "QWEN_CODE_UNATTENDED_RETRY": "true",
        "QWEN_HOME": "/home/u/.qwen",
        "REVIEW_LOOP_ENV_PASSTHROUGH": "QWEN_CODE_UNATTENDED_RETRY",
    }
    adapter = get_adapter("qwen")
    seen = child_environment(
        Invocation(
            argv=invocation.argv,
            cwd=REPO,
            env=invocation.env,
            unset_env=invocation.unset_env,
            pass_env=adapter.env_passthrough,
        ),
        {},
        caller,
    )
    assert "QWEN_CODE_UNATTENDED_RETRY" not in seen  # even when the user names it
    assert seen["QWEN_HOME"] == "/home/u/.qwen"  # the prefix still passes qwen's own
    assert seen["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] == str(DEFAULTS)
