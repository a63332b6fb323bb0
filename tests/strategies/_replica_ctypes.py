"""Test-only: the replica-list kernels of ``_core/place`` (``sh_replicas``) through ctypes.

MementoHash, multi-probe and bounded loads are bound in ``routing._kernels``
and tested through the routers; the replica kernels are not bound yet, so
their tests build the C core into a shared library with the system C compiler
and call it here (``load(tmpdir)``).  This module goes away once the replica
lists are bound.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

import shardhash

__all__ = ["CompilerMissing", "Kernels", "MprobeTable", "SourcesMissing", "build", "core_dir", "load"]

# The strategy kernels and what they call (jump, the CPU dispatch); build() links
# every .c of the core's common/, hash/ and place/ folders.
SOURCES = ("sh_cpu.c", "sh_jump.c", "sh_jump_avx2.c", "sh_jump_neon.c",
           "sh_memento.c", "sh_multiprobe.c", "sh_bounded.c", "sh_replicas.c")

U64 = npt.NDArray[np.uint64]
I32 = npt.NDArray[np.int32]

_p = ctypes.c_void_p
_sz = ctypes.c_size_t
_i32 = ctypes.c_int32
_u64 = ctypes.c_uint64


class CompilerMissing(RuntimeError):
    """No usable C compiler."""


class SourcesMissing(RuntimeError):
    """The kernels' C sources are neither installed nor in a source tree."""


def core_dir(extra: Sequence[Path] = ()) -> Path:
    """The C core shipped with the package, else the first of ``extra`` (source
    trees) that holds every kernel source."""
    for cand in (Path(shardhash.__file__).resolve().parent / "_core", *extra):
        if cand.is_dir() and all(any(cand.rglob(name)) for name in SOURCES):
            return cand
    raise SourcesMissing("the C sources of the strategy kernels (_core/place) are not installed "
                         "(package data) and no source tree was found")


def build(outdir: Path, extra: Sequence[Path] = ()) -> Path:
    """Compile the kernels into a shared library in ``outdir``; its path."""
    core = core_dir(extra)
    if sys.platform == "win32" and not os.environ.get("CC"):
        raise CompilerMissing("on Windows the kernels build only with CC set (a gcc or clang)")
    cc = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if cc is None:
        raise CompilerMissing("no C compiler (cc, gcc or clang) on PATH")
    srcs = sorted(p for sub in ("common", "hash", "place") for p in (core / sub).glob("*.c"))
    incs = sorted({str(h.parent) for h in core.rglob("*.h")})
    ext = {"win32": ".dll", "darwin": ".dylib"}.get(sys.platform, ".so")
    lib = outdir / f"sh_strategies{ext}"
    cmd = [cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC",
           *(f"-I{d}" for d in incs), *map(str, srcs), "-o", str(lib), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"building the strategy kernels failed:\n{' '.join(cmd)}\n{res.stderr}")
    return lib


class _Memento(ctypes.Structure):
    _fields_ = [("replacer", _p), ("n", _i32), ("nremoved", _i32)]


class MementoState(ctypes.Structure):
    """``sh_memento_state`` over buffers this object keeps alive."""

    _fields_ = [("replacer", _p), ("prev", _p), ("capacity", _i32), ("n", _i32),
                ("nremoved", _i32), ("last_removed", _i32)]

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.rep = np.full(capacity, -1, np.int32)
        self.prv = np.full(capacity, -1, np.int32)


class _Mprobe(ctypes.Structure):
    _fields_ = [("tokens", _p), ("owners", _p), ("ntokens", _sz), ("index", _p),
                ("shift", ctypes.c_uint), ("probes", ctypes.c_uint)]


class _Work(ctypes.Structure):
    _fields_ = [("zones", _p), ("nzones", _i32), ("mark", _p), ("zmark", _p), ("skip", _p)]


def _ptr(a: npt.NDArray[np.generic] | None) -> int | None:
    return None if a is None else int(a.ctypes.data)


