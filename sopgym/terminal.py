"""The command line's two consoles, set up once for every command.

Emoji codes are off: user text such as a model spec ``openai:x:`` or a path must print as
typed, not as a picture.
"""

from __future__ import annotations

from rich.console import Console

console = Console(stderr=True, emoji=False)
"""Progress, messages and errors: stderr, so that stdout carries only results."""


def stdout() -> Console:
    """Tables for stdout. Piped to a file or a CI log they keep their full width instead of the
    80 columns rich assumes off a terminal (a table is only as wide as its content)."""
    out = Console(emoji=False)
    return out if out.is_terminal else Console(emoji=False, width=160)
