"""Test-wide setup: the small test packs under tests/testpacks join the registered domains, so
the generic pack, contract and oracle tests run over them too (child processes inherit it)."""

import os

from sopgym.core.registry import DOMAIN_PACKAGES_ENV

os.environ.setdefault(DOMAIN_PACKAGES_ENV, "tests.testpacks")
