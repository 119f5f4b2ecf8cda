"""Headless Chromium for the browser tests: Debian's binary, driven by Playwright, never a download."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def require_chromium() -> None:
    """Skip (saying why) unless Chromium and the playwright package are both here."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (CI installs it: apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")


@contextmanager
def browser_page(url: str, last_shot: str) -> Iterator[Any]:
    """A 1400x900 page at ``url``; saves ``last_shot`` to tests/artifacts and fails on uncaught page errors."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        try:
            yield page
        finally:
            page.screenshot(path=str(ARTIFACTS / last_shot))
            browser.close()
        assert errors == [], f"errors in the page: {errors}"
