"""A short, bounded gateway soak (bench/bench_soak.py): 100 connections for 3 s playing whole
episodes, zero errors, the gateway's RSS within 10 % of its size after the warm-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_short_soak_has_no_errors_and_no_memory_growth() -> None:
    args = ["--connections", "100", "--duration", "3", "--warmup", "1", "--keep-episodes", "200"]
    soak = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_soak.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert soak.returncode == 0, soak.stdout + soak.stderr
    assert "100 connections" in soak.stdout and "errors: 0" in soak.stdout
    assert "p99 " in soak.stdout and "growth after warm-up" in soak.stdout
