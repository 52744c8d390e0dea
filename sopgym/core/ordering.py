"""The order names are shown in: numbers inside a name compare as numbers, so scenarios,
domains and task ids read ``l1, l2, ..., l10`` rather than ``l1, l10, l2``."""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``name`` split into text and numbers, each number compared by value (a text part
    sorts before a number part at the same place, so every key compares)."""
    return tuple(
        (1, int(part)) if part.isdigit() else (0, part)
        for part in _DIGITS.split(name)
        if part
    )
