"""Each image role's import closure, read statically against the role's own requirements.

The image build installs ``compose/requirements/<role>.txt`` and sopgym with ``--no-deps``,
prunes what the role leaves out (``images.prune``) and imports what the role runs
(``images.check``). That import fails when a module on the way imports a distribution the
requirements do not install: sopgym.cli reaching numpy through evaluation.stats, which only
pandas had brought in. This module finds the same break without Docker or a per-role
environment: it follows, from the modules ``images.check`` imports (``IMPORTS`` and the
role's domain packs), every import a module runs when it is imported (its module-level
statements, class bodies and ``if``/``try``/``with`` blocks included; function bodies,
``if TYPE_CHECKING:`` blocks and imports guarded by ``except ImportError`` left out, as the
build's check leaves them), and names each third-party module's distribution. A role fails
when one of them is not among what its requirement file installs (the named requirements
and, with their markers and extras, everything they require, as installed here), or when the
closure reaches a sopgym module the role's image prunes.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from unittest.mock import patch

from packaging.requirements import Requirement

from sopgym.orchestration import images

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "compose" / "requirements"


@dataclass(frozen=True)
class Source:
    """A sopgym module's text, and whether it is a package (its ``__init__``)."""

    text: str
    path: Path
    is_package: bool


SourceReader = Callable[[str], Source | None]


