"""Test-only: the replica-list kernels of ``_core/place`` (``sh_replicas``) through their bindings.

The batch kernels are bound in ``routing._replicas`` (raw strategy tables
given as arrays, every input checked there), the multi-probe route in
``routing._kernels`` (a ``RouterCore`` over the same tokens).  This module
gives the strategy tests one call per kernel, so that they compare the C
lists with the pure-Python references.  (It once compiled the core into a
shared library and called it through ctypes, hence its name; ``load`` and
the exceptions stay for the tests that import them.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import numpy.typing as npt

import shardhash
from shardhash.hashing import Hasher
from shardhash.routing import _kernels, _replicas

__all__ = ["CompilerMissing", "Kernels", "MprobeTable", "SourcesMissing", "core_dir", "load"]

# The strategy kernels' sources (package data), looked for by core_dir().
SOURCES = ("sh_cpu.c", "sh_jump.c", "sh_jump_avx2.c", "sh_jump_neon.c",
           "sh_memento.c", "sh_multiprobe.c", "sh_bounded.c", "sh_replicas.c")

U64 = npt.NDArray[np.uint64]
I32 = npt.NDArray[np.int32]


class CompilerMissing(RuntimeError):
    """No usable C compiler (kept for the tests that catch it: the bindings need none)."""


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


def _core(nshards: int) -> _kernels.RouterCore:
    core = _kernels.RouterCore()
    core._core_init(tuple(f"s{i}" for i in range(nshards)), Hasher())
    return core


class MprobeTable:
    """A multi-probe ring: its tokens, their owners, the probe count."""

    def __init__(self, tokens: Sequence[int] | U64, owners: Sequence[int] | I32, probes: int) -> None:
        self.tokens = np.asarray(tokens, dtype=np.uint64)
        self.owners = np.asarray(owners, dtype=np.int32)
        self.probes = probes


class Kernels:
    """One call per replica kernel (and the multi-probe route), over raw tables."""

    def __init__(self) -> None:
        # the compiled module that holds the kernels
        self.lib = SimpleNamespace(_name=_replicas.__file__)

    def mprobe(self, tokens: Sequence[int] | U64, owners: Sequence[int] | I32, probes: int) -> MprobeTable:
        return MprobeTable(tokens, owners, probes)

    def mprobe_batch(self, t: MprobeTable, hashes: U64) -> I32:
        core = _core(int(t.owners.max()) + 1)
        core._use_multiprobe(t.tokens, t.owners, t.probes)
        core._seal()
        return core.route_hashes(hashes)

    def ring_replicas(self, tokens: U64, owners: I32, nshards: int, hashes: U64, r: int,
                      zones: I32 | None = None, nzones: int = 0) -> I32:
        return _replicas.ring_replicas(tokens, owners, nshards, hashes, r, zones, nzones)

    def rendezvous_replicas(self, seeds: U64, weights: npt.NDArray[np.float64] | None, hashes: U64, r: int,
                            zones: I32 | None = None, nzones: int = 0) -> I32:
        return _replicas.rendezvous_replicas(seeds, weights, hashes, r, zones, nzones)

    def mprobe_replicas(self, t: MprobeTable, nshards: int, hashes: U64, r: int,
                        zones: I32 | None = None, nzones: int = 0) -> I32:
        return _replicas.mprobe_replicas(t.tokens, t.owners, t.probes, nshards, hashes, r, zones, nzones)

    def memento_replicas(self, replacer: I32, n: int, nremoved: int, bucket_map: I32 | None, nshards: int,
                         hashes: U64, r: int, zones: I32 | None = None, nzones: int = 0) -> I32:
        # the binding derives n, nremoved and nshards from the arrays: they must agree
        if len(replacer) != n or int((replacer >= 0).sum()) != nremoved or n - nremoved != nshards:
            raise ValueError(f"replacer of {len(replacer)} buckets does not describe n={n}, "
                             f"nremoved={nremoved}, nshards={nshards}")
        bmap = np.arange(n, dtype=np.int32) if bucket_map is None else bucket_map
        return _replicas.memento_replicas(replacer, bmap, hashes, r, zones, nzones)

    def table_replicas(self, table: I32, nshards: int, hashes: U64, r: int,
                       zones: I32 | None = None, nzones: int = 0) -> I32:
        return _replicas.table_replicas(table, nshards, hashes, r, zones, nzones)


def load(outdir: Path, extra: Sequence[Path] = ()) -> Kernels:
    """The kernels (``outdir`` and ``extra``, for the tests that pass them, are
    where a source build once went and came from: the bindings need neither)."""
    del outdir, extra
    return Kernels()
