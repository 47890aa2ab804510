"""``review-loop mcp``: the dispatcher's commands served over the Model Context Protocol.

The server (:mod:`.server`) runs on stdio. Every tool runs the real ``review-loop``
command as a job (:mod:`.jobs`): a child process owned by the server, so the command's own
argument checks, messages, JSON document, deadlines, fallback and signal handling are the
ones the CLI has, with nothing copied. See ``docs/mcp.md``.

Importing this package imports nothing of the ``mcp`` SDK; only :mod:`.server` does, and
only the ``mcp`` command imports it.
"""
