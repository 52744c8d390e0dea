"""User mistakes a run refuses before anything starts (one line, exit 2), so that none is
ever scored as the agent's result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def unknown_fault_tools(faults: str | None, domains: Iterable[Any]) -> str | None:
    """The refusal of a ``--faults`` spec naming a tool no domain of the run has (it would
    inject nothing and the run would read as fault-free); None when every named tool is
    there."""
    if not faults:
        return None
    from sopgym.gateway.faults import parse_faults

    packs = list(domains)
    named = parse_faults(faults).tools
    known = {t.name for d in packs for t in d.all_tools()}
    unknown = sorted(set(named) - known)
    if not unknown:
        return None
    names = ", ".join(d.name for d in packs)
    return (
        f"--faults names {', '.join(repr(t) for t in unknown)}, which no domain of this run "
        f"({names}) has; its tools: {', '.join(sorted(known)[:12])}"
        + (" ..." if len(known) > 12 else "")
    )


def base_url_refusal(base_url: str | None) -> str | None:
    """Why ``--base-url`` cannot be reached as given, with the fix: an address without its
    scheme (the HTTP client's own words, "missing an 'http://' or 'https://' protocol",
    named no fix). None when it has one (whether it answers is checked later)."""
    if not base_url or base_url.startswith(("http://", "https://")):
        return None
    bare = base_url.split("://", 1)[-1]
    return f"--base-url {base_url!r} has no http:// or https://: did you mean http://{bare} ?"
