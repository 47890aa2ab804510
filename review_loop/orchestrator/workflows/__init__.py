"""The review workflows, each a client of the dispatcher (and the journal), not of each other."""
