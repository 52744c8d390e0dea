"""A domain's dataset in memory: pandas frames plus hash indexes built once at load.

Tools look rows up through :meth:`Tables.row` so a call costs a dict lookup, never a scan or a
file read. A key column with duplicate values cannot be indexed: the lookup would silently
return another row's data (a defect found in published SOP benchmarks), so it is an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sopgym.core.exceptions import DataError

if TYPE_CHECKING:  # pandas loads on first use: most sopgym processes never hold a table
    import pandas as pd


class DuplicateKeyError(DataError, ValueError):
    """A table's key column holds the same value twice."""


class Tables:
    def __init__(self, frames: Mapping[str, pd.DataFrame]) -> None:
        self._frames = dict(frames)
        self._unique: dict[tuple[str, str], dict[Any, dict[str, Any]]] = {}
        self._multi: dict[tuple[str, str], dict[Any, list[dict[str, Any]]]] = {}

    @property
    def names(self) -> list[str]:
        return sorted(self._frames)

    def frame(self, name: str) -> pd.DataFrame:
        return self._frames[name]

    def row(self, table: str, key: str, value: Any) -> dict[str, Any] | None:
        """The one row whose ``key`` column equals ``value``, or ``None``."""
        index = self._unique.get((table, key))
        if index is None:
            index = self._unique[(table, key)] = self._build_unique(table, key)
        return index.get(value)

    def rows(self, table: str, key: str, value: Any) -> list[dict[str, Any]]:
        """All rows whose ``key`` column equals ``value`` (possibly none)."""
        index = self._multi.get((table, key))
        if index is None:
            index = self._multi[(table, key)] = self._build_multi(table, key)
        return index.get(value, [])

    def index_all(self, keys: Mapping[str, str]) -> None:
        """Build the unique indexes named by ``{table: key}`` now, at load time."""
        for table, key in keys.items():
            self.row(table, key, None)

    def _records(self, table: str) -> list[dict[str, Any]]:
        return [_clean(r) for r in self._frames[table].to_dict("records")]

    def _build_unique(self, table: str, key: str) -> dict[Any, dict[str, Any]]:
        index: dict[Any, dict[str, Any]] = {}
        for record in self._records(table):
            value = record[key]
            if value in index:
                raise DuplicateKeyError(f"table {table!r}: duplicate {key} {value!r}")
            index[value] = record
        return index

    def _build_multi(self, table: str, key: str) -> dict[Any, list[dict[str, Any]]]:
        index: dict[Any, list[dict[str, Any]]] = {}
        for record in self._records(table):
            index.setdefault(record[key], []).append(record)
        return index

    # -- storage: one JSON-lines file per table keeps types exact (ids stay strings) --

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, frame in self._frames.items():
            lines = (
                orjson.dumps(_clean(r), option=orjson.OPT_SERIALIZE_NUMPY)
                for r in frame.to_dict("records")
            )
            (folder / f"{name}.jsonl").write_bytes(b"\n".join(lines) + b"\n")

    @classmethod
    def load(cls, folder: Path) -> Tables:
        import pandas as pd

        frames = {}
        for path in sorted(folder.glob("*.jsonl")):
            records = [orjson.loads(line) for line in path.read_bytes().splitlines() if line]
            frames[path.stem] = pd.DataFrame.from_records(records)
        return cls(frames)


def _clean(record: Mapping[Any, Any]) -> dict[str, Any]:
    """Turn pandas' NaN/NA into None and numpy scalars into Python values.

    ``record`` is one of ``DataFrame.to_dict("records")`` (typed with hashable keys); every
    table's column labels are strings.
    """
    import pandas as pd  # loaded already: the record came from a frame

    out: dict[str, Any] = {}
    for key, value in record.items():
        if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
            out[key] = None
        elif hasattr(value, "item") and not isinstance(value, (list, dict, str)):
            out[key] = value.item()
        else:
            out[key] = value
    return out
