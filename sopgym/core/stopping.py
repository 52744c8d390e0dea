"""Stopping on SIGTERM, also as a container's PID 1.

The kernel never applies a signal's default action to the first process of a PID namespace
(a container's PID 1): a SIGTERM left at ``SIG_DFL``, or re-raised with it after a cleanup, is
dropped, and the orchestrator SIGKILLs the process after its grace period with work in flight.
So sopgym's processes stop by raising :class:`SystemExit` instead: ``finally`` blocks run (a
shard closes its results file and gives its claim back), and the exit status is the one a
default SIGTERM death reports to a shell (128 + 15).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import NoReturn

SIGTERM_STATUS = 128 + signal.SIGTERM


def terminate(signum: int, frame: object = None) -> None:
    """A SIGTERM handler that ends the process as the signal would, PID 1 or not."""
    raise SystemExit(128 + signum)


def exit_on_sigterm() -> None:
    """Install :func:`terminate` for SIGTERM where nothing else handles it (main thread only:
    Python runs handlers there)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, terminate)


def leave_now(status: int) -> NoReturn:
    """Exit with ``status`` at once, the standard streams flushed: not after an agent's worker
    threads end their calls (a worker stopping on SIGTERM has nothing left to record)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
