"""End-to-end tests of ``scripts/try-real-cli``: a real CLI through review-loop against the
bundled fake model API, with no key, from any directory.

Claude's default consult comes back with the answer the fake API echoes; codex's review
round takes the scripted answer (``--reply``) and blocks on its finding; the temporary
directory is removed afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "try-real-cli"
HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
BLOCKED = (
    f"## Coverage\n- calc.py\n\n## Findings\n\n{HEADER}\n"
    "| F1 | [阻塞] | no test | calc.py:2 changed, untested | calc.py | add a test "
    "| total([1, 2]) == 3 |\n\nVerdict: BLOCKED"
)


def _try(tmp_path: Path, cli_bin: Any, product: str, *args: str) -> tuple[int, Any, str]:
    env = {**os.environ, "REVIEW_LOOP_E2E_BIN": str(Path(cli_bin(product)).parent)}
    env["TMPDIR"] = str(tmp_path)  # where its throw-away directory is made (and removed)
    ran = subprocess.run(
        [str(SCRIPT), product, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    document = json.loads(ran.stdout) if ran.stdout.strip() else None
    return ran.returncode, document, ran.stderr


def test_try_real_claude_consult_answers_through_the_fake_model_api(
    tmp_path: Path, cli_bin: Any
) -> None:
    code, document, stderr = _try(tmp_path, cli_bin, "claude")
    assert code == 0, stderr
    assert document["ok"] is True and document["product"] == "claude"
    assert document["text"] == "claude answered through review-loop, via the fake model API"
    assert "fake model API at http://127.0.0.1:" in stderr
    assert not list(tmp_path.glob("review-loop-try-*"))  # removed at exit


def test_try_real_codex_review_round_takes_the_scripted_answer(
    tmp_path: Path, cli_bin: Any
) -> None:
    code, document, stderr = _try(
        tmp_path, cli_bin, "codex", "--reply", BLOCKED, "--", "run", "--reviewer", "codex"
    )
    assert code == 0, stderr
    assert document["status"] == "blocked" and document["openBlocking"] == ["F1"], document
