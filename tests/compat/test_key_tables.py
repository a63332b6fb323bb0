"""The compiled key tables behind the compat routers' one-key ``route``
(``_native.RedisKeys``, ``VitessKeys``, ...) are built once: a router reads
them without a check on every call, so a second ``__init__`` (which could
replace them, or fail half-way and leave a range table without its first
range) is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash.compat import _native

# each kind of table: a valid build, and a second build that is also valid
# (it would change the answers) or invalid (it would break the table)
_BUILDS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], tuple[Any, ...]]] = {
    "RedisKeys": (_native.RedisKeys, (np.zeros(16384, np.int32),), (np.ones(16384, np.int32),)),
    "VitessKeys": (_native.VitessKeys, (np.array([0, 2**63], np.uint64), [0, 1], False),
                   (np.array([5, 2**63], np.uint64), [0, 1], False)),
    "MongoKeys": (_native.MongoKeys, (np.array([-(2**63), 0], np.int64), [0, 1]),
                  (np.array([7, 8], np.int64), [0, 1])),
    "CitusKeys": (_native.CitusKeys, ("int4", np.array([-(2**31), 0], np.int64), [0, 1]),
                  ("int4", np.array([-(2**31), 0], np.int64), [1, 0])),
    "CassandraKeys": (_native.CassandraKeys, (np.array([-5, 5], np.int64), [0, 1], "text"),
                      (np.array([-5, 5], np.int64), [1, 0], "text")),
}


@pytest.mark.parametrize("name", sorted(_BUILDS))
def test_a_built_key_table_refuses_a_second_init(name: str) -> None:
    cls, first, second = _BUILDS[name]
    keys = cls(*first)
    with pytest.raises(AttributeError, match="immutable"):
        keys.__init__(*second)
    with pytest.raises(AttributeError, match="immutable"):
        keys.__init__(*first)

