"""Type stubs for shardhash.compat._native_ketama (ketama, twemproxy)."""

from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from shardhash.compat._native_base import _Keys

_Buffer = bytes | bytearray | memoryview | npt.NDArray[np.uint8]
_Data = npt.NDArray[np.uint8]
_Offsets = npt.NDArray[np.int64]

__all__ = [
    "md5", "ketama_hash", "twemproxy_fnv1a_64", "ketama_bucket_index", "ketama_hash_offsets",
    "ketama_route_offsets", "ketama_lookup", "KetamaKeys"
]

# -- ketama / twemproxy
def md5(data: _Buffer) -> bytes: ...
def ketama_hash(data: _Buffer) -> int: ...
def twemproxy_fnv1a_64(data: _Buffer) -> int: ...
def ketama_bucket_index(points: npt.NDArray[np.uint32], bits: int) -> npt.NDArray[np.int32]: ...
def ketama_hash_offsets(data: _Data, offsets: _Offsets, threads: int | None = None) -> npt.NDArray[np.uint32]: ...
def ketama_route_offsets(
    points: npt.NDArray[np.uint32],
    owners: npt.NDArray[np.int32],
    upper: bool,
    data: _Data,
    offsets: _Offsets,
    threads: int | None = None,
    index: npt.NDArray[np.int32] | None = None,
    key_hash: int = 0,
) -> npt.NDArray[np.int32]: ...
def ketama_lookup(
    points: npt.NDArray[np.uint32],
    owners: npt.NDArray[np.int32],
    upper: bool,
    hashes: npt.NDArray[np.uint32],
    threads: int | None = None,
    index: npt.NDArray[np.int32] | None = None,
) -> npt.NDArray[np.int32]: ...

@disjoint_base
class KetamaKeys(_Keys):
    def __init__(self, points: Any, owners: Any, index: Any, bits: int, *, upper: bool, fnv: bool,
                 empty_zero: bool, str_all: bool) -> None: ...
