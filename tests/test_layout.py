"""Contract tests of the package itself: the public API and where imports resolve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import review_loop

ROOT = Path(__file__).resolve().parents[1]


def test_public_api_is_sorted_and_complete() -> None:
    assert review_loop.__all__ == sorted(review_loop.__all__)
    for name in review_loop.__all__:
        assert getattr(review_loop, name) is not None


def test_package_resolves_inside_this_repository() -> None:
    assert Path(review_loop.__file__).resolve().is_relative_to(ROOT)


def test_cli_start_up_does_not_import_the_dispatcher_for_light_commands() -> None:
    """``help`` and ``sessions`` must not pay for anyio or the dispatcher (start-up cost)."""
    code = (
        "import sys\n"
        "from review_loop.orchestrator.cli import run\n"
        "run(['help'], stdout=lambda _: None)\n"
        "print(','.join(m for m in ('anyio', 'review_loop.orchestrator.dispatcher', 'psutil') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_tests_never_see_the_real_home() -> None:
    """Every test runs with a throw-away HOME (tests/conftest.py), so nothing a test starts
    can write into the user's real home directory."""
    import os
    import pwd

    real = pwd.getpwuid(os.getuid()).pw_dir
    home = Path(os.environ["HOME"])
    assert home != Path(real) and not Path(real).is_relative_to(home)
    assert home.is_dir() and list(home.iterdir()) == []
