"""JSON helpers shared by every HTTP component: fast encoding and crash-safe files."""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from sopgym.core.errors import ToolError
from sopgym.core.exceptions import DataError

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def dumps(value: Any) -> bytes:
    """``value`` as JSON. An integer past 64 bits is valid JSON that orjson cannot write (a
    tool fed "Fiber 99999999999999999999999" returns one): the standard library writes it."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except orjson.JSONEncodeError as error:
        if "64-bit" not in str(error):
            raise
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


# How deep a request's JSON may nest. Far past any tool's arguments, and below the 255 levels
# orjson writes: a deeper value could be recorded, then never served or traced again.
MAX_DEPTH = 64


def loads_request(body: bytes, what: str = "request body") -> Any:
    """Parse JSON from a client, or raise a structured error (``what`` names it there)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise ToolError("invalid_json", f"{what} is not valid JSON: {error}") from None
    # each level opens a bracket, so a body with few of them needs no walk
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and json_depth(value) > MAX_DEPTH:
        raise ToolError("invalid_request", f"{what} nests deeper than {MAX_DEPTH} levels")
    return value


def json_depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion (the value may be 1,000 levels deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


# A file a user hands us (an import, a responses file): bounds that hold before anything is
# parsed. The published corpora are far below them (ABCD's conversations: ~130 MB of JSON).
MAX_INPUT_BYTES = 512 * 2**20  # after decompression
MAX_INPUT_DEPTH = 100  # SOP-Maze's schemas nest ~10 levels; Python's recursion stops near 1,000


class InputRefused(DataError, OSError, ValueError):
    """A user's input file refused before it is parsed whole (not a regular file, too large
    once uncompressed, a broken gzip stream, JSON nested too deep): one line naming it. An
    ``OSError`` (the file cannot be read as it is) and a ``ValueError`` (nor parsed), so the
    callers' existing refusals of unreadable files take it."""


def read_input(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a user's input file, ``.gz`` files decompressed, at most ``limit`` bytes
    (default :data:`MAX_INPUT_BYTES`), or :class:`InputRefused`. Opened without blocking and
    checked to be a regular file first: a FIFO or a device named ``*.json`` would hang the
    read or never end."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputRefused(f"{path}: not a regular file")
        compressed = path.name.endswith(".gz")
        try:
            if compressed:
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    data = unzipped.read(limit + 1)  # never more: a small bomb stays small
            else:
                data = handle.read(limit + 1)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise InputRefused(f"{path}: not a whole gzip file ({error})") from None
    if len(data) > limit:
        what = "uncompressed " if compressed else ""
        raise InputRefused(f"{path}: over the {limit // 2**20} MiB {what}input limit")
    return data


def parse_input_json(data: bytes, where: object, depth: int = MAX_INPUT_DEPTH) -> Any:
    """JSON from a user's file; :class:`InputRefused` when it nests deeper than ``depth``
    levels (the standard parser would raise ``RecursionError``, and our walks after it too),
    ``ValueError`` when it is not JSON."""
    try:
        value = json.loads(data)
    except RecursionError:
        value, depth_found = None, depth + 1
    else:
        # each level opens a bracket, so a file with few of them needs no walk
        few = data.count(b"[") + data.count(b"{") <= depth
        depth_found = 0 if few else json_depth(value)
    if depth_found > depth:
        raise InputRefused(f"{where}: JSON nested deeper than {depth} levels")
    return value


def loads_object(body: bytes) -> dict[str, Any]:
    """Parse a request body that must be a JSON object, or raise a structured error."""
    value = loads_request(body or b"{}")
    if not isinstance(value, dict):
        raise ToolError("invalid_request", "request body must be a JSON object")
    return value


# Owner only: run folders, reports, exports and eval output carry the gold (expected values,
# field by field); docs/reliability.md lists where this holds.
PRIVATE_MODE = 0o600


def write_atomic(path: Path, data: bytes) -> None:
    """Write a whole file or nothing, owner-only (:data:`PRIVATE_MODE`) whatever the umask:
    readers never see half of it. The file under its temporary name is created afresh
    (``O_EXCL``, never through a link left there), so no earlier mode or owner carries over."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)  # a leftover of a process that died with our pid
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class JsonlAppender:
    """Appends one JSON line per record with a single write() on an O_APPEND descriptor.

    A process killed between writes leaves whole lines only; a kill inside write() cannot tear
    a small line in practice, and :func:`read_jsonl_prefix` drops a torn tail if one exists.
    """

    def __init__(self, path: Path) -> None:
        # owner only: results rows carry the gold (docs/reliability.md); a file made before
        # that rule (0644) is narrowed too, as the mode given to open() applies on creation only
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_MODE)
        os.fchmod(self._fd, PRIVATE_MODE)

    def append(self, record: dict[str, Any]) -> None:
        os.write(self._fd, dumps(record) + b"\n")

    def close(self) -> None:
        os.close(self._fd)


class CorruptRow(DataError, ValueError):
    """A whole line of a JSONL file that is not a JSON object: names the file and line."""

    def __init__(self, path: Path, line: int, why: str) -> None:
        super().__init__(f"{path}, line {line}: corrupt row ({why})")
        self.path, self.line = path, line


def read_jsonl_prefix(
    path: Path,
    repair: bool = False,
    drop_corrupt: bool = False,
    check: Callable[[dict[str, Any]], str | None] | None = None,
) -> list[dict[str, Any]]:
    """Every complete line of a JSONL file; with ``repair``, truncate a torn last line.

    A complete line that is not a JSON object, or one ``check`` says is wrong (it returns
    why), raises :class:`CorruptRow`, unless ``drop_corrupt``: then such lines are removed
    from the file (rewritten atomically).
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    rows, kept, dropped = [], [], 0
    for number, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
            why = None if isinstance(row, dict) else "not a JSON object"
            if why is None and check is not None:
                why = check(row)
        except orjson.JSONDecodeError as error:
            why = str(error)
        if why is not None:
            if not drop_corrupt:
                raise CorruptRow(path, number, why)
            dropped += 1
            continue
        rows.append(row)
        kept.append(line)
    if dropped:
        write_atomic(path, b"".join(line + b"\n" for line in kept))
    elif repair and end < len(data):
        with open(path, "r+b") as handle:
            handle.truncate(end)
    return rows
