"""Finding domain packs by name: domain packs' kind of the one plug-in registry
(:mod:`sopgym.core.plugins`), with three sources: the packages of packs scanned by folder
(``sopgym.domains``, then each of ``$SOPGYM_DOMAIN_PACKAGES``), the entry-point group
``sopgym.domains`` of installed packages (a pack's name -> its module, or ``module:attr``), and
``module:attr`` naming one pack (a :class:`DomainPack` or a factory making one), given in
``$SOPGYM_DOMAIN_PACKAGES`` or as a domain on the command line.

Imported benchmarks (``sopbench/...``, ``sopmaze/...``, ``abcd/...``, ``generated/...``) are
loaded by the loader that the entry-point group ``sopgym.imported_loaders`` names (sopgym's own
is :func:`sopgym.importers.resolve.load_imported`, declared in pyproject.toml): core sits below
the importers, which plug in here as any installed package would."""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import os
import pkgutil
import re
from collections.abc import Callable, Iterable
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from sopgym.core.domain import DomainPack
from sopgym.core.errors import UnknownDomainError
from sopgym.core.imported import PREFIXES as IMPORTED_PREFIXES
from sopgym.core.plugins import import_here, import_spec, load_failure, names_a_module

# Extra sources of domain packs, comma-separated: importable packages laid out like
# ``sopgym.domains`` (the test suite's small test domains use this, and so can a user's own
# packs kept outside the tree), or ``module:attr`` of one pack. Child processes inherit it, so
# every server sees the same set.
DOMAIN_PACKAGES_ENV = "SOPGYM_DOMAIN_PACKAGES"
BUILTIN_PACKAGE = "sopgym.domains"
ENTRY_POINT_GROUP = "sopgym.domains"


def domain_names(extra: str | None = None) -> list[str]:
    """Every registered domain; ``extra=""`` limits it to the packs shipped with sopgym (what
    compose and Kubernetes deploy), else ``$SOPGYM_DOMAIN_PACKAGES`` adds its packages."""
    return sorted(_modules(os.environ.get(DOMAIN_PACKAGES_ENV, "") if extra is None else extra))


def load_domain(name: str) -> DomainPack:
    return _load(name, os.environ.get(DOMAIN_PACKAGES_ENV, ""))


@cache
def _modules(extra: str) -> dict[str, str]:
    """Domain name -> where it is defined (a module assigning ``DOMAIN``, or ``module:attr``),
    over the built-in package, the extra sources and the installed entry points.

    A subpackage whose ``__init__.py`` assigns ``DOMAIN`` is a pack. One that does not is a
    family: a folder of packs named ``<family>/<pack>`` (``banking/loans``), selected together
    by the family's name (:func:`select_domains`). The source is read, not imported, so
    listing names stays cheap; an entry point is named by its package, so it is not imported
    either; only a ``module:attr`` source is imported to learn its pack's name.
    """
    found: dict[str, str] = {}

    def add(name: str, module: str) -> None:
        if found.get(name, module) != module:  # the same source twice is one
            raise ValueError(f"domain {name!r} is defined by both {found[name]} and {module}")
        found[name] = module

    sources = [p.strip() for p in extra.split(",") if p.strip()]
    for spec in filter(names_a_module, sources):
        add(_pack_of(spec, spec).name, spec)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        add(point.name, point.value)
    for package_name in [BUILTIN_PACKAGE, *(s for s in sources if not names_a_module(s))]:
        try:
            package = import_here(package_name)
        except Exception as error:  # a user's package may fail any way: one line
            raise UnknownDomainError(
                f"{DOMAIN_PACKAGES_ENV} names {package_name}: cannot load: {load_failure(error)}"
            ) from None
        for name, folder in _subpackages(package.__path__):
            module = f"{package_name}.{name}"
            if _defines_domain(folder):
                add(name, module)
                continue
            for member, member_folder in _subpackages([str(folder)]):
                if _defines_domain(member_folder):
                    add(f"{name}/{member}", f"{module}.{member}")
    return found


def _subpackages(path: Iterable[str]) -> list[tuple[str, Path]]:
    return [
        (m.name, Path(m.module_finder.path) / m.name)  # type: ignore[union-attr]
        for m in pkgutil.iter_modules(list(path))
        if m.ispkg and not m.name.startswith("_")
    ]


def _defines_domain(folder: Path) -> bool:
    return _DOMAIN_ASSIGNMENT.search((folder / "__init__.py").read_text()) is not None


_DOMAIN_ASSIGNMENT = re.compile(r"^DOMAIN\s*(?::[^=]*)?=", re.MULTILINE)


def families() -> dict[str, list[str]]:
    """Family name -> its domains, for the packs kept in family folders."""
    grouped: dict[str, list[str]] = {}
    for name in domain_names():
        family, _, member = name.partition("/")
        if member and not name.startswith(IMPORTED_PREFIXES):
            grouped.setdefault(family, []).append(name)
    return grouped


def imported_domain_names() -> list[str]:
    """The imported benchmarks in the import registry (none when it cannot be read: loading
    one by name then says why)."""
    from sopgym.core.import_index import ImportIndexError, read_index

    try:
        return sorted(read_index())
    except ImportIndexError:
        return []


