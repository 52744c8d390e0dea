"""One plug-in registry for every kind of extension: name -> what that name makes.

Each kind (agents, response readers, scorers, paper profiles, transports; domain packs keep
their folder scan as one more source, :mod:`sopgym.core.registry`) is one :class:`Plugins`,
and every place that takes a name of that kind takes three spellings:

- a name sopgym registered (:meth:`Plugins.register`: ours, or one registered by code);
- a name an installed package declares in the kind's entry-point group (``sopgym.agents``,
  ``sopgym.readers``, ``sopgym.scorers``, ``sopgym.profiles``, ``sopgym.transports``,
  ``sopgym.domains``), loaded only when chosen;
- ``module:attr``, imported as ``python -m`` would find it: from the current folder or an
  installed package.

Inspect AI's one registry with one entry-point group is the model; here each kind keeps its
own group, so a package declares only what it offers. What a loaded object must be is the
kind's ``accept`` (a class of readers becomes a reader, a scorer factory a scorer); anything
else, and any name that is none of the three, is the kind's own :class:`UsageError` in one
line, naming the known names (and the closest, for a typo).
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from sopgym.core.exceptions import Signal, UsageError

T = TypeVar("T")


class NotAPlugin(Signal, ValueError):
    """Raised by a kind's ``accept``: what was loaded is not one of that kind (the message
    says why; :meth:`Plugins.resolve` turns it into the kind's usage error, never seen
    outside)."""


def names_a_module(spec: str) -> bool:
    """Whether ``spec`` is ``module:attr`` rather than a name."""
    module, colon, attribute = spec.partition(":")
    return bool(colon and module and attribute)


def import_here(module_name: str) -> Any:
    """The module, imported as ``python -m`` sees modules: the current folder first (the
    ``sopgym`` script alone would not look there, and a user's own code lives there)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(module_name)


def import_spec(spec: str) -> Any:
    """The object ``module:attr`` names (:func:`import_here`)."""
    module_name, _, attribute = spec.partition(":")
    target: Any = import_here(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def load_failure(error: Exception) -> str:
    """Why a module or attribute could not be loaded, in one line: an import's own message
    (``No module named 'x'``), else the error's type too (the user's module raised)."""
    if isinstance(error, ImportError | AttributeError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def user_import_path(environ: dict[str, str] | None = None) -> str:
    """``PYTHONPATH`` for a child process that must import what this one imported from its
    working folder (``--agent module:Class`` in an agent worker that starts elsewhere)."""
    existing = (os.environ if environ is None else environ).get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (os.getcwd(), existing) if p)


def did_you_mean(name: str, known: list[str]) -> str:
    """``"did you mean X? "`` for the closest known names, or nothing."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f"did you mean {' or '.join(close)}? " if close else ""


class Plugins(Generic[T]):
    """One kind's registry: ``kind`` names it in messages (``agent``, ``format``), ``group``
    is its entry-point group, ``accept(spec, loaded)`` makes what the kind uses of a loaded
    object (or raises :class:`NotAPlugin`), ``refused`` is the kind's usage error."""

    def __init__(
        self,
        kind: str,
        group: str,
        accept: Callable[[str, Any], T],
        refused: type[UsageError],
    ) -> None:
        self.kind = kind
        self.group = group
        self._accept = accept
        self._refused = refused
        self.registered: dict[str, Any] = {}  # ours and code's, by name (raw, as registered)

    def register(self, name: str, target: Any) -> None:
        self.registered[name] = target

    def entry_points(self) -> dict[str, EntryPoint]:
        """The installed packages' entry points of this kind, by name (the first wins)."""
        found: dict[str, EntryPoint] = {}
        for point in entry_points(group=self.group):
            found.setdefault(point.name, point)
        return found

    def names(self) -> list[str]:
        """Every name this kind takes: registered, then installed, sorted."""
        return sorted({*self.registered, *self.entry_points()})

    def resolve(self, spec: str) -> T:
        """What ``spec`` names: a registered name, an entry point's, or ``module:attr``."""
        if spec in self.registered:
            return self._accepted(spec, self.registered[spec])
        point = self.entry_points().get(spec)
        if point is not None:
            return self._accepted(spec, self._load(spec, point.load, "plug-in"))
        if names_a_module(spec):
            return self._accepted(spec, self._load(spec, lambda: import_spec(spec), ""))
        raise self.unknown(spec)

    def unknown(self, spec: str) -> UsageError:
        known = self.names()
        return self._refused(
            f"unknown {self.kind} {spec!r} ({did_you_mean(spec, known)}known: "
            f"{', '.join(known) or 'none'}; or module:attr)"
        )

    def _load(self, spec: str, load: Callable[[], Any], how: str) -> Any:
        try:
            return load()
        except Exception as error:  # a user's module may fail any way: one line, no traceback
            what = f"{self.kind} {how} {spec!r}" if how else f"{self.kind} {spec}"
            raise self._refused(f"{what}: cannot load: {load_failure(error)}") from None

    def _accepted(self, spec: str, loaded: Any) -> T:
        try:
            return self._accept(spec, loaded)
        except NotAPlugin as why:
            raise self._refused(f"{self.kind} {spec}: {why}") from None
