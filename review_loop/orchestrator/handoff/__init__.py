"""The checkout and its untrusted ``.review-handoff/`` tree.

- :mod:`.git` and :mod:`.git_lockdown`: git run with nothing of the repository's executed;
- :mod:`.files`: writes that are whole or absent and never follow a link;
- :mod:`.tree_files`: reads of the reviewed tree that never leave it;
- :mod:`.input_files`: the files a caller names, bounded;
- :mod:`.state_auth`, :mod:`.trust`, :mod:`.committed`: what may be trusted, and the proof;
- :mod:`.recording`, :mod:`.unfinished`, :mod:`.json_text`: records and their index.
"""
