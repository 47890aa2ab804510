"""Contract tests of the prompt templates' loader (``review_loop.agents.prompts``).

``load_prompt`` reads a template beside the package when it is on disk (no
``importlib.resources`` on the start-up path) and through ``importlib.resources`` otherwise:
both give the very same text for every template shipped.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest

from review_loop.agents import prompts

NAMES = sorted(
    item.name.removesuffix(".md")
    for item in files(prompts.__name__).iterdir()
    if item.name.endswith(".md")
)


def resource_text(name: str) -> str:
    return files(prompts.__name__).joinpath(f"{name}.md").read_text(encoding="utf-8").rstrip("\n")


def test_contract_every_template_reads_as_importlib_resources_gives_it() -> None:
    assert "consult" in NAMES and len(NAMES) > 5
    prompts.load_prompt.cache_clear()
    for name in NAMES:
        assert prompts.load_prompt(name) == resource_text(name), name


def test_contract_a_package_not_on_disk_is_read_through_importlib_resources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the file beside the module cannot be read (a zip, another loader), the text
    comes from importlib.resources, unchanged."""
    read_text = Path.read_text
    refused: list[Path] = []

    def not_on_disk(self: Path, *args: object, **kwargs: object) -> str:
        if not refused:  # the loader's own read beside the module; not the resource's
            refused.append(self)
            raise NotADirectoryError(20, "inside a zip", str(self))
        return read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    prompts.load_prompt.cache_clear()
    monkeypatch.setattr(Path, "read_text", not_on_disk)
    try:
        assert prompts.load_prompt("consult") == resource_text("consult")
        assert refused == [Path(prompts.__file__).parent / "consult.md"]
    finally:
        prompts.load_prompt.cache_clear()