@cache
def installed_source(module: str) -> Source | None:
    """The installed sopgym module's source (None: no such module)."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # a parent is not a package
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    path = Path(spec.origin)
    return Source(path.read_text(), path, spec.submodule_search_locations is not None)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _guards_imports(node: ast.Try) -> bool:
    """Whether a ``try`` catches a failed import (a bare ``except`` does too)."""
    for handler in node.handlers:
        caught = handler.type
        if caught is None:
            return True
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in names):
            return True
    return False


def _executed(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when a module (or class body) runs."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _executed(node.body)
            yield from _executed(node.orelse)
        elif isinstance(node, ast.Try):
            if not _guards_imports(node):
                yield from _executed(node.body)
            for handler in node.handlers:
                yield from _executed(handler.body)
            yield from _executed(node.orelse)
            yield from _executed(node.finalbody)
        elif isinstance(node, ast.With | ast.For | ast.While | ast.ClassDef):
            yield from _executed(node.body)
            if isinstance(node, ast.For | ast.While):
                yield from _executed(node.orelse)


def imported_modules(module: str, source: Source, read: SourceReader) -> list[str]:
    """The modules importing ``module`` imports, by absolute name (a sopgym module's packages
    included, as Python imports them first; a third-party module as named, its distribution
    found from the full name: namespace packages such as ``opentelemetry`` span several)."""
    found: list[str] = []
    package = module if source.is_package else module.rpartition(".")[0]
    for node in _executed(ast.parse(source.text, str(source.path)).body):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
            continue
        if node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
        else:
            target = node.module or ""
        found.append(target)
        for alias in node.names:  # ``from package import submodule`` imports the submodule
            if alias.name == "*":
                continue
            candidate = f"{target}.{alias.name}"
            if target.split(".")[0] != "sopgym" or read(candidate) is not None:
                found.append(candidate)  # a third-party name: its module's distribution
    with_parents = []
    for name in found:
        parts = name.split(".")
        if parts[0] == "sopgym":
            with_parents += [".".join(parts[:i]) for i in range(1, len(parts))]
        with_parents.append(name)
    return with_parents


@cache
def _distribution_files(name: str) -> tuple[str, ...]:
    """The dotted module names a distribution installs."""
    modules = []
    for file in importlib.metadata.distribution(name).files or ():
        parts = list(file.parts)
        if not parts or parts[-1].split(".")[-1] not in ("py", "so", "pyd"):
            continue
        parts[-1] = parts[-1].split(".")[0]
        if parts[-1] == "__init__":
            parts.pop()
        if parts and all(p.isidentifier() for p in parts):
            modules.append(".".join(parts))
    return tuple(modules)


@cache
def _top_level_distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(module: str) -> str | None:
    """The installed distribution that provides ``module`` (canonical name; None: none)."""
    candidates = _top_level_distributions().get(module.split(".")[0], [])
    if len(candidates) == 1:
        return images._canonical(candidates[0])
    best: tuple[int, str] | None = None  # namespace packages (opentelemetry, google)
    below: set[str] = set()  # the distributions with modules inside ``module``
    for dist in candidates:
        for provided in _distribution_files(dist):
            if module == provided or module.startswith(provided + "."):
                depth = provided.count(".")
                if best is None or depth > best[0]:
                    best = (depth, images._canonical(dist))
            elif provided.startswith(module + "."):
                below.add(images._canonical(dist))
    if best:
        return best[1]
    if len(below) == 1:  # a namespace folder of one distribution (google.rpc)
        return below.pop()
    return NAMESPACE if below else None


NAMESPACE = "(a namespace package: its submodules are checked)"


def installs(requirement_lines: list[str]) -> set[str]:
    """Every distribution that installing these requirement lines installs (canonical names):
    the named ones and, following each one's metadata with its markers and requested extras,
    everything they require, as installed in this environment."""
    pending = deque(Requirement(line) for line in requirement_lines)
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    while pending:
        requirement = pending.popleft()
        name = images._canonical(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: its own requirements are unknown
        for line in dist.requires or ():
            nested = Requirement(line)
            extras = ["", *requirement.extras]
            if nested.marker is None or any(nested.marker.evaluate({"extra": e}) for e in extras):
                pending.append(nested)
    return names


def requirement_lines(role: str, folder: Path = REQUIREMENTS) -> list[str]:
    """The requirement lines the role's image installs (``compose/requirements/<role>.txt``)."""
    text = (folder / f"{role}.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def pruned_paths(role: str) -> list[Path]:
    """The source files and folders the role's image prunes, in this tree (``images.PRUNE``'s
    patterns, relative to the installed ``sopgym`` package, whose subpackages live in their
    own folders here)."""
    paths: list[Path] = []
    for pattern in images.PRUNE.get(role, ()):
        head, _, rest = pattern.partition("/")
        spec = importlib.util.find_spec(f"sopgym.{head}")
        assert spec is not None and spec.submodule_search_locations, head
        for location in spec.submodule_search_locations:
            paths += Path(location).glob(rest)
    return paths


def _pack_modules(role: str) -> list[str]:
    """The modules of the domain packs ``images.check`` loads for the role."""
    from sopgym.core import registry

    if role not in images.PACKS:
        return []
    with patch.dict(os.environ):  # an image has the packs shipped with sopgym only
        os.environ.pop(registry.DOMAIN_PACKAGES_ENV, None)
        selected = registry.select_domains(images.PACKS[role].split())
    modules = registry._modules("")
    return [modules[name] for name in selected]


def _chain(module: str, parents: dict[str, str | None]) -> str:
    links = [module]
    while (parent := parents[links[-1]]) is not None:
        links.append(parent)
    return " -> ".join(reversed(links))


_STDLIB = sys.stdlib_module_names


def role_problems(
    role: str,
    read: SourceReader = installed_source,
    requirements_folder: Path = REQUIREMENTS,
) -> list[str]:
    """What would break the role's image build, one line each (empty: nothing): a module its
    commands import that imports a distribution its requirement file does not install, or a
    sopgym module the image prunes, or a root module that does not exist."""
    roots = [*images.IMPORTS[role], *_pack_modules(role)]
    installed = installs(requirement_lines(role, requirements_folder))
    pruned = [p.resolve() for p in pruned_paths(role)]
    parents: dict[str, str | None] = {}  # module -> the module whose import reached it
    queue: deque[str] = deque()
    for root in roots:  # a root and its packages, each imported first
        names = root.split(".")
        for name in (".".join(names[:depth]) for depth in range(1, len(names) + 1)):
            if name not in parents:
                parents[name] = None
                queue.append(name)
    problems: list[str] = []
    lacking: set[str] = set()
    while queue:
        module = queue.popleft()
        source = read(module)
        if source is None:
            problems.append(f"{role}: {_chain(module, parents)}: no such sopgym module")
            continue
        path = source.path.resolve()
        if any(path == p or p in path.parents for p in pruned):
            problems.append(
                f"{role}: {_chain(module, parents)}: the {role} image prunes {module} "
                f"(images.PRUNE)"
            )
            continue
        for name in imported_modules(module, source, read):
            top = name.split(".")[0]
            if top == "sopgym":
                if name not in parents:
                    parents[name] = module
                    queue.append(name)
            elif top not in _STDLIB and top != "__future__":
                dist = distribution_of(name)
                if dist == NAMESPACE:
                    continue
                if (dist is None or dist not in installed) and (dist or name) not in lacking:
                    lacking.add(dist or name)  # each lacking distribution said once
                    what = f"from {dist}" if dist else "installed by no distribution here"
                    problems.append(
                        f"{role}: {_chain(module, parents)} imports {name} ({what}), which "
                        f"compose/requirements/{role}.txt does not install"
                    )
    return problems
