"""Shared by the import tests: the fixture folders and a throwaway import registry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sopgym.core.import_index import HOME_ENV

FIXTURES = Path(__file__).parent / "fixtures" / "sop_bench"
TOOLS_LOG_ENV = "SOPGYM_TEST_TOOLS_LOG"  # the fixtures' tools.py append their argv to it

# fixture -> the finding kinds its audit must report, and nothing else
EXPECTED_KINDS: dict[str, set[str]] = {
    "clean": set(),
    "relayed_outputs": {"relayed_outputs"},
    "bad_json": {"bad_file"},
    "bad_csv": {"bad_file"},
    # no input_columns in metadata.json, but a test_set_without_outputs.csv to read them from
    "inferred_input_columns": {"missing_input_columns"},
    # order_fulfillment's layout: neither; the inputs are inferred from the tool specs
    "order_fulfillment": {"missing_input_columns"},
    "random_draws": {"nondeterministic_tools"},  # unseeded random / numpy draws
    **{
        name: {name}
        for name in (
            "missing_input_columns",
            "missing_columns",
            "invalid_tool_spec",
            "malformed_rows",
            "duplicate_keys",
            "empty_expected_outputs",
            "uncallable_tools",
            "tools_returning_none",
            "nondeterministic_tools",
            "unknown_input_ids",
            "schema_mismatches",
        )
    },
}


def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the import registry at an empty folder for one test."""
    folder = tmp_path / "home"
    monkeypatch.setenv(HOME_ENV, str(folder))
    return folder


def copy_fixture(name: str, into: Path) -> Path:
    """A writable copy of a fixture, for tests that break it further."""
    target = into / name
    shutil.copytree(FIXTURES / name, target)
    return target


def loaders_are_services_or_the_import(logged: list[str]) -> bool:
    """Whether every process that imported a tools.py (lines of the tools log) was a tool
    service or the import's isolated probe: never a gateway, agent worker or model."""
    return bool(logged) and all(
        " serve-tools sopbench/" in line or " import sop-bench " in line for line in logged
    )


def sopgym(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, as a user runs it (``env`` on top of ours)."""
    return subprocess.run(
        [sys.executable, "-m", "sopgym", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
