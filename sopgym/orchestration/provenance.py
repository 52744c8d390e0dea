"""What a run was made with, recorded in its ``config.json`` so that two runs can be compared
knowingly: the sopgym version, the source commit when the code runs from a git checkout, and
each domain's data fingerprint (the generated data set it scored against)."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

from sopgym.core.registry import load_domain
from sopgym.types import JSON

_SOURCE = Path(__file__).resolve().parent


def provenance(domains: list[str]) -> JSON:
    commit = git_commit(_SOURCE)
    return {
        "sopgym_version": _version(),
        "git_commit": commit,
        "git_dirty": _git_dirty(_SOURCE) if commit else None,
        "fingerprints": {name: load_domain(name).fingerprint() for name in domains},
        # imported benchmarks' tools.py run under these (floats can differ by an ulp from
        # the versions a benchmark pins: docs/sop-bench-import.md, "Exact floats")
        "libraries": {name: _package_version(name) for name in ("pandas", "numpy")},
    }


def git_commit(folder: Path) -> str | None:
    """The commit checked out around ``folder``; ``None`` without git or outside a checkout."""
    result = _git(folder, "rev-parse", "HEAD")
    return result.stdout.strip() if result is not None and result.returncode == 0 else None


def _git_dirty(folder: Path) -> bool | None:
    """Whether tracked files differ from the commit (untracked files are not looked at)."""
    result = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return bool(result.stdout.strip()) if result is not None and result.returncode == 0 else None


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return None


def _version() -> str | None:
    return _package_version("sopgym")


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
