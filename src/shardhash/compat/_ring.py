"""What the compat routers on a sorted ring of uint32 points share."""

from __future__ import annotations

import numpy as np

from . import _native


def point_index(points: np.ndarray) -> tuple[np.ndarray, int]:
    """The lookup accelerator of a sorted uint32 ring: about one point per
    bucket of the key hash's top ``bits`` bits (1 to 16).  Returns
    ``(index, bits)``."""
    bits = max(1, min(16, int(len(points)).bit_length()))
    return _native.ketama_bucket_index(points, bits), bits