class MprobeTable:
    """Sorted tokens, their owners and the successor index of a multi-probe ring."""

    def __init__(self, kern: Kernels, tokens: Sequence[int] | U64, owners: Sequence[int] | I32,
                 probes: int) -> None:
        nt = len(tokens)
        # the kernel reads two sentinel tokens (UINT64_MAX) past the last one
        self.tokens = np.full(nt + 2, np.iinfo(np.uint64).max, np.uint64)
        self.tokens[:nt] = np.asarray(tokens, dtype=np.uint64)
        self.owners = np.ascontiguousarray(owners, dtype=np.int32)
        bits = int(kern.lib.sh_mprobe_index_bits(nt))
        self.index = np.zeros((1 << bits) + 1, np.uint32)
        kern.lib.sh_mprobe_build_index(_ptr(self.tokens), nt, bits, _ptr(self.index))
        self.struct = _Mprobe(_ptr(self.tokens), _ptr(self.owners), nt, _ptr(self.index), 64 - bits, probes)


class Kernels:
    """Typed calls into the shared library (arguments are not validated)."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        self.lib = lib
        sig: dict[str, tuple[object, list[object]]] = {
            "sh_place_init": (None, []),
            "sh_memento_bucket": (_i32, [_p, _u64]),
            "sh_memento_batch": (None, [_p, _p, _sz, _p, _p]),
            "sh_memento_init": (ctypes.c_int, [_p, _p, _p, _i32, _i32]),
            "sh_memento_remove": (ctypes.c_int, [_p, _i32]),
            "sh_memento_restore": (_i32, [_p]),
            "sh_mprobe_index_bits": (ctypes.c_uint, [_sz]),
            "sh_mprobe_build_index": (None, [_p, _sz, ctypes.c_uint, _p]),
            "sh_mprobe_lookup": (_i32, [_p, _u64]),
            "sh_mprobe_batch": (None, [_p, _p, _sz, _p]),
            "sh_bounded_capacity": (_u64, [_u64, _u64, ctypes.c_uint32]),
            "sh_bounded_assign": (_sz, [_p, _p, _sz, _p, _p, _p, _p, _sz, _p, _sz, _p, _p]),
            "sh_ring_replicas_batch": (None, [_p, _p, _sz, _sz, _p, _sz, _sz, _p, _p]),
            "sh_rendezvous_replicas_batch": (None, [_p, _p, _sz, _p, _sz, _sz, _p, _p, _p]),
            "sh_mprobe_replicas_batch": (None, [_p, _sz, _p, _sz, _sz, _p, _p]),
            "sh_memento_replicas_batch": (None, [_p, _p, _sz, _p, _sz, _sz, _p, _p]),
            "sh_table_replicas_batch": (None, [_p, _u64, _sz, _p, _sz, _sz, _p, _p]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        lib.sh_place_init()

    # -- MementoHash --------------------------------------------------------
    def memento_batch(self, replacer: I32, n: int, nremoved: int, hashes: U64,
                      bucket_map: I32 | None = None, out: I32 | None = None) -> I32:
        m = _Memento(_ptr(replacer), n, nremoved)
        out = np.empty(len(hashes), np.int32) if out is None else out
        self.lib.sh_memento_batch(ctypes.byref(m), _ptr(hashes), len(hashes), _ptr(bucket_map), _ptr(out))
        return out

    def memento_bucket(self, replacer: I32, n: int, nremoved: int, h: int) -> int:
        m = _Memento(_ptr(replacer), n, nremoved)
        return int(self.lib.sh_memento_bucket(ctypes.byref(m), h))

    def memento_state(self, capacity: int, n: int) -> MementoState:
        st = MementoState(capacity)
        if self.lib.sh_memento_init(ctypes.byref(st), _ptr(st.rep), _ptr(st.prv), capacity, n) != 0:
            raise ValueError("bad memento size")
        return st

    def memento_remove(self, st: MementoState, b: int) -> int:
        return int(self.lib.sh_memento_remove(ctypes.byref(st), b))

    def memento_restore(self, st: MementoState) -> int:
        return int(self.lib.sh_memento_restore(ctypes.byref(st)))

    # -- multi-probe --------------------------------------------------------
    def mprobe(self, tokens: Sequence[int] | U64, owners: Sequence[int] | I32, probes: int) -> MprobeTable:
        return MprobeTable(self, tokens, owners, probes)

    def mprobe_batch(self, t: MprobeTable, hashes: U64, out: I32 | None = None) -> I32:
        out = np.empty(len(hashes), np.int32) if out is None else out
        self.lib.sh_mprobe_batch(ctypes.byref(t.struct), _ptr(hashes), len(hashes), _ptr(out))
        return out

    def mprobe_lookup(self, t: MprobeTable, h: int) -> int:
        return int(self.lib.sh_mprobe_lookup(ctypes.byref(t.struct), h))

    # -- bounded loads ------------------------------------------------------
    def capacity(self, total: int, nshards: int, factor_percent: int) -> int:
        return int(self.lib.sh_bounded_capacity(total, nshards, factor_percent))

    def bounded_assign(self, tokens: U64, owners: I32, hashes: U64, caps: U64, *,
                       sizes: U64 | None = None, order: npt.NDArray[np.uintp] | None = None,
                       prev: I32 | None = None, load: U64 | None = None) -> tuple[I32, U64, int]:
        out = np.empty(len(hashes), np.int32)
        ld = np.zeros(len(caps), np.uint64) if load is None else load.copy()
        ov = self.lib.sh_bounded_assign(_ptr(tokens), _ptr(owners), len(tokens), _ptr(hashes), _ptr(sizes),
                                        _ptr(order), _ptr(prev), len(hashes), _ptr(caps), len(caps),
                                        _ptr(ld), _ptr(out))
        return out, ld, int(ov)

    # -- replica lists ------------------------------------------------------
    def _work(self, nshards: int, zones: I32 | None, nzones: int) -> tuple[_Work, list[npt.NDArray[np.generic]]]:
        mark = np.zeros(nshards, np.uint8)
        zmark = np.zeros(max(nzones, 1), np.uint8)
        skip = np.zeros(nshards, np.int32)
        keep: list[npt.NDArray[np.generic]] = [mark, zmark, skip]
        if zones is not None:
            keep.append(zones)
        return _Work(_ptr(zones), nzones, _ptr(mark), _ptr(zmark), _ptr(skip)), keep

    def ring_replicas(self, tokens: U64, owners: I32, nshards: int, hashes: U64, r: int,
                      zones: I32 | None = None, nzones: int = 0) -> I32:
        w, _keep = self._work(nshards, zones, nzones)
        out = np.empty((len(hashes), r), np.int32)
        self.lib.sh_ring_replicas_batch(_ptr(tokens), _ptr(owners), len(tokens), nshards, _ptr(hashes),
                                        len(hashes), r, ctypes.byref(w), _ptr(out))
        return out

    def rendezvous_replicas(self, seeds: U64, weights: npt.NDArray[np.float64] | None, hashes: U64, r: int,
                            zones: I32 | None = None, nzones: int = 0) -> I32:
        w, _keep = self._work(len(seeds), zones, nzones)
        scratch = np.empty(len(seeds), np.uint64)
        out = np.empty((len(hashes), r), np.int32)
        self.lib.sh_rendezvous_replicas_batch(_ptr(seeds), _ptr(weights), len(seeds), _ptr(hashes),
                                              len(hashes), r, ctypes.byref(w), _ptr(scratch), _ptr(out))
        return out

    def mprobe_replicas(self, t: MprobeTable, nshards: int, hashes: U64, r: int,
                        zones: I32 | None = None, nzones: int = 0) -> I32:
        w, _keep = self._work(nshards, zones, nzones)
        out = np.empty((len(hashes), r), np.int32)
        self.lib.sh_mprobe_replicas_batch(ctypes.byref(t.struct), nshards, _ptr(hashes), len(hashes), r,
                                          ctypes.byref(w), _ptr(out))
        return out

    def memento_replicas(self, replacer: I32, n: int, nremoved: int, bucket_map: I32 | None, nshards: int,
                         hashes: U64, r: int, zones: I32 | None = None, nzones: int = 0) -> I32:
        m = _Memento(_ptr(replacer), n, nremoved)
        w, _keep = self._work(nshards, zones, nzones)
        out = np.empty((len(hashes), r), np.int32)
        self.lib.sh_memento_replicas_batch(ctypes.byref(m), _ptr(bucket_map), nshards, _ptr(hashes), len(hashes),
                                           r, ctypes.byref(w), _ptr(out))
        return out

    def table_replicas(self, table: I32, nshards: int, hashes: U64, r: int,
                       zones: I32 | None = None, nzones: int = 0) -> I32:
        w, _keep = self._work(nshards, zones, nzones)
        out = np.empty((len(hashes), r), np.int32)
        self.lib.sh_table_replicas_batch(_ptr(table), len(table), nshards, _ptr(hashes), len(hashes), r,
                                         ctypes.byref(w), _ptr(out))
        return out


def load(outdir: Path, extra: Sequence[Path] = ()) -> Kernels:
    """Build the kernels in ``outdir`` and load them (``extra``: source trees
    to look in when the installed package lacks the sources)."""
    return Kernels(build(outdir, extra))
