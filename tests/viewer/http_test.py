#!/usr/bin/env python3
"""Tests of memtrace view's HTTP side (docs/viewer.md, "HTTP", "Limits",
"Access"): the limits of a request and their answers, slow clients, repeated
parameters, and the access token of a server bound beyond loopback.

usage: http_test.py MEMTRACE TRACES_DIR TEST

Requests are sent as raw bytes on a socket where urllib would refuse or
change them; every one must get an HTTP status.
"""
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.error

import viewer_server
from viewer_server import check, failures, parse_response, raw

MEMTRACE, TRACES, TEST = sys.argv[1:4]
TRACE = os.path.join(TRACES, "workload-1e-4.ctf")

# src/viewer/server.c
MAX_ARGS, MAX_TARGET, MAX_HEADER_BYTES, MAX_HEADERS = 48, 16384, 16384, 100
HEAD_SECONDS, MAX_PER_ADDRESS = 10, 32


class Server(viewer_server.Server):
    def __init__(self, *args):
        super().__init__(MEMTRACE, *args)


def ask(srv, data, host="127.0.0.1"):
    """The response to raw request bytes: (status, headers, body); fails the
    test (and returns None) when there is none."""
    got = raw(srv.port, data, host=host)
    r = parse_response(got) if got is not None else None
    check(r is not None, f"{data[:80]!r}...: no HTTP answer: {got if got is None else got[:200]!r}")
    return r[:3] if r else None


def json_error(srv, data, status, words, host="127.0.0.1"):
    """Checks that data gets status with a JSON message holding every one of
    words; returns the message."""
    r = ask(srv, data, host)
    if not r:
        return None
    st, h, body = r
    check(st == status, f"{data[:80]!r}...: status {st}, want {status}: {body[:200]!r}")
    msg = None
    if check(h.get("content-type", "").startswith("application/json"),
             f"{data[:80]!r}...: content type {h.get('content-type')}"):
        msg = json.loads(body).get("error")
        check(isinstance(msg, str) and all(w in msg for w in words),
              f"{data[:80]!r}...: message {msg!r} lacks {words}")
    return msg


def get(target, *headers):
    return (f"GET {target} HTTP/1.1\r\nHost: x\r\n" + "".join(h + "\r\n" for h in headers) +
            "\r\n").encode()


def test_limits():
    """Every request too large gets its status and a JSON message: too many
    query parameters 400, a long target 414, large header fields 431, and
    so for heads of any size, past the buffer a head is read into too."""
    srv = Server(TRACE)
    try:
        srv.wait_ready()
        for n in (MAX_ARGS + 1, 475, 1000):
            q = "&".join(f"x{i}=1" for i in range(n))
            json_error(srv, get("/api/summary?" + q), 400,
                       ["too many query parameters", str(n), str(MAX_ARGS)])
        # empty parameters count as any
        json_error(srv, get("/api/summary?" + "&" * 3000), 400, ["too many query parameters"])
        # at the limit: the parameters are read (an unknown one is named)
        q = "&".join(f"x{i}=1" for i in range(MAX_ARGS))
        json_error(srv, get("/api/summary?" + q), 400, ["unknown parameter 'x0'"])
        json_error(srv, get("/?" + "&".join(f"v{i}=1" for i in range(600))), 400,
                   ["too many query parameters"])
        long = "/api/summary?inside=" + "x" * MAX_TARGET
        json_error(srv, get(long), 414, ["request target too long", str(len(long))])
        json_error(srv, get("/" + "a" * 40000), 414, ["request target too long"])
        json_error(srv, get("/api/status", *[f"X-H{i}: v" for i in range(MAX_HEADERS)]), 431,
                   ["request header fields too large", str(MAX_HEADERS)])
        json_error(srv, get("/api/status", "X-Big: " + "b" * MAX_HEADER_BYTES), 431,
                   ["request header fields too large"])
        json_error(srv, get("/api/status", *[f"X-H{i}: " + "v" * 200 for i in range(90)]), 431,
                   ["request header fields too large"])
        # within the limits, answered
        r = ask(srv, get("/api/summary?inside=" + "%41" * 1024 + "&hide=" + "%42" * 1024,
                         *[f"X-H{i}: v" for i in range(MAX_HEADERS - 2)], "Cookie: " + "c" * 4000))
        check(r and r[0] == 200, f"a large request within the limits: {r and r[:2]}")
        # past the head's buffer: still answered in JSON
        for data, status, words in (
                (get("/" + "a" * 100000), 414, ["request target too long", "over"]),
                (get("/api/status", "X-Big: " + "b" * 100000), 431, ["request header fields too large"]),
                (get("/api/status", *[f"X{i}: v" for i in range(3000)]), 431, ["3001 fields"])):
            json_error(srv, data, status, words)
        # every size of head around the buffer's 64 KiB gets its answer
        for size in range(63 * 1024, 66 * 1024, 97):
            pad = size - len(get("/api/status", "X-Pad: "))
            json_error(srv, get("/api/status", "X-Pad: " + "p" * pad), 431,
                       ["request header fields too large"])
            json_error(srv, get("/api/status?" + "q" * pad), 414, ["request target too long"])
        srv.json("/api/status")
    finally:
        srv.stop()


