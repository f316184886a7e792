#!/usr/bin/env python3
"""Drives Debian's Chromium, headless, over the DevTools protocol.

The protocol runs over a pipe (--remote-debugging-pipe: commands in on
fd 3, answers and events out on fd 4, one JSON message per NUL), so no
port is opened and nothing beyond Python's standard library is needed.

    cdp.py [--proxy HOST:PORT] [--spki-trust HASH] [--screenshot FILE]
           [--eval JS] [--wait-for JS] URL

loads URL in a fresh profile and prints one JSON object: every response
the page received (url, status, which address Chromium connected to, the
protocol), every request that failed, and the value of --eval (run after
the load event and, if given, once --wait-for is true). Exits 1 if the
page did not load.
"""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


class Browser:
    def __init__(self, proxy=None, spki_trust=None, width=1280, height=900):
        self.profile = tempfile.mkdtemp(prefix="sumcache-chromium-")
        # the flags; the network-time query off too. Chromium
        # still asks update.googleapis.com and accounts.google.com at
        # start (two CONNECTs and a POST through the proxy, which answers
        # 502 here: no DNS), so the checks count only their origin's URLs
        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-features=NetworkTimeServiceQuerying",
                "--user-data-dir=" + self.profile,
                "--remote-debugging-pipe",
                "--window-size=%d,%d" % (width, height)]
        if proxy:
            # Chromium goes direct to loopback addresses unless told
            # otherwise; every origin in these tests is on loopback
            args += ["--proxy-server=http://" + proxy,
                     "--proxy-bypass-list=<-loopback>"]
        if spki_trust:
            # trusts exactly one key (the test origin's), not every
            # certificate as --ignore-certificate-errors would
            args.append("--ignore-certificate-errors-spki-list=" + spki_trust)
        args.append("about:blank")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.buf = b""
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium said nothing in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 65536)
                if not chunk:
                    raise EOFError("Chromium closed the pipe (see %s)" %
                                   self.log.name)
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, timeout=30, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def attach(self):
        targets = self.send("Target.getTargets", session=False)
        page = next(t for t in targets["targetInfos"] if t["type"] == "page")
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": page["targetId"],
                                  "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            self.send(domain + ".enable")

    def evaluate(self, js, timeout=30):
        r = self.send("Runtime.evaluate", {"expression": js,
                                           "returnByValue": True,
                                           "awaitPromise": True},
                      timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" %
                               r["exceptionDetails"].get("text"))
        return r["result"].get("value")

    def wait_for(self, js, timeout=30):
        """Polls js until true; while the page is still arriving it may
        throw (no body yet), which counts as not yet."""
        deadline = time.monotonic() + timeout
        why = "false"
        while True:
            try:
                if self.evaluate("!!(%s)" % js):
                    return
            except RuntimeError as e:
                why = str(e)
            if time.monotonic() > deadline:
                raise TimeoutError("never true (%s): %s" % (why, js))
            time.sleep(0.2)

    def screenshot(self, path):
        r = self.send("Page.captureScreenshot",
                      {"format": "png", "captureBeyondViewport": True})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


def load(args):
    b = Browser(proxy=args.proxy, spki_trust=args.spki_trust)
    report = {"url": args.url, "responses": [], "failed": []}
    try:
        b.attach()
        nav = b.send("Page.navigate", {"url": args.url})
        if nav.get("errorText"):
            report["error"] = nav["errorText"]
        else:
            b.wait_event("Page.loadEventFired", timeout=args.timeout)
            if args.wait_for:
                b.wait_for(args.wait_for, timeout=args.timeout)
            if args.eval:
                report["eval"] = b.evaluate(args.eval)
            if args.screenshot:
                b.screenshot(args.screenshot)
        for e in b.events:
            p = e.get("params", {})
            if e.get("method") == "Network.responseReceived":
                r = p["response"]
                report["responses"].append({
                    "url": r["url"], "status": r["status"],
                    "connected_to": "%s:%s" % (r.get("remoteIPAddress"),
                                               r.get("remotePort")),
                    "protocol": r.get("protocol"),
                    "from_cache": r.get("fromDiskCache", False),
                })
            elif e.get("method") == "Network.loadingFailed":
                report["failed"].append({"error": p.get("errorText"),
                                         "request": p.get("requestId")})
    finally:
        b.close()
    json.dump(report, sys.stdout, indent=1)
    print()
    return 1 if "error" in report else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--proxy", help="HOST:PORT of an HTTP proxy")
    ap.add_argument("--spki-trust", help="base64 SHA-256 of a key to trust")
    ap.add_argument("--screenshot", help="PNG of the whole page")
    ap.add_argument("--eval", help="expression whose value is reported")
    ap.add_argument("--wait-for", help="expression to wait for after load")
    ap.add_argument("--timeout", type=float, default=30)
    return load(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
