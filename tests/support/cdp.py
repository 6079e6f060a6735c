"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), standard library only.

``--dump-dom`` with ``--virtual-time-budget`` never returns on a page that keeps a request open (Model
Explorer's server-sent events stream), and dumps before an app that renders after its load event is done.
This opens the page, polls its text until ``wait_for`` appears, and takes a screenshot; console errors and
uncaught exceptions are collected. The protocol: JSON messages ended by a NUL byte, commands on fd 3,
replies and events on fd 4.

Example:
    >>> page = load_page(chromium(), "http://127.0.0.1:8080/", "op node count", tmp_path / "shot.png")
    >>> page.text, page.errors
"""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field

__all__ = ["chromium", "Page", "load_page"]


def chromium():
    """The Chromium binary on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class Page:
    """What the page showed: its text (``document.body.innerText``), and console errors / exceptions."""

    text: str
    errors: list = field(default_factory=list)


class _Pipe:
    def __init__(self, proc, write, read):
        self.proc, self.write, self.read, self.buffer, self.events, self.next_id = proc, write, read, b"", [], 0

    def send(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.write.write(json.dumps(message).encode() + b"\0")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while b"\0" not in self.buffer:
                chunk = self.read.read(1 << 16)
                if not chunk:
                    raise RuntimeError(f"chromium exited (code {self.proc.poll()}) during {method}")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)
        raise TimeoutError(method)

    def text(self, session):
        result = self.send("Runtime.evaluate", {"expression": "document.body ? document.body.innerText : ''",
                                                "returnByValue": True}, session)
        return result["result"].get("value", "")


def _errors(events) -> list:
    found = []
    for event in events:
        params = event.get("params", {})
        if event.get("method") == "Runtime.exceptionThrown":
            found.append(params["exceptionDetails"].get("text", "exception"))
        elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
            found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
    return found


def load_page(binary, url, wait_for, screenshot=None, timeout=120, settle=3.0) -> Page:
    """Open ``url`` in headless ``binary``, wait until its text holds ``wait_for`` (a string, or several), then
    ``settle`` seconds more; save a PNG to ``screenshot``. TimeoutError when the text never appears."""
    wanted = (wait_for,) if isinstance(wait_for, str) else tuple(wait_for)
    to_chrome, from_us = os.pipe()
    to_us, from_chrome = os.pipe()

    def wire():  # in the child: its fd 3 reads our commands, fd 4 writes its replies (moved high first, so
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome, from_chrome)]  # neither lands on the other)
        os.dup2(high[0], 3)
        os.dup2(high[1], 4)

    proc = subprocess.Popen([binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
                             "--remote-debugging-pipe", "--window-size=1400,900", "--no-first-run", "about:blank"],
                            pass_fds=(3, 4), preexec_fn=wire, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(to_chrome)
    os.close(from_chrome)
    pipe = _Pipe(proc, os.fdopen(from_us, "wb", buffering=0), os.fdopen(to_us, "rb", buffering=0))
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        pipe.send("Runtime.enable", session=session)
        pipe.send("Page.enable", session=session)
        pipe.send("Page.navigate", {"url": url}, session)
        end, text = time.monotonic() + timeout, ""
        while not all(w in text for w in wanted):
            if time.monotonic() > end:
                raise TimeoutError(f"{wanted!r} not all on the page after {timeout}s; it shows: {text[:500]!r}")
            time.sleep(0.5)
            text = pipe.text(session)
        time.sleep(settle)
        text = pipe.text(session)
        if screenshot is not None:
            data = pipe.send("Page.captureScreenshot", {"format": "png"}, session)["data"]
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(data))
        return Page(text, _errors(pipe.events))
    finally:
        try:
            pipe.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
