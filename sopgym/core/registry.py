"""Finding domain packs by name."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from sopgym.core.domain import DomainPack
from sopgym.importers import PREFIX as IMPORTED_PREFIX


class UnknownDomainError(KeyError):
    def __str__(self) -> str:
        names = ", ".join(domain_names()) or "none"
        return f"unknown domain {self.args[0]!r} (known: {names})"


@cache
def domain_names() -> list[str]:
    import sopgym.domains as package

    return sorted(
        m.name
        for m in pkgutil.iter_modules(package.__path__)
        if m.ispkg and not m.name.startswith("_")
    )


@cache
def load_domain(name: str) -> DomainPack:
    if name.startswith(IMPORTED_PREFIX):  # imported benchmarks: see sopgym/importers
        from sopgym.importers.resolve import load_imported

        return load_imported(name)
    if name not in domain_names():
        raise UnknownDomainError(name)
    module = importlib.import_module(f"sopgym.domains.{name}")
    domain = module.DOMAIN
    if not isinstance(domain, DomainPack):
        raise TypeError(f"sopgym.domains.{name}.DOMAIN is not a DomainPack")
    return domain