class Conn:
    """One connection, its answers read one at a time."""

    def __init__(self, srv):
        self.s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def answer(self, method="GET"):
        """The next answer: (status, headers, body); None at the end of the
        stream."""
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if sep:
                st, h = viewer_server.parse_head(head)
                n = 0 if method == "HEAD" else int(h["content-length"])
                if len(rest) >= n:
                    self.buf = rest[n:]
                    return st, h, rest[:n]
            chunk = self.s.recv(65536)
            if not chunk:
                check(self.buf == b"", f"bytes before the end: {self.buf[:100]!r}")
                return None
            self.buf += chunk

    def ends(self, what):
        """Checks that the server closes the connection next (without a
        reset)."""
        try:
            check(self.answer() is None, f"{what}: the connection closes")
        except OSError as e:
            check(False, f"{what}: {e}")
        self.s.close()


def test_connections():
    """Persistent connections: answers in order, pipelined requests, HEAD,
    and the cases that close (HTTP/1.0, Connection: close, a body, a
    malformed head, a head cut by the client's end)."""
    srv = Server(TRACE)
    try:
        srv.wait_ready()
        c = Conn(srv)
        for path in ("/api/status", "/api/summary", "/app.js"):
            c.send(get(path))
            st, h, body = c.answer()
            check(st == 200 and h.get("connection") is None, f"{path} kept alive: {st} {h}")
        # three at once: three answers, in order
        c.send(get("/api/status") + get("/nowhere") + get("/api/sites?n=2"))
        got = [c.answer() for _ in range(3)]
        check([a[0] for a in got] == [200, 404, 200], f"pipelined: {[a[0] for a in got]}")
        check(json.loads(got[2][2]).get("shown") == 2, "pipelined answers in their order")
        # HEAD: the length of GET's body, no body
        c.send(b"HEAD /app.js HTTP/1.1\r\nHost: x\r\n\r\n")
        st, h, _ = c.answer("HEAD")
        c.send(get("/app.js"))
        st2, h2, body = c.answer()
        check(st == 200 and int(h["content-length"]) == len(body) > 0, f"HEAD: {st} {h}")
        c.send(get("/api/status", "Connection: close"))
        st, h, _ = c.answer()
        check(st == 200 and h.get("connection") == "close", f"Connection: close: {h}")
        c.ends("after Connection: close")
        for data, status, what in (
                (b"GET /api/status HTTP/1.0\r\n\r\n", 200, "HTTP/1.0"),
                (b"POST /api/status HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" +
                 get("/api/status"), 405, "a request with a body"),
                (b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n" + get("/api/status"), 400, "a malformed line"),
                (get("/api/status", "Bad Name: v"), 400, "a malformed field")):
            c = Conn(srv)
            c.send(data)
            st, h, body = c.answer()
            check(st == status and h.get("connection") == "close", f"{what}: {st} {h}")
            c.ends(what)
        # the client ends inside a head: told so
        json_error(srv, b"GET /api/status HTTP/1.1\r\nHost: x\r\nX-Half: ", 400,
                   ["ended inside a request head"])
        check(raw(srv.port, b"\r\n\r\n") == b"", "blank lines only: closed without an answer")
    finally:
        srv.stop()


def test_repeated():
    """A parameter given twice is refused, naming it, as an unknown one is."""
    srv = Server(TRACE)
    try:
        srv.wait_ready()
        for q, name in (("sites?n=1&n=3", "n"), ("sites?n=3&n=3", "n"),
                        ("summary?size=1k..&size=..2k", "size"), ("sites?n=1&%6e=2", "n"),
                        ("flame?min=0.1&weight=bytes&min=", "min"), ("summary?inside=a&inside", "inside"),
                        ("status?token=a&token=a", "token")):
            j = srv.json("/api/" + q, status=400)
            check(f"'{name}'" in j.get("error", "") and "repeated" in j["error"], f"{q}: {j}")
        srv.json("/api/sites?n=1&by=function&inside=a&hide=b")
    finally:
        srv.stop()


class Trickler:
    """n connections that send a request head one byte a second, never
    ending it."""

    def __init__(self, port, n, source=None):
        self.socks, self.done, self.got = [], set(), {}
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                         source_address=(source, 0) if source else None)
            s.setblocking(False)
            self.socks.append(s)
        for s in self.socks:
            self.send(s, b"GET /api/status HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def send(self, s, data):
        try:
            s.send(data)
        except OSError:
            pass

    def run(self):
        while not self.stop:
            for s in self.socks:
                self.send(s, b"a")
            time.sleep(1)

    def closed(self):
        """How many the server closed."""
        for s in self.socks:
            while s not in self.done:
                try:
                    chunk = s.recv(4096)
                    self.got[s] = self.got.get(s, b"") + chunk
                    if chunk == b"":
                        self.done.add(s)
                except BlockingIOError:
                    break
                except OSError:
                    self.done.add(s)
        return len(self.done)

    def close(self):
        self.stop = True
        self.t.join()
        for s in self.socks:
            s.close()


def quick_status(srv, what):
    t0 = time.time()
    try:
        st, _, body = srv.get("/api/status", timeout=5)
        check(st == 200 and json.loads(body)["state"] == "ready", f"{what}: status {st} {body[:100]!r}")
    except (OSError, urllib.error.URLError) as e:
        check(False, f"{what}: no answer ({e})")
    check(time.time() - t0 < 3, f"{what}: answered in {time.time() - t0:.1f} s")


def test_slow_clients():
    """Clients sending their request head a byte a second neither lock others
    out nor keep their connections: each has HEAD_SECONDS to send a whole
    head. Beyond loopback, one address holds at most MAX_PER_ADDRESS
    connections."""
    # meanwhile, an answer that takes longer than HEAD_SECONDS (it waits for
    # a slow load) is not cut: the deadline is the head's
    os.environ["MEMTRACE_VIEW_TEST_DELAY"] = str(HEAD_SECONDS + 2)
    try:
        late = Server(TRACE)
    finally:
        del os.environ["MEMTRACE_VIEW_TEST_DELAY"]
    got = []
    waiter = threading.Thread(target=lambda: got.append((late.get("/api/info", timeout=40), time.time())))
    waiter.start()
    t_late = time.time()
    srv = Server(TRACE)
    slow = None
    try:
        srv.wait_ready()
        t0 = time.time()
        slow = Trickler(srv.port, 70)
        idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(5)]
        time.sleep(1.5)
        quick_status(srv, "an ordinary request beside 70 slow clients")
        # an answered connection does not stay open either (closed after its
        # answer, or kept alive and then cut as a silent one)
        ka = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        ka.sendall(get("/api/status"))
        ka.settimeout(1)
        first = b""
        while parse_response(first) is None:
            try:
                chunk = ka.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            first += chunk
        check(first.startswith(b"HTTP/1.1 200"), f"answer {first[:40]!r}")
        while time.time() - t0 < HEAD_SECONDS + 8 and slow.closed() < 70:
            time.sleep(0.5)
        took = time.time() - t0
        check(slow.closed() == 70, f"slow clients cut: {slow.closed()} of 70 after {took:.1f} s")
        check(took >= HEAD_SECONDS - 1, f"slow clients cut after {took:.1f} s, before the deadline")
        told = sum(1 for s in slow.socks if slow.got.get(s, b"").startswith(b"HTTP/1.1 408 "))
        check(told == 70, f"slow clients told 408: {told} of 70")
        for s, what in [(s, "a silent connection is closed") for s in idle] + [
                (ka, "an answered connection is closed")]:
            s.settimeout(HEAD_SECONDS)
            try:
                check(s.recv(10) == b"", what)
            except socket.timeout:
                check(False, what)
            except OSError:
                pass  # reset: closed
            s.close()
        slow.close()
        slow = None
        quick_status(srv, "an ordinary request after the slow clients")
        waiter.join(30)
        (st, _, _), t_end = got[0] if got else ((None, None, None), t_late)
        check(st == 200 and t_end - t_late >= HEAD_SECONDS,
              f"an answer that took {t_end - t_late:.1f} s: status {st}")
    finally:
        if slow:
            slow.close()
        srv.stop()
        late.stop()
    # beyond loopback: 40 slow connections from 127.0.0.2, the rest refused
    srv = Server("--host", "0.0.0.0", "--no-token", TRACE)
    srv.url = f"http://127.0.0.1:{srv.port}"
    try:
        srv.wait_ready()
        slow = Trickler(srv.port, 40, source="127.0.0.2")
        time.sleep(1.5)
        check(slow.closed() == 40 - MAX_PER_ADDRESS,
              f"from one address, {slow.closed()} of 40 refused, want {40 - MAX_PER_ADDRESS}")
        quick_status(srv, "an ordinary request from another address")
    finally:
        if slow:
            slow.close()
        srv.stop()


