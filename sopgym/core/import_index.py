"""The import registry: which imported benchmark lives in which folder.

It is one small JSON file, ``imports.json`` under ``$SOPGYM_HOME`` (default
``~/.config/sopgym``), mapping ``sopbench/<name>`` to the folder the user imported and, where
the user named them, the input columns. Every sopgym process (runner, tool service, audit)
resolves imported names through it, so a benchmark is never copied. It lives in core, beside
the imported names' prefixes (:mod:`sopgym.core.imported`), because the domain registry, the
generator and the readers of published outputs consult it, not only the importers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sopgym.core.exceptions import DataError
from sopgym.core.jsonio import write_atomic

HOME_ENV = "SOPGYM_HOME"
INDEX_FILE = "imports.json"


class ImportIndexError(DataError, RuntimeError):
    """The registry file exists but cannot be read."""


@dataclass
class ImportEntry:
    name: str  # "sopbench/<folder name>"
    path: Path
    input_columns: list[str] | None = None  # only when given with --input-columns
    strict_schemas: bool = False  # refuse calls that break toolspecs.json (--strict-schemas)
    shape: str | None = None  # SOP-Maze: the shape given with --shape (LRS or HRS)
    none_as_error: bool = False  # a tool returning None fails the call (--none-as-error)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "path": str(self.path),
            "input_columns": self.input_columns,
            "strict_schemas": self.strict_schemas,
            "none_as_error": self.none_as_error,
        }
        if self.shape:
            body["shape"] = self.shape
        return body


def home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".config" / "sopgym")


def index_path() -> Path:
    return home() / INDEX_FILE


def read_index() -> dict[str, ImportEntry]:
    path = index_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_bytes())
        imports = data["imports"]
        return {
            name: ImportEntry(
                name,
                Path(item["path"]),
                item.get("input_columns"),
                bool(item.get("strict_schemas", False)),
                item.get("shape"),
                bool(item.get("none_as_error", False)),
            )
            for name, item in imports.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ImportIndexError(f"cannot read the import registry {path}: {error}") from None


def register(entries: list[ImportEntry]) -> Path:
    """Add or replace ``entries`` in the registry; return the registry file's path."""
    index = read_index()
    index.update({entry.name: entry for entry in entries})
    path = index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"version": 1, "imports": {n: e.to_json() for n, e in sorted(index.items())}}
    write_atomic(path, json.dumps(body, indent=2).encode() + b"\n")
    return path
