"""Package list for the folder-per-component layout.

pyproject.toml maps each top-level folder onto a `sopgym.<folder>` subpackage; setuptools
cannot discover nested packages through such a mapping, so this walks the folders once.
It first generates the gRPC modules (``proto/gen/``, never committed) with grpcio-tools, a
build requirement, so every build and install carries code generated from the ``.proto`` files.
"""

import runpy
from pathlib import Path

from setuptools import setup

ROOTS = {
    "sopgym": "sopgym",
    "sopgym.services": "services",
    "sopgym.gateway": "gateway",
    "sopgym.agents": "agents",
    "sopgym.domains": "domains",
    "sopgym.observability": "observability",
    "sopgym.proto": "proto",
}


def _packages() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            rel = init.parent.relative_to(folder).parts
            found.append(".".join((name, *rel)))
    return found


runpy.run_path("proto/codegen.py")["generate"]()
setup(packages=_packages(), package_dir=ROOTS)
