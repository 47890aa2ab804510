"""What ``sessions`` lists.

- :mod:`.listing`: the resumable reviewer sessions on record, newest first;
- :mod:`.records`: one session record read as untrusted input, by its exact JSON types;
- :mod:`.resume`: the read-only resume command of a session.
"""
