"""JSON helpers shared by every HTTP component: fast encoding and crash-safe files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from sopgym.core.errors import ToolError

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=_OPTIONS)


def loads_object(body: bytes) -> dict[str, Any]:
    """Parse a request body that must be a JSON object, or raise a structured error."""
    try:
        value = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError as error:
        raise ToolError("invalid_json", f"request body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise ToolError("invalid_request", "request body must be a JSON object")
    return value


def write_atomic(path: Path, data: bytes) -> None:
    """Write a whole file or nothing: readers never see half of it."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class JsonlAppender:
    """Appends one JSON line per record with a single write() on an O_APPEND descriptor.

    A process killed between writes leaves whole lines only; a kill inside write() cannot tear
    a small line in practice, and :func:`read_jsonl_prefix` drops a torn tail if one exists.
    """

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, record: dict[str, Any]) -> None:
        os.write(self._fd, dumps(record) + b"\n")

    def close(self) -> None:
        os.close(self._fd)


def read_jsonl_prefix(path: Path, repair: bool = False) -> list[dict[str, Any]]:
    """Every complete line of a JSONL file; with ``repair``, truncate a torn last line."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    rows = [orjson.loads(line) for line in data[:end].splitlines() if line.strip()]
    if repair and end < len(data):
        with open(path, "r+b") as handle:
            handle.truncate(end)
    return rows
