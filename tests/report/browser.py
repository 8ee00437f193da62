"""Headless Chromium driven over the DevTools protocol, for the report's tests.

``Browser`` starts Debian's ``chromium`` (installed by ``make browser-tools``) with a new empty
profile and no background networking, on a DevTools port of its own choosing, and ``open``
loads a page in a new tab and records what a person's browser would show: console messages,
uncaught exceptions, every network request the page makes. Nothing here is evalserve's.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

REPO = Path(__file__).resolve().parents[2]
AXE = REPO / ".browser-tools" / "node_modules" / "axe-core" / "axe.min.js"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--window-size=1280,900",
)


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("no chromium on PATH: `make browser-tools` installs it")
    return found


@dataclass
class Page:
    """One tab: the DevTools connection and what the page did."""

    socket: websocket.WebSocket
    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def call(self, method: str, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its answer, recording the events on the way."""
        ident = next(self._ids)
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def wait_for(self, event: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if message.get("method") == event:
                params: dict[str, Any] = message.get("params", {})
                return params

    def evaluate(self, expression: str, timeout: float = 60.0) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        answer = self.call(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def until(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"not true within {timeout} s: {expression}")

    def screenshot(self, path: Path, until: str | None = None) -> bytes:
        """The page as a PNG, written to ``path``: the whole page, or from its top to the
        bottom of the element ``until`` (a CSS selector)."""
        size = self.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=int(size[0]),
            height=int(size[1]),
            deviceScaleFactor=1,
            mobile=False,
        )
        height = size[1]
        if until is not None:
            height = self.evaluate(
                f"document.querySelector({json.dumps(until)}).getBoundingClientRect().bottom"
                " + window.scrollY + 16"
            )
        clip = {"x": 0, "y": 0, "width": size[0], "height": height, "scale": 1}
        answer = self.call("Page.captureScreenshot", format="png", clip=clip)
        data = base64.b64decode(answer["data"])
        path.write_bytes(data)
        return data

    def axe(self) -> list[dict[str, Any]]:
        """axe-core's violations of WCAG 2 A and AA on the page (empty: none found)."""
        if not AXE.exists():
            raise RuntimeError(f"{AXE} is missing: `make browser-tools` installs axe-core")
        self.evaluate(AXE.read_text(encoding="utf-8") + ";true")
        found = self.evaluate(
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})"
            ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact,"
            " help: v.help, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)})))",
            timeout=120.0,
        )
        return list(found)

    def _receive(self, deadline: float) -> dict[str, Any]:
        self.socket.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            message: dict[str, Any] = json.loads(self.socket.recv())
        except websocket.WebSocketTimeoutException:
            raise TimeoutError("no answer from Chromium in time") from None
        method = message.get("method")
        params = message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(
                {"type": params.get("type"), "args": [a.get("value") for a in params["args"]]}
            )
        elif method == "Runtime.exceptionThrown":
            self.exceptions.append(params.get("exceptionDetails", {}))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.console.append({"type": entry.get("level"), "args": [entry.get("text")]})
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        return message


class Browser:
    """``with Browser() as browser: page = browser.open(url)``."""

    def __init__(self) -> None:
        self._profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def __enter__(self) -> Browser:
        profile = Path(self._profile.name)
        self._process = subprocess.Popen(
            [
                chromium_path(),
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not active.exists() or not active.read_text().strip():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        self.port = int(active.read_text().split()[0])
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._profile.cleanup()

    def open(self, url: str, timeout: float = 60.0) -> Page:
        """A new tab with every event domain on, navigated to ``url`` and loaded."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            target = json.load(answer)
        socket = websocket.create_connection(
            target["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True
        )
        page = Page(socket)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url=url)
        page.wait_for("Page.loadEventFired", timeout=timeout)
        return page
