"""What the viewer's API tests share: failures gathered by check(), a
`memtrace view` server on a free port, and requests sent as raw bytes on a
socket (api_test.py, cli_vs_api.py, http_test.py, http_fuzz.py)."""
import json
import re
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
    until stop(). `url` has no path; `token` is the one the URL carries
    (bound beyond loopback), or None; `port` the port it serves on."""

    def __init__(self, memtrace, *args):
        self.p = subprocess.Popen([memtrace, "view", "--port", str(free_port()), *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if "serving" not in line:
            err = self.p.stderr.read() if self.p.poll() is not None else ""
            raise SystemExit(f"FAIL: memtrace view {args}: no URL line ({line!r}) {err}")
        self.shown = line.split(" at ")[1].strip()
        base, _, query = self.shown.partition("?")
        self.token = query[len("token="):] if query.startswith("token=") else None
        self.url = base.rstrip("/")
        self.port = int(self.url.rsplit(":", 1)[1])

    def get(self, path, method="GET", timeout=60, headers=None):
        """(status, headers, body bytes)"""
        req = urllib.request.Request(self.url + path, method=method, headers=headers or {})
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
        try:
            return json.loads(body)
        except ValueError:
            check(False, f"{path}: not JSON: {body[:200]!r}")
            return {}

    def wait_ready(self, timeout=60):
        """/api/status until it says ready (the trace loads in the background,
        and a long one shows previews meanwhile)."""
        end = time.time() + timeout
        while True:
            st = self.json("/api/status")
            if st["state"] not in ("loading", "partial") or time.time() > end:
                return st
            time.sleep(0.05)

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        err = ""
        if rc != 0 and rc != "hung":
            err = self.p.stderr.read()[-2000:]
        check(rc == 0, f"memtrace view exit status on SIGINT: {rc}: {err}")


def raw(port, data, timeout=20, host="127.0.0.1", source=None):
    """Sends data (bytes) on a new connection, closes the sending side and
    reads until the server closes: the bytes it sent, or None if it did not
    close within timeout. A reset counts as a close."""
    s = socket.create_connection((host, port), timeout=timeout,
                                 source_address=(source, 0) if source else None)
    got = b""
    try:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # closed while sending: what was answered is read below
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk
    except socket.timeout:
        return None
    except ConnectionResetError:
        return got
    finally:
        s.close()


def parse_head(head):
    """A response's status line and header fields (bytes, without the blank
    line): (status, {lowercase name: value}), or None if malformed."""
    lines = head.split(b"\r\n")
    m = re.fullmatch(rb"HTTP/1\.[01] ([1-5][0-9][0-9]) [\x20-\x7e]*", lines[0])
    if not m:
        return None
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not re.fullmatch(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
            return None
        headers[name.decode().lower()] = value.strip().decode("latin-1")
    return int(m.group(1)), headers


def parse_response(data):
    """The first response in data: (status, {lowercase name: value}, body,
    the rest); None if it does not start with a well-formed status line and
    header, or its body is short of its Content-Length."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    r = parse_head(head) if sep else None
    if r is None:
        return None
    n = int(r[1].get("content-length", "0"))
    if len(rest) < n:
        return None
    return r[0], r[1], rest[:n], rest[n:]
