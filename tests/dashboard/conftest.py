"""What the dashboard's tests share: an API server, the dashboard as a real
process against it, and a real headless Chromium showing the page.

The browser is Debian's chromium, driven by Playwright for Python (the
dashboard's README says why Playwright). Without chromium (or without the
playwright package) these tests skip with one line, unless
GROUNDUP_REQUIRE_CHROMIUM=1 (set by .ci/run), where that is a failure: CI
must never pass by skipping the browser. GROUNDUP_CHROMIUM names another
browser binary.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from common.tooling.apiserver_process import APIServer
from dashboard_harness import Dashboard

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "dashboard" / "screenshots"


def chromium_path() -> str | None:
    wanted = os.environ.get("GROUNDUP_CHROMIUM")
    if wanted:
        return wanted if os.access(wanted, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(reason: str) -> None:
    if os.environ.get("GROUNDUP_REQUIRE_CHROMIUM") == "1":
        pytest.fail(f"GROUNDUP_REQUIRE_CHROMIUM=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium for the whole session (each test opens its own page)."""
    path = chromium_path()
    if path is None:
        _missing(f"no chromium at {os.environ.get('GROUNDUP_CHROMIUM') or 'chromium on PATH'}: "
                 "install Debian's chromium (make setup does, as root) to run the browser tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is missing: run `make venv`")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()


NETWORK_CHANGED = "ERR_NETWORK_CHANGED"


def goto(tab, url: str, attempts: int = 3) -> None:
    """Open url, again if the host's network changed under the browser."""
    for attempt in range(attempts):
        try:
            tab.goto(url)
            return
        except Exception as error:
            if NETWORK_CHANGED not in str(error) or attempt == attempts - 1:
                raise


class Page:
    """A browser tab on the dashboard that records every console error and
    uncaught exception; the test fails at the end if there was any."""

    def __init__(self, browser, url: str):
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.tab = self.context.new_page()
        self.tab.on("console", self._console)
        self.tab.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        goto(self.tab, url)
        # A mark that a reload would wipe: the page must change without one.
        self.tab.evaluate("window.loadedOnce = true")

    def _console(self, message) -> None:
        # Chromium aborts what is in flight when this computer's addresses
        # change (ERR_NETWORK_CHANGED): other tests make network namespaces
        # beside us. That is the host, not the page; EventSource reconnects.
        if message.type == "error" and NETWORK_CHANGED not in message.text:
            self.errors.append(message.text)

    def pod(self, key: str):
        return self.tab.locator(f'[data-pod="{key}"]')

    def node(self, name: str):
        return self.tab.locator(f'[data-node="{name}"]')

    def wait_for_pod(self, key: str, timeout: float = 10):
        self.pod(key).wait_for(state="attached", timeout=timeout * 1000)
        return self.pod(key)

    def wait_until(self, expression: str, timeout: float = 10, arg=None):
        """Poll a JavaScript expression in the page until it is truthy (Playwright polls each frame)."""
        return self.tab.wait_for_function(expression, arg=arg, timeout=timeout * 1000)

    def not_reloaded(self) -> bool:
        return self.tab.evaluate("window.loadedOnce === true")

    def screenshot(self, request, name: str) -> None:
        """With --update-screenshots, keep this moment's picture for the READMEs."""
        if request.config.getoption("update_screenshots"):
            SCREENSHOTS.mkdir(exist_ok=True)
            self.tab.wait_for_timeout(600)               # the enter/leave transitions end: a still picture
            self.tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def open_page(browser):
    """open_page(url) -> Page; asserts at the end that no page logged an error."""
    pages: list[Page] = []

    def opener(url: str) -> Page:
        pages.append(Page(browser, url))
        return pages[-1]

    yield opener
    errors = [error for page in pages for error in page.errors]
    for page in pages:
        page.close()
    assert not errors, f"the page logged JavaScript errors: {errors}"


# ---------------------------------------------------------------- the cluster side

@pytest.fixture
def apiserver(tmp_path):
    server = APIServer(tmp_path / "data").start()
    yield server
    server.stop()


@pytest.fixture
def start_dashboard(tmp_path):
    started: list[Dashboard] = []

    def start(*flags: str) -> Dashboard:
        started.append(Dashboard(tmp_path, *flags))
        return started[-1]

    yield start
    for dashboard in started:
        dashboard.stop()


@pytest.fixture
def dashboard(apiserver, start_dashboard) -> Dashboard:
    return start_dashboard("--apiserver", apiserver.url)
