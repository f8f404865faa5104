"""Shared fixtures of memtrace_c's tests. The build passes its paths in the
environment (tests/python/CMakeLists.txt): MEMTRACE (the command),
MT_TOOLS_SYNTH (the synthetic-trace writer), MT_SHARED_TRACES (memtrace's
reference traces), MT_SOURCE_DIR (the checkout); PYTHONPATH holds the
built package."""
import json
import os
import subprocess

import pytest

MEMTRACE = os.environ["MEMTRACE"]
SYNTH = os.environ["MT_TOOLS_SYNTH"]
TRACES = os.environ["MT_SHARED_TRACES"]
SOURCE = os.environ["MT_SOURCE_DIR"]


def cli_json(trace, *args):
    """memtrace ARGS --format json TRACE, parsed."""
    p = subprocess.run([MEMTRACE, *args, "--format", "json", trace], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, f"memtrace {' '.join(args)}: exit {p.returncode}: {p.stderr}"
    return json.loads(p.stdout)


def shared(name):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def synth(tmp_path_factory):
    """A synthetic trace (rate 1e-2) and its truth: every object of the
    simulated program, sampled or not (tests/tools/synth.c)."""
    d = tmp_path_factory.mktemp("synth")
    trace, truth = str(d / "synth.ctf"), str(d / "synth.json")
    subprocess.run([SYNTH, trace, truth, "--rate", "1e-2", "--seed", "11", "--scale", "4"],
                   check=True)
    with open(truth) as f:
        return trace, json.load(f)


@pytest.fixture(scope="session")
def workload():
    return shared("workload-1e-4.ctf")
