"""Execute migrations on real databases, under live writes, with stale routers fenced.

``shardhash.migrate`` moves the keys that :mod:`shardhash.plan` says move:
prepare, snapshot copy with change capture, catch-up, verify, fence and cut
over (the metadata store's commit is the single decision point), retain,
clean up or roll back -- every step durable and resumable after a crash.
Application code reads and writes through :class:`Cluster` (``transaction``
/ ``read``), whose ownership check runs in the shard's own transaction, so
a stale router gets :class:`StaleRouteError` instead of writing to a shard
that gave the key away.  See docs/migrate.md.
"""

from __future__ import annotations

from .cluster import (
    Cluster,
    FenceTimeout,
    GroupSpec,
    Metrics,
    ShardKeyError,
    ShardTransaction,
    StaleRouteError,
    TableSpec,
)
from .control import Throttle
from .executor import Migration, MigrationError, MigrationPaused, VerifyMismatch
from .units import Membership, Unit, units_for

__all__ = [
    "Cluster",
    "FenceTimeout",
    "GroupSpec",
    "Membership",
    "Metrics",
    "Migration",
    "MigrationError",
    "MigrationPaused",
    "ShardKeyError",
    "ShardTransaction",
    "StaleRouteError",
    "TableSpec",
    "Throttle",
    "Unit",
    "VerifyMismatch",
    "units_for",
]
