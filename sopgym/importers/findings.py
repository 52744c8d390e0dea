"""Audit findings: one vocabulary for every problem the importer and the audit can report.

A finding always names what it is about (rows, tools, columns or a file) so that a user can go
and look; its kind fixes its severity, so a report's defect count means the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["defect", "info"]

# kind -> (severity, what it means). Order is the order of the report.
KINDS: dict[str, tuple[Severity, str]] = {
    "bad_file": ("defect", "a file of the layout is missing or cannot be parsed"),
    "missing_input_columns": (
        "defect",
        "metadata.json names no input_columns: passing the whole row would hand the answer over",
    ),
    "missing_columns": ("defect", "columns named in metadata.json are absent from the CSV"),
    "invalid_tool_spec": ("defect", "a toolspecs.json entry is not a usable tool spec"),
    "malformed_rows": ("defect", "CSV rows whose field count differs from the header's"),
    "duplicate_keys": ("defect", "the same key twice: rows, CSV headers or tool names"),
    "empty_expected_outputs": ("defect", "rows whose expected output is empty"),
    "uncallable_tools": ("defect", "tools in toolspecs.json that tools.py does not implement"),
    "tools_returning_none": ("defect", "tools that return None"),
    "nondeterministic_tools": ("defect", "the same call twice gave different results"),
    "unknown_input_ids": ("defect", "task ids that the tools do not know"),
    "schema_mismatches": (
        "defect",
        "row values that a tool's own input schema rejects (passed to the tool with a warning; "
        "refused when imported with --strict-schemas)",
    ),
    "target_invalid": (
        "defect",
        "items whose target is invalid against their own JSON Schema in a compared key: "
        "unscorable, excluded",
    ),
    "target_mended": (
        "info",
        "items whose target is invalid only where the scorer never compares: scored",
    ),
    "unknown_schema_keywords": ("info", "schema keywords the draft does not define"),
    "record_count_mismatch": ("info", "the record count in a file's name is not its count"),
    "relayed_outputs": (
        "info",
        "a tool returns an expected output verbatim: the task reduces to relaying it",
    ),
    "tool_refusals": ("info", "tools that raise for some rows' own values"),
}


@dataclass
class Finding:
    kind: str
    message: str
    rows: list[int] = field(default_factory=list)  # 0-based data rows or records
    tools: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    file: str | None = None
    details: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}")

    @property
    def severity(self) -> Severity:
        return KINDS[self.kind][0]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "rows": self.rows,
            "tools": self.tools,
            "columns": self.columns,
            "file": self.file,
            "details": self.details,
        }


def defects(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "defect"]
