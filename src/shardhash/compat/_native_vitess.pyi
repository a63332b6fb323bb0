"""Type stubs for shardhash.compat._native_vitess (Vitess)."""

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from shardhash.compat._native_base import _RangeKeys

_Buffer = bytes | bytearray | memoryview | npt.NDArray[np.uint8]
_Data = npt.NDArray[np.uint8]
_Offsets = npt.NDArray[np.int64]

__all__ = [
    "des_encrypt_zero_key", "des_decrypt_zero_key", "xxh64", "des_encrypt_zero_key_array", "xxh64_offsets",
    "xxh64_kernels", "xxh64_decimal_int64", "vitess_xxhash_seq", "VitessKeys", "unicode_loose_key",
    "unicode_loose_ksid", "unicode_loose_ksids"
]

def _simd_kernel() -> str: ...
# -- Vitess
def des_encrypt_zero_key(block: int) -> int: ...
def des_decrypt_zero_key(block: int) -> int: ...
def xxh64(data: _Buffer) -> int: ...
def des_encrypt_zero_key_array(
    blocks: npt.NDArray[np.uint64], threads: int | None = None
) -> npt.NDArray[np.uint64]: ...
def xxh64_offsets(data: _Data, offsets: _Offsets, threads: int | None = None, *,
                  swap: bool = False) -> npt.NDArray[np.uint64]: ...
def xxh64_kernels() -> list[str]: ...
def _xxh64_offsets_with(kernel: str, data: _Data, offsets: _Offsets,
                        threads: int | None = None) -> npt.NDArray[np.uint64]: ...
def xxh64_decimal_int64(values: npt.NDArray[np.int64], threads: int | None = None, *,
                        swap: bool = False) -> npt.NDArray[np.uint64]: ...

@disjoint_base
class VitessKeys(_RangeKeys):
    def __init__(self, starts: Any, owners: Any, xxhash: bool) -> None: ...

def vitess_xxhash_seq(keys: object, convert: Callable[[Any], bytes] | None,
                      threads: int | None = None) -> npt.NDArray[np.uint64] | None: ...

# -- unicode_loose_md5 / unicode_loose_xxhash
def _unicode_loose_max_elems() -> int: ...
def unicode_loose_key(key: bytes | str) -> bytes | None: ...
def unicode_loose_ksid(key: bytes | str, md5: bool) -> int | None: ...
def unicode_loose_ksids(keys: list[Any] | tuple[Any, ...], md5: bool, convert: Callable[[Any, int], bytes],
                        fallback: Callable[[Any, int], int],
                        threads: int | None = None) -> npt.NDArray[np.uint64]: ...