def test_token():
    """Bound beyond loopback, the server answers only with its token: in
    the query (the answer sets a cookie) or in that cookie."""
    srv = Server("--host", "0.0.0.0", TRACE)
    try:
        check(srv.shown.startswith(f"http://0.0.0.0:{srv.port}/?token="), f"URL {srv.shown}")
        token = srv.token or ""
        check(re.fullmatch("[0-9a-f]{32,}", token) is not None, f"token {token!r}: 128 bits in hex")
        srv.url = f"http://127.0.0.1:{srv.port}"
        for path in ("/api/status", "/", "/app.js", "/api/summary?size=1..", "/nowhere",
                     "/api/status?token=", "/api/status?token=" + "0" * len(token),
                     "/api/status?token=" + token[:-1], "/api/status?token=" + token + "0",
                     "/api/status?tok=" + token):
            j = srv.json(path, status=403)
            check("token" in j.get("error", ""), f"{path}: 403 message {j}")
        st, h, _ = srv.get("/api/status", headers={"Cookie": f"memtrace_token_{srv.port}=" + "1" * len(token)})
        check(st == 403, f"a wrong cookie: {st}")
        st, h, _ = srv.get("/api/status", headers={"Cookie": f"memtrace_token_{srv.port + 1}=" + token})
        check(st == 403, f"another port's cookie: {st}")
        check(srv.get("/api/info", method="POST")[0] == 403, "POST without the token")
        # the token in the query: answered, and a cookie set
        st, h, body = srv.get("/?token=" + token)
        check(st == 200 and b"<html" in body.lower(), f"the page with its token: {st}")
        cookie = h.get("Set-Cookie", "")
        check(cookie.startswith(f"memtrace_token_{srv.port}={token};"), f"Set-Cookie {cookie!r}")
        attrs = {a.strip().lower() for a in cookie.split(";")[1:]}
        check({"httponly", "samesite=strict", "path=/"} <= attrs, f"cookie attributes {attrs}")
        j = srv.json(f"/api/sites?n=3&token={token}")
        check(j["shown"] == 3, "token is no unknown parameter")
        srv.json(f"/api/summary?token={token}&size=1k..")
        # the cookie alone: the page's requests
        jar = {"Cookie": f"other=1; memtrace_token_{srv.port}={token}"}
        st, h, body = srv.get("/api/summary?size=1k..", headers=jar)
        check(st == 200 and "Set-Cookie" not in h, f"with the cookie: {st} {h.get('Set-Cookie')}")
        st, _, _ = srv.get("/app.js", headers=jar)
        check(st == 200, f"an asset with the cookie: {st}")
        st, _, _ = srv.get("/api/info", method="POST", headers=jar)
        check(st == 405, f"POST with the cookie: {st}")
    finally:
        srv.stop()
    # every server its own token
    a, b = Server("--host", "0.0.0.0", TRACE), Server("--host", "0.0.0.0", TRACE)
    try:
        check(a.token and b.token and a.token != b.token, "two servers, two tokens")
    finally:
        a.stop()
        b.stop()
    # --follow and --listen serve the same way
    for args in (("--follow", TRACE), ("--listen", f"127.0.0.1:{viewer_server.free_port()}")):
        srv = Server("--host", "0.0.0.0", *args)
        srv.url = f"http://127.0.0.1:{srv.port}"
        try:
            check(srv.token is not None, f"{args[0]}: token in the URL {srv.shown}")
            srv.json("/api/status", status=403)
            srv.json(f"/api/status?token={srv.token}")
        finally:
            srv.stop()
    # loopback addresses: no token
    for host in ("127.0.0.1", "127.0.0.2", "localhost"):
        srv = Server("--host", host, TRACE)
        try:
            check(srv.token is None and "token" not in srv.shown, f"{host}: URL {srv.shown}")
            srv.json("/api/status")
        finally:
            srv.stop()


def test_no_token():
    """--no-token beyond loopback: served to anyone, with a loud warning."""
    srv = Server("--host", "0.0.0.0", "--no-token", TRACE)
    try:
        check(srv.token is None and srv.shown == f"http://0.0.0.0:{srv.port}/", f"URL {srv.shown}")
        srv.url = f"http://127.0.0.1:{srv.port}"
        srv.json("/api/status")
        st, _, _ = srv.get("/")
        check(st == 200, f"the page: {st}")
    finally:
        srv.stop()
    err = srv.p.stderr.read()
    check("WARNING" in err and "--no-token" in err and "0.0.0.0" in err, f"warning: {err!r}")
    srv = Server("--no-token", TRACE)
    try:
        srv.json("/api/status")
    finally:
        srv.stop()
    err = srv.p.stderr.read()
    check("WARNING" not in err, f"--no-token on loopback changes nothing: {err!r}")


if __name__ == "__main__":
    if not os.path.exists(TRACE):
        print(f"skip: no {TRACE}")
        sys.exit(77)
    fn = globals().get("test_" + TEST)
    if not fn:
        raise SystemExit(f"no test {TEST}")
    fn()
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")
