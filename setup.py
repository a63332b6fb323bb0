"""Build the compiled parts of shardhash.

Every ``src/shardhash/**/_*.pyx`` becomes a private extension module.  Each
``.pyx`` names the plain-C core files it needs (``src/shardhash/_core``, no
Python.h there) in its ``# distutils: sources = [...]`` header, so a module
links only the kernels it uses.

Environment switches:

* ``SHARDHASH_DEBUG=1`` -- no optimisation, debug symbols, Cython bounds and
  wraparound checks back on, and (with gcc/clang) AddressSanitizer and
  UndefinedBehaviorSanitizer.
* ``SHARDHASH_ONLY=_hashing,_routing`` -- build only these extensions
  (development convenience; a normal build builds them all).

Optimisation is portable on purpose: never ``-march=native`` nor
``-ffast-math``, so that outputs are bit-identical everywhere.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
SRC = Path("src")
CORE = SRC / "shardhash" / "_core"

DEBUG = os.environ.get("SHARDHASH_DEBUG", "") not in ("", "0")
ONLY = {x.strip() for x in os.environ.get("SHARDHASH_ONLY", "").split(",") if x.strip()}

DIRECTIVES = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": False,
}

if sys.platform == "win32":
    cflags = ["/Od", "/Zi"] if DEBUG else ["/O2"]
    ldflags: list[str] = []
else:
    cflags = ["-std=c99", "-Wall", "-Wno-unused-function", "-fno-strict-aliasing"]
    if DEBUG:
        cflags += ["-O0", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
        ldflags = ["-fsanitize=address,undefined"]
    else:
        cflags += ["-O3"]
        ldflags = []

def make_extensions() -> list[Extension]:
    exts = []
    for pyx in sorted(SRC.glob("shardhash/**/_*.pyx")):
        rel = pyx.relative_to(SRC).with_suffix("")
        modname = ".".join(rel.parts)
        if ONLY and rel.name not in ONLY and modname not in ONLY:
            continue
        exts.append(
            Extension(
                modname,
                sources=[str(pyx)],
                include_dirs=[str(CORE)],
                extra_compile_args=cflags,
                extra_link_args=ldflags,
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            )
        )
    return exts


setup(
    ext_modules=cythonize(
        make_extensions(),
        compiler_directives=DIRECTIVES,
        include_path=[str(SRC / "shardhash")],
        gdb_debug=False,
        force=DEBUG,
    ),
)
