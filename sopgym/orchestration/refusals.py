"""User mistakes a run refuses before anything starts (one line, exit 2), so that none is
ever scored as the agent's result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sopgym.core.exceptions import UsageError


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


def check_model_spec(spec: str) -> None:
    """:class:`UsageError` for a model spec that cannot parse (or a scripted model's profile
    that does not); whether the model answers is checked later (:meth:`Runner.check_model`)."""
    from sopgym.agents.models import ModelUnavailable, is_scripted, parse_model_spec
    from sopgym.services.model.profiles import ProfileError, parse_profile

    try:
        parse_model_spec(spec)
        if is_scripted(spec):
            parse_profile(spec.partition(":")[2])
    except (ModelUnavailable, ProfileError) as error:
        raise UsageError(f"--model: {error}") from None
