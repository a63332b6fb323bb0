"""Build the compiled parts of shardhash.

Every ``src/shardhash/**/_*.pyx`` becomes a private extension module.  Each
``.pyx`` names the plain-C core files it needs (``src/shardhash/_core``, no
Python.h there) in its ``# distutils: sources = [...]`` header, so a module
links only the kernels it uses.  The core is organised by concern
(``common/``, ``hash/``, ``place/``, ``compat/``); every one of those
directories is on the include path, so C files and ``cdef extern from``
blocks name a header by its file name alone.  ``_core/pyapi/`` holds the
few headers that read Python objects (Python.h, static functions included
by the Cython modules only; no ``.c`` file there, so the plain-C builds of
the core never see them).

Environment switches:

* ``SHARDHASH_SANITIZE=1`` -- a checked build for finding memory errors:
  ``-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined`` (gcc/clang;
  the -O1 comes after Python's own CFLAGS, so no -O3 overrides it) and the
  Cython bounds, wraparound and initialisation checks on.  The modules then
  need the ASan runtime loaded first: ``LD_PRELOAD=$(gcc
  -print-file-name=libasan.so)`` (.ci/post.d/40-sanitize.sh runs the tests
  that way).
* ``SHARDHASH_DEBUG=1`` -- the same build at -O0 (for stepping through in a
  debugger); implies ``SHARDHASH_SANITIZE``.
* ``SHARDHASH_ONLY=_hashing,_kernels`` -- build only these extensions
  (development convenience; a normal build builds them all).  ``_native``
  names the compat bindings as a group: ``compat._native_*`` and the
  key-intake layer ``_intake`` they share.

NumPy is a build requirement (pyproject.toml): the small-batch paths use
its C API (``_npy.pxd``), so the modules compile against its headers.  A
build against NumPy 2.x headers runs on NumPy 1.x too, from the version
``NPY_TARGET_VERSION`` names: 1.23, the floor of the runtime dependency
(pinned here so that a newer NumPy's default cannot raise it silently).

Optimisation is portable on purpose: never ``-march=native`` nor
``-ffast-math``, so that outputs are bit-identical everywhere.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
SRC = Path("src")
CORE = SRC / "shardhash" / "_core"
CORE_DIRS = [str(CORE / d) for d in ("common", "hash", "place", "compat", "pyapi")]


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


DEBUG = _flag("SHARDHASH_DEBUG")
SANITIZE = DEBUG or _flag("SHARDHASH_SANITIZE")
ONLY = {x.strip() for x in os.environ.get("SHARDHASH_ONLY", "").split(",") if x.strip()}
# the compat bindings as a group (compat/_native.py re-exports them)
NATIVE_GROUP = {"_native", "compat._native", "shardhash.compat._native"}


def _selected(name: str, modname: str) -> bool:
    if not ONLY or name in ONLY or modname in ONLY:
        return True
    return bool(ONLY & NATIVE_GROUP) and (name == "_intake" or modname.startswith("shardhash.compat._native_"))


DIRECTIVES = {
    "language_level": "3",
    "boundscheck": SANITIZE,
    "wraparound": SANITIZE,
    "initializedcheck": SANITIZE,
    "cdivision": True,
    "embedsignature": True,
    # Signatures in the form inspect.signature() reads (__text_signature__),
    # also for the METH_O methods that keep binding=False for speed.
    "embedsignature.format": "clinic",
    # No doctest dict (__test__) and no generated pickling
    # (__reduce_cython__/__setstate_cython__): the classes that pickle define
    # __reduce__ themselves, and the stubs then list what really exists.
    "autotestdict": False,
    "auto_pickle": False,
    "freethreading_compatible": False,
}

if sys.platform == "win32":
    cflags = ["/Od", "/Zi"] if SANITIZE else ["/O2"]
    ldflags: list[str] = []
else:
    cflags = ["-std=c99", "-Wall", "-Wno-unused-function", "-fno-strict-aliasing"]
    if SANITIZE:
        # extra_compile_args come last on the compiler's command line, after
        # the interpreter's CFLAGS (-O3, -DNDEBUG...): this -O level wins.
        cflags += ["-O0" if DEBUG else "-O1", "-g", "-fno-omit-frame-pointer",
                   "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
        ldflags = ["-fsanitize=address,undefined"]
    else:
        # -g0: a release build carries no debug information (the interpreter's
        # CFLAGS may ask for -g; this comes after them and wins).  The wheels
        # are about a fifth of the size with it; a checked build keeps -g.
        cflags += ["-O3", "-g0"]
        ldflags = []

# Cython's utility code (above all the typed-memoryview machinery, some 150 KB
# of machine code) lives in one shared module that every extension imports,
# instead of a copy in each: with a binding module per compat system that is
# most of the wheel's size.  Always built, whatever SHARDHASH_ONLY says.
SHARED_UTILITY = "shardhash._cyutility"


def make_extensions() -> list[Extension]:
    exts = [Extension(SHARED_UTILITY, sources=[str(SRC / "shardhash" / "_cyutility.c")],
                      extra_compile_args=cflags, extra_link_args=ldflags)]
    for pyx in sorted(SRC.glob("shardhash/**/_*.pyx")):
        rel = pyx.relative_to(SRC).with_suffix("")
        modname = ".".join(rel.parts)
        if not _selected(rel.name, modname):
            continue
        exts.append(
            Extension(
                modname,
                sources=[str(pyx)],
                # NumPy's headers: the modules that cimport _npy need them
                # (_common, _hashing, routing._kernels, the compat bindings); on
                # every module's path so that a new user needs no change here.
                include_dirs=[*CORE_DIRS, numpy.get_include()],
                extra_compile_args=cflags,
                extra_link_args=ldflags,
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
                               # the oldest NumPy these modules run on: dependencies' numpy>=1.23
                               ("NPY_TARGET_VERSION", "NPY_1_23_API_VERSION")],
            )
        )
    return exts


# A checked build keeps its generated C and its objects apart (build/sanitize),
# so that neither build ever reuses the other's: a release build must not pick
# up bounds-checked C, nor a sanitizer build -O3 objects without ASan.
SANITIZE_BASE = "build/sanitize"

setup(
    ext_modules=cythonize(
        make_extensions(),
        compiler_directives=DIRECTIVES,
        shared_utility_qualified_name=SHARED_UTILITY,
        include_path=[str(SRC / "shardhash")],
        gdb_debug=False,
        build_dir=f"{SANITIZE_BASE}/cython" if SANITIZE else None,
        force=SANITIZE,  # the directives differ: regenerate every .c
        # Cython translates the modules side by side too (a process pool: on
        # Linux only, where it forks; elsewhere one at a time).
        nthreads=(os.cpu_count() or 1) if sys.platform.startswith("linux") else 0,
    ),
    options={
        # Extensions compile side by side, one per core (setuptools' build_ext -j).
        "build_ext": {"parallel": os.cpu_count() or 1},
        **({"build": {"build_base": SANITIZE_BASE}} if SANITIZE else {}),
    },
)
