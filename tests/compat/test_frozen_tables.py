"""The compatibility routers' lookup tables are read-only once built
(Router._set_frozen): a router is immutable, its arrays included."""

from __future__ import annotations

import numpy as np
import pytest

from shardhash.compat.cassandra import RandomTokenRouter
from shardhash.compat.ketama import KetamaRouter
from shardhash.compat.uhashring import HashRingRouter
from shardhash.routing.base import Router


@pytest.mark.parametrize("router, names", [
    (KetamaRouter(["a:11211", "b:11211"]), ("_index", "_points", "_powners")),
    (HashRingRouter(["a", "b"], hash_fn="ketama"), ("_index", "_points", "_powners")),
    (HashRingRouter(["a", "b"]), ("_index", "_points", "_powners", "_mark")),
    (RandomTokenRouter({"n1": [0], "n2": [2**126]}), ("_owners", "_top", "_index")),
], ids=["ketama", "uhashring-ketama", "uhashring", "random-partitioner"])
def test_tables_are_read_only(router: Router, names: tuple[str, ...]) -> None:
    for name in names:
        a = getattr(router, name)
        assert isinstance(a, np.ndarray) and a.size, name
        assert not a.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            a[0] = a[0]
