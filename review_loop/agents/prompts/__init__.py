"""Prompt templates shipped as package data; read with :func:`load_prompt`."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md`` (without a trailing newline)."""
    return files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8").rstrip("\n")


def consult_prompt(question: str) -> str:
    """The consult prompt: the role and answer shape, then the question framing."""
    return f"{load_prompt('consult')}\n\n--- question framing ---\n{question.strip()}\n"
