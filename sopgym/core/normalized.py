"""The normalised form of an output value, as the scorers compare answers and arguments: case,
spacing and number formatting do not matter. Here, below every layer, because the tracing
digests arguments by it and the scripted model reads answers by it, not only the scorers
(:mod:`sopgym.evaluation.scorers.fields`)."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

# The first character of any text float() may take (after stripping, case-folded): a
# sign, a digit, a point, or inf / infinity / nan. Other text is no number, and is known so
# without the cost of float()'s refusal (an exception), which scoring meets on every word.
_NUMBER_START = frozenset("+-.0123456789in")


def normalize(value: Any) -> Any:
    """Case-, whitespace- and number-format-insensitive form of an output value.

    Lists compare as multisets (sorted), so this is no rule for ordered data such as a graph's
    directed edges (see :mod:`.graph`).
    """
    kind = value.__class__  # exact types first: scoring calls this on every value it compares
    if kind is str:
        return _normalized_text(value)
    if kind is bool or value is None:
        return value
    if kind is int or kind is float:
        return float(value)
    if kind is dict:  # most values are text: normalised here without a call through normalize
        return {
            str(k).casefold(): _normalized_text(v) if v.__class__ is str else normalize(v)
            for k, v in value.items()
        }
    if kind is list:
        return sorted([normalize(v) for v in value], key=repr)
    # subclasses of the JSON types (and tuples) take the same rules, checked the slow way
    if isinstance(value, str):
        return _normalized_text(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return sorted([normalize(v) for v in value], key=repr)
    if isinstance(value, dict):
        return {str(k).casefold(): normalize(v) for k, v in value.items()}
    return value


# Memoised: scoring compares the same words and numbers (enum values, names, ids) over and
# over, across the calls and answers of every episode; a cache hit costs a tenth of the work.
@lru_cache(maxsize=1 << 16)
def _normalized_text(value: str) -> Any:
    text = " ".join(value.split()).casefold()  # str.split(): the whitespace \s matches
    if text == "true" or text == "false":
        return text == "true"
    digits = text.replace(",", "")
    if not digits or digits[0] not in _NUMBER_START:
        return text
    try:
        number = float(digits)
    except ValueError:
        return text
    return number if math.isfinite(number) else text
