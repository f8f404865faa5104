"""The README's install: one pip command, offline, from a checkout, with
Debian's numpy and pandas. It runs on a copy of the checkout's sources into
a private user base, and the installed package must answer as the built
one."""
import json
import os
import shutil
import subprocess
import sys

from conftest import SOURCE, shared

# The command, as the README gives it (run from the checkout's root).
README_COMMAND = ["-m", "pip", "install", "--user", "--break-system-packages",
                  "--no-build-isolation", "--no-index", "./python"]


def test_readme_names_the_command():
    with open(os.path.join(SOURCE, "README.md")) as f:
        readme = f.read()
    assert "python3 " + " ".join(README_COMMAND) in readme


def test_pip_install(tmp_path):
    checkout = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    for d in ("python", "src", "include"):
        shutil.copytree(os.path.join(SOURCE, d), checkout / d, ignore=ignore)
    shutil.copy(os.path.join(SOURCE, "CMakeLists.txt"), checkout)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONUSERBASE"] = str(tmp_path / "user")
    p = subprocess.run([sys.executable, *README_COMMAND], cwd=checkout, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    trace = shared("workload-1e-4.ctf")
    probe = ("import json, sys, memtrace_c as mt; t = mt.open(sys.argv[1]); "
             "print(json.dumps([mt.__file__, t.top(n=3)['bytes'].tolist(), len(t.objects())]))")
    p = subprocess.run([sys.executable, "-c", probe, trace], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    where, top, nobj = json.loads(p.stdout)
    assert where.startswith(str(tmp_path / "user"))
    import memtrace_c as built

    t = built.open(trace)
    assert top == t.top(n=3)["bytes"].tolist() and nobj == len(t.objects())
