"""Watermark resharding run to its end, batch by batch (docs/migrate.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..routing import Router
from .metadata import DONE
from .units import Unit

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["walk_watermark"]


def walk_watermark(cluster: Cluster, group: str | None = None, *, batch: int | None = None,
                   max_batches: int | None = None, log: Callable[[str], None] | None = None,
                   **run_kw: Any) -> Router:
    """Run a watermark resharding to its end.

    The group's router must be a :class:`~shardhash.routing.WatermarkRouter`
    (ids at or above K follow the new layout, so new ids go there at once).
    Each batch ``[K - batch, K)`` (``batch`` defaults to the total number of
    shards) is a migration of its own -- copied, caught up, verified, fenced
    and committed as a router with the watermark lowered, version + 1 --
    then its retained copy is cleaned up.  When K is at or below the lowest
    id of every table, a last migration fences the ids below K and the
    topology becomes the new router itself.  Resumable: an interrupted
    batch is finished first.  Returns the group's router at the end (or after
    ``max_batches`` batches)."""
    from ..routing import WatermarkRouter
    from .executor import Migration

    g = cluster.group(group)
    done = 0
    for rec in cluster.metadata.migrations(g.name):
        if rec["state"] not in DONE and rec["info"].get("kind") == "watermark":
            m = Migration(cluster, rec["id"])
            m.log_fn = log
            m.run(**run_kw)
            if m.state == "retained":
                m.cleanup()
    while max_batches is None or done < max_batches:
        cur = cluster.refresh(g.name)
        if not isinstance(cur, WatermarkRouter):
            return cur
        k = cur.watermark
        j = int(batch) if batch is not None else len(cur.shards)
        if j < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        lowest: int | None = None
        for s in cur.shards:
            b = cluster.backend(s)
            c = b.conn()
            for t in g.tables:
                if b.has_table(c, t.name):
                    v = b.min_key(c, t.name, t.key)
                    if v is not None and (lowest is None or v < lowest):
                        lowest = int(v)
        pairs = [(s, d) for s in cur.old.shards for d in cur.new.shards if s != d]
        lo64 = -(1 << 63)
        if lowest is None or k <= lowest:
            new: Router = cur.new.with_version(cur.version + 1)
            lo, hi = lo64, k - 1
        else:
            new = cur.lowered(max(k - j, lo64), version=cur.version + 1)
            lo, hi = max(k - j, lo64), k - 1
        units = [Unit(i, s, d, "ids", lo, hi) for i, (s, d) in enumerate(pairs)]
        m = Migration.create(cluster, g.name, new, units=units, info={"kind": "watermark"})
        m.log_fn = log
        m.run(**run_kw)
        m.cleanup()
        done += 1
    return cluster.refresh(g.name)
