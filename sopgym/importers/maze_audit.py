"""``sopgym audit sop-maze``'s reports, in SOP-Maze's own terms: per file (named by its unique
domain name, so no two files' reports overwrite each other), its scenario, shape, items and
scorable items, every finding, and per item excluded from the figures the reason why; plus a
summary over the files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sopgym.core.jsonio import write_atomic
from sopgym.importers.findings import Finding
from sopgym.importers.maze_names import domain_name, scenario_of, shape_of
from sopgym.importers.sopmaze import MazeInputError, read_file
from sopgym.types import JSON


@dataclass
class MazeAudit:
    name: str  # the domain name, sopmaze/<...>
    file: Path
    scenario: str | None  # the paper's index (H1..L13), when recognised
    shape: str
    items: int = 0
    scorable: int = 0
    excluded: list[JSON] = field(default_factory=list)  # {"record", "reason"}
    mended: list[JSON] = field(default_factory=list)  # {"record", "where"}
    findings: list[Finding] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.name.split("/", 1)[1]

    @property
    def kinds(self) -> list[str]:
        return list(dict.fromkeys(f.kind for f in self.findings))

    def to_json(self) -> JSON:
        return {
            "domain": self.name,
            "file": str(self.file),
            "scenario": self.scenario,
            "shape": self.shape,
            "items": self.items,
            "scorable": self.scorable,
            "excluded": self.excluded,
            "mended": self.mended,
            "findings": [f.to_json() for f in self.findings],
        }


def audit_file(path: Path) -> MazeAudit:
    """One file's audit; a file that cannot be read is a ``bad_file`` finding, not an error."""
    scenario = scenario_of(path)
    audit = MazeAudit(domain_name(path), path, scenario.index if scenario else None,
                      shape_of(path))  # fmt: skip
    try:
        found = read_file(path)
    except MazeInputError as error:
        audit.findings.append(Finding("bad_file", str(error), file=path.name))
        return audit
    audit.items, audit.scorable = len(found.records), len(found.scorable)
    audit.findings = found.findings
    audit.excluded = [{"record": r.index, "reason": r.unscorable} for r in found.records
                      if r.unscorable]  # fmt: skip
    audit.mended = [{"record": r.index, "where": r.mended} for r in found.records if r.mended]
    return audit


def write_maze_reports(audits: list[MazeAudit], out: Path) -> Path:
    """``<slug>.json`` and ``<slug>.md`` per file, ``summary.json`` and ``summary.md``."""
    out.mkdir(parents=True, exist_ok=True)
    for audit in audits:
        write_atomic(out / f"{audit.slug}.json", _json(audit.to_json()))
        write_atomic(out / f"{audit.slug}.md", markdown(audit).encode())
    summary = {
        "files": {a.slug: _summary_of(a) for a in audits},
        "items": sum(a.items for a in audits),
        "scorable": sum(a.scorable for a in audits),
    }
    write_atomic(out / "summary.json", _json(summary))
    write_atomic(out / "summary.md", summary_markdown(audits).encode())
    return out


def _summary_of(audit: MazeAudit) -> JSON:
    found = audit.to_json()
    keep = ("scenario", "shape", "items", "scorable", "excluded")
    return {"file": audit.file.name, "kinds": sorted(audit.kinds), **{k: found[k] for k in keep}}


def _json(value: object) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str).encode() + b"\n"


def summary_markdown(audits: list[MazeAudit]) -> str:
    items, scorable = sum(a.items for a in audits), sum(a.scorable for a in audits)
    lines = [
        "# SOP-Maze audit",
        "",
        f"{len(audits)} file(s), {items} items, {scorable} scorable, "
        f"{items - scorable} excluded from the figures (each listed with its reason).",
        "",
        "| domain | file | scenario | shape | items | scorable | findings |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in audits:
        kinds = ", ".join(a.kinds) or "-"
        lines.append(f"| [{a.slug}]({a.slug}.md) | {a.file.name} | {a.scenario or '-'} | "
                     f"{a.shape} | {a.items} | {a.scorable} | {kinds} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def markdown(audit: MazeAudit) -> str:
    lines = [
        f"# SOP-Maze audit: {audit.name}",
        "",
        f"- file: `{audit.file}`",
        f"- scenario: {audit.scenario or 'not one of the 23 published'}; shape: {audit.shape}",
        f"- items: {audit.items}, scorable: {audit.scorable}",
        "",
        "## Items excluded from the figures",
        "",
    ]
    lines += [f"- record {e['record']}: {e['reason']}" for e in audit.excluded] or ["none"]
    lines += ["", "## Items scored although their target breaks its schema", ""]
    lines += [
        f"- record {m['record']}: invalid only at {', '.join(m['where'])}, where nothing is "
        "compared (the oracle's answer is mended there)"
        for m in audit.mended
    ] or ["none"]
    lines += ["", "## Findings", ""]
    for finding in audit.findings:
        rows = f" (records {', '.join(map(str, finding.rows))})" if finding.rows else ""
        details = f": {', '.join(map(str, finding.details))}" if finding.details else ""
        lines.append(f"- **{finding.kind}** ({finding.severity}): {finding.message}{rows}"
                     f"{details}")  # fmt: skip
    if not audit.findings:
        lines.append("none")
    return "\n".join(lines) + "\n"
