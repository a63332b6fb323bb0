"""shardhash: which shard owns this key?

Stable, seeded hashing and every common placement strategy (modulo, jump,
rings, rendezvous, Maglev, buckets, ranges, directories, watermarks), for
one key on a hot path or hundreds of millions in one vectorised pass, with
the same answer in every process, on every platform and in every release.
"""

from __future__ import annotations

import logging as _logging

__version__ = "0.1.0"

# -- hashing -----------------------------------------------------------------
from shardhash.hashing import ALGORITHMS, Hasher, KeyCodec, hash_array, hash_bytes, hash_key

__all__ = [
    "__version__",
    "ALGORITHMS",
    "Hasher",
    "KeyCodec",
    "hash_array",
    "hash_bytes",
    "hash_key",
]

# -- routing -----------------------------------------------------------------
from shardhash.routing import (
    BoundedLoadRouter,
    BucketRouter,
    DirectoryRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    MementoRouter,
    ModuloRouter,
    MultiProbeRouter,
    RangeRouter,
    RendezvousRouter,
    RingRouter,
    Router,
    WatermarkRouter,
    jump_hash,
    jump_hash_array,
    load_router,
    register_router_type,
)

__all__ += [
    "BoundedLoadRouter",
    "BucketRouter",
    "DirectoryRouter",
    "HashRangeRouter",
    "JumpRouter",
    "MaglevRouter",
    "MementoRouter",
    "ModuloRouter",
    "MultiProbeRouter",
    "RangeRouter",
    "RendezvousRouter",
    "RingRouter",
    "Router",
    "WatermarkRouter",
    "jump_hash",
    "jump_hash_array",
    "load_router",
    "register_router_type",
]

# -- planning, analysis, chunked I/O (submodules) -----------------------------
from shardhash import analysis, io, plan  # noqa: E402

__all__ += ["analysis", "io", "plan"]

# -- hot keys (registers the "hot" router document type) ----------------------
from shardhash import hotkeys  # noqa: E402
from shardhash.hotkeys import HotKeyRouter  # noqa: E402

__all__ += ["hotkeys", "HotKeyRouter"]

# A library's loggers ("shardhash.events", "shardhash.migrate") end in a
# NullHandler, as the logging HOWTO asks of libraries: a script that
# configures no logging gets no bare records on stderr from Python's
# last-resort handler; an application that configures logging sees them all.
_logging.getLogger("shardhash").addHandler(_logging.NullHandler())
