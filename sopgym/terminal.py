"""The command line's two consoles, set up once for every command.

Emoji codes are off: user text such as a model spec ``openai:x:`` or a path must print as
typed, not as a picture. Off a terminal (piped to a file, a CI log) rich would cut every table
to 80 columns; there the consoles are wider, and a table is still only as wide as its content.
"""

from __future__ import annotations

from rich.console import Console

PIPED_WIDTH = 160


def _console(stderr: bool) -> Console:
    console = Console(stderr=stderr, emoji=False)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, emoji=False, width=PIPED_WIDTH)


console = _console(stderr=True)
"""Progress, messages, errors and headline tables: stderr, so that stdout carries only data."""


def stdout() -> Console:
    """Tables that are the command's result (``sopgym list``, the run summary): stdout."""
    return _console(stderr=False)
