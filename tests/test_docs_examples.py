"""Contract test: the embedding examples in the docs are programs ``mypy --strict`` passes.

Every ```` ```python ```` block of the documents below is written out as a module of its own
and type-checked, with the package as a user installs it, in one ``mypy --strict`` run. An
example that stops type-checking (``delivery.reply.text`` without narrowing ``reply``, an
internal type where the public one is expected) fails here, naming the document and block.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("docs/embedding.md", "docs/process-ownership.md", "docs/mcp.md", "README.md")
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(document: str) -> list[str]:
    """The ```` ```python ```` blocks of ``document`` (a path under the repository)."""
    return _BLOCK.findall((ROOT / document).read_text(encoding="utf-8"))


def test_contract_the_blocks_are_found() -> None:
    assert len(python_blocks("docs/embedding.md")) >= 3
    assert len(python_blocks("docs/process-ownership.md")) >= 1


def test_contract_every_python_example_passes_mypy_strict(tmp_path: Path) -> None:
    files: list[str] = []
    for document in DOCUMENTS:
        stem = re.sub(r"\W", "_", document.removesuffix(".md"))
        for number, code in enumerate(python_blocks(document), start=1):
            path = tmp_path / f"{stem}_block{number}.py"
            path.write_text(code, encoding="utf-8")
            files.append(str(path))
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), *files],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"no issues found in {len(files)} source files" in ran.stdout, ran.stdout
