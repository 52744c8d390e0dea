"""Finding domain packs by name.

Imported benchmarks are loaded through :mod:`sopgym.importers.resolve`, which depends only on
:mod:`sopgym.core.errors` here, so the two modules do not import each other."""

from __future__ import annotations

import importlib
import os
import pkgutil
from functools import cache

from sopgym.core.domain import DomainPack
from sopgym.core.errors import UnknownDomainError
from sopgym.importers import PREFIX as IMPORTED_PREFIX

# Extra packages of domain packs (comma-separated importable names), laid out like
# ``sopgym.domains``: the test suite's small test domains use this, and so can a user's own
# packs kept outside the tree. Child processes inherit it, so every server sees the same set.
DOMAIN_PACKAGES_ENV = "SOPGYM_DOMAIN_PACKAGES"
BUILTIN_PACKAGE = "sopgym.domains"


def domain_names() -> list[str]:
    return sorted(_modules(os.environ.get(DOMAIN_PACKAGES_ENV, "")))


def load_domain(name: str) -> DomainPack:
    return _load(name, os.environ.get(DOMAIN_PACKAGES_ENV, ""))


@cache
def _modules(extra: str) -> dict[str, str]:
    """Domain name -> the module that defines it, over the built-in and extra packages."""
    found: dict[str, str] = {}
    for package_name in [BUILTIN_PACKAGE, *(p.strip() for p in extra.split(",") if p.strip())]:
        package = importlib.import_module(package_name)
        for module in pkgutil.iter_modules(package.__path__):
            if not module.ispkg or module.name.startswith("_"):
                continue
            if module.name in found:
                raise ValueError(
                    f"domain {module.name!r} is defined by both {found[module.name]} and "
                    f"{package_name}.{module.name}"
                )
            found[module.name] = f"{package_name}.{module.name}"
    return found


@cache
def _load(name: str, extra: str) -> DomainPack:
    if name.startswith(IMPORTED_PREFIX):  # imported benchmarks: see sopgym/importers
        from sopgym.importers.resolve import load_imported

        return load_imported(name)
    modules = _modules(extra)
    if name not in modules:
        known = ", ".join(sorted(modules)) or "none"
        raise UnknownDomainError(f"unknown domain {name!r} (known: {known})")
    domain = importlib.import_module(modules[name]).DOMAIN
    if not isinstance(domain, DomainPack):
        raise TypeError(f"{modules[name]}.DOMAIN is not a DomainPack")
    return domain
