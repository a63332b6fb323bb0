"""Routers: which shard owns this key?

Every router is immutable and speaks one protocol::

    router.shards          # tuple of logical shard ids (str), index order
    router.hasher          # the shardhash.Hasher that turns keys into 64-bit values
    router.version         # int, bumped by whoever publishes a new topology
    router.fingerprint     # sha256 hex digest of the canonical document
    router.route(key) -> str                 router.route_index(key) -> int
    router.route_many(keys, *, out=None, threads=None) -> np.ndarray[int32]
    router.route_hashes(hashes, *, out=None, threads=None) -> np.ndarray[int32]
    router.to_dict() / router.to_json()      shardhash.load_router(doc) rebuilds it
    router.routes_on_hash  # route_many(k) == route_hashes(hasher.hash_array(k))

>>> from shardhash import JumpRouter, load_router
>>> r = JumpRouter(["a", "b", "c"])
>>> r.route("user:42") in r.shards
True
>>> load_router(r.to_json()) == r
True

One module per strategy, each holding the class, its planning hooks and
its document parameters: ``modulo``, ``jump``, ``ring``, ``rendezvous``,
``maglev``, ``bucket``, ``hash_range``, ``ranges``, ``directory``,
``watermark``, ``memento``, ``multiprobe``, ``bounded`` and ``id_bucket``
(ids of :mod:`shardhash.ids`, routed by the bucket they carry); ``base``
holds ``Router``, the document and its registry, ``RawKeyRouter``
(routers on raw keys) and ``WrappingRouter``.

Routers over the hash space expose their ownership for planning:
``owned_ranges()`` (RingRouter, HashRangeRouter) lists ``(lo, hi, shard
index)`` inclusive intervals covering ``[0, 2**64 - 1]`` in order;
ModuloRouter, BucketRouter and MaglevRouter expose ``bucket_count``,
``placement`` and ``bucket_table()`` (shard index of each bucket ``hash %
bucket_count``); JumpRouter and RendezvousRouter have no finite table (plan
by sampling).  Each router makes its own successor for the planners
(``with_shards``, ``with_weights``): see docs/routers.md, "How a strategy
owns its planning".

Subclass contract (for routers defined outside this module)
-----------------------------------------------------------
1. Subclass ``Router`` and register the class::

       @register_router_type("mytype")
       class MyRouter(Router):
           _doc_fields = ("param_a", "param_b")     # every key of the "params" object

2. ``__init__`` calls ``Router.__init__(self, shards, hasher=..., version=...,
   key_prefix=...)`` first (it validates the shards and the hasher), stores
   its own attributes with ``self._set(name, value)`` (instances are frozen:
   plain assignment raises), then configures exactly one placement kernel and
   finally calls ``self._finish()``.  Kernels (all take the key's 64-bit hash,
   after an optional ``self._use_pre_transform(add=, xor=)`` that feeds them
   ``((h + add) mod 2**64) ^ xor``):

   * ``self._use_bucket(placement)``  -- shard index = placement[h % len(placement)];
   * ``self._use_jump()``             -- jump hash over ``len(shards)`` buckets;
   * ``self._use_ring(tokens, owners, width)`` -- first token >= h, wrapping;
     ``tokens`` strictly increasing uint64, ``owners`` shard indices;
   * ``self._use_rendezvous(seeds, weights)``  -- see docs/routers.md;
   * ``self._use_delegate(router)``   -- place exactly as another router;
   * ``self._use_python()`` plus a method ``_route_hashes_kernel(self, hashes,
     out)`` that fills the int32 array ``out`` from the uint64 array
     ``hashes`` (optionally ``_route_hash(self, h) -> int`` for one hash).

   Routers whose keys are not hashed (ranges on raw keys) subclass
   ``RawKeyRouter`` instead: it refuses ``route_hashes``, and the subclass
   implements ``route_many`` and the fallback ``_route_index_slow(key)``.
3. ``_doc_params(self) -> dict``: the JSON-able type-specific parameters;
   ``_from_params(cls, params, *, shards, hasher, version, key_prefix)``
   (classmethod): rebuild from them.  ``load_router`` checks ``params``
   against ``_doc_fields`` (unknown keys are a ValueError) and the fingerprint.
4. Routers over the hash space should offer ``owned_ranges()`` (rings:
   ``ring_owned_ranges(tokens, owners)``) or ``bucket_table()``.
5. Planning hooks (``with_shards``, ``with_weights``, ``bucket_table``,
   ``hash_ranges``, ``target_weights``, ``expected_moves``...): defaults on
   ``Router``; a strategy overrides what applies to it (docs/routers.md).
"""

from __future__ import annotations

import inspect

from .base import (
    ROUTER_FORMAT,
    U64_MAX,
    Hasher,
    RawKeyRouter,
    Router,
    RouterCore,
    TopologyOptionError,
    WrappingRouter,
    hash_bits,
    jump_hash,
    jump_hash_array,
    load_router,
    maglev_populate,
    mix64,
    no_weights,
    prepare_out,
    register_router_type,
    router_type,
    router_type_names,
    router_types,
    unalias,
)
from .bounded import BoundedLoadRouter, ItemPlacement, place_items
from .bucket import BucketRouter
from .directory import DirectoryRouter
from .hash_range import HashRangeRouter
from .id_bucket import IdBucketRouter
from .jump import JumpRouter
from .maglev import MaglevRouter, _is_prime, _next_prime, maglev_default_table_size
from .memento import MementoRouter
from .modulo import ModuloRouter
from .multiprobe import MultiProbeRouter
from .ranges import RangeRouter
from .rendezvous import RendezvousRouter
from .ring import RingRouter, ring_owned_ranges
from .watermark import WatermarkRouter

__all__ = [
    "ROUTER_FORMAT",
    "Router",
    "RawKeyRouter",
    "WrappingRouter",
    "ModuloRouter",
    "JumpRouter",
    "RingRouter",
    "RendezvousRouter",
    "MaglevRouter",
    "BucketRouter",
    "RangeRouter",
    "HashRangeRouter",
    "DirectoryRouter",
    "WatermarkRouter",
    "MementoRouter",
    "MultiProbeRouter",
    "BoundedLoadRouter",
    "IdBucketRouter",
    "ItemPlacement",
    "place_items",
    "load_router",
    "register_router_type",
    "router_types",
    "router_type",
    "router_type_names",
    "TopologyOptionError",
    "ring_owned_ranges",
    "jump_hash",
    "jump_hash_array",
    "maglev_default_table_size",
    "hash_bits",
    "no_weights",
]

# Helpers other modules and the tests import from here.
_helpers = (U64_MAX, Hasher, RouterCore, maglev_populate, mix64, prepare_out, unalias, _is_prime, _next_prime)

# The public objects keep ``shardhash.routing`` as their module: help() shows
# the import path users know, and pickles name it (a router pickles as
# ``shardhash.routing.load_router(document)``, as it always has).
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or inspect.isfunction(_obj):  # not constants, nor the compiled functions
        _obj.__module__ = __name__
del _name, _obj
