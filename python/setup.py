"""Builds memtrace_c's extension from the checkout's sources: the library's
base, format and analysis modules (as CMake lists them in
src/*/sources.cmake) and python/src. Install with (offline, Debian's numpy
and pandas):

    python3 -m pip install --user --break-system-packages --no-build-isolation ./python
"""

import os
import re

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def library_sources():
    """The files of the modules libmemtrace is made of, from their lists."""
    sources = []
    for module in ("base", "format", "analysis"):
        with open(os.path.join(ROOT, "src", module, "sources.cmake")) as f:
            text = re.sub(r"#.*", "", f.read())
        for name in re.findall(r"src/\S+\.c", text):
            if name != "src/base/tcp_listen.c":  # sockets: the viewer's, not the analysis'
                sources.append(os.path.join(ROOT, name))
    return sources


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(memtrace-c VERSION (\S+)", f.read()).group(1)


class build_with_library(build_ext):
    """Adds the library's sources when compiling: they lie outside this
    directory, where setup()'s arguments may not point."""

    def build_extensions(self):
        for ext in self.extensions:
            ext.sources = ext.sources + library_sources()
        super().build_extensions()


core = Extension(
    "memtrace_c._core",
    sources=[os.path.join("src", n) for n in ("module.c", "objects.c", "answers.c", "follow.c")],
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src"), numpy.get_include()],
    define_macros=[("_GNU_SOURCE", None), ("MT_VERSION_STRING", '"%s"' % version())],
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-O2"],
    libraries=["m", "dl", "pthread"],
)

setup(version=version(), ext_modules=[core], cmdclass={"build_ext": build_with_library})
