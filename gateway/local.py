"""Tool-free domains served by the gateway itself.

An answer-only (``json_answer``) or one-shot (``graph``) domain has no tools, so no tool
service runs for it: the gateway loads the pack in its own process and takes from it what a
tool service would have announced (SOP variants, schemas, the task inputs). Its episodes have
an empty catalog; opening and finishing them is recorded, traced and scored like any other.
"""

from __future__ import annotations

from pathlib import Path

from sopgym.core import dataset
from sopgym.core.domain import DomainPack
from sopgym.core.registry import load_domain
from sopgym.gateway.catalog import Catalog, ServiceEntry


def is_tool_free(domain: DomainPack) -> bool:
    """Whether ``domain`` needs no tool service: it has neither tools nor distractors."""
    return not domain.all_tools()


def local_entry(name: str, data_root: Path | None = None) -> ServiceEntry:
    """The catalog entry of a tool-free domain; :class:`ValueError` for one that has tools
    (those need their tool service)."""
    domain = load_domain(name)
    if not is_tool_free(domain):
        raise ValueError(f"domain {name} has tools: serve it with its tool service (--service)")
    tasks, _ = dataset.load_tasks(dataset.materialize(domain, data_root))  # no tables: unused
    return ServiceEntry(
        domain=name,
        url="",
        host="",
        port=0,
        tools={},
        sop={variant: domain.sop(variant) for variant in domain.sop_files},
        input_schema=domain.input_schema,
        output_schema=domain.output_schema,
        local_tasks=[t.to_json() for t in tasks],
    )


def with_local_domains(catalog: Catalog, names: list[str], data_root: Path | None) -> Catalog:
    """``catalog`` plus the tool-free domains ``names``."""
    if not names:
        return catalog
    return Catalog([*catalog.services.values(), *(local_entry(n, data_root) for n in names)])
