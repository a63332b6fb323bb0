"""Type stubs for shardhash.compat._native_redis (Redis Cluster)."""

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from shardhash.compat._native_base import _Keys

_Buffer = bytes | bytearray | memoryview | npt.NDArray[np.uint8]
_Data = npt.NDArray[np.uint8]
_Offsets = npt.NDArray[np.int64]

__all__ = [
    "crc16_xmodem", "redis_keyslot", "keyslot", "keyslot_small", "redis_keyslot_seq",
    "redis_keyslot_offsets", "RedisKeys"
]

def _set_fallback(keyslot: Callable[[Any], int]) -> None: ...
# -- Redis Cluster
def crc16_xmodem(data: _Buffer) -> int: ...
def redis_keyslot(data: _Buffer) -> int: ...
def keyslot(key: bytes | str) -> int: ...
def keyslot_small(keys: Any) -> npt.NDArray[np.uint16] | None: ...
def redis_keyslot_seq(keys: Any, threads: int | None = None) -> npt.NDArray[np.uint16] | None: ...
def redis_keyslot_offsets(data: _Data, offsets: _Offsets, threads: int | None = None) -> npt.NDArray[np.uint16]: ...

@disjoint_base
class RedisKeys(_Keys):
    def __init__(self, table: Any) -> None: ...
