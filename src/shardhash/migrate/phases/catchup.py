"""Catch-up: apply the sources' captured changes to the destinations'
copies until the lag is small enough to fence.

A batch of change rows per source is read (table, primary key), the rows
are read again from the source as they are now, and each destination's
copy is made to match (upserted, or deleted when the row is gone or no
longer moves there); the change rows are then marked applied.  The queue is
consumed by row, never by position, so a change committed late (PostgreSQL's
ids are not commit order) is just a pending row that shows up later.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..control import MigrationPaused
from ..errors import MigrationError, crash_point
from ..systables import decode_pk

if TYPE_CHECKING:
    from ..executor import Migration


def cid(m: Migration, shard: str) -> int:
    b = m.cluster.backend(shard)
    cid = b.capture_id(b.conn(), m.capture)
    if cid is None:
        raise MigrationError(f"shard {shard!r} lost change capture {m.capture!r}")
    return cid


def catch_up(m: Migration, limit: int = 2000, upto: dict[str, int] | None = None) -> tuple[int, int]:
    """Apply one batch of captured changes per source; returns (applied,
    pending).  The sources' batches run at once on the run's workers (one
    per source with its destinations, at most ``parallel``; see
    :meth:`Migration._each`): the first error stops the others after the
    batch in hand and is raised naming its source and destinations."""
    done = m._each(list(m.mem.sources), lambda s: catch_up_source(m, s, limit, upto), "catch-up")
    return sum(a for a, _ in done), sum(p for _, p in done)


def catch_up_source(m: Migration, s: str, limit: int, upto: dict[str, int] | None) -> tuple[int, int]:
    """One batch of source ``s``'s captured changes; returns (applied, pending)."""
    sb = m.cluster.backend(s)
    if m.throttle is not None and upto is None:  # (never under the fence: writers wait there)
        pairs = [(s, d) for d in sorted({u.destination for u in m.units if u.source == s})]
        if not m.throttle.wait(m, s, pairs, stop=lambda: m._pausable and m.meta.controls(m.id)[0]):
            raise MigrationPaused(f"migration {m.id} is paused (while the throttle held source {s!r}); "
                                  f"`shardhash migrate resume {m.id}` continues it")
    with m._on(s, "source", "reading its captured changes"):
        sc = sb.conn()
        cid = m._cid(s)
        batch = sb.pending(sc, cid, limit)
    if upto is not None:
        batch = [r for r in batch if r[0] <= upto[s]]
    applied = 0
    if batch:
        m._sync(s, batch)
        with m._on(s, "source", "marking captured changes applied"), sb.writing(sc):
            sb.mark_applied(sc, [r[0] for r in batch])
        applied = len(batch)
    with m._on(s, "source", "counting its captured changes"):
        return applied, sb.pending_count(sc, cid)


def sync(m: Migration, s: str, batch: Sequence[tuple[int, str, str]]) -> None:
    """Make the destinations' copy of every listed row match the source's now."""
    cl = m.cluster
    sb = cl.backend(s)
    by_tbl: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    for _, tbl, pkj in batch:
        by_tbl[tbl].add(decode_pk(pkj))
    writes: dict[str, list[tuple[str, str, list[Any], list[Any]]]] = defaultdict(list)
    for tbl, pks in by_tbl.items():
        cols, pk, kx = m._table(s, tbl)
        pkx = [cols.index(k) for k in pk]
        plist = sorted(pks, key=repr)
        rows = sb.fetch(sb.conn(), tbl, cols, pk, plist)
        ui = m.mem.assign([r[kx] for r in rows]).tolist()
        want: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}
        for r, u in zip(rows, ui):
            if u >= 0 and m.units[u].source == s:  # (not another source's copy held here)
                want[tuple(r[j] for j in pkx)] = (m.units[u].destination, r)
        for d in m.mem.destinations:
            db = cl.backend(d)
            with m._on(d, "destination", "reading rows to catch up"):
                have = db.fetch(db.conn(), tbl, cols, pk, plist)
            hu = m.mem.assign([r[kx] for r in have]).tolist()
            dels = []
            for r, u in zip(have, hu):
                k = tuple(r[j] for j in pkx)
                if (u >= 0 and m.units[u].source == s and m.units[u].destination == d
                        and (k not in want or want[k][0] != d)):
                    dels.append(k)
            ups = [r for (dd, r) in want.values() if dd == d]
            if ups or dels:
                writes[d].append((tbl, "x", ups, dels))
    for d, items in writes.items():
        db = cl.backend(d)
        with m._on(d, "destination", "applying captured changes"), db.writing() as dc:
            for tbl, _, ups, dels in items:
                cols, pk, _kx = m._table(s, tbl)
                if dels:
                    db.delete(dc, tbl, pk, dels)
                if ups:
                    m._check_values(s, d, tbl, cols, ups)
                    m._check_collisions(s, d, db, dc, tbl, ups)
                    db.upsert(dc, tbl, cols, ups)
    crash_point("catch-up-batch")


def catch_up_until(m: Migration, threshold: float, max_seconds: float) -> None:
    t_start = time.perf_counter()
    # The apply rate is measured, never assumed: None until a batch of
    # changes was applied (then a moving average, kept across runs); with
    # no rate, the lag in seconds is 0 when nothing is pending, else unknown.
    prev = m.meta.get(m.id, "catchup_rate")
    rate: float | None = float(prev) if prev else None
    last_log = 0.0
    while True:
        t0 = time.perf_counter()
        applied, pending = m.catch_up()
        dt = time.perf_counter() - t0
        if applied and dt > 0:
            rate = applied / dt if rate is None else 0.7 * rate + 0.3 * (applied / dt)
        est: float | None = 0.0 if pending == 0 else (pending / rate if rate else None)
        if rate is not None:
            # (the progress line names a rate: none before one is measured)
            m._tick(phase="catch-up", lag_changes=pending, lag_s=est, rows_per_s=rate)
        now = time.perf_counter()
        done = est is not None and est < threshold and applied < 2000
        if done or now - last_log > 1.0:
            with m.meta.tx() as mc:
                m.meta.put(m.id, "lag", {"changes": pending, "seconds": est}, mc)
                if rate is not None:
                    m.meta.put(m.id, "catchup_rate", rate, mc)
            last_log = now
        if done:
            return
        if now - t_start > max_seconds:
            raise MigrationError(f"catch-up did not get below {threshold} s of lag in {max_seconds:.0f} s "
                                 f"({pending} changes pending): writes outpace the copy; resume later")
