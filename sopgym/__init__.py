"""sopgym: LLM agents executing Standard Operating Procedures against real HTTP tool services.

The Python API (the ``sopgym`` command line is a thin layer over it)::

    import sopgym

    summary = sopgym.run(sopgym.RunConfig(domains=["patient_intake"], agent="oracle", limit=2))
    summary.tsr, summary.run_dir

- :func:`run` (``sopgym run``): validate a :class:`RunConfig`, run its tasks through the real
  stack into a run folder, return the summary (a typed ``RunSummary``); a config that cannot
  run raises :class:`UsageError` before anything starts.
- :func:`score` (``sopgym score``): score responses produced elsewhere into a run folder.
- :func:`evaluate` (``sopgym eval``): evaluate a run folder's traces, or OTLP JSON files.

They load lazily (module ``__getattr__``), so ``import sopgym`` stays as cheap as before.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sopgym.core.exceptions import SopgymError, UsageError
    from sopgym.orchestration.api import evaluate, run, score
    from sopgym.runs.records import RunConfig

# name -> the module that defines it, imported on first use
_LAZY = {
    "run": "sopgym.orchestration.api",
    "score": "sopgym.orchestration.api",
    "evaluate": "sopgym.orchestration.api",
    "RunConfig": "sopgym.orchestration.runner",
    "SopgymError": "sopgym.core.exceptions",
    "UsageError": "sopgym.core.exceptions",
}

__all__ = ["RunConfig", "SopgymError", "UsageError", "evaluate", "run", "score"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'sopgym' has no attribute {name!r}")
