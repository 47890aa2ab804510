"""All async code and all I/O: supervised processes, the dispatcher, records, workflows, CLI."""
