"""The browser of the web page's tests: Debian's ``chromium`` driven by Playwright.

A test module sets ``pytestmark = needs_chromium`` and uses the fixtures ``browser`` (one
Chromium per module) and ``page`` (a fresh page per test whose script errors fail the test) of
``tests/integration/conftest.py``; it defines its own ``server`` fixture, which ``page`` waits for.
"""

from __future__ import annotations

import shutil

import pytest

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                                     "(pip install -e '.[dev]')")
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it as root: "
    "apt-get install chromium)")
