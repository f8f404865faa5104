"""What the viewer's API tests share: failures gathered by check(), and a
`memtrace view` server on a free port (api_test.py, cli_vs_api.py)."""
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

failures = []


def check(cond, what):
    """Records a failure (and prints it) when cond is false; returns cond."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    """`memtrace view ARGS...` on a free port, from the URL line it prints
    until stop()."""

    def __init__(self, memtrace, *args):
        self.p = subprocess.Popen([memtrace, "view", "--port", str(free_port()), *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if "serving" not in line:
            err = self.p.stderr.read() if self.p.poll() is not None else ""
            raise SystemExit(f"FAIL: memtrace view {args}: no URL line ({line!r}) {err}")
        self.url = line.split(" at ")[1].strip().rstrip("/")

    def get(self, path, method="GET", timeout=60):
        """(status, headers, body bytes)"""
        req = urllib.request.Request(self.url + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def json(self, path, status=200):
        """The JSON document at path, checking its status and content type."""
        st, h, body = self.get(path)
        check(st == status, f"{path}: status {st}, want {status}: {body[:200]!r}")
        check(h.get("Content-Type", "").startswith("application/json"), f"{path}: content type")
        return json.loads(body)

    def wait_ready(self, timeout=60):
        """/api/status until it says ready (the trace loads in the background)."""
        end = time.time() + timeout
        while True:
            st = self.json("/api/status")
            if st["state"] != "loading" or time.time() > end:
                return st
            time.sleep(0.05)

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        check(rc == 0, f"memtrace view exit status on SIGINT: {rc}")
