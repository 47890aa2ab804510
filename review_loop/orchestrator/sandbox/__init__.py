"""What a reviewer may see and write.

- :mod:`.reviewer`: the private mount namespace every reviewer runs in (secrets covered);
- :mod:`.isolation`: the throw-away copy and the read-only file system;
- :mod:`.wrapper`: the script that sets the namespace up, then execs the CLI;
- :mod:`.masking`: the repository's CLI configuration hidden from the reviewer;
- :mod:`.user_config`: the environment names the user's own CLI configuration needs.
"""
