"""Text from outside (task ids, imported file names, model names, answers, tool results) made
inert where it is shown: a terminal, a spreadsheet, a Markdown renderer.

A hostile agent or data file controls much of what sopgym prints and writes: an escape sequence
in a task id paints a fake green "TSR 100.0%" line on a terminal, a CSV cell starting ``=`` is a
formula to a spreadsheet, ``<img onerror=...>`` in a model name runs in a rendered dataset card.
Each writer passes such text through the one helper for its medium (docs/reliability.md).
"""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls (ESC, CR, backspace, ...) and DEL, plus the Unicode bidirectional
# overrides and isolates that reorder what a terminal shows (a "Trojan Source" line)
_BIDI = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")  # not \t, \n


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``text`` for one line of a terminal: every control character (newline and tab too)
    and bidirectional override written as its escape (``\\x1b``, ``\\u202e``), so that a value
    can neither start a line of its own nor colour, move or hide what follows."""
    return _CONTROL.sub(_escaped, str(text))


def printable_lines(text: str) -> str:
    """Like :func:`printable`, but newlines and tabs stay: for a whole message whose lines are
    ours (the console applies it to everything it prints)."""
    return _CONTROL_BUT_LINES.sub(_escaped, text)


# What a spreadsheet reads as the start of a formula (OWASP's list), or a DDE payload
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet evaluates: text starting with ``= + - @``, a tab or a
    carriage return gets a leading apostrophe (shown as text; the value is otherwise whole).
    Numbers are left alone: ``-3`` is a number, not a formula."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


# What can make Markdown text more than text: raw HTML (<), links and images ([ ]), a table
# cell's end (|), entities (&), code spans (`) and the escape itself
_MARKDOWN_SPECIAL = re.compile(r"([\\`<>\[\]|&])")


def markdown_text(value: object) -> str:
    """``value`` as literal Markdown text on one line: ``<img onerror=...>`` shows as typed, a
    ``|`` cannot end a table cell, ``[text](url)`` is no link; controls escaped as on a
    terminal."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable(value))


def markdown_code(value: object) -> str:
    """``value`` as one inline code span, whatever backticks it holds (CommonMark: a span
    fenced by more backticks than any run inside cannot be closed early)."""
    text = printable(value)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"
