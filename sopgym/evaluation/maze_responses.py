"""SOP-Maze's published model outputs as a ``sopgym score`` format (``--format sopmaze``).

The SOP-Maze repository's ``data_with_model_response/`` holds the records of ``raw_data/``
(``input``, ``json_schema``, ``target``, ``no_required_eval_acc_keys``), each with one model's
reply beside them under ``model_response``: one JSON array per scenario file, with no task id.
A record is therefore matched to an imported ``sopmaze/*`` task by its **file name** (the
import registry says which file each domain was imported from) and its **position** in the
file. A record is only scored against its counterpart when both hold the same ``input`` and
``target``; a file no domain was imported from, and a record with no counterpart (past the
imported file's end, or a different record at that place), are counted and listed as
``unknown``, never scored against the wrong item.

Replies are read as the official scorer reads them: :func:`~.maze_protocol.parse_reply`
(``json-repair``, the first object) is the text protocol of the ``sopmaze`` family, for this
format and for text answers in our own JSONL alike. Where our grade still differs from the
official scorer's, docs/sop-maze-import.md lists it and a test pins it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sopgym.core.imported import MAZE_PREFIX
from sopgym.core.jsonio import InputRefused, parse_input_json, read_input
from sopgym.evaluation.external import (
    TEXT_PROTOCOLS,
    Response,
    ScoreRefused,
    Unreadable,
    files_under,
    register_reader,
)
from sopgym.evaluation.maze_protocol import parse_reply
from sopgym.types import JSON

MODEL_RESPONSE = "model_response"
FAMILY = MAZE_PREFIX.rstrip("/")
NO_DOMAIN = "no imported sopmaze domain was imported from a file of this name"


def _same_name(name: str) -> str:
    """A file name as compared: NFC (macOS writes CJK names decomposed)."""
    return unicodedata.normalize("NFC", name)


def imported_files() -> dict[str, list[tuple[str, Path]]]:
    """The imported SOP-Maze domains by the name of the file each was imported from."""
    # imported when read: the importers build on evaluation's scorers, not the reverse
    from sopgym.core.import_index import ImportIndexError, read_index

    try:
        index = read_index()
    except ImportIndexError as error:
        raise ScoreRefused(str(error)) from None
    found: dict[str, list[tuple[str, Path]]] = {}
    for name, entry in sorted(index.items()):
        if name.startswith(MAZE_PREFIX):
            found.setdefault(_same_name(entry.path.name), []).append((name, entry.path))
    return found


def _records(path: Path) -> list[Any] | None:
    """The file's JSON array, or None when it is not one; :class:`InputRefused` (an
    ``OSError``: the path cannot be scored) for a file that is not a regular one, too large or
    nested too deep."""
    data = read_input(path)
    try:
        parsed = parse_input_json(data, path.name)
    except InputRefused:
        raise
    except ValueError:
        return None
    return parsed if isinstance(parsed, list) else None


class MazeResponsesReader:
    """A file or folder of SOP-Maze's published ``*.json`` files with ``model_response``."""

    name = FAMILY
    help = (
        "SOP-Maze's published files with model_response, matched to the imported sopmaze/* "
        "domains by file name and record position"
    )

    def detects(self, path: Path) -> bool:
        """Whether ``path`` holds such files: a ``.json`` array whose first record carries
        ``model_response`` (what ``sopgym score`` uses when no ``--format`` is given)."""
        try:
            files = files_under(path, (".json",))
            records = _records(files[0]) if files and files[0].name.endswith(".json") else None
        except OSError:
            return False
        first = records[0] if records else None
        return isinstance(first, dict) and MODEL_RESPONSE in first

    def read(self, path: Path) -> Iterator[Response | Unreadable]:
        imported = imported_files()
        for file in files_under(path, (".json",)):
            yield from self._file(file, imported.get(_same_name(file.name), []))

    def _file(self, file: Path, domains: list[tuple[str, Path]]) -> Iterator[Response | Unreadable]:
        records = _records(file)
        if records is None:
            yield Unreadable(file.name, "not a JSON array of records")
            return
        if len(domains) > 1:
            why = "several imported domains have this file name: " + ", ".join(
                name for name, _ in domains
            )
            for index in range(len(records)):
                yield Unreadable(f"{file.name} record {index}", why)
            return
        domain, source = domains[0] if domains else (None, None)
        counterparts = _readable(source)
        for index, record in enumerate(records):
            where = f"{file.name} record {index}"
            if not isinstance(record, dict) or MODEL_RESPONSE not in record:
                yield Unreadable(where, f"not a record with {MODEL_RESPONSE!r}")
                continue
            reply = record[MODEL_RESPONSE]
            if reply is not None and not isinstance(reply, str):
                yield Unreadable(where, f"{MODEL_RESPONSE!r} is not text")
                continue
            if domain is None:
                yield Response(NO_DOMAIN, where, position=index)
                continue
            if counterparts is not None and not _same_record(record, counterparts, index):
                label = f"no counterpart: record {index} of {domain} is another record"
                yield Response(label, where, position=index)  # no domain: listed as unknown
                continue
            yield Response(f"{domain} record {index}", where, domain=domain, position=index,
                           answer=reply)  # fmt: skip


def _readable(source: Path | None) -> list[Any] | None:
    """The imported file's records, to check each reply's record against (None: no file, or
    it cannot be read now; the run's preparation then says so for a selected domain)."""
    if source is None:
        return None
    try:
        return _records(source)
    except OSError:
        return None


def _same_record(record: JSON, counterparts: list[Any], index: int) -> bool:
    """The imported file holds the same record (prompt and target) at ``index``."""
    if index >= len(counterparts) or not isinstance(counterparts[index], dict):
        return False
    mine = counterparts[index]
    return all(record.get(key) == mine.get(key) for key in ("input", "target"))


def _official_leniency(text: str, schema: JSON) -> JSON | None:
    """A ``sopmaze`` reply read as the official scorer reads it (``parse_reply``)."""
    return parse_reply(text)


register_reader(MazeResponsesReader())
TEXT_PROTOCOLS[FAMILY] = _official_leniency
