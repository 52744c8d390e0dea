"""The bridge to a benchmark's own ``tools.py``: load it once, call its tools by name.

Only the tool service and the audit load it; the gateway and the agents see tools over HTTP
only. Calls go through ``process_tool_call(name, params)`` when the class has one, else the
method named after the tool, as SOP-Bench's own harness does. What the code returns or raises
is translated into sopgym's contract: a JSON object, or a :class:`ToolError` with a code.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import inspect
import io
import json
import logging
import math
import os
import random
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sopgym.core.errors import ToolError
from sopgym.core.exceptions import DataError
from sopgym.core.imported import TOOL_SEED_ENV
from sopgym.importers.layout import TOOLS
from sopgym.types import JSON

log = logging.getLogger("sopgym.importers")

NOT_FOUND = re.compile(
    r"not found|no (?:\w+ ){0,2}(?:found|exists?)|no data|no record|no match|unknown|"
    r"does not exist|doesn't exist",
    re.I,
)
_UNEXPECTED = re.compile(r"unexpected keyword argument '([^']+)'")
# "missing 1 required positional argument: 'x'" (a call), "missing a required argument: 'x'"
_MISSING = re.compile(r"missing (?:\d+|a) required (?:\w+ )?arguments?: '([^']+)'")


class ToolsLoadError(DataError, RuntimeError):
    """``tools.py`` cannot be imported, or offers no object to call tools on."""


class NullResult(dict[str, Any]):
    """``{"value": null}`` answering a tool that returned ``None``: SOP-Bench shows its model
    ``null`` as a success, so we do too; the type lets the call carry a warning saying so."""


class ToolsBridge:
    def __init__(self, folder: Path, tool_names: list[str], none_as_error: bool = False) -> None:
        self.folder = folder
        self.tool_names = list(tool_names)
        self.none_as_error = none_as_error  # our strict view: None is the tool's failure
        self._target: Any = None
        self._literals: set[str] | None = None

    # ---- loading ----
    def load(self) -> Any:
        """The object tools are called on (an instance, or the module itself), loaded once."""
        if self._target is None:
            seed_generators(call_seed(TOOLS, {}))  # draws made while loading follow the seed too
            module = self._import()
            self._target = self._instantiate(module)
        return self._target

    def _import(self) -> Any:
        path = self.folder / TOOLS
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
        name = f"_sopbench_tools_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ToolsLoadError(f"{path}: not importable")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(self.folder))  # tools.py may import its neighbours
        try:
            with _quiet():
                spec.loader.exec_module(module)
        except (Exception, SystemExit) as error:
            sys.modules.pop(name, None)
            raise ToolsLoadError(f"{TOOLS} failed to import: {_describe(error)}") from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(self.folder))
        return module

    def _instantiate(self, module: Any) -> Any:
        """The class defined in tools.py that best matches the tools; else the module."""
        classes = [
            c
            for c in vars(module).values()
            if isinstance(c, type) and c.__module__ == module.__name__
        ]

        def score(cls: type) -> tuple[bool, int, bool]:
            matches = sum(hasattr(cls, n) for n in self.tool_names)
            return hasattr(cls, "process_tool_call"), matches, cls.__name__.endswith("Manager")

        best = max(classes, key=score, default=None)
        if best is None or score(best)[:2] == (False, 0):
            if any(callable(getattr(module, n, None)) for n in self.tool_names):
                return module
            raise ToolsLoadError(f"{TOOLS} defines no class with process_tool_call or tool methods")
        try:
            with _quiet():
                return best()
        except (Exception, SystemExit) as error:
            raise ToolsLoadError(f"{TOOLS}: {best.__name__}() failed: {_describe(error)}") from None

    def implements(self, name: str) -> bool:
        """Whether tools.py has a method for ``name`` or names it in its dispatch code."""
        if callable(getattr(self.load(), name, None)):
            return True
        if self._literals is None:
            tree = ast.parse((self.folder / TOOLS).read_text(errors="replace"))
            self._literals = {
                n.value
                for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
        return name in self._literals

    # ---- calling ----
    def call(self, name: str, params: JSON) -> Any:
        """The tool's raw return value; whatever the tool raises propagates."""
        target = self.load()
        dispatch = getattr(target, "process_tool_call", None)
        with _quiet():
            if callable(dispatch):
                return dispatch(name, dict(params))
            method = getattr(target, name, None)
            if not callable(method):
                raise ToolError("internal_error", f"{TOOLS} does not implement {name!r}")
            _check_arguments(method, params)
            return method(**params)

    def serve(self, name: str, params: JSON) -> JSON:
        """One call as the tool service answers it: a JSON object or a :class:`ToolError`."""
        if not self.implements(name):
            raise ToolError(
                "internal_error", f"tool {name!r} is in toolspecs.json but {TOOLS} lacks it"
            )
        try:
            # no lock: each call seeds and draws from its own thread's generators, so a call
            # that hangs holds nothing another call needs (the tool service's thread pool)
            seed_generators(call_seed(name, params))
            raw = self.call(name, params)
        except ToolError:
            raise
        except (Exception, SystemExit) as error:
            raise error_for(name, error) from None
        return result_object(name, raw, self.none_as_error)


