"""The console under test: uvicorn on a free loopback port, driven by the system Chromium."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable
from beam_agents.testing.services import free_port

CHROMIUM = Path("/usr/bin/chromium")
TOKEN = "console-test-token-0123456789"


def write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, sort_keys=True) + "\n")


def approval(service: str, alert_id: str, message: str, intent_id: str) -> dict[str, Any]:
    """An approval intent as the triage app writes it."""
    return {
        "args": {"timeout_ms": 900000},
        "awaits_answer": True,
        "event_time_ms": 1_796_025_686_000,
        "index": 0,
        "intent_id": intent_id,
        "prompt": {
            "alert_id": alert_id,
            "message": message,
            "question": "page the on-call engineer?",
            "reason": "matched 'unreachable'",
            "service": service,
        },
        "seq": 1,
        "service": service,
        "tool": "approval",
    }


class Served:
    """A console being served; `url` is its root."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the console did not start in 10 s")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """Serve a console with the given settings for the test's duration."""
    from beam_agents.console.app import ConsoleSettings, create_app

    running: list[Served] = []

    def start(**settings: Any) -> Served:
        served = Served(create_app(ConsoleSettings(**settings))).__enter__()
        running.append(served)
        return served

    yield start
    for served in running:
        served.__exit__()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, through Playwright (no browser download).

    Module-scoped: Playwright's sync API runs an event loop on this thread
    while it is open, and later tests' `asyncio.run` must not meet it.
    """
    if not CHROMIUM.exists():
        service_unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, tmp_path: Path) -> Iterator[Any]:
    """A fresh browser context and page; every dialog is recorded (and dismissed)."""
    context = browser.new_context()
    page = context.new_page()
    page.dialogs = []

    def on_dialog(dialog: Any) -> None:
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()
