"""Compiled counting kernels for shardhash.plan (private)."""

import numpy as np
import numpy.typing as npt

__all__ = ["count_moves"]

def count_moves(
    old_idx: npt.NDArray[np.int32],
    new_idx: npt.NDArray[np.int32],
    matrix: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64] | None = ...,
    wmatrix: npt.NDArray[np.float64] | None = ...,
    threads: int | None = ...,
) -> None: ...
