"""Contract test of the source's shape: no function in ``review_loop/`` is over 80 lines.

A function's size is its lines from ``def`` to its last line, its docstring left out;
functions nested in it count towards it and are measured on their own as well. A longer
function is a wall of steps: split it into named steps that read as the workflow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import review_loop

MAX_LINES = 80


def _size(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def long_functions(root: Path, limit: int = MAX_LINES) -> list[tuple[str, str, int]]:
    """``(file, function, lines)`` for every function under ``root`` over ``limit``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = _size(node)
                if size > limit:
                    found.append((str(path.relative_to(root.parent)), node.name, size))
    return found


def test_no_function_is_over_80_lines() -> None:
    root = Path(review_loop.__file__).parent
    over = long_functions(root)
    assert over == [], f"functions over {MAX_LINES} lines (split them into named steps): {over}"


def test_the_measure_counts_nested_functions_and_leaves_the_docstring_out(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    body = "".join(f"        x{i} = {i}\n" for i in range(79))
    (package / "m.py").write_text(
        f'def outer():\n    """Doc\n\n    more doc.\n    """\n    def inner():\n{body}'
        "    return inner\n"
    )
    # outer: def + def inner + 79 + return = 82 lines without its 4-line docstring;
    # inner: def + 79 = 80, at the limit
    assert long_functions(package) == [("pkg/m.py", "outer", 82)]
