"""Test-wide setup: the small test packs under tests/testpacks join the registered domains, so
the generic pack, contract and oracle tests run over them too. Child processes inherit both
variables, and the repository root on PYTHONPATH lets them import ``tests.testpacks`` from any
working directory."""

import os
from pathlib import Path

from sopgym.core.registry import DOMAIN_PACKAGES_ENV

ROOT = str(Path(__file__).resolve().parent.parent)
os.environ.setdefault(DOMAIN_PACKAGES_ENV, "tests.testpacks")
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
