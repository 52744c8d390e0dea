"""Test-wide setup: the small test packs under tests/testpacks join the registered domains, so
the generic pack, contract and oracle tests run over them too. Child processes inherit both
variables, and the repository root on PYTHONPATH lets them import ``tests.testpacks`` from any
working directory."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sopgym.core.registry import DOMAIN_PACKAGES_ENV

ROOT = str(Path(__file__).resolve().parent.parent)
os.environ.setdefault(DOMAIN_PACKAGES_ENV, "tests.testpacks")
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless Debian chromium driven by Playwright, for the viewer's browser tests
    (Playwright's own browser download is not reachable here; CI installs chromium)."""
    if CHROMIUM is None:
        pytest.skip("no chromium here (apt-get install chromium; CI installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()
