"""The MCP tier reuses the fault tier's world: a tagged environment, fake CLIs, a repo.

Every process a test starts (the server, its jobs, the fake reviewers and whatever they
spawn) carries the test's tag, so the scanner finds survivors wherever they went, and the
fixture fails the test (and kills them by pid) if any is left.
"""

from tests.faults.conftest import env, fakes, repo, scanner

__all__ = ["env", "fakes", "repo", "scanner"]
