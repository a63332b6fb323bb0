"""Place keys exactly as real systems do, checked against the real software.

One module per system; each is imported on first use, so ``import
shardhash.compat`` stays cheap:

* :mod:`shardhash.compat.postgres` -- PostgreSQL declarative hash
  partitioning (``PARTITION BY HASH``) and its per-type hash functions.
* :mod:`shardhash.compat.citus` -- Citus hash-distributed tables (shard
  ranges over PostgreSQL's 32-bit hash).
* :mod:`shardhash.compat.cassandra` -- Cassandra's ``Murmur3Partitioner``
  tokens, CQL key serialisation and token rings.
* :mod:`shardhash.compat.ketama` -- ketama continuums (libketama,
  libmemcached, twemproxy, uhashring).
* :mod:`shardhash.compat.vitess` -- Vitess ``hash`` / ``xxhash`` vindexes
  and keyrange shard names.
* :mod:`shardhash.compat.guava` -- Guava's ``Hashing.consistentHash``.
* :mod:`shardhash.compat.mongo` -- MongoDB hashed shard keys and chunks.
* :mod:`shardhash.compat.redis` -- Redis Cluster key slots.

Example::

    >>> from shardhash import compat
    >>> compat.guava.consistent_hash(1, 100)
    55
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["postgres", "citus", "cassandra", "ketama", "vitess", "guava", "mongo", "redis"]


def __getattr__(name: str) -> ModuleType:
    if name in __all__:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
