"""The redirection's instruction decoder (src/preload/hotpatch.c) against
objdump on a whole library's code: every instruction boundary the decoder
finds must be objdump's, and it must decode nearly all of them (it refuses
EVEX, 3DNow! and XOP encodings, and what follows them in a function).

Usage: decode_vs_objdump.py TEST_HOTPATCH MIN_SHARE LIBRARY...
A LIBRARY without a slash is the one TEST_HOTPATCH loads by that name
(ldd). Exit 77 (skipped) without objdump."""
import re
import shutil
import subprocess
import sys

test, min_share, libs = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
if not shutil.which("objdump"):
    print("objdump not installed (binutils): skipped")
    sys.exit(77)


def resolve(name):
    if "/" in name:
        return name
    for line in subprocess.run(["ldd", test], capture_output=True, text=True).stdout.splitlines():
        w = line.split()
        if w and w[0] == name and len(w) > 2:
            return w[2]
    sys.exit(f"{name} is not loaded by {test}")


def compare(lib):
    """(instructions objdump lists, of them decoded alike, functions that disagree)"""

    # .text: its address and file offset
    hdr = subprocess.run(["objdump", "-h", lib], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\s\.text\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", hdr)
    size, vma, off = (int(x, 16) for x in m.groups())
    delta = off - vma

    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-j", ".text", lib],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = [], None
    for line in dis.splitlines():
        h = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if h:
            cur = {"name": h.group(2), "insns": [], "bad": None}
            funcs.append(cur)
            continue
        i = re.match(r"^\s+([0-9a-f]+):\t(.*)$", line)
        if i and cur is not None:
            addr, text = int(i.group(1), 16), i.group(2)
            if "(bad)" in text and cur["bad"] is None:
                cur["bad"] = addr
            cur["insns"].append(addr)
    end_of_text = vma + size
    ranges = []
    for k, f in enumerate(funcs):
        if not f["insns"]:
            continue
        start = f["insns"][0]
        end = funcs[k + 1]["insns"][0] if k + 1 < len(funcs) and funcs[k + 1]["insns"] else end_of_text
        if f["bad"] is not None:  # objdump itself lost its way: up to there
            end = f["bad"]
            f["insns"] = [a for a in f["insns"] if a < end]
        if end > start:
            ranges.append((f, start, end))

    inp = "".join(f"{s + delta:x} {e + delta:x}\n" for _, s, e in ranges)
    out = subprocess.run([test, "decode", lib], input=inp, capture_output=True, text=True, check=True).stdout
    total = decoded = 0
    mismatches = []
    for (f, s, e), line in zip(ranges, out.splitlines()):
        ours = line.split(":", 1)[1].split()
        starts = [int(x, 16) - delta for x in ours if not x.startswith("?")]
        want = f["insns"]
        total += len(want)
        refused = any(x.startswith("?") for x in ours)
        if starts != want[:len(starts)] or (not refused and len(starts) != len(want)):
            j = next((j for j, (a, b) in enumerate(zip(starts, want)) if a != b), min(len(starts), len(want)))
            mismatches.append(f"{f['name']}: instruction {j} at {starts[j] if j < len(starts) else '-'} "
                              f"(objdump: {want[j] if j < len(want) else '-'})")
        decoded += len(starts)
    return total, decoded, mismatches


failed = False
for name in libs:
    lib = resolve(name)
    total, decoded, mismatches = compare(lib)
    share = decoded / total if total else 0
    print(f"{lib}: {decoded} of {total} instructions decoded ({100 * share:.2f}%); "
          f"{len(mismatches)} functions disagree with objdump")
    for m in mismatches[:20]:
        print("  " + m)
    failed |= bool(mismatches) or share < min_share
sys.exit(1 if failed else 0)
