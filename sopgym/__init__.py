"""sopgym: LLM agents executing Standard Operating Procedures against real HTTP tool services."""

__version__ = "0.1.0"
