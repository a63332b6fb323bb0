"""Type stubs for shardhash.routing._replicas (replica lists over raw strategy tables)."""

from typing import Any

import numpy as np
import numpy.typing as npt

_U64 = npt.NDArray[np.uint64]
_I32 = npt.NDArray[np.int32]

__all__ = ["ring_replicas", "rendezvous_replicas", "mprobe_replicas", "memento_replicas", "table_replicas"]

def ring_replicas(tokens: _U64, owners: Any, nshards: int, hashes: _U64, r: int, zones: Any = None,
                  nzones: int = 0) -> _I32: ...
def rendezvous_replicas(seeds: _U64, weights: Any, hashes: _U64, r: int, zones: Any = None,
                        nzones: int = 0) -> _I32: ...
def mprobe_replicas(tokens: _U64, owners: Any, probes: int, nshards: int, hashes: _U64, r: int,
                    zones: Any = None, nzones: int = 0) -> _I32: ...
def memento_replicas(replacer: Any, bucket_map: Any, hashes: _U64, r: int, zones: Any = None,
                     nzones: int = 0) -> _I32: ...
def table_replicas(table: Any, nshards: int, hashes: _U64, r: int, zones: Any = None, nzones: int = 0) -> _I32: ...
