#!/usr/bin/env python3
"""Tests of memtrace view's JSON API and memtrace report (docs/viewer.md).

usage: api_test.py MEMTRACE MT_TOOLS_SYNTH PRELOAD LIVE_PROG TRACES_DIR TEST

Each test starts `memtrace view` on a free port and reads the URL line it
prints. Synthetic traces at sample rate 1 (mt_tools_synth, with the truth of
every allocation) make every estimate exact, so answers are compared for
equality with figures computed here from the truth.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

MEMTRACE, SYNTH, PRELOAD, LIVE_PROG, TRACES, TEST = sys.argv[1:7]
TMP = tempfile.mkdtemp(prefix="mt_viewer_")
failures = []


def check(cond, what):
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
    def __init__(self, *args):
        self.p = subprocess.Popen([MEMTRACE, "view", "--port", str(free_port()), *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if "serving" not in line:
            err = self.p.stderr.read() if self.p.poll() is not None else ""
            raise SystemExit(f"FAIL: memtrace view {args}: no URL line ({line!r}) {err}")
        self.url = line.split(" at ")[1].strip().rstrip("/")

    def get(self, path, method="GET"):
        """(status, headers, body bytes)"""
        req = urllib.request.Request(self.url + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def json(self, path, status=200):
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


def synth(*opts):
    path = os.path.join(TMP, f"s{len(os.listdir(TMP))}.ctf")
    truth = path + ".json"
    subprocess.run([SYNTH, path, truth, *map(str, opts)], check=True)
    with open(truth, encoding="utf-8") as f:
        return path, json.load(f)


def objs(truth):
    for o in truth["objects"]:
        yield dict(site=o[0], words=o[1], length=o[2], nsamples=o[3], source=o[4], alloc=o[5],
                   free=None if o[6] < 0 else o[6], names=truth["sites"][o[0]]["names"])


def sums(objects):
    b = sum(o["words"] * 8 for o in objects)
    return b, len(objects)


def exact(est, want, what):
    check(est["v"] == want and est["lo"] == want and est["hi"] == want, f"{what}: {est} != {want}")


def walk(node):
    yield node
    for c in node["children"]:
        yield from walk(c)


def check_tree(tree, what):
    for n in walk(tree):
        kids = sum(c["bytes"]["v"] for c in n["children"])
        check(abs(kids + n["self"]["bytes"]["v"] - n["bytes"]["v"]) <= 1e-6 * max(1, n["bytes"]["v"]),
              f"{what}: node {n['fn']}: children + self != bytes")
        b = [c["bytes"]["v"] for c in n["children"]]
        check(b == sorted(b, reverse=True), f"{what}: children not sorted")


# ---- tests ------------------------------------------------------------------


def test_endpoints():
    srv = Server(os.path.join(TRACES, "ocamlopt.ctf"))
    try:
        st = srv.wait_ready()
        check(st["state"] == "ready" and st["generation"] >= 1 and st["live"] is False, f"status {st}")
        info = srv.json("/api/info")
        check(info["trace"] == "ocamlopt.ctf" and info["word_size"] == 64, "info fields")
        check(info["sampled_objects"] == st["objects"] > 0, "info objects")
        total = info["total"]["bytes"]["v"]
        s = srv.json("/api/summary")
        check(s["bytes"]["v"] == total and s["share"] == 1, f"summary unfiltered {s}")
        _, h, _ = srv.get("/api/summary")
        check(h.get("Cache-Control") == "no-store", "Cache-Control")
        tl = srv.json("/api/timeline?bins=50")
        check(len(tl["time"]) == tl["bins"] <= 50 and len(tl["filtered"]) == tl["bins"], "timeline bins")
        check(tl["filtered"] == tl["all"]["end"], "unfiltered line == all.end")
        check(abs(max(tl["all"]["max"]) - info["peak"]["bytes"]["v"]) < 1, "timeline max is the peak")
        fl = srv.json("/api/flame")
        check(fl["callers"] is None and fl["callees"]["fn"] == -1, "flame root")
        check(fl["callees"]["bytes"]["v"] == total and fl["total"]["v"] == total, "flame total")
        check_tree(fl["callees"], "flame")
        ids = {f["id"] for f in fl["functions"]}
        check(all(n["fn"] in ids for n in walk(fl["callees"]) if n["fn"] >= 0), "functions listed")
        fn = srv.json("/api/functions?n=5&sort=total")
        t = [f["total"]["bytes"]["v"] for f in fn["functions"]]
        check(len(t) == 5 and t == sorted(t, reverse=True), "functions sorted by total")
        check(all(f["self"]["bytes"]["v"] <= f["total"]["bytes"]["v"] for f in fn["functions"]), "self <= total")
        p = srv.json("/api/paths?n=3")
        check(len(p["paths"]) == 3 and all(x["frames"] for x in p["paths"]), "paths")
        si = srv.json("/api/sites?n=1000")
        check(abs(sum(x["bytes"]["v"] for x in si["sites"]) - total) < 1e-6 * total, "sites add up")
        lk = srv.json("/api/leaks")
        old = [x["oldest"] for x in lk["leaks"]]
        check(old == sorted(old), "leaks oldest first")
        hs = srv.json("/api/histograms")
        check(abs(sum(x["bytes"]["v"] for x in hs["size"]) - total) < 1e-6 * total, "size histogram")
        lt = sum(x["bytes"]["v"] for x in hs["lifetime"]) + hs["live_at_end"]["bytes"]["v"]
        check(abs(lt - total) < 1e-6 * total, "lifetime histogram + live at end")
        for a in ("/", "/index.html", "/app.js", "/style.css", "/favicon.svg"):
            st_, h, body = srv.get(a)
            check(st_ == 200 and len(body) > 0, f"asset {a}: {st_}")
        st_, h, body = srv.get("/", "HEAD")
        check(st_ == 200 and body == b"", "HEAD")
    finally:
        srv.stop()


def test_exact():
    path, truth = synth("--rate", "1", "--seed", "3")
    srv = Server(path)
    try:
        all_ = list(objs(truth))
        b, n = sums(all_)
        s = srv.json("/api/summary")
        exact(s["bytes"], b, "summary bytes")
        exact(s["objects"], n, "summary objects")
        si = srv.json("/api/sites?n=10000")
        want = {}
        for o in all_:
            st = truth["sites"][o["site"]]
            k = (st["function"], st["file"], st["line"]) if "function" in st else st["site"]
            w = want.setdefault(k, [0, 0])
            w[0] += o["words"] * 8
            w[1] += 1
        got = {((x["name"], x["file"], x["line"]) if x["file"] else x["name"]): x for x in si["sites"]}
        check(set(got) == set(want), f"sites {sorted(map(str, got))} != {sorted(map(str, want))}")
        for k in set(got) & set(want):
            exact(got[k]["bytes"], want[k][0], f"site {k} bytes")
            exact(got[k]["objects"], want[k][1], f"site {k} objects")
        fl = srv.json("/api/flame?min=0")
        exact(fl["callees"]["bytes"], b, "flame root")
        names = {f["id"]: f["name"] for f in fl["functions"]}
        # every top-level frame's bytes: objects whose outermost function is it
        tops = {}
        for o in all_:
            if o["names"]:
                tops[o["names"][0]] = tops.get(o["names"][0], 0) + o["words"] * 8
        got = {}
        for c in fl["callees"]["children"]:
            got[names.get(c["fn"], "?")] = got.get(names.get(c["fn"], "?"), 0) + c["bytes"]["v"]
        check(got == tops, f"flame top frames {got} != {tops}")
        lk = srv.json("/api/leaks?n=10000")
        nb, nn = sums([o for o in all_ if o["free"] is None])
        check(sum(x["bytes"]["v"] for x in lk["leaks"]) == nb == lk["total"]["v"], "leaks bytes")
        check(sum(x["objects"]["v"] for x in lk["leaks"]) == nn, "leaks objects")
    finally:
        srv.stop()


def test_filters():
    path, truth = synth("--rate", "1", "--seed", "4")
    srv = Server(path)
    try:
        all_ = list(objs(truth))
        d = truth["duration_us"]
        cases = [
            ("size=64..256", lambda o: 64 <= o["length"] * 8 <= 256),
            ("size=..100", lambda o: o["length"] * 8 <= 100),
            ("source=external", lambda o: o["source"] == 2),
            ("source=minor,major", lambda o: o["source"] in (0, 1)),
            ("live=end", lambda o: o["free"] is None),
            ("collected=never", lambda o: o["free"] is None),
            ("inside=Foo", lambda o: any("Foo" in x for x in o["names"])),
            ("not_inside=Bar", lambda o: not any("Bar" in x for x in o["names"])),
            ("inside=Inl.inner", lambda o: "Inl.inner" in o["names"]),
            (f"alloc=..{d / 2e6}", lambda o: o["alloc"] <= round(d / 2)),
            (f"alloc={d / 4e6}..", lambda o: o["alloc"] >= round(d / 4)),
            ("lifetime=0.001..", lambda o: ((d if o["free"] is None else o["free"]) - o["alloc"]) >= 1000),
            (f"live={d / 2e6}", lambda o: o["alloc"] <= round(d / 2) and (o["free"] is None or o["free"] > round(d / 2))),
            ("inside=&size=", lambda o: True),
            ("source=external&inside=Weird", lambda o: o["source"] == 2 and any("Weird" in x for x in o["names"])),
        ]
        for q, pred in cases:
            b, n = sums([o for o in all_ if pred(o)])
            s = srv.json("/api/summary?" + q)
            exact(s["bytes"], b, f"summary?{q} bytes")
            exact(s["objects"], n, f"summary?{q} objects")
            fl = srv.json("/api/flame?min=0&" + q)
            exact(fl["callees"]["bytes"], b, f"flame?{q}")
            tl = srv.json("/api/timeline?" + q)
            # (known: the envelope and the filtered line may differ by the
            # objects whose events fall exactly on a bin end: 0.01%)
            check(all(f <= a * 1.0001 + 1e-6 for f, a in zip(tl["filtered"], tl["all"]["end"])),
                  f"timeline?{q}")
    finally:
        srv.stop()


def test_errors():
    srv = Server(os.path.join(TRACES, "workload-1e-4.ctf"))
    try:
        bad = ["summary?size=abc", "summary?size=10..5", "summary?alloc=-1..", "summary?alloc=2..1",
               "summary?live=soon", "summary?source=heap", "summary?collected=x",
               "summary?lifetime=..-3", "summary?inside=" + "x" * 257, "summary?alloc=nan..",
               "summary?alloc=inf..", "summary?bogus=1", "timeline?bins=5", "timeline?bins=4001",
               "timeline?bins=x", "functions?n=0", "functions?n=10001", "functions?sort=name",
               "flame?weight=x", "flame?min=2", "flame?focus=abc", "flame?focus=99999999",
               "info?live=peak", "status?size=1..2", "summary?n=3", "sites?bins=10"]
        for q in bad:
            j = srv.json("/api/" + q, status=400)
            check(isinstance(j.get("error"), str) and len(j["error"]) > 5, f"{q}: message {j}")
        j = srv.json("/api/summary?size=abc", status=400)
        check("size" in j["error"] and "abc" in j["error"], "message names parameter and value")
        for q in ["summary?size=", "summary?live=", "timeline?bins=10", "functions?n=10000"]:
            srv.json("/api/" + q)
        srv.json("/api/nope", status=404)
        for m in ("POST", "PUT", "DELETE"):
            st, h, _ = srv.get("/api/info", m)
            check(st == 405, f"{m}: {st}")
    finally:
        srv.stop()
    # a trace that fails to load: a message and exit 1
    broken = os.path.join(TMP, "broken.ctf")
    with open(broken, "wb") as f:
        f.write(b"this is not a trace at all" * 10)
    p = subprocess.run([MEMTRACE, "view", "--port", str(free_port()), broken], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 1 and broken in p.stderr, f"broken trace: {p.returncode} {p.stderr!r}")
    p = subprocess.run([MEMTRACE, "view", os.path.join(TMP, "missing.ctf")], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 1 and "missing.ctf" in p.stderr, f"missing trace: {p.stderr!r}")


def test_loading():
    """The server answers while the trace loads: status says loading, data
    requests wait for the load and then answer; the answer cache keeps one
    snapshot's answers (equal answers for equal queries, parameters in any
    order) and a new generation (--follow) never sees the old ones."""
    path, truth = synth("--rate", "1", "--seed", "7")
    os.environ["MEMTRACE_VIEW_TEST_DELAY"] = "1.5"
    try:
        t0 = time.time()
        srv = Server(path)
    finally:
        del os.environ["MEMTRACE_VIEW_TEST_DELAY"]
    try:
        check(time.time() - t0 < 1.2, "the URL line comes before the load")
        st = srv.json("/api/status")
        check(st["state"] == "loading" and st["generation"] == 0 and st["objects"] == 0,
              f"status while loading: {st}")
        info = srv.json("/api/info")  # waits for the load
        check(time.time() - t0 >= 1.4, "info waited for the load")
        check(info["sampled_objects"] == len(truth["objects"]), "info after the load")
        st = srv.json("/api/status")
        check(st["state"] == "ready" and st["generation"] == 1, f"status after: {st}")
        b, _ = sums(list(objs(truth)))
        a = srv.get("/api/flame?min=0.01&alloc=..1e9&weight=bytes")[2]
        c = srv.get("/api/flame?weight=bytes&alloc=..1e9&min=0.01&size=")[2]
        check(a == c and json.loads(a)["callees"]["bytes"]["v"] == b, "cached flame equal")
        small = srv.json("/api/flame?min=0.01&alloc=..1e9&size=..8")
        check(small["callees"]["bytes"]["v"] < b, "a different query is not the cached one")
        f1 = srv.json("/api/flame")
        f2 = srv.json("/api/flame")
        check(f1 == f2 and f1["callees"]["bytes"]["v"] == b, "unfiltered flame (precomputed)")
    finally:
        srv.stop()
    # a new generation: the cache of the old snapshot is not used
    live = os.path.join(TMP, "grow.ctf")
    shutil.copy(path, live)
    srv = Server("--follow", live)
    try:
        deadline = time.time() + 30
        st = srv.wait_ready()
        b1 = srv.json("/api/flame?min=0.01")["callees"]["bytes"]["v"]
        check(b1 == b, f"first generation flame {b1} != {b}")
        path2, truth2 = synth("--rate", "1", "--seed", "8", "--scale", "2")
        shutil.copy(path2, live + ".tmp")
        os.replace(live + ".tmp", live)
        while srv.json("/api/status")["generation"] == st["generation"] and time.time() < deadline:
            time.sleep(0.1)
        b2, _ = sums(list(objs(truth2)))
        got = srv.json("/api/flame?min=0.01")["callees"]["bytes"]["v"]
        check(got == b2 and b2 != b, f"new generation: flame {got}, want {b2} (old {b})")
    finally:
        srv.stop()


def test_security():
    srv = Server(os.path.join(TRACES, "workload-1e-4.ctf"))
    try:
        for path in ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
                     "//etc/passwd", "/assets/app.js", "/index.html/../../etc/passwd",
                     "/%2fetc%2fpasswd", "/api/../etc/passwd", "/app.js%00.txt", "/CMakeLists.txt",
                     "/api", "/api/info/../../etc/passwd"]:
            # sent raw: urllib would not normalize, but make sure with a socket
            s = socket.create_connection((srv.url.split("//")[1].split(":")[0],
                                          int(srv.url.rsplit(":", 1)[1])), timeout=10)
            s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            status = data.split(b" ", 2)[1]
            check(status == b"404", f"{path}: status {status!r}")
            check(b"root:" not in data, f"{path}: served a file")
    finally:
        srv.stop()


def test_focus_hide():
    path, truth = synth("--rate", "1", "--seed", "5")
    srv = Server(path)
    try:
        fl = srv.json("/api/flame?min=0")
        ids = {f["name"]: f["id"] for f in fl["functions"]}
        for name in ("Foo.parse", "Dup.f", "Inl.inner", "main"):
            if not check(name in ids, f"{name} in functions"):
                continue
            want = srv.json("/api/summary?inside=" + name)["bytes"]["v"]
            f = srv.json(f"/api/flame?min=0&focus={ids[name]}")
            check(f["callees"]["fn"] == ids[name] and f["callers"]["fn"] == ids[name], f"focus {name} roots")
            check(f["callees"]["bytes"]["v"] == want == f["callers"]["bytes"]["v"],
                  f"focus {name}: {f['callees']['bytes']['v']} {f['callers']['bytes']['v']} != {want}")
            check_tree(f["callees"], f"callees of {name}")
            check_tree(f["callers"], f"callers of {name}")
        # hide: Foo.* frames vanish, the total stays
        h = srv.json("/api/flame?min=0&hide=Foo")
        names = {f["id"]: f["name"] for f in h["functions"]}
        check(not any("Foo" in names[n["fn"]] for n in walk(h["callees"]) if n["fn"] >= 0), "hide=Foo")
        check(h["callees"]["bytes"]["v"] == fl["callees"]["bytes"]["v"], "hide keeps the total")
        p = srv.json("/api/paths?n=1000&hide=Foo,Inl")
        check(not any("Foo" in fr["name"] or "Inl" in fr["name"] for x in p["paths"] for fr in x["frames"]),
              "paths hide")
        fn = srv.json("/api/functions?n=1000&hide=Foo")
        check(not any("Foo" in f["name"] for f in fn["functions"]), "functions hide")
        # min cuts small nodes into their parent's self
        c = srv.json("/api/flame?min=0.2")
        top = c["callees"]["bytes"]["v"]
        check(all(n["bytes"]["v"] >= 0.2 * top for n in walk(c["callees"])), "min cut")
        check_tree(c["callees"], "cut tree")
        o = srv.json("/api/flame?weight=objects&min=0")
        exact(o["callees"]["objects"], len(truth["objects"]), "weight=objects root")
    finally:
        srv.stop()


def test_report():
    path, truth = synth("--rate", "1", "--seed", "6")
    out = os.path.join(TMP, "r.html")
    p = subprocess.run([MEMTRACE, "report", "-o", out, "--title", "T<&>", path], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 0, f"report: {p.returncode} {p.stderr}")
    html = open(out, encoding="utf-8").read()
    start = html.index('<script type="application/json" id="memtrace-data">')
    body = html[start:].split(">", 1)[1].split("</script>", 1)[0]
    data = json.loads(body)
    for k in ("info", "summary", "timeline", "flame", "functions", "paths", "sites", "leaks", "histograms"):
        check(k in data, f"report data has {k}")
    b, n = sums(list(objs(truth)))
    exact(data["summary"]["bytes"], b, "report summary")
    check("</" not in body, "report data escapes </")
    check('src="app.js"' not in html and 'href="style.css"' not in html, "report has no external refs")
    check("T&lt;&amp;&gt;" in html, "report title escaped")
    # the names with quotes and escapes survive
    check(any("quoted" in f["name"] for f in data["flame"]["functions"]), "escaped names in report")
    p = subprocess.run([MEMTRACE, "report", "-o", out, os.path.join(TMP, "none.ctf")],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "none.ctf" in p.stderr, "report of a missing trace")


def wait_for(srv, pred, what, timeout=30):
    end = time.time() + timeout
    st = None
    while time.time() < end:
        st = srv.json("/api/status")
        if pred(st):
            return st
        time.sleep(0.1)
    check(False, f"{what}: last status {st}")
    return st


def test_follow():
    src = os.path.join(TRACES, "workload-1e-3.ctf")
    data = open(src, "rb").read()
    path = os.path.join(TMP, "grow.ctf")
    with open(path, "wb") as f:
        f.write(data[: len(data) // 3])
    srv = Server("--follow", path)
    try:
        st = wait_for(srv, lambda s: s["state"] == "ready", "first load")
        check(st["live"] is True, "live flag")
        g1, n1 = st["generation"], st["objects"]
        info = srv.json("/api/info")
        check(info["live"] is True and info["warning"], "truncated trace warns")
        with open(path, "ab") as f:
            f.write(data[len(data) // 3:])
        st = wait_for(srv, lambda s: s["generation"] > g1 and s["objects"] > n1, "reload after growth")
        full = subprocess.run([MEMTRACE, "info", src], capture_output=True, text=True)
        srv.json("/api/flame")
        s = srv.json("/api/summary")
        check(s["sampled_objects"] == st["objects"], "summary after reload")
    finally:
        srv.stop()
    # --follow on a file that is not a trace: the page shows the error, no exit
    bad = os.path.join(TMP, "bad.ctf")
    with open(bad, "wb") as f:
        f.write(b"x" * 1000)
    srv = Server("--follow", bad)
    try:
        st = wait_for(srv, lambda s: s["state"] == "error", "error state")
        check("bad.ctf" in st.get("error", ""), f"error message {st}")
        srv.json("/api/summary", status=503)
    finally:
        srv.stop()


def test_listen():
    port = free_port()
    out = os.path.join(TMP, "listened.ctf")
    srv = Server("--listen", f"127.0.0.1:{port}", "-o", out)
    try:
        st = srv.json("/api/status")
        check(st["state"] == "waiting" and f"127.0.0.1:{port}" in st.get("message", ""), f"waiting: {st}")
        srv.json("/api/info", status=503)
        env = dict(os.environ, LD_PRELOAD=PRELOAD, MEMTRACE=f"tcp:127.0.0.1:{port}", MEMTRACE_RATE="1e-3")
        prog = subprocess.Popen([LIVE_PROG, "3"], env=env, stdout=subprocess.PIPE)
        st = wait_for(srv, lambda s: s["state"] == "ready" and s["objects"] > 0, "first data")
        g1 = st["generation"]
        wait_for(srv, lambda s: s["generation"] > g1, "updates while the program runs", timeout=20)
        prog.wait(timeout=30)
        time.sleep(1)
        st = srv.json("/api/status")
        sites = srv.json("/api/sites?n=100")
        names = {x["name"] for x in sites["sites"]}
        check({"live_alpha", "live_beta", "live_gamma"} <= names, f"live sites {names}")
    finally:
        srv.stop()
    check(os.path.getsize(out) > 0, "-o keeps the trace")


def test_golden():
    for t in ("ocamlopt.ctf", "workload-1e-3.ctf", "workload-1e-4.ctf"):
        p = os.path.join(TRACES, t)
        if not os.path.exists(p):
            raise SystemExit(77)
        srv = Server(p)
        try:
            info = srv.json("/api/info")
            fl = srv.json("/api/flame?min=0")
            check(fl["callees"]["bytes"]["v"] == info["total"]["bytes"]["v"], f"{t}: flame total")
            # the flame's top-level functions against memtrace's folded stacks
            folded = os.path.join(TRACES, t.replace(".ctf", ".folded.txt"))
            if os.path.exists(folded):
                tops = {}
                for line in open(folded, encoding="utf-8"):
                    stack, n = line.rsplit(" ", 1)
                    top = stack.split(";")[0]
                    tops[top] = tops.get(top, 0) + int(n)
                names = {f["id"]: f["name"] for f in fl["functions"]}
                got = {names[c["fn"]]: c for c in fl["callees"]["children"]}
                best = max(tops, key=tops.get)
                check(best in got, f"{t}: top frame {best} in flame")
            srv.json("/api/flame?live=peak&inside=a")
            srv.json("/api/functions?hide=Stdlib")
        finally:
            srv.stop()


if __name__ == "__main__":
    fn = globals().get("test_" + TEST)
    if not fn:
        raise SystemExit(f"no test {TEST}")
    try:
        fn()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")