def listed_names() -> list[str]:
    """What ``sopgym list`` shows: every registered pack, then every imported benchmark."""
    return domain_names() + imported_domain_names()


def select_domains(patterns: Iterable[str]) -> list[str]:
    """The domains named by ``patterns``, in order, each once: a domain name, ``all`` (the
    registered packs), a family name (``banking``: every ``banking/*`` pack; ``sopmaze``,
    ``sopbench``, ``abcd``, ``generated``: every imported benchmark of that kind) or a glob
    (``maze/*``, ``'sopmaze/*'``, ``*inspection*``), over the packs and the imported
    benchmarks. A pattern that selects nothing is an :class:`UnknownDomainError`."""
    names = domain_names()
    imported = imported_domain_names()
    grouped = families()
    for name in imported:
        grouped.setdefault(name.partition("/")[0], []).append(name)
    chosen: list[str] = []
    for pattern in patterns:
        if pattern == "all":
            selected = names
        elif pattern in grouped:
            selected = grouped[pattern]
        elif f"{pattern}/" in IMPORTED_PREFIXES:  # an imported family with nothing imported
            raise UnknownDomainError(
                f"no {pattern} benchmark is imported (see sopgym import --help)"
            )
        elif any(ch in pattern for ch in "*?["):
            selected = [n for n in names + imported if fnmatch.fnmatchcase(n, pattern)]
        elif pattern in names:  # a registered pack, named without importing it (the agents
            selected = [pattern]  # image lists packs whose generators it does not carry)
        elif names_a_module(pattern):  # one pack by module:attr: every server must see it too
            selected = [add_domain_source(pattern)]
        else:
            load_domain(pattern)  # an unknown name fails here, saying which names exist
            selected = [pattern]
        if not selected:
            raise UnknownDomainError(f"no domain matches {pattern!r}")
        chosen += [n for n in selected if n not in chosen]
    return chosen


def unknown_domain_message(name: str, known: list[str]) -> str:
    """One line: the name, the closest known names or families (a typo's likely meaning),
    and where the whole list is; never the whole list (37 names over 7 lines hid the hint)."""
    if not known:
        return f"unknown domain {name!r} (no domain is registered)"
    candidates = sorted({*known, *(n.partition("/")[0] for n in known if "/" in n)})
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return f"unknown domain {name!r} ({hint}`sopgym list` shows all {len(known)})"


@cache
def _load(name: str, extra: str) -> DomainPack:
    if name.startswith(IMPORTED_PREFIXES):  # imported benchmarks: see sopgym/importers
        return imported_loader()(name)
    modules = _modules(extra)
    where = modules.get(name, name)
    if names_a_module(where):
        pack = _pack_of(name, where)
        if name in modules and pack.name != name:  # an entry point naming another pack
            raise UnknownDomainError(f"domain {name}: {where} is the pack {pack.name!r}")
        return pack
    if name not in modules:
        raise UnknownDomainError(unknown_domain_message(name, sorted(modules)))
    domain = importlib.import_module(where).DOMAIN  # a pack of ours or of an installed package
    if not isinstance(domain, DomainPack):
        raise TypeError(f"{where}.DOMAIN is not a DomainPack")
    return domain


IMPORTED_LOADERS = "sopgym.imported_loaders"  # the entry-point group of imported benchmarks


@cache
def imported_loader() -> Callable[[str], DomainPack]:
    """The loader of imported benchmarks (name -> pack): the entry point ``sopgym`` of the group
    :data:`IMPORTED_LOADERS`. Missing only from a sopgym whose package metadata is not
    installed (a source tree put on ``PYTHONPATH``): one line saying how to install it."""
    found = [p for p in entry_points(group=IMPORTED_LOADERS) if p.name == "sopgym"]
    if not found:
        raise UnknownDomainError(
            f"imported benchmarks need sopgym installed (its entry point {IMPORTED_LOADERS} "
            "is missing): pip install -e ."
        )
    loader: Callable[[str], DomainPack] = found[0].load()
    return loader


def _pack_of(name: str, spec: str) -> DomainPack:
    """The pack ``spec`` (``module:attr``) names: a :class:`DomainPack`, or a factory making
    one with no arguments; :class:`UnknownDomainError` saying why when it is neither."""
    try:
        loaded: Any = import_spec(spec)
    except Exception as error:  # a user's module may fail any way: one line, not a traceback
        why = load_failure(error)
        raise UnknownDomainError(f"domain {name}: cannot load {spec}: {why}") from None
    pack = loaded() if callable(loaded) and not isinstance(loaded, DomainPack) else loaded
    if not isinstance(pack, DomainPack):
        raise UnknownDomainError(f"domain {name}: {spec} is not a DomainPack")
    return pack


def add_domain_source(spec: str) -> str:
    """Register the pack ``spec`` (``module:attr``) names for this process and the ones it
    starts (through ``$SOPGYM_DOMAIN_PACKAGES``, which they inherit); its name."""
    name = _pack_of(spec, spec).name
    if name not in domain_names():  # already seen (a package of packs holds it): nothing to add
        sources = [s for s in os.environ.get(DOMAIN_PACKAGES_ENV, "").split(",") if s.strip()]
        os.environ[DOMAIN_PACKAGES_ENV] = ",".join([*sources, spec])
    return name