def call_seed(name: str, params: JSON) -> int:
    """The seed of one call: the run's (``SOPGYM_TOOL_SEED``, 0 when unset) with the tool and
    its arguments, so a call draws the same in every run with that seed, whatever the order or
    concurrency of the calls around it (and differently under another seed)."""
    run_seed = os.environ.get(TOOL_SEED_ENV, "0")
    text = f"{run_seed}|{name}|{json.dumps(params, sort_keys=True, default=str)}"
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def seed_generators(seed: int) -> None:
    """Seed this thread's ``random`` and numpy legacy generators (what tools.py files draw
    from when they draw unseeded, :func:`draw_per_thread`)."""
    draw_per_thread()
    random.seed(seed)
    try:
        import numpy
    except ImportError:  # numpy is pandas' dependency: absent only where pandas is
        return
    numpy.random.seed(seed)


_thread_generators = threading.local()
_rewiring = threading.Lock()
_rewired: set[str] = set()


def draw_per_thread() -> None:
    """Turn the module-level functions of ``random`` and of numpy's legacy ``numpy.random``
    (bound methods of one process-wide generator) into calls on a generator of the calling
    thread's own, once per process. A call seeded and run on one thread then draws the same
    whatever other calls do meanwhile, with no lock a hung call could hold. Done before
    tools.py is imported, so its ``from random import choice`` takes the per-thread one."""
    with _rewiring:
        if "random" not in _rewired:
            _forward_to_thread([random], random._inst, random.Random)
            _rewired.add("random")
        if "numpy" not in _rewired:
            try:
                import numpy.random
                import numpy.random.mtrand
            except ImportError:
                return
            shared = numpy.random.mtrand._rand
            _forward_to_thread(
                [numpy.random, numpy.random.mtrand], shared, numpy.random.RandomState,
                # module functions of numpy's that call the shared generator's methods
                also={"seed": "seed", "ranf": "random_sample", "sample": "random_sample"},
            )  # fmt: skip
            _rewired.add("numpy")


def _forward_to_thread(
    modules: list[Any], shared: Any, new_generator: Any, also: dict[str, str] | None = None
) -> None:
    kind = type(shared).__name__

    def generator() -> Any:
        own = getattr(_thread_generators, kind, None)
        if own is None:  # a fresh thread draws from entropy, as the shared one would
            own = new_generator()
            setattr(_thread_generators, kind, own)
        return own

    def forward(name: str) -> Any:
        def draw(*args: Any, **kwargs: Any) -> Any:
            return getattr(generator(), name)(*args, **kwargs)

        draw.__name__ = draw.__qualname__ = name
        return draw

    for module in modules:
        for name, value in list(vars(module).items()):
            # bound methods, Python's and builtin ones alike (random.random is the latter)
            if callable(value) and getattr(value, "__self__", None) is shared:
                setattr(module, name, forward(value.__name__))
            elif name in (also or {}):
                setattr(module, name, forward((also or {})[name]))


def unimplemented(folder: Path, tool_names: list[str]) -> list[str]:
    """The spec tools ``folder``'s tools.py neither implements nor dispatches (it is loaded
    here: call this in an isolated child); :class:`ToolsLoadError` when it cannot load."""
    bridge = ToolsBridge(folder, tool_names)
    bridge.load()
    return [name for name in tool_names if not bridge.implements(name)]


def result_object(name: str, raw: Any, none_as_error: bool = False) -> JSON:
    """A tool's return value as a JSON object; a bare value is wrapped as ``{"value": ...}``.
    ``None`` is a successful ``null`` (:class:`NullResult`), as SOP-Bench answers it, unless
    ``none_as_error``: then it is the tool's failure."""
    if raw is None:
        if not none_as_error:
            return NullResult(value=None)
        raise ToolError("internal_error", f"tool {name!r} returned None")
    value = json_value(raw)
    return value if isinstance(value, dict) else {"value": value}


def error_for(name: str, error: BaseException) -> ToolError:
    """How a tool's exception reads to an agent: a refusal with a code, never a traceback."""
    message = str(error).strip() or type(error).__name__
    if isinstance(error, TypeError):
        if match := _UNEXPECTED.search(message):
            field = match.group(1)
            return ToolError("unexpected_argument", f"unexpected argument '{field}'", field)
        if match := _MISSING.search(message):
            field = match.group(1)
            return ToolError("missing_argument", f"missing required argument '{field}'", field)
    if isinstance(error, (ValueError, LookupError, AssertionError)):
        code = "not_found" if NOT_FOUND.search(message) else "invalid_value"
        return ToolError(code, message[:500])
    log.warning("tool %s raised %s", name, _describe(error))
    return ToolError("internal_error", f"tool {name!r} failed: {_describe(error)}"[:500])


def _check_arguments(method: Any, params: JSON) -> None:
    try:
        inspect.signature(method).bind(**params)
    except TypeError as error:
        raise error_for(getattr(method, "__name__", "?"), error) from None
    except ValueError:
        return  # no signature to check (a builtin): let the call decide


def json_value(value: Any) -> Any:
    """Plain JSON from what pandas-based tools return (numpy scalars, NaN, timestamps...)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(v) for v in value]
    for convert in ("item", "tolist", "to_dict", "isoformat"):  # numpy, pandas, datetimes
        method = getattr(value, convert, None)
        if callable(method):
            with contextlib.suppress(Exception):
                return json_value(method())
    return str(value)


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Tools print progress to stdout; it is not part of their API (and not our stdout's)."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield
