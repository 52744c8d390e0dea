"""Audit reports on disk: one JSON and one Markdown file per benchmark, plus a summary."""

from __future__ import annotations

import json
from pathlib import Path

from sopgym.core.jsonio import write_atomic
from sopgym.importers.audit import AuditReport
from sopgym.importers.findings import KINDS


def write_reports(reports: list[AuditReport], out: Path) -> Path:
    """Write ``<name>.json`` and ``<name>.md`` per report and ``summary.json``/``summary.md``."""
    out.mkdir(parents=True, exist_ok=True)
    for report in reports:
        write_atomic(out / f"{report.name}.json", _json(report.to_json()))
        write_atomic(out / f"{report.name}.md", markdown(report).encode())
    summary = {
        "benchmarks": {
            r.name: {
                "defects": r.defect_count,
                "info": len(r.findings) - r.defect_count,
                "kinds": sorted({f.kind for f in r.findings}),
                "tasks": r.tasks,
            }
            for r in reports
        }
    }
    write_atomic(out / "summary.json", _json(summary))
    write_atomic(out / "summary.md", summary_markdown(reports).encode())
    return out


def _json(value: object) -> bytes:
    return json.dumps(value, indent=2, default=str).encode() + b"\n"


def summary_markdown(reports: list[AuditReport]) -> str:
    lines = [
        "# SOP-Bench audit",
        "",
        "| benchmark | tasks | defects | info | findings |",
        "|---|---|---|---|---|",
    ]
    for r in reports:
        kinds = ", ".join(sorted({f.kind for f in r.findings})) or "-"
        info = len(r.findings) - r.defect_count
        link = f"[{r.name}]({r.name}.md)"
        lines.append(f"| {link} | {r.tasks} | {r.defect_count} | {info} | {kinds} |")
    return "\n".join(lines) + "\n"


def markdown(report: AuditReport) -> str:
    info = len(report.findings) - report.defect_count
    lines = [
        f"# SOP-Bench audit: {report.name}",
        "",
        f"- folder: `{report.folder}`",
        f"- tasks: {report.tasks} well-formed of {report.rows} rows; tools called on "
        f"{report.checked_rows} rows",
        f"- tools: {', '.join(report.tools) or '-'}",
        f"- input columns: {', '.join(report.input_columns or []) or '(none named)'}",
        f"- output columns: {', '.join(report.output_columns) or '-'}",
        f"- key column: {report.key_column or '-'}",
        "",
        f"**{report.defect_count} defect(s), {info} info**",
        "",
    ]
    if not report.findings:
        return "\n".join([*lines, "No findings."]) + "\n"
    lines += ["| kind | severity | finding | rows | tools |", "|---|---|---|---|---|"]
    for f in report.findings:
        rows, tools = ranges(f.rows) or "-", ", ".join(f.tools) or "-"
        lines.append(f"| {f.kind} | {f.severity} | {_cell(f.message)} | {rows} | {tools} |")
    for f in report.findings:
        lines += ["", f"## {f.kind}: {KINDS[f.kind][1]}", "", f.message]
        if f.file:
            lines.append(f"\nfile: `{f.file}`")
        if f.columns:
            lines.append(f"\ncolumns: {', '.join(f.columns)}")
        if f.details:
            lines.append("")
            lines += [f"- {_cell(d)}" for d in f.details[:50]]
            if len(f.details) > 50:
                lines.append(f"- ... {len(f.details) - 50} more in the JSON report")
    return "\n".join(lines) + "\n"


def ranges(rows: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    parts: list[str] = []
    start = previous = None
    for row in sorted(rows):
        if previous is not None and row == previous + 1:
            previous = row
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = row
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
