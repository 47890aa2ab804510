"""Test doubles of the outside world: fake reviewer CLIs, (in model_api) a fake model API and
(in runner) a fake runner under the dispatcher, without a process."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
PRODUCTS = ("claude", "codex", "gemini", "grok")
PASSTHROUGH_ENV = "REVIEW_LOOP_ENV_PASSTHROUGH"
"""The caller's list of extra variable names reviewers may see (review-loop drops the rest)."""
FAKE_ENV_NAMES = (
    "FAKE_AGENT_SCRIPT",
    "FAKE_AGENT_LOG",
    "FAKE_GROK_VARIANT",
    "FAKE_AGENT_VERSION",
    "FAKE_AGENT_HELP_DROP",
    "FAKE_AGENT_HELP_EXIT",
    "FAKE_AGENT_PROBE_LOG",
)
"""What the fake CLIs read from their environment; the tests, as the user, pass them on."""


def pass_through(env: dict[str, str], *names: str) -> dict[str, str]:
    """Add ``names`` to ``env``'s ``REVIEW_LOOP_ENV_PASSTHROUGH`` (kept: what is there)."""
    listed = env.get(PASSTHROUGH_ENV, "").replace(",", " ").split()
    env[PASSTHROUGH_ENV] = " ".join(dict.fromkeys([*listed, *names]))
    return env


def install_fake_clis(bin_dir: Path, products: tuple[str, ...] = PRODUCTS) -> Path:
    """Write executables named after ``products`` into ``bin_dir`` that run the fake agent.

    Each imports the fake agent as a module, from its bytecode cache, without ``site``
    (``-S``: it needs the standard library only): the fakes answer thousands of calls in a
    run, and compiling the agent's source and processing ``site`` on each call cost a
    quarter of its CPU (52 ms a call, 38 ms now).
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    for product in products:
        exe = bin_dir / product
        exe.write_text(
            f"#!{sys.executable} -S\n"
            "import sys\n"
            f"sys.argv[0] = {str(FAKE_AGENT)!r}\n"
            f"sys.path[0] = {str(FAKE_AGENT.parent)!r}\n"
            "import fake_agent\n"
            f"sys.exit(fake_agent.main({product!r}))\n"
        )
        exe.chmod(0o755)
    return bin_dir


class FakeCLIs:
    """Fake CLIs on a PATH, a script of their answers, and the log of their calls."""

    def __init__(self, root: Path, products: tuple[str, ...] = PRODUCTS) -> None:
        self.root = root
        self.bin = install_fake_clis(root / "bin", products)
        self.script_path = root / "script.json"
        self.log_path = root / "calls.jsonl"

    def env(self, base: dict[str, str] | None = None, *, path_only: bool = False) -> dict[str, str]:
        """Environment with the fakes first on PATH (or only the fakes and system dirs).

        The fakes' own variables are listed in ``REVIEW_LOOP_ENV_PASSTHROUGH``, so that
        review-loop, which gives reviewers an allow-listed environment, passes them on.
        """
        env = dict(os.environ if base is None else base)
        rest = "/usr/bin:/bin" if path_only else env.get("PATH", "")
        env["PATH"] = f"{self.bin}:{rest}"
        env["FAKE_AGENT_SCRIPT"] = str(self.script_path)
        env["FAKE_AGENT_LOG"] = str(self.log_path)
        return pass_through(env, *FAKE_ENV_NAMES)

    def script(self, **steps: list[dict[str, Any]]) -> None:
        """Set the steps per product (``claude=[{"mode": "hang"}]``); ``any_`` means ``*``."""
        data = {("*" if k == "any_" else k): v for k, v in steps.items()}
        self.script_path.write_text(json.dumps(data))
        for counter in self.root.glob("script.json.*.count"):
            counter.unlink()

    def calls(self) -> list[dict[str, Any]]:
        """Every logged invocation, in order."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]
