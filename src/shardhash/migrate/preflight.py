"""The preflight before a copy: will the moved rows fit on their destinations?

The estimate per destination is, for every source, the bytes its tables
take (rows and indexes: SQLite's ``dbstat`` when the library has it, else
the file's size; PostgreSQL's ``pg_total_relation_size``; MySQL's data and
index lengths in ``information_schema.tables``) times the share
of the source's keys that move to that destination (from a sample of keys
assigned by the migration's units: the plan's moved share, source by
source).  The room is what the backend can tell:

* SQLite: the free space of the file system that holds the destination's
  file (destinations on one file system share it), and, with a limit
  ``max_dest_bytes``, that limit less the file's size;
* PostgreSQL: ``max_dest_bytes`` less ``pg_database_size``; MySQL: the same
  less the database's data and index lengths (no limit given: the room is
  unknown and nothing is refused).

A destination whose estimate exceeds its room is refused with
:class:`PreflightError`, naming it with both figures (``--skip-preflight`` /
``run(skip_preflight=True)`` overrides).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

from .errors import MigrationError, describe_fault, is_db_error
from .units import Membership

#: Keys sampled to estimate each source's share moving to each destination.
SAMPLE = 8192


class PreflightError(MigrationError):
    """A destination has no room for its estimated share of the copy."""


def check_limit(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"max_dest_bytes must be an int (bytes) or None, not {type(v).__name__}")
    if v <= 0:
        raise ValueError(f"max_dest_bytes must be > 0, not {v}")
    return v


def _sample_keys(key_type: str) -> list[Any]:
    if key_type == "str":
        return [f"k{i:x}" for i in range(SAMPLE)]
    return list(range(1, SAMPLE + 1))


def table_bytes(b: Any, c: Any, table: str) -> int | None:
    """The bytes a table takes on its shard, indexes included (0 when absent;
    None when this kind of backend cannot tell: the estimate is then unknown
    and the preflight refuses nothing)."""
    if not b.has_table(c, table):
        return 0
    if b.kind == "postgresql":
        r = b.execute(c, "SELECT COALESCE(pg_total_relation_size(to_regclass(" + b.placeholder + ")), 0)",
                      (b.quote_ident(table),)).fetchone()
        return int(r[0])
    if b.kind == "sqlite":
        try:
            r = b.execute(c, "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = " + b.placeholder
                          + " OR name IN (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = "
                          + b.placeholder + ")", (table, table)).fetchone()
            return int(r[0])
        except Exception as e:  # noqa: BLE001 - no dbstat in this SQLite: the file's size
            if not is_db_error(e):
                raise
            return os.path.getsize(b.path) if os.path.exists(b.path) else 0
    if b.kind == "mysql":  # (InnoDB's own figures, data and indexes; refreshed by its statistics)
        r = b.execute(c, "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables "
                      "WHERE table_schema = DATABASE() AND table_name = " + b.placeholder, (table,)).fetchone()
        return int(r[0])
    return None


def _room(b: Any, c: Any, limit: int | None) -> tuple[int | None, str, Any]:
    """(room in bytes or None when unknown, what it is, a key of the space it shares)."""
    if b.kind == "sqlite":
        folder = os.path.dirname(os.path.abspath(b.path))
        free = shutil.disk_usage(folder).free
        room, what, share = free, f"free space of the file system at {folder}", ("fs", os.stat(folder).st_dev)
        if limit is not None:
            size = os.path.getsize(b.path) if os.path.exists(b.path) else 0
            if limit - size < room:
                room, what, share = max(0, limit - size), f"--max-dest-bytes {limit:,} less the file's {size:,}", \
                    ("shard", b.path)
        return room, what, share
    if b.kind == "postgresql":
        if limit is None:
            return None, "unknown (PostgreSQL: give --max-dest-bytes)", None
        size = int(b.execute(c, "SELECT pg_database_size(current_database())").fetchone()[0])
        return max(0, limit - size), f"--max-dest-bytes {limit:,} less the database's {size:,}", ("db", b.path)
    if b.kind == "mysql":
        if limit is None:
            return None, "unknown (MySQL: give --max-dest-bytes)", None
        size = int(b.execute(c, "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables "
                             "WHERE table_schema = DATABASE()").fetchone()[0])
        return max(0, limit - size), f"--max-dest-bytes {limit:,} less the database's {size:,}", ("db", b.path)
    return None, f"unknown ({b.kind})", None


def estimate(cluster: Any, group: Any, mem: Membership, destinations: Sequence[str],
             max_dest_bytes: int | None = None) -> list[dict[str, Any]]:
    """Per destination: ``estimate_bytes``, ``room_bytes`` (None: unknown),
    ``room`` (what the room is), ``fits`` and ``from`` (bytes per source)."""
    limit = check_limit(max_dest_bytes)
    keys = _sample_keys(group.key_type)
    ui = mem.assign(keys).tolist()
    old_owner = [mem.old.route(k) for k in keys]
    units = mem.units
    per: dict[str, dict[str, float]] = {d: {} for d in destinations}
    unknown: set[str] = set()  # (sources whose size the backend cannot tell)
    for s in mem.sources:
        mine = sum(1 for o in old_owner if o == s)
        if not mine:
            continue
        b = cluster.backend(s)
        try:
            c = b.conn()
            sizes = [table_bytes(b, c, t.name) for t in group.tables]
        except Exception as e:
            if not is_db_error(e):
                raise
            raise MigrationError(f"preflight: source shard {s!r} failed while reading its tables' sizes: "
                                 f"{describe_fault(e)}") from e
        if any(x is None for x in sizes):
            unknown.add(s)
            continue
        size = sum(x for x in sizes if x is not None)
        for u, o in zip(ui, old_owner):
            if u >= 0 and o == s and units[u].source == s:
                d = units[u].destination
                pd = per.setdefault(d, {})
                pd[s] = pd.get(s, 0.0) + size / mine
    out = []
    shared: dict[Any, int] = {}  # (space -> estimate of the destinations that share it)
    rows = []
    for d in destinations:
        b = cluster.backend(d)
        try:
            room, what, space = _room(b, b.conn(), limit)
        except Exception as e:
            if not is_db_error(e):
                raise
            raise MigrationError(f"preflight: destination shard {d!r} failed while reading its size: "
                                 f"{describe_fault(e)}") from e
        est = int(sum(per.get(d, {}).values()))
        if any(u.destination == d and u.source in unknown for u in units):
            room, what, space = None, what + "; the estimate leaves out source(s) " \
                + ", ".join(sorted({u.source for u in units if u.destination == d and u.source in unknown})) \
                + " (their backend cannot tell their size)", None
        if space is not None:
            shared[space] = shared.get(space, 0) + est
        rows.append((d, est, room, what, space))
    for d, est, room, what, space in rows:
        need = shared[space] if space is not None else est
        out.append({"destination": d, "estimate_bytes": est, "room_bytes": room, "room": what,
                    "shared_estimate_bytes": need, "fits": room is None or need <= room,
                    "from": {s: int(v) for s, v in sorted(per.get(d, {}).items())}})
    return out


def describe(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per destination (the dry run's and the refusal's words)."""
    out = []
    for r in rows:
        room = "unknown" if r["room_bytes"] is None else f"{r['room_bytes']:,} bytes"
        both = "" if r["shared_estimate_bytes"] == r["estimate_bytes"] else \
            f" ({r['shared_estimate_bytes']:,} with the destinations sharing its space)"
        out.append(f"destination {r['destination']}: ~{r['estimate_bytes']:,} bytes to copy{both}, room {room} "
                   f"({r['room']}){'' if r['fits'] else ': DOES NOT FIT'}")
    return out


def check(m: Any, max_dest_bytes: int | None = None) -> list[dict[str, Any]]:
    """Refuse a copy that does not fit (:class:`PreflightError`); returns the figures."""
    rows = estimate(m.cluster, m.group, m.mem, m.mem.destinations, max_dest_bytes)
    bad = [r for r in rows if not r["fits"]]
    if bad:
        raise PreflightError(f"migration {m.id}: preflight refused the copy: "
                             + "; ".join(describe(bad))
                             + ". Free space on the destination, raise --max-dest-bytes, or pass "
                               "--skip-preflight (run(skip_preflight=True)) to copy anyway")
    return rows
