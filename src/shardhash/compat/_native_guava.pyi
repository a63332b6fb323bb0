"""Type stubs for shardhash.compat._native_guava (Guava)."""

import numpy as np
import numpy.typing as npt

__all__ = ["guava_consistent_hash", "guava_consistent_hash_array"]

# -- Guava
def guava_consistent_hash(key: int, buckets: int) -> int: ...
def guava_consistent_hash_array(keys: npt.NDArray[np.int64], buckets: int, out: npt.NDArray[np.int32],
                                threads: int | None = None) -> None: ...
