"""Running a benchmark's own code in a child process with a time limit.

A published ``tools.py`` is foreign code: it may hang at import or in a call. The audit and
the import load it in a child process, so that a hang costs one benchmark its time limit and
is reported, and the parent goes on with the others; the child is killed when the limit
passes. The child is forked (milliseconds, with sopgym already imported) where the platform
can, spawned elsewhere.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any, TypeVar

from sopgym.core.exceptions import InfrastructureError

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 600.0


class IsolatedTimeout(InfrastructureError, TimeoutError):
    """The child did not finish in time (and was killed)."""


def run_isolated(function: Callable[..., T], args: tuple[Any, ...], timeout_s: float) -> T:
    """``function(*args)`` in a child process; its exceptions re-raise here, and past
    ``timeout_s`` the child is killed and :class:`IsolatedTimeout` raised."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(1) as pool:  # leaving terminates the child
        pending = pool.apply_async(function, args)
        try:
            return pending.get(timeout_s)
        except multiprocessing.TimeoutError:
            raise IsolatedTimeout(f"no answer within {timeout_s:g} s (killed)") from None
