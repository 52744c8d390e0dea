"""Type-check the tree with mypy under the module names the code is installed as.

setup.py maps top-level folders onto ``sopgym`` subpackages (``gateway/`` is ``sopgym.gateway``).
mypy cannot follow that mapping: it names a file by the folders above it (``gateway.core``),
and it does not run the editable install's import hook, so every ``from sopgym.gateway ...``
would resolve to nothing. This asks the import system where each ``sopgym.<folder>`` lives,
renames the files under those folders accordingly, and runs mypy's build on them.

It always checks the whole tree (``files`` in ``[tool.mypy]``): a ``sopgym.<folder>`` module
resolves only while it is one of the files checked, and a run without it would cache its
importers with that import missing. The cache is its own (``.mypy_cache/installed-names``) for
the same reason: plain ``mypy`` names these files differently.

Usage (after ``pip install -e '.[test]'``): ``python .ci/typecheck.py [mypy options]``; the
settings come from ``[tool.mypy]`` in pyproject.toml. Exit status 0 when clean, 1 on errors.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.find_sources import create_source_list
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
    sources, options = process_options(args)
    tree = create_source_list(options.files or [], options)
    if sorted(map(str, (s.path for s in sources))) != sorted(map(str, (s.path for s in tree))):
        print("typecheck: it checks the whole tree ([tool.mypy] files): pass options, not targets")
        return 2
    options.cache_dir = os.path.join(options.cache_dir, "installed-names")
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
