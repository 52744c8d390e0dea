"""Type-check the tree with mypy under the module names the code is installed as.

setup.py maps top-level folders onto ``sopgym`` subpackages (``gateway/`` is ``sopgym.gateway``).
mypy cannot follow that mapping: it names a file by the folders above it (``gateway.core``),
and it does not run the editable install's import hook, so every ``from sopgym.gateway ...``
would resolve to nothing. This asks the import system where each ``sopgym.<folder>`` lives,
renames the files under those folders accordingly, and runs mypy's build on them.

Usage (after ``pip install -e '.[test]'``): ``python .ci/typecheck.py [mypy options] [paths]``;
the settings, and the files when no paths are given, come from ``[tool.mypy]`` in pyproject.toml
(paths are relative to the repository root). Exit status 0 when clean, 1 on errors.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent


def installed_name(source: BuildSource) -> str:
    """The module's name as installed: ``gateway.core`` becomes ``sopgym.gateway.core``."""
    folder, _, rest = source.module.partition(".")
    spec = importlib.util.find_spec(f"sopgym.{folder}")
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations or Path(locations[0]).resolve() != ROOT / folder:
        return source.module
    return f"sopgym.{folder}.{rest}" if rest else f"sopgym.{folder}"


def main(args: list[str]) -> int:
    os.chdir(ROOT)  # the configuration and its file list are the repository root's
    installed = importlib.util.find_spec("sopgym")
    origin = Path(installed.origin).resolve() if installed and installed.origin else None
    if origin is None or origin.parent != ROOT / "sopgym":
        print(f"typecheck: install this checkout first: pip install -e '{ROOT}[test]'")
        return 2
    sources, options = process_options(args, require_targets=True)
    renamed = [
        BuildSource(source.path, installed_name(source), source.text, source.base_dir)
        for source in sources
    ]
    try:
        messages = build.build(renamed, options).errors
    except CompileError as error:
        messages = error.messages
    for message in messages:
        print(message)
    errors = sum(": error:" in message for message in messages)
    print(f"mypy: {errors} errors in {len(renamed)} source files")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
