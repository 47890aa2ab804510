"""Run one reviewer CLI and end everything it started.

- :mod:`.run`: ``run_process`` (its invariants written once) and the warm supervisor pool;
- :mod:`.subreaper`: the per-session supervisor, a child subreaper run as a stdlib-only script;
- :mod:`.capture`: stdout and stderr kept whole, spilled to ``$TMPDIR`` and bounded;
- :mod:`.procfs`: what ``/proc`` says about a process (start ticks, children, boot id);
- :mod:`.environment`: the allow-listed environment a reviewer gets;
- :mod:`.reaper`: ends what a killed earlier run left behind;
- :mod:`.shielded`: cleanup that a repeated cancel cannot interrupt.
"""
