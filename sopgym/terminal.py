"""The command line's two consoles, set up once for every command.

Emoji codes are off: user text such as a model spec ``openai:x:`` or a path must print as
typed, not as a picture. Off a terminal (piped to a file, a CI log) rich would cut every table
to 80 columns; there the consoles are wider (``COLUMNS`` when it is set), and a table is still
only as wide as its content. Tables go through :func:`print_table`, which never cuts a number
or a state: a table too wide for the console is folded into several.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import Any

import click
from rich.cells import cell_len
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from sopgym.core.untrusted import printable_lines

PIPED_WIDTH = 160


class SafeConsole(Console):
    """A console that shows control characters as escapes (``\x1b``) in every string it is
    given, table cells included: a task id, file name or answer holding an escape sequence
    cannot colour, move or hide what the terminal shows (a fake green "TSR 100.0%" line).
    Newlines and tabs stay, as our messages use them: a value that must stay on its line goes
    through :func:`~sopgym.core.untrusted.printable` first."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable_lines(text), **options)


def echo(message: str, err: bool = False) -> None:
    """``click.echo`` for the commands that print plain lines: the same escaping."""
    click.echo(printable_lines(message), err=err)


def _console(stderr: bool) -> Console:
    console = SafeConsole(stderr=stderr, emoji=False)
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")  # a width asked for: kept off a terminal too
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return SafeConsole(stderr=stderr, emoji=False, width=width)


console = _console(stderr=True)
"""Progress, messages, errors and headline tables: stderr, so that stdout carries only data."""


def stdout() -> Console:
    """Tables that are the command's result (``sopgym list``, the run summary): stdout."""
    return _console(stderr=False)


# what a rich table with its default box spends outside its cells: one border and two
# padding spaces per column, one border at the end
_COLUMN_FRAME, _TABLE_FRAME = 3, 1
FOLDED_WIDTH = 12  # the least width of a foldable column


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def print_table(
    target: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Collection[int] = (),
    foldable: Collection[int] = (),
    title: str | None = None,
    keys: int = 1,
) -> None:
    """A table that never cuts a cell: a number (a ``numeric`` column) or a word (a state, a
    name) is never shortened with ``…``; text wraps at its spaces, headers too, and in the
    ``foldable`` columns (lists of names, free text) a word longer than the column goes on
    over the next line. When the columns do not fit the console's width even so, the table
    is folded: printed as several tables, each repeating the first ``keys`` columns, with as
    many of the others as fit."""
    cells = [[str(row[index]) for row in rows] for index in range(len(headers))]
    natural = [
        max([cell_len(headers[i]), *(cell_len(c) for c in cells[i])]) for i in range(len(headers))
    ]
    needed = [
        natural[i]
        if i in numeric
        else max([1, _longest_word(headers[i]), *(_longest_word(c) for c in cells[i])])
        for i in range(len(headers))
    ]
    needed = [min(w, FOLDED_WIDTH) if i in foldable else w for i, w in enumerate(needed)]
    framed = [width + _COLUMN_FRAME for width in needed]
    room = target.width - _TABLE_FRAME - sum(framed[:keys])
    groups: list[list[int]] = []
    for index in range(keys, len(headers)):
        if groups and sum(framed[i] for i in groups[-1]) + framed[index] <= room:
            groups[-1].append(index)
        else:
            groups.append([index])
    for number, group in enumerate(groups or [[]]):
        shown = [*range(keys), *group]
        space = target.width - _TABLE_FRAME - _COLUMN_FRAME * len(shown)
        widths = _spread([needed[i] for i in shown], [natural[i] for i in shown], space)
        table = Table(
            *(
                Column(
                    headers[i],
                    justify="right" if i in numeric else "left",
                    width=width,
                    overflow="fold",
                )
                for i, width in zip(shown, widths, strict=True)
            ),
            title=title if number == 0 else f"{title or ''} (continued)".lstrip(),
        )
        for row in rows:
            table.add_row(*(Text(str(row[i])) for i in shown))  # as written: no markup
        target.print(table)


def _spread(needed: list[int], natural: list[int], space: int) -> list[int]:
    """Column widths from each one's least (its longest word) towards its natural width,
    the ``space`` left shared evenly, the columns that want least served first."""
    widths = list(needed)
    extra = space - sum(widths)
    wanting = sorted(range(len(widths)), key=lambda i: natural[i] - needed[i])
    for done, index in enumerate(wanting):
        give = max(0, min(natural[index] - widths[index], extra // (len(wanting) - done)))
        widths[index] += give
        extra -= give
    return widths


FAULT_SPLIT_CAVEAT = (
    "a split, not the faults' cost: longer episodes meet more faults; for the cost, run the "
    "same seed without --faults and `sopgym compare` the two runs"
)
