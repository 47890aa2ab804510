"""The words that ask for a person's help or the version, on any command line.

Read by the entry (``cli/__init__.py``), which imports the help pages (``cli/manual.py``)
only when one of them is on the command line, and by the help pages themselves.
"""

from __future__ import annotations

HELP_FLAGS = ("-h", "--help")
VERSION_FLAGS = ("-V", "--version")
