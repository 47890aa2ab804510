"""All async code and all I/O, in rooms that each import only the rooms below them.

From the top (the import-linter contract in ``pyproject.toml`` keeps the order):

- ``cli`` and ``mcp``: the two front ends (the MCP server runs the CLI as jobs);
- ``workflows``: consult, review rounds, verify-diff, audit, converge, and what they read;
- ``dispatcher``: the policy of asking reviewers (retries, fallback, deadlines, fan-out);
- ``sandbox``: what a reviewer may see and write;
- ``process``, ``sessions``, ``journal``: running one CLI; the sessions on record; the audit
  journal;
- ``handoff``: the checkout and its untrusted ``.review-handoff/`` tree;
- ``explain``, then ``log`` and ``std_streams``: what a person reads, structured
  diagnostics, review-loop's own standard streams.
"""
