"""examples/notebooks/alloc_stats.ipynb runs from start to end (nbclient,
a python3 kernel) on an OCaml trace (minor, major and external blocks) and
on a C program's trace from `memtrace run` (external blocks only), and
draws its plots; the committed notebook has no outputs."""
import os
import re
import subprocess

import nbclient
import nbformat
import pytest

from conftest import MEMTRACE, SOURCE, shared

NOTEBOOK = os.path.join(SOURCE, "examples", "notebooks", "alloc_stats.ipynb")
PLOTS = 5  # the cells that draw


def run(trace, leave_out_minor_only=False):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if leave_out_minor_only:  # the switch, turned as a user would
        cell = next(c for c in nb.cells if "LEAVE_OUT_MINOR_ONLY = False" in c.source)
        cell.source = cell.source.replace("LEAVE_OUT_MINOR_ONLY = False", "LEAVE_OUT_MINOR_ONLY = True")
    env = dict(os.environ, MEMTRACE_TRACE=trace, PYDEVD_DISABLE_FILE_VALIDATION="1")
    old = os.environ.copy()
    os.environ.update(env)  # the kernel inherits the environment
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}}
                                ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= PLOTS, f"{len(images)} plots"
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    return text


def test_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)
    assert "MEMTRACE_TRACE" in code[0].source


def test_ocaml_trace():
    text = run(shared("workload-1e-3.ctf"))
    assert "minor-only:" in text and "allocations over 256 words" in text
    assert "survive to the end" in text and "peak:" in text


def test_minor_only_left_out():
    """With the switch on, the sizes and lifetimes count every sampled
    allocation but the minor-only ones."""
    text = run(shared("workload-1e-3.ctf"), leave_out_minor_only=True)
    m = re.search(r"minor-only: (\d+) of (\d+) sampled allocations", text)
    kept = int(m.group(2)) - int(m.group(1))
    assert int(m.group(1)) > 0
    assert re.search(r"allocations over 256 words: \d+ of %d = " % kept, text), text[:2000]
    assert re.search(r"survive to the end: \d+ of %d " % kept, text)


def test_c_program(tmp_path):
    app = os.environ.get("MT_DEMO_APP")
    if not app:
        pytest.skip("MT_DEMO_APP not given")
    trace = str(tmp_path / "demo.ctf")
    p = subprocess.run([MEMTRACE, "run", "--rate", "1e-3", "-o", trace, "--", app],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    text = run(trace)
    assert "minor-only: 0 of" in text
