"""Reading JSON out of model text: fenced, tagged, trailed by prose, or written Python-style.

Models rarely emit a clean JSON document. Every agent (final answers, ReAct action inputs,
plans) and the scripted model server (reading a conversation back) go through these helpers,
so "what counts as a JSON object in a reply" is decided in exactly one place.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

import orjson

from sopgym.core.exceptions import DataError

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_JSON_WORDS = {"true": "True", "false": "False", "null": "None"}


class LooseJSONError(DataError, ValueError):
    """The text holds no object we could read; the message says why, for the model to see."""


def strip_fences(text: str) -> str:
    """The body of the first code fence, or the text itself when it has none."""
    match = _FENCE.search(text)
    return match.group(2).strip() if match else text.strip()


def balanced_spans(text: str, opener: str = "{") -> Iterator[tuple[int, int]]:
    """(start, end) of every top-level balanced ``{...}`` (or ``[...]``) span, in order.

    Quotes of both kinds are honoured so braces inside strings do not count; an unbalanced
    tail is simply not yielded.
    """
    closer = "}" if opener == "{" else "]"
    depth, start, quote, escaped = 0, -1, "", False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "\"'" and depth > 0:
            quote = char
        elif char == opener:
            if depth == 0:
                start = i
            depth += 1
        elif char == closer and depth > 0:
            depth -= 1
            if depth == 0:
                yield start, i + 1


def _python_style(text: str) -> Any:
    """Parse single-quoted / Python-literal objects (``{'a': True}``), JSON words allowed."""
    out: list[str] = []
    quote, escaped = "", False
    word: list[str] = []

    def flush() -> None:
        if word:
            token = "".join(word)
            out.append(_JSON_WORDS.get(token, token))
            word.clear()

    for char in text:
        if quote:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char.isalpha() or char == "_":
            word.append(char)
            continue
        flush()
        if char in "\"'":
            quote = char
        out.append(char)
    flush()
    return ast.literal_eval("".join(out))


def loads_loose(text: str) -> Any:
    """Parse one JSON value leniently: strict JSON first, then the usual model deviations."""
    candidate = text.strip()
    try:
        return orjson.loads(candidate)
    except orjson.JSONDecodeError:
        pass
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        return orjson.loads(repaired)
    except orjson.JSONDecodeError:
        pass
    try:
        return _python_style(repaired)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as error:
        raise LooseJSONError(f"not valid JSON: {error}") from None


def iter_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every readable top-level JSON object in ``text``, in order of appearance."""
    for start, end in balanced_spans(text):
        try:
            value = loads_loose(text[start:end])
        except LooseJSONError:
            continue
        if isinstance(value, dict):
            yield value


def parse_object(text: str) -> dict[str, Any]:
    """The JSON object a reply means: fenced or bare, followed by prose or not.

    Raises :class:`LooseJSONError` with a short reason when there is none.
    """
    body = strip_fences(text)
    if not body:
        raise LooseJSONError("expected a JSON object, got nothing")
    try:
        value = loads_loose(body)
    except LooseJSONError:
        value = next(iter_objects(body), None)
        if value is None:
            raise LooseJSONError(f"expected a JSON object, got: {_preview(body)}") from None
    if not isinstance(value, dict):
        raise LooseJSONError(f"expected a JSON object, got {type(value).__name__}")
    return value


def parse_array(text: str) -> list[Any]:
    """The JSON array a reply means (e.g. a plan), fenced or bare; an object with a single
    list value (``{"steps": [...]}``) is accepted too."""
    body = strip_fences(text)
    try:
        value = loads_loose(body)
    except LooseJSONError:
        value = None
        for start, end in balanced_spans(body, "["):
            try:
                value = loads_loose(body[start:end])
                break
            except LooseJSONError:
                continue
        if value is None:
            value = next(iter_objects(body), None)
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        value = lists[0] if len(lists) == 1 else None
    if not isinstance(value, list):
        raise LooseJSONError(f"expected a JSON array, got: {_preview(body)}")
    return value


def _preview(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
