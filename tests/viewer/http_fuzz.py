#!/usr/bin/env python3
"""A bounded random test of memtrace view's HTTP side, through the real
server: random and malformed request lines, methods, targets and their
percent-encodings, headers (large, many, odd bytes, folded), cookies, bodies
(Content-Length short, long or invalid; chunked, well or badly), pipelined
requests, and connections closed, reset or left open half-way.

usage: http_fuzz.py MEMTRACE TRACES_DIR [SEED [CASES [CASE]]]

Each case is a connection, drawn from its own generator seeded with SEED and
its number, so that one case replays alone (CASE). Two servers answer: one on
loopback, one on 0.0.0.0 with an access token (reached on 127.0.0.1). Every
connection must end with well-formed HTTP answers (one for each request read,
JSON where it says so) or a close (not a reset), within a bounded time; a
well-formed request must get an answer, and each one after it too unless an
answer closes the connection; the servers must stay up, answer an ordinary
request at the end, and stop cleanly.
"""
import json
import os
import random
import socket
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import viewer_server
from viewer_server import check, failures

MEMTRACE, TRACES = sys.argv[1:3]
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else int(os.environ.get("MT_FUZZ_SEED", time.time_ns() % 10**9))
CASES = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
ONLY = int(sys.argv[5]) if len(sys.argv) > 5 else None
TRACE = os.path.join(TRACES, "workload-1e-4.ctf")
BUDGET = 45  # seconds of cases at most: later ones are left out (and counted)

# src/viewer/server.c
HEAD_SECONDS = 10

ENDPOINTS = ["/api/status", "/api/info", "/api/summary", "/api/timeline", "/api/flame",
             "/api/functions", "/api/sites", "/api/paths", "/api/leaks", "/api/histograms",
             "/api/stats"]
ASSETS = ["/", "/index.html", "/app.js", "/style.css", "/favicon.svg"]
ODD_PATHS = ["/api/nope", "/api", "/api/", "/nowhere", "*", "http://x/api/status", "//",
             "/%2e%2e/etc/passwd", "/app.js%00.txt", "/api/status/", "/API/STATUS", "/api/status%20",
             "/%", "/%zz", "/\u00e9".encode().decode("latin-1"), "/api/sum%6dary"]
PARAMS = {"size": ["1k..2M", "..100", "10..5", "x", "1.5k..", "-1.."],
          "alloc": ["0..0.1", "..", "nan..", "2..1"], "live": ["peak", "end", "0.05", "soon"],
          "collected": ["never", "0..1", "3..1"], "lifetime": ["0.001..", "..-3"],
          "source": ["minor", "external,major", "heap"], "inside": ["a", "main", ""],
          "not_inside": ["Stdlib", "x"], "hide": ["a,b", ",,,"], "n": ["1", "3", "0", "10001", "x"],
          "bins": ["10", "5", "4000"], "focus": ["0", "3", "99999999", "abc"],
          "min": ["0.5", "2", "0"], "weight": ["objects", "bytes", "x"], "sort": ["self", "total"],
          "by": ["function", "line", "stack"], "chunks": ["1", "4", "0"], "token": ["x"]}
METHODS = ["GET"] * 8 + ["HEAD"] * 2 + ["POST", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT",
                                        "PATCH", "get", "BREW", "M-SEARCH"]
TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Case:
    """One connection: what it sends, how it ends, and what may come back."""

    def __init__(self, index, token, port_of):
        self.index = index
        r = self.r = random.Random(f"{SEED}:{index}")
        self.guarded = r.random() < 0.5  # the token server
        self.port = port_of[self.guarded]
        self.token = token
        self.methods, self.valid, self.note, parts = [], True, None, []
        self.surplus = 0  # bytes past an empty body: read as one more request
        for _ in range(r.choice([1] * 12 + [2, 3, 5])):
            parts.append(self.request())
        self.data = b"".join(parts)
        self.ending = r.choices(["half", "close", "reset", "cut", "open"], [86, 5, 4, 4, 1])[0]
        if self.ending == "cut":
            self.data = self.data[:r.randrange(max(1, len(self.data)))]
        if self.ending != "half":
            self.valid = False  # (sent in part, or never ended: nothing to answer)

    # -- pieces ------------------------------------------------------------

    def text(self, n, alphabet=None):
        r = self.r
        if alphabet is None:
            return bytes(r.randrange(256) for _ in range(n)).decode("latin-1")
        return "".join(r.choice(alphabet) for _ in range(n))

    def encoded(self, s):
        """s with some bytes percent-encoded, rightly or not."""
        r, out = self.r, []
        for ch in s:
            x = r.random()
            if x < 0.1:
                out.append("%%%02X" % (ord(ch) & 0xFF))
            elif x < 0.12:
                out.append(r.choice(["%", "%G1", "%4", "%00", "%ff", "%C0%AF", "+", "%2B", "%26", "%3D"]))
            else:
                out.append(ch)
        return "".join(out)

    def query(self):
        """A query string and its number of parameters."""
        r = self.r
        n = r.choices([0, 1, 2, 4, 8, 40, 49, 600, 3000], [30, 25, 15, 10, 8, 4, 3, 3, 2])[0]
        items, garbage = [], r.random() < 0.2
        for _ in range(n):
            x = r.random() if garbage else r.random() * 0.9
            if x < 0.6:
                k = r.choice(list(PARAMS))
                v = r.choice(PARAMS[k]) if k != "token" else r.choice([self.token, "0" * 48, ""])
            elif x < 0.8:
                k, v = self.text(r.randrange(0, 12), TOKEN_CHARS), self.text(r.randrange(0, 20), TOKEN_CHARS)
            elif x < 0.9:
                k, v = "inside", self.text(r.choice([10, 1024, 1025, 5000]) if n < 8 else 10, "abcdefgh%")
            else:
                k, v = self.text(r.randrange(0, 6)), self.text(r.randrange(0, 30))
            items.append(self.encoded(k) + r.choice(["=", "=", "=", "", "=="]) + self.encoded(v))
        if items and r.random() < 0.1:
            items.append(items[0])  # repeated
        return "&".join(items), len(items)

    def target(self):
        r = self.r
        x = r.random()
        if x < 0.55:
            path = r.choice(ENDPOINTS)
        elif x < 0.7:
            path = r.choice(ASSETS)
        elif x < 0.85:
            path = r.choice(ODD_PATHS)
        else:
            path = "/" + self.encoded(self.text(r.choice([1, 8, 100, 20000, 70000]), TOKEN_CHARS + "/"))
        q, n = self.query() if r.random() < 0.7 else ("", 0)
        t = path + ("?" + q if q or r.random() < 0.1 else "")
        if r.random() < 0.05:
            t = t[:r.randrange(len(t) + 1)] + self.text(r.randrange(1, 4)) + t[r.randrange(len(t) + 1):]
        self.valid = self.valid and all(32 < ord(ch) < 127 for ch in t)
        return t

    def headers(self, version):
        r = self.r
        h = []
        if r.random() < 0.95:
            h.append("Host: x")
        elif version == "HTTP/1.1":
            self.valid = False
        if self.guarded and r.random() < 0.6:
            h.append(f"Cookie: memtrace_token_{self.port}={r.choice([self.token, self.token, 'x', ''])}")
        common = ["User-Agent: fuzz/1.0", "Accept: */*", "Accept-Encoding: gzip, br", "Connection: keep-alive",
                  "Connection: close", "Connection: Upgrade", "Upgrade: websocket", "Upgrade: h2c",
                  "Expect: 100-continue", "Range: bytes=0-10", "If-None-Match: \"x\"",
                  "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT", "Content-Type: text/plain",
                  "Cookie: a=1; b=2", "Cookie: " + "; ".join(f"c{i}=v" for i in range(r.choice([3, 200, 3000]))),
                  'Cookie: a="b; ;;;=x; k', "Accept-Language: fr, en;q=0.5", "Authorization: Basic eDp5",
                  "X:", "X-Long-Name-" + "n" * 300 + ": v", "X-Big: " + "b" * r.choice([100, 16000, 20000, 70000])]
        sloppy = r.random() < 0.3
        for _ in range(r.choices([0, 1, 3, 8, 99, 150, 2000], [20, 25, 25, 15, 6, 5, 4])[0]):
            x = r.random() if sloppy else r.random() * 0.8
            if x < 0.5:
                h.append(r.choice(common))
            elif x < 0.8:
                h.append(self.text(r.randrange(1, 20), TOKEN_CHARS) + ": " +
                         self.text(r.randrange(0, 60), TOKEN_CHARS + " "))
            else:
                h.append(r.choice(["Name-only", ": empty name", "Sp ace: v", "X: \x00nul", " folded continuation",
                                   "\tfolded tab", "X-Bin: " + self.text(20)]))
                self.valid = False
        body = b""
        b = r.random()
        if b < 0.1:
            n = r.randrange(0, 40)
            body = self.text(n).encode("latin-1")
            h.append(f"Content-Length: {n}")
        elif b < 0.16:
            n = r.randrange(0, 40)
            body = self.text(r.choice([0, n // 2, n + 10])).encode("latin-1")
            h.append(f"Content-Length: {n}")
            self.valid = False
            if n == 0 and body:
                self.surplus += 1
        elif b < 0.2:
            h.append("Content-Length: " + r.choice(["-1", "abc", "99999999999999999999", " 5", "5, 5", "0x10", ""]))
            if r.random() < 0.5:
                h.append("Content-Length: 3")
            self.valid = False
        elif b < 0.3:
            h.append("Transfer-Encoding: " + r.choice(["chunked", "chunked", "CHUNKED", "gzip, chunked", "gzip",
                                                       "identity", "chunked, chunked"]))
            body = r.choice([b"5\r\nhello\r\n0\r\n\r\n", b"5;ext=1\r\nhello\r\n0\r\nTrailer: t\r\n\r\n",
                             b"zz\r\nhello\r\n0\r\n\r\n", b"ffffffffffffffffffff\r\nx\r\n",
                             b"-5\r\nhello\r\n", b"5\r\nhel", b"7fffffff\r\nabc", b"0\r\n\r\n", b"",
                             b"3\r\nabcdef\r\n0\r\n\r\n"])
            self.valid = self.valid and h[-1] in ("Transfer-Encoding: chunked", "Transfer-Encoding: CHUNKED") and \
                body in (b"5\r\nhello\r\n0\r\n\r\n", b"5;ext=1\r\nhello\r\n0\r\nTrailer: t\r\n\r\n", b"0\r\n\r\n")
        r.shuffle(h)
        return h, body

    def request(self):
        r = self.r
        method = r.choice(METHODS)
        if r.random() < 0.05:
            method = r.choice(["", "G E T", self.text(r.randrange(1, 10)), "X" * r.choice([100, 3000])])
            self.valid = self.valid and method.startswith("X")
        version = "HTTP/1.1"
        v = r.random()
        if v < 0.2:
            version = "HTTP/1.0"
        elif v < 0.27:
            version = r.choice(["", "HTTP/0.9", "HTTP/2.0", "HTTP/1.2", "HTTP/1.10", "http/1.1", "HTTP/1.1 x",
                                "HTTP/", "HTTP/1.1\x00"])
            self.valid = False
        eol = "\r\n"
        if r.random() < 0.08:
            eol = r.choice(["\n", "\r", "\n\r"])
            self.valid = self.valid and eol == "\n"
        target = self.target()
        headers, body = self.headers(version)
        line = " ".join(x for x in (method, target, version) if x != "" or r.random() < 0.3)
        if r.random() < 0.03:
            line = line.replace(" ", r.choice(["  ", "\t", ""]), 1)
            self.valid = False
        head = eol.join([line] + headers) + eol + eol
        if r.random() < 0.05:  # spurious empty lines before the request
            head = "\r\n" * r.randrange(1, 4) + head
        self.methods.append(method)
        return head.encode("latin-1") + body

    # -- running -----------------------------------------------------------

    def send(self, s):
        r, data = self.r, self.data
        cuts = sorted(r.randrange(len(data) + 1) for _ in range(r.choice([0, 0, 0, 1, 3, 10])))
        at = 0
        for c in cuts + [len(data)]:
            s.sendall(data[at:c])
            at = c
            if r.random() < 0.3:
                time.sleep(r.random() * 0.02)

    def run(self):
        """What went wrong: a list of texts (empty if nothing)."""
        t0 = time.time()
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError as e:
            return [f"cannot connect: {e}"]
        got, closed, reset = b"", False, False
        try:
            try:
                self.send(s)
                if self.ending == "half":
                    s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server closed first: read what it said
            if self.ending in ("close", "cut"):
                return []
            if self.ending == "reset":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return []
            # open: the server must cut it (the head deadline); half: answer and close
            s.settimeout(HEAD_SECONDS + 6 if self.ending == "open" else 20)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    closed = True
                    break
                got += chunk
        except socket.timeout:
            pass
        except OSError:
            closed = reset = True
        finally:
            s.close()
        problems = []
        if not closed:
            problems.append(f"not closed after {time.time() - t0:.1f} s ({len(got)} bytes answered)")
        answers, why, self.note = parse_all(got, self.methods + ["GET"] * self.surplus, reset)
        if why:
            problems.append(why)
        if reset and self.ending == "half":  # (the server drains what it leaves unread)
            problems.append(f"reset after {len(got)} bytes")
        if (self.valid and answers and len(answers) < len(self.methods) and
                answers[-1][1].get("connection", "").lower() != "close"):
            problems.append(f"{len(answers)} answers to {len(self.methods)} requests, the last not closing")
        if self.valid and not answers:
            problems.append("no answer to a well-formed request")
        return problems


def parse_all(data, methods, reset):
    """The answers in data, one for each request at most: ([(status,
    headers, body)], what is wrong or None, a note or None). A reset (the
    server closed with bytes unread and did not drain them) makes the
    client's system drop what the client had not read yet: then the last
    answer may be cut. Nothing may follow an answer that closes the
    connection."""
    answers, k = [], 0
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            if reset:
                return answers, None, "cut by a reset"
            return answers, f"an answer cut in its head: {data[:120]!r}", None
        r = viewer_server.parse_head(head)
        if r is None:
            return answers, f"a malformed answer: {data[:160]!r}", None
        status, headers = r[0], r[1]
        if 100 <= status < 200:
            data = rest
            continue
        method = methods[k] if k < len(methods) else "GET"
        n = int(headers.get("content-length", "-1"))
        if status in (204, 304):
            n = 0
        elif method == "HEAD" and not (n >= 0 and len(rest) >= n and not rest.startswith(b"HTTP/1.")):
            n = 0  # (a HEAD whose method was never read is answered with a body)
        elif n < 0:
            return answers, f"an answer without Content-Length: {head[:160]!r}", None
        if len(rest) < n:
            if reset:
                return answers, None, "cut by a reset"
            return answers, f"an answer short of its {n} bytes: {head[:160]!r}", None
        body, data = rest[:n], rest[n:]
        if headers.get("content-type", "").startswith("application/json") and n:
            try:
                doc = json.loads(body)
            except ValueError:
                return answers, f"an answer not JSON as it says: {body[:160]!r}", None
            if status >= 400 and not isinstance(doc.get("error"), str):
                return answers, f"a {status} without its message: {body[:160]!r}", None
        answers.append((status, headers, body))
        k += 1
        if k > len(methods):
            return answers, f"more answers than requests ({k})", None
        if data and headers.get("connection", "").lower() == "close":
            return answers, f"bytes after an answer that closes: {data[:80]!r}", None
        if "x-content-type-options" not in headers:
            return answers, f"an answer not the viewer's: {head[:160]!r}", None
    return answers, None, None


def main():
    if not os.path.exists(TRACE):
        print(f"skip: no {TRACE}")
        sys.exit(77)
    print(f"http_fuzz: seed {SEED} ({CASES} cases; rerun: http_fuzz.py MEMTRACE TRACES_DIR {SEED} {CASES})",
          flush=True)
    plain = viewer_server.Server(MEMTRACE, TRACE)
    guarded = viewer_server.Server(MEMTRACE, "--host", "0.0.0.0", TRACE)
    guarded.url = f"http://127.0.0.1:{guarded.port}"
    servers = (plain, guarded)
    for srv in servers:
        srv.reported = False
    try:
        plain.wait_ready()
        port_of = {False: plain.port, True: guarded.port}
        t0, ran, notes, lock = time.time(), [0], {}, threading.Lock()

        def one(i):
            if time.time() - t0 > BUDGET or any(srv.p.poll() is not None for srv in servers):
                return
            c = Case(i, guarded.token or "0" * 48, port_of)
            problems = c.run()
            with lock:
                ran[0] += 1
                if c.note:
                    notes[c.note] = notes.get(c.note, 0) + 1
                for p in problems:
                    check(False, f"case {i} ({c.ending}, {len(c.data)} bytes {c.data[:100]!r}...): {p}")
                for srv in servers:
                    if srv.p.poll() is not None and not srv.reported:
                        srv.reported = True
                        check(False, f"case {i}: the server exited ({srv.p.returncode})")

        indices = [ONLY] if ONLY is not None else range(CASES)
        with ThreadPoolExecutor(max_workers=12) as pool:
            list(pool.map(one, indices))
        print(f"http_fuzz: {ran[0]} cases in {time.time() - t0:.1f} s" +
              "".join(f"; {n} {what}" for what, n in sorted(notes.items())), flush=True)
        check(all(srv.p.poll() is None for srv in servers), "the servers are up")
        st = plain.json("/api/status")
        check(st.get("state") == "ready", f"an ordinary request after the fuzz: {st}")
        st = guarded.json(f"/api/summary?token={guarded.token}")
        check("bytes" in st, "an ordinary request with the token after the fuzz")
    finally:
        for srv in servers:
            if srv.p.poll() is None:
                srv.stop()
    if failures:
        print(f"{len(failures)} failure(s); seed {SEED}", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
