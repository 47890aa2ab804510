"""The roles and their contracts: request/reply models, prompts, parsers, errors. Pure."""
