"""Type stubs for shardhash.compat._native_mongo (MongoDB)."""

from typing import Any

import numpy as np
import numpy.typing as npt

from shardhash.compat._native_base import _RangeKeys

__all__ = [
    "mongo_hash_int64", "mongo_double_to_long", "mongo_hash_int64_array", "mongo_hash_double_array",
    "MongoKeys"
]

# -- MongoDB
def mongo_hash_int64(v: int) -> int: ...
def mongo_double_to_long(d: float) -> int: ...
def mongo_hash_int64_array(values: npt.NDArray[np.int64], threads: int | None = None) -> npt.NDArray[np.int64]: ...
def mongo_hash_double_array(values: npt.NDArray[np.float64], threads: int | None = None) -> npt.NDArray[np.int64]: ...

class MongoKeys(_RangeKeys):
    def __init__(self, mins: Any, owners: Any) -> None: ...
