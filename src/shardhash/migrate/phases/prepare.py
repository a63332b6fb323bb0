"""Prepare: set up the shards a migration touches and record its units there.

Every source and destination gets the system tables and triggers (a
destination its group tables too, created like a source's); the column types
are checked between backends; then, per shard in one local transaction, the
routers and the unit records (sources ``copying``, destinations
``importing``) become visible together with the start of the sources' change
capture and an epoch bump -- before any snapshot is taken.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..errors import MigrationError, crash_point

if TYPE_CHECKING:
    from ..executor import Migration


def prepare(m: Migration) -> None:
    cl = m.cluster
    srcs, dsts = m.mem.sources, m.mem.destinations
    for s in srcs:
        with m._on(s, "source", "preparing"):
            cl.prepare_shard(s)
    for d in dsts:
        with m._on(d, "destination", "preparing (creating its tables)"):
            cl.prepare_shard(d, create_from=srcs[0] if srcs else None)
    m._check_column_types(values=True)
    for s in srcs:
        b = cl.backend(s)
        for t in m.group.tables:
            cols, pk, kx = m._table(s, t.name)
            rows = b.scan(b.conn(), t.name, cols, pk, None, 200)
            m._check_keys(t.name, [r[kx] for r in rows], rows, [cols.index(k) for k in pk])
    old_doc, new_doc = m.old.to_json(), m.new.to_json()
    base_version = min(int(m.info.get("base_version", m.old.version)), m.old.version)
    for shard in m._involved():
        b = cl.backend(shard)
        with b.writing() as c:
            b.put_routers(c, m.id, old_doc, new_doc)
            for u in m.units:
                for role, who, state in (("source", u.source, "copying"),
                                         ("destination", u.destination, "importing")):
                    if who == shard:
                        b.put_unit(c, m.group.name, m.id, u.index, role, state, m.new.version,
                                   json.dumps(dict(u.to_dict(), from_version=base_version)))
            if shard in srcs and not m.info.get("skip_copy"):
                # Capture starts in the same transaction that makes the
                # units visible, before any snapshot is taken.
                b.start_capture(c, m.capture, m.group.name)
            b.bump_epoch(c)
        crash_point("prepare-shard")
    for s in srcs:
        b = cl.backend(s)
        if b.capture_id(b.conn(), m.capture) is None:
            raise MigrationError(f"shard {s!r} has no change capture {m.capture!r}")
    m.log(f"prepared: sources {srcs}, destinations {dsts}")
