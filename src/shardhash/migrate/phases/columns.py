"""Row checks shared by the copy and the catch-up: column types between
backends (SQLite and PostgreSQL), values a destination column cannot hold
exactly, and primary keys that another key's row already holds on a
destination."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..coltypes import ColumnTypeError, Kind, check_rows, check_source_values, pair_kinds
from ..errors import MigrationError

if TYPE_CHECKING:
    from ..executor import Migration


def column_kinds(m: Migration, s: str, d: str, table: str, values: bool = False) -> dict[str, Kind] | None:
    """Between shards of different backends (SQLite and PostgreSQL): each
    column's kind on the destination, checked against the source's type
    (and, with ``values``, every value on the source); None between shards
    of one backend."""
    sb, db = m.cluster.backend(s), m.cluster.backend(d)
    if sb.kind == db.kind:
        return None
    k = f"{s}>{d}/{table}"
    kinds = m._kinds.get(k)
    try:
        if kinds is None:
            with m._on(d, "destination", f"reading the column types of {table!r}"):
                kinds = pair_kinds(sb, sb.conn(), db, db.conn(), table)
        if values:
            with m._on(s, "source", f"checking the values of {table!r} for {d!r}"):
                check_source_values(sb, sb.conn(), table, kinds)
    except ColumnTypeError as e:
        raise MigrationError(f"migration {m.id}: cannot copy from shard {s!r} ({sb.kind}) to shard {d!r} "
                             f"({db.kind}): {e}") from e
    m._kinds[k] = kinds
    return kinds


def check_column_types(m: Migration, values: bool = False) -> None:
    for s in m.mem.sources:
        for d in m.mem.destinations:
            for t in m.group.tables:
                m._column_kinds(s, d, t.name, values)


def check_values(m: Migration, s: str, d: str, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Refuse a row that the destination's columns cannot hold exactly
    (between backends; before the write, which might convert it)."""
    kinds = m._column_kinds(s, d, table)
    if kinds is None:
        return
    _, pk, _kx = m._table(s, table)
    try:
        check_rows(table, cols, pk, kinds, m.cluster.backend(d).kind, rows)
    except ColumnTypeError as e:
        raise MigrationError(f"migration {m.id}: cannot copy from shard {s!r} to shard {d!r}: {e}") from e


def check_collisions(m: Migration, s: str, d: str, db: Any, dc: Any, table: str,
                      rows: Sequence[Sequence[Any]]) -> None:
    """Refuse to overwrite a destination row that is not this source's copy
    of a moving row (primary keys must be unique across the group's shards)."""
    cols, pk, kx = m._table(s, table)
    pkx = [cols.index(k) for k in pk]
    have = db.fetch(dc, table, cols, pk, [tuple(r[j] for j in pkx) for r in rows])
    if not have:
        return
    hu = m.mem.assign([r[kx] for r in have]).tolist()
    for r, u in zip(have, hu):
        if u < 0 or m.units[u].source != s or m.units[u].destination != d:
            k = tuple(r[j] for j in pkx)
            raise MigrationError(f"table {table!r}: primary key {k!r} from shard {s!r} already exists on "
                                 f"shard {d!r} for another key ({r[kx]!r}); primary keys must be unique "
                                 f"across the group's shards")
