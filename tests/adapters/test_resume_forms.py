"""Contract test of ``_common.ResumeForms``: exactly ``shlex.join`` of the command's words.

``sessions`` writes four resume commands per session, quoted once per launcher with the
session id put in its place; the text must stay ``shlex.join``'s for any launcher, words
and id, asked once or many times.
"""

from __future__ import annotations

import random
import shlex

import pytest

from review_loop.adapters._common import SESSION_ID, ResumeForms, ResumeWords
from review_loop.agents.models import ReadOnlyResume, ResumeCommands

PIECES = ["", "a", "-p", "--x=1", "a b", "'", '"', "$HOME", "é", "\n", "*", "~", "{}", "a'b"]


def _words(rng: random.Random) -> list[str]:
    return ["".join(rng.choices(PIECES, k=rng.randrange(3))) for _ in range(rng.randrange(4))]


def _form(rng: random.Random) -> ResumeWords:
    return (*_words(rng), SESSION_ID, *_words(rng))


def _joined(launcher: list[str], form: ResumeWords, session_id: str) -> str:
    return shlex.join([*launcher, *(w if isinstance(w, str) else session_id for w in form)])


@pytest.mark.parametrize("seed", range(5))
def test_contract_resume_forms_are_shlex_join(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        forms = [_form(rng) for _ in range(4)]
        lead = rng.choice(["", "A=1 B='x y'"])
        resume = ResumeForms(
            forms[0], forms[1], read_only=(forms[2], forms[3]), read_only_lead=lead
        )
        for _ in range(3):  # one launcher asked again: its quoting is remembered
            launcher = rng.choice([[], ["tool"], ["my tool", "--x", "a'b"]])
            session_id = "".join(rng.choices(PIECES, k=rng.randrange(1, 4)))
            shown = launcher or ["peer"]
            ro = f"{lead} " if lead else ""
            assert resume.commands(session_id, launcher, "peer") == ResumeCommands(
                _joined(shown, forms[0], session_id),
                _joined(shown, forms[1], session_id) + ' "<prompt>"',
                ReadOnlyResume(
                    ro + _joined(shown, forms[2], session_id),
                    ro + _joined(shown, forms[3], session_id) + ' "<prompt>"',
                ),
            )


@pytest.mark.parametrize("form", [("resume",), ("resume", SESSION_ID, SESSION_ID)])
def test_contract_a_resume_form_holds_the_session_id_once(form: ResumeWords) -> None:
    with pytest.raises(ValueError, match="holds the session id once"):
        ResumeForms(form, ("x", SESSION_ID), read_only=(("x", SESSION_ID), ("x", SESSION_ID)))
    with pytest.raises(ValueError, match="holds the session id once"):
        ResumeForms(("x", SESSION_ID), ("x", SESSION_ID), read_only=(("x", SESSION_ID), form))
