"""Contract test of ``base.shell_join``: exactly ``shlex.join``, remembered quoting or not.

``sessions`` quotes four commands per session, so each word's quoting is remembered; the
text must stay ``shlex.join``'s for any words, asked once or many times.
"""

from __future__ import annotations

import random
import shlex

import pytest

from review_loop.adapters.base import shell_join

PIECES = ["", "a", "-p", "--x=1", "a b", "'", '"', "$HOME", "é", "\n", "*", "~", "{}", "a'b"]


@pytest.mark.parametrize("seed", range(5))
def test_contract_shell_join_is_shlex_join(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        words = ["".join(rng.choices(PIECES, k=rng.randrange(3))) for _ in range(rng.randrange(6))]
        assert shell_join(words) == shlex.join(words)
        assert shell_join(tuple(words)) == shlex.join(words)  # asked again: remembered
