#!/usr/bin/env python3
"""bench/live_stream.py: `memtrace view --listen` fed a long trace at a steady
rate, as a traced service streams to it for hours.

usage: live_stream.py MEMTRACE TRACE EVENTS RATE [SETTLE]

TRACE (EVENTS events) is sent to the viewer's --listen port at RATE events a
second, packet by packet, its bytes evenly spread in time. Meanwhile
/api/status is polled every 0.25 s. For every new snapshot the viewer
installs: its lag (how long before it was installed the last packet it
covers had been sent; a load reads on to the end of what has arrived, so this
is short), the time since the previous snapshot (what a user waits to see
what happened: up to that plus the lag), and the viewer's resident memory and
CPU. A page is simulated too: on each new generation it fetches what the
page fetches for its first view (info, summary, timeline, unfiltered flame
graph), and the time that took is its refresh time. One line at each tenth
of the stream and at each snapshot past the end, then a summary. After the
last byte the viewer gets SETTLE seconds (default 300) to show the whole
trace.
"""
import bisect
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

MEMTRACE, TRACE, EVENTS, RATE = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
SETTLE = float(sys.argv[5]) if len(sys.argv) > 5 else 300.0
MAGIC = 0xC1FC1FC1


def packets(path):
    """Each packet's (end offset, time_end in us)."""
    out = []
    with open(path, "rb") as f:
        off = 0
        while True:
            f.seek(off)
            h = f.read(24)
            if len(h) < 24:
                break
            magic, bits, _, time_end = struct.unpack("<IIQQ", h)
            if magic != MAGIC or bits < 8 * 24:
                sys.exit(f"live_stream: {path}: no packet at offset {off}")
            off += bits // 8
            out.append((off, time_end))
    return out


def proc(pid):
    """(resident MB, peak resident MB, CPU seconds) of process pid."""
    rss = hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, hwm, cpu


