"""The raw replica-list bindings (``routing._replicas``) check every input:
bad tables, shard indices, counts and zones raise ValueError naming the
field, never reach the C kernels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash.routing import _replicas

H = np.array([1, 2**63, 2**64 - 1], np.uint64)
TOK = np.array([10, 20, 30], np.uint64)
OWN = np.array([0, 1, 2], np.int32)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: _replicas.ring_replicas(TOK, OWN, 3, H, 0), r"r must be in \[1, nshards = 3\]"),
    (lambda: _replicas.ring_replicas(TOK, OWN, 3, H, 4), r"r must be in"),
    (lambda: _replicas.ring_replicas(TOK, OWN, 0, H, 1), r"nshards must be >= 1"),
    (lambda: _replicas.ring_replicas(TOK, np.array([0, 1, 3], np.int32), 3, H, 1), r"owners\[2\] = 3"),
    (lambda: _replicas.ring_replicas(TOK, OWN[:2], 3, H, 1), r"owners must be a 1-D array of 3"),
    (lambda: _replicas.ring_replicas(TOK[::-1].copy(), OWN, 3, H, 1), r"strictly increasing \(position 1\)"),
    (lambda: _replicas.ring_replicas(TOK[:0].copy(), OWN[:0], 3, H, 1), r"tokens must not be empty"),
    (lambda: _replicas.ring_replicas(TOK, OWN, 3, H, 1, [0, 1], 2), r"zones must be a 1-D array of 3"),
    (lambda: _replicas.ring_replicas(TOK, OWN, 3, H, 1, [0, 1, 2], 2), r"zones\[2\] = 2 is outside \[0, 2\)"),
    (lambda: _replicas.ring_replicas(TOK, OWN, 3, H, 1, [0, 0, 0], 0), r"nzones must be >= 1"),
    (lambda: _replicas.rendezvous_replicas(TOK, [1.0, float("nan"), 1.0], H, 1), r"weights\[1\] = nan"),
    (lambda: _replicas.rendezvous_replicas(TOK, [1.0, 0.0, 1.0], H, 1), r"weights\[1\] = 0.0"),
    (lambda: _replicas.rendezvous_replicas(TOK, [1.0], H, 1), r"weights must be a 1-D array of 3"),
    (lambda: _replicas.mprobe_replicas(TOK, OWN, 0, 3, H, 1), r"probes must be in \[1, 64\]"),
    (lambda: _replicas.mprobe_replicas(TOK, OWN, 65, 3, H, 1), r"probes must be in"),
    (lambda: _replicas.memento_replicas([-1, 5, -1], [0, -1, 1], H, 1), r"replacer\[1\] = 5 is outside"),
    (lambda: _replicas.memento_replicas([-1, 1, -1], [0, -1, 2], H, 1), r"bucket_map\[2\] = 2 is not a shard"),
    (lambda: _replicas.memento_replicas([-1, 1, -1], [0, -1], H, 1), r"bucket_map must be a 1-D array of 3"),
    (lambda: _replicas.memento_replicas([], [], H, 1), r"replacer must have 1 \.\. 2\*\*31 - 1 entries"),
    (lambda: _replicas.table_replicas([0, 3], 3, H, 1), r"table\[1\] = 3 is outside \[0, 3\)"),
    (lambda: _replicas.table_replicas([], 3, H, 1), r"table must not be empty"),
])
def test_bad_input_is_refused(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_shapes_and_an_empty_batch() -> None:
    got = _replicas.table_replicas([2, 0, 1], 3, H, 3)
    assert got.shape == (3, 3) and got.dtype == np.int32
    for row in got.tolist():
        assert sorted(row) == [0, 1, 2]
    assert _replicas.ring_replicas(TOK, OWN, 3, H[:0].copy(), 2).shape == (0, 2)
