"""Test helpers shared across modules: one generated-data cache per test session."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from sopgym.core import dataset
from sopgym.core.dataset import DomainData
from sopgym.core.registry import load_domain

DATA_ROOT = Path(tempfile.mkdtemp(prefix="sopgym-test-data-"))
atexit.register(shutil.rmtree, DATA_ROOT, ignore_errors=True)


@cache
def domain_data(name: str) -> DomainData:
    """The domain's generated data, cached for the session (generated on first use)."""
    return dataset.load(load_domain(name), DATA_ROOT)


def task_id(domain: str, index: int) -> str:
    """A real task's id: the gateway opens episodes on the tasks it lists, no others."""
    return domain_data(domain).tasks[index].id