def main():
    pk = packets(TRACE)
    page = {"refresh": [], "stop": False}  # (when, seconds) of each page refresh
    size, start = pk[-1][0], pk[0][1]
    ends = [te for _, te in pk]
    bytes_per_s = size * RATE / EVENTS
    out = os.path.join(os.path.dirname(os.path.abspath(TRACE)), "live-stream-received.ctf")
    log = open(out + ".log", "w+")  # (a pipe left unread could fill and stop the viewer)
    v = subprocess.Popen([MEMTRACE, "view", "--port", "0", "--listen", "127.0.0.1:0", "-o", out],
                         stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        url = re.search(r"at (http://\S+?)/?$", v.stdout.readline().strip())
        log.seek(0)
        listen = re.search(r"waiting for a program on (\S+):(\d+)", log.read())
        if not listen or not url:
            sys.exit("live_stream: the viewer did not start")
        base = url.group(1)
        sent_at = [None] * len(pk)  # when each packet's last byte was sent
        state = {"sent": 0, "done": None}

        def feed():
            s = socket.create_connection((listen.group(1), int(listen.group(2))))
            with open(TRACE, "rb") as f:
                t0, k = time.monotonic(), 0
                while state["sent"] < size:
                    due = min(size, int((time.monotonic() - t0) * bytes_per_s) + 65536)
                    if due <= state["sent"]:
                        time.sleep(0.002)
                        continue
                    s.sendall(f.read(due - state["sent"]))
                    state["sent"] = due
                    now = time.monotonic()
                    while k < len(pk) and pk[k][0] <= due:
                        sent_at[k] = now
                        k += 1
            s.close()
            state["done"] = time.monotonic()

        def browse():
            seen = None
            while not page["stop"]:
                with urllib.request.urlopen(base + "/api/status", timeout=60) as r:
                    g = json.load(r)["generation"]
                if g == seen or g == 0:
                    time.sleep(0.1)
                    continue
                seen, t = g, time.monotonic()
                for ep in ("/api/info", "/api/summary", "/api/timeline?bins=400", "/api/flame"):
                    with urllib.request.urlopen(base + ep, timeout=600) as r:
                        r.read()
                page["refresh"].append((t, time.monotonic() - t))

        def browse_until_stopped():
            try:
                browse()
            except OSError:
                if not page["stop"]:
                    raise

        feeder = threading.Thread(target=feed, daemon=True)
        browser = threading.Thread(target=browse_until_stopped, daemon=True)
        t0 = time.monotonic()
        feeder.start()
        browser.start()
        print(f"trace: {os.path.basename(TRACE)}, {EVENTS / 1e6:.0f}M events, {size / 1e6:.0f} MB, "
              f"sent at {RATE / 1e3:.0f}k events/s ({bytes_per_s / 1e6:.2f} MB/s)")
        print("| sent s | events sent | snapshot: events | lag s | since previous s | page refresh s "
              "| RSS MB | CPU % |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        gen, last_new, last_cpu, last_t, tenth = 0, t0, 0.0, t0, 0
        lags, peak = [], 0.0
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with urllib.request.urlopen(base + "/api/status", timeout=60) as r:
                st = json.load(r)
            rss, hwm, cpu = proc(v.pid)
            peak = max(peak, hwm)
            if st["generation"] != gen:
                gen = st["generation"]
                # the newest packet the snapshot covers: its last event's time
                covered = start + int(round(st["duration"] * 1e6))
                k = min(bisect.bisect_left(ends, covered), len(pk) - 1)
                lag = now - sent_at[k] if sent_at[k] else float("nan")
                lags.append((now - t0, lag))
                frac = pk[k][0] / size
                show = state["done"] is not None or frac * 10 >= tenth + 1
                if show:
                    tenth = int(frac * 10)
                    pcpu = 100 * (cpu - last_cpu) / max(now - last_t, 1e-9)
                    refresh = page["refresh"][-1][1] if page["refresh"] else float("nan")
                    print(f"| {now - t0:.0f} | {state['sent'] / size * EVENTS / 1e6:.1f}M | "
                          f"{frac * EVENTS / 1e6:.1f}M | {lag:.1f} | {now - last_new:.1f} | {refresh:.2f} | "
                          f"{rss:.0f} | {pcpu:.0f} |", flush=True)
                    last_cpu, last_t = cpu, now
                last_new = now
                if state["done"] is not None and k == len(pk) - 1:
                    break
            if state["done"] is not None and now - state["done"] > SETTLE:
                print(f"live_stream: the whole trace not shown {SETTLE:.0f} s after its end")
                break
            if v.poll() is not None:
                log.seek(0)
                sys.exit(f"live_stream: the viewer exited ({v.returncode}): {log.read()[-500:]}")
        cpu = proc(v.pid)[2]
        steady = [lag for t, lag in lags if t > 30]
        # what a user may see at worst: the last snapshot's data, just before
        # the next replaces it
        stale = [t1 - t0_ + lag0 for (t0_, lag0), (t1, _) in zip(lags, lags[1:])]
        print(f"\nstream: {state['done'] - t0:.0f} s; whole trace shown {now - state['done']:.1f} s "
              f"after its last byte; snapshots: {len(lags)}")
        if steady:
            print(f"lag after the first 30 s: median {sorted(steady)[len(steady) // 2]:.1f} s, "
                  f"largest {max(steady):.1f} s")
        if stale:
            print(f"staleness (the newest data shown, just before the next snapshot): largest "
                  f"{max(stale):.1f} s")
        print(f"viewer: peak RSS {peak:.0f} MB, CPU {cpu:.0f} s ({100 * cpu / (now - t0):.0f}% of a core)")
        rs = sorted(x for _, x in page["refresh"])
        if rs:
            print(f"page: {len(rs)} refreshes, median {rs[len(rs) // 2]:.2f} s, largest {rs[-1]:.2f} s")
    finally:
        page["stop"] = True
        v.terminate()
        v.wait()
        log.close()
        for f in (out, out + ".log"):
            if os.path.exists(f):
                os.unlink(f)


if __name__ == "__main__":
    main()
