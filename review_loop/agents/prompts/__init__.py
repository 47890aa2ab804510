"""Prompt templates shipped as package data; read with :func:`load_prompt`."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md`` (without a trailing newline).

    Read beside this file when the package is on disk; through ``importlib.resources``
    otherwise (a zip, another loader), whose import costs every reviewer command about
    1.5 ms of start-up (docs/performance.md).
    """
    try:
        text = (Path(__file__).parent / f"{name}.md").read_text(encoding="utf-8")
    except OSError:
        from importlib.resources import files

        text = files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    return text.rstrip("\n")


def consult_prompt(question: str) -> str:
    """The consult prompt: the role and answer shape, then the question framing."""
    return f"{load_prompt('consult')}\n\n--- question framing ---\n{question.strip()}\n"
