"""Column types between backends: a migration from SQLite to PostgreSQL (or
back) maps each column's type explicitly and checks the values against it.

SQLite decides a column's *affinity* from its declared type (the rules of
https://www.sqlite.org/datatype3.html section 3.1, in order: ``INT`` ->
INTEGER; ``CHAR``, ``CLOB`` or ``TEXT`` -> TEXT; ``BLOB`` or no type -> BLOB;
``REAL``, ``FLOA`` or ``DOUB`` -> REAL; anything else -> NUMERIC).  Exact
counterparts:

============================  ==============================================
SQLite affinity               PostgreSQL type
============================  ==============================================
INTEGER                       ``bigint`` (also ``integer``/``smallint`` of a
                              pre-created table when every value fits)
REAL                          ``double precision``
TEXT                          ``text`` (or an unbounded ``varchar``)
BLOB (and untyped columns)    ``bytea``
NUMERIC                       none: refused
============================  ==============================================

and back: ``smallint``/``integer``/``bigint``/``boolean`` -> INTEGER,
``double precision``/``real`` -> REAL, ``text``/``varchar`` -> TEXT,
``bytea`` -> BLOB; any other type (``numeric``, dates, ``json``, …) is
refused.  Every value must be of its column's kind: a TEXT value in an
INTEGER column, a text holding NUL going to PostgreSQL ``text``, or a NaN or
-0.0 going to an SQLite REAL column (SQLite stores NULL and 0.0) is refused
with its table, column and primary key named.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .sqlite import qi

if TYPE_CHECKING:
    from .backend import ShardBackend
    from .mysql import MySQLShard


class ColumnTypeError(ValueError):
    """A column (or one of its values) has no exact counterpart on the other backend."""


def sqlite_affinity(declared: str) -> str:
    """SQLite's affinity of a declared column type: INTEGER, TEXT, BLOB, REAL or NUMERIC."""
    t = declared.upper()
    if "INT" in t:
        return "INTEGER"
    if "CHAR" in t or "CLOB" in t or "TEXT" in t:
        return "TEXT"
    if "BLOB" in t or not t.strip():
        return "BLOB"
    if "REAL" in t or "FLOA" in t or "DOUB" in t:
        return "REAL"
    return "NUMERIC"


#: A column's kind of values: "int" (with its bits), "float" (bits), "text", "bytes", "bool".
@dataclass(frozen=True)
class Kind:
    kind: str
    bits: int = 64


_SQLITE_KIND = {"INTEGER": Kind("int"), "REAL": Kind("float"), "TEXT": Kind("text"), "BLOB": Kind("bytes")}
_PG_KIND = {"smallint": Kind("int", 16), "integer": Kind("int", 32), "bigint": Kind("int"),
            "boolean": Kind("bool"), "double precision": Kind("float"), "real": Kind("float", 32),
            "text": Kind("text"), "character varying": Kind("text"), "bytea": Kind("bytes")}
_PG_OF = {"int": "bigint", "float": "double precision", "text": "text", "bytes": "bytea"}
_SQLITE_OF = {"int": "INTEGER", "bool": "INTEGER", "float": "REAL", "text": "TEXT", "bytes": "BLOB"}


def _mysql(b: ShardBackend) -> MySQLShard:
    """The MySQL backend behind a backend of kind ``mysql`` (its catalogue
    readers, which the other kinds' are here)."""
    from .mysql import MySQLShard

    if not isinstance(b, MySQLShard):
        raise TypeError(f"a backend of kind 'mysql' must be a MySQLShard, not {type(b).__name__}")
    return b


def column_types(b: ShardBackend, c: Any, table: str) -> list[tuple[str, str, bool]]:
    """(name, declared type, not null) of every column of ``table``."""
    if b.kind == "mysql":  # (MariaDB / MySQL: the backend reads information_schema)
        return _mysql(b).column_types(c, table)
    if b.kind == "sqlite":
        return [(str(r[1]), str(r[2] or ""), bool(r[3]))
                for r in c.execute(f"PRAGMA table_info({qi(table)})").fetchall()]
    return [(str(r[0]), str(r[1]), bool(r[2])) for r in c.execute(
        "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
        "WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        (qi(table),)).fetchall()]


def kind_of(backend_kind: str, table: str, column: str, declared: str) -> Kind:
    """The kind of values a column holds; ColumnTypeError when it has no exact
    counterpart on the other backend."""
    if backend_kind == "mysql":
        from .mysql import mysql_kind

        mk = mysql_kind(declared)
        if mk is None:
            raise ColumnTypeError(
                f"table {table!r}, column {column!r}: MySQL type {declared!r} has no exact counterpart on the other "
                f"backends (supported: tinyint(1), smallint, int, bigint, float, double, char/varchar/text, "
                f"binary/varbinary/blob; or create the destination table yourself)")
        return Kind(*mk)
    if backend_kind == "sqlite":
        aff = sqlite_affinity(declared)
        if aff == "NUMERIC":
            raise ColumnTypeError(
                f"table {table!r}, column {column!r}: SQLite type {declared!r} has NUMERIC affinity, which has "
                f"no exact PostgreSQL counterpart (declare INTEGER, REAL, TEXT or BLOB, or create the "
                f"destination table yourself)")
        return _SQLITE_KIND[aff]
    base = declared.split("(")[0].strip()
    if base == "character varying" and "(" in declared:
        base = "character varying(n)"
    k = _PG_KIND.get(base)
    if k is None:
        raise ColumnTypeError(
            f"table {table!r}, column {column!r}: PostgreSQL type {declared!r} has no exact SQLite counterpart "
            f"(supported: {', '.join(sorted(_PG_KIND))})")
    return k


def _indexes_sqlite(c: Any, table: str) -> list[tuple[str, bool, list[str]]]:
    out = []
    for r in c.execute(f"PRAGMA index_list({qi(table)})").fetchall():
        name, unique, origin, partial = str(r[1]), bool(r[2]), str(r[3]), bool(r[4])
        if origin == "pk":
            continue
        info = c.execute(f"PRAGMA index_info({qi(name)})").fetchall()
        if partial or any(x[1] < 0 for x in info):
            raise ColumnTypeError(f"table {table!r}: index {name!r} is partial or on an expression; create "
                                  f"the destination table yourself")
        out.append((name, unique, [str(x[2]) for x in sorted(info, key=lambda x: x[0])]))
    return out


def _indexes_pg(c: Any, table: str) -> list[tuple[str, bool, list[str]]]:
    out = []
    for name, unique, partial, expr, keys in c.execute(
            "SELECT (SELECT relname FROM pg_class WHERE oid = i.indexrelid), i.indisunique, "
            "i.indpred IS NOT NULL, i.indexprs IS NOT NULL, "
            "(SELECT array_agg(a.attname ORDER BY k.ord) FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) "
            "FROM pg_index i WHERE i.indrelid = ?::regclass AND NOT i.indisprimary", (qi(table),)).fetchall():
        if partial or expr:
            raise ColumnTypeError(f"table {table!r}: index {name!r} is partial or on an expression; create "
                                  f"the destination table yourself")
        out.append((str(name), bool(unique), [str(k) for k in keys]))
    return out


def _indexes(src: ShardBackend, c: Any, table: str) -> list[tuple[str, bool, list[str]]]:
    if src.kind == "mysql":
        return _mysql(src).indexes(c, table)
    return _indexes_sqlite(c, table) if src.kind == "sqlite" else _indexes_pg(c, table)


def translate_ddl(src: ShardBackend, c: Any, table: str, dst_kind: str) -> list[str]:
    """The statements that create ``table`` (and its column indexes) on a
    backend of kind ``dst_kind`` like on ``src``: the source's own DDL on the
    same kind, else every column's exact counterpart (ColumnTypeError naming
    the column that has none)."""
    if src.kind == dst_kind:
        return src.table_ddl(c, table)
    _, pk = src.table_info(c, table)
    cols = []
    for name, declared, notnull in column_types(src, c, table):
        k = kind_of(src.kind, table, name, declared)
        t = _PG_OF[k.kind] if dst_kind == "postgresql" else _SQLITE_OF[k.kind]
        if dst_kind == "mysql":
            from .mysql import TYPE_OF, indexed_text_type

            indexed = name in pk or name in {x for _n, _u, ks in _indexes(src, c, table) for x in ks}
            t = indexed_text_type() if k.kind == "text" and indexed else TYPE_OF[k.kind]
        cols.append(f"{qi(name)} {t}{' NOT NULL' if notnull or name in pk else ''}")
    cols.append(f"PRIMARY KEY ({', '.join(qi(k) for k in pk)})")
    out = [f"CREATE TABLE {qi(table)} ({', '.join(cols)})"]
    for name, unique, keys in _indexes(src, c, table):
        iname = name if not name.startswith("sqlite_autoindex") else f"{table}_{'_'.join(keys)}_key"
        out.append(f"CREATE {'UNIQUE ' if unique else ''}INDEX {qi(iname)} ON {qi(table)} "
                   f"({', '.join(qi(k) for k in keys)})")
    return out


_INT_RANGE = {16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1), 64: (-2**63, 2**63 - 1)}


def pair_kinds(src: ShardBackend, sc: Any, dst: ShardBackend, dc: Any, table: str) -> dict[str, Kind]:
    """For a table copied between backends of different kinds: the kind of
    each column on the destination, once checked against the source's
    (ColumnTypeError naming the column that does not match exactly)."""
    have = {n: (d, nn) for n, d, nn in column_types(dst, dc, table)}
    out: dict[str, Kind] = {}
    for name, declared, _ in column_types(src, sc, table):
        sk = kind_of(src.kind, table, name, declared)
        if name not in have:
            raise ColumnTypeError(f"table {table!r}, column {name!r}: missing on the destination")
        dk = kind_of(dst.kind, table, name, have[name][0])
        same = sk.kind == dk.kind or {sk.kind, dk.kind} == {"int", "bool"} and dk.kind == "int"
        if not same or (sk.kind == "float" and dk.bits < sk.bits):
            raise ColumnTypeError(
                f"table {table!r}, column {name!r}: source type {declared!r} ({src.kind}) and destination type "
                f"{have[name][0]!r} ({dst.kind}) do not hold the same values")
        out[name] = dk
    return out


def check_source_values(src: ShardBackend, sc: Any, table: str, kinds: dict[str, Kind]) -> None:
    """Refuse (ColumnTypeError naming the table, column and primary key) the
    first value on the source that its destination column cannot hold exactly."""
    _, pk = src.table_info(sc, table)
    keys = ", ".join(qi(k) for k in pk)
    for name, k in kinds.items():
        col = qi(name)
        args: tuple[Any, ...] = ()
        if src.kind == "sqlite":
            want = {"int": "'integer'", "bool": "'integer'", "float": "'real'", "text": "'text'",
                    "bytes": "'blob'"}[k.kind]
            bad = f"typeof({col}) NOT IN ({want}, 'null')"
            if k.kind == "int" and k.bits < 64:
                bad += f" OR {col} NOT BETWEEN ? AND ?"
                args = _INT_RANGE[k.bits]
            if k.kind == "text":
                bad += f" OR instr(CAST({col} AS BLOB), x'00') > 0"
        elif src.kind == "mysql":  # (its columns hold their declared kind; no NaN)
            continue
        else:
            if k.kind != "float":
                continue
            bad = f"{col} = 'NaN' OR ({col} = 0 AND {col}::text LIKE '-%')"
        r = sc.execute(f"SELECT {keys}, {col} FROM {qi(table)} WHERE {bad} LIMIT 1", args).fetchone()
        if r is not None:
            raise ColumnTypeError(_bad_value(table, name, tuple(r[:-1]), r[-1], k, src.kind))


def _bad_value(table: str, column: str, key: tuple[Any, ...], value: Any, k: Kind, src_kind: str,
               dst_kind: str | None = None) -> str:
    dst = "PostgreSQL" if src_kind == "sqlite" else "SQLite"
    if dst_kind is not None:
        dst = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MySQL"}.get(dst_kind, dst_kind)
    why = ""
    if isinstance(value, str) and "\x00" in value:
        why = " (PostgreSQL text cannot hold NUL)"
    elif dst == "MySQL" and isinstance(value, float):
        why = " (a MySQL DOUBLE holds no NaN or infinity)"
    elif isinstance(value, float) and (value != value or value == 0):
        why = " (SQLite stores a NaN as NULL and -0.0 as 0.0 in a REAL column)"
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return (f"table {table!r}, column {column!r}, primary key {key!r}: value {shown} "
            f"({type(value).__name__}) does not fit the {dst} column's type exactly{why}")


def fits(value: Any, k: Kind, to_kind: str) -> bool:
    """Whether ``value`` (as read from the source) lands exactly in a column
    of kind ``k`` on a backend of kind ``to_kind``."""
    if value is None:
        return True
    if k.kind in ("int", "bool"):
        if isinstance(value, bool):
            return True
        if not isinstance(value, int):
            return False
        lo, hi = _INT_RANGE[k.bits if k.kind == "int" else 64]
        return lo <= value <= hi
    if k.kind == "float":
        if not isinstance(value, float):
            return False
        if to_kind == "sqlite":
            return not (math.isnan(value) or (value == 0 and math.copysign(1.0, value) < 0))
        if to_kind == "mysql":
            return math.isfinite(value)
        return True
    if k.kind == "text":
        return isinstance(value, str) and (to_kind != "postgresql" or "\x00" not in value)
    return isinstance(value, (bytes, bytearray, memoryview))


def check_rows(table: str, cols: Sequence[str], pk: Sequence[str], kinds: dict[str, Kind], to_kind: str,
               rows: Sequence[Sequence[Any]]) -> None:
    """Refuse (ColumnTypeError naming the table, column and primary key) the
    first value of ``rows`` that its destination column cannot hold exactly."""
    pkx = [list(cols).index(k) for k in pk]
    for j, name in enumerate(cols):
        k = kinds.get(name)
        if k is None:
            continue
        for r in rows:
            v = r[j]
            if not fits(v, k, to_kind):
                raise ColumnTypeError(_bad_value(table, name, tuple(r[i] for i in pkx), v, k,
                                                 "sqlite" if to_kind == "postgresql" else "postgresql", to_kind))


def canonical_row(row: Sequence[Any]) -> str:
    """A row's values as one string that is equal for two rows exactly when
    their values are, whichever backend they were read from: integers as
    integers (a boolean as 0/1), floats by their binary64 value (Python's
    repr of a float is the shortest text that reads back as the same bits,
    so -0.0 and 0.0 differ), text and bytes by their content.  (A PostgreSQL
    ``real`` is read as its exact value, see :func:`register_exact_floats`.)"""
    s = repr(tuple(row))
    if "True" in s or "False" in s or "<memory" in s or "bytearray" in s:
        s = repr(tuple(int(v) if isinstance(v, bool) else bytes(v) if isinstance(v, (memoryview, bytearray))
                       else v for v in row))
    return s


def float4_exact(text: str) -> float:
    """The float4 value that PostgreSQL wrote as ``text`` (its shortest exact
    form), as the binary64 float of the same value: ``'3.1'`` gives
    3.0999999046325684 (a plain float('3.1') would be another number)."""
    if text in ("NaN", "Infinity", "-Infinity"):
        return float(text)
    f = Fraction(text)
    if f == 0:
        return -0.0 if text.startswith("-") else 0.0
    r = struct.unpack("<f", struct.pack("<f", float(f)))[0]
    # (two roundings, decimal -> binary64 -> binary32, may miss by one: pick
    # the nearest of r and its neighbours exactly, ties to the even one)
    bits = struct.unpack("<I", struct.pack("<f", r))[0]
    best: tuple[Fraction, int, float] | None = None
    for b in (bits - 1, bits, bits + 1):
        if not 0 <= b < 2**32:
            continue
        cand = struct.unpack("<f", struct.pack("<I", b))[0]
        if not math.isfinite(cand) or (cand > 0) != (f > 0):
            continue
        key = (abs(Fraction(cand) - f), b & 1, cand)
        if best is None or key[:2] < best[:2]:
            best = key
    assert best is not None
    return float(best[2])


def register_exact_floats(raw: Any) -> None:
    """On a psycopg connection: read ``real`` columns exactly (not as the
    binary64 nearest to their decimal text) and have the server write every
    float in its exact form (``extra_float_digits = 3``)."""
    from psycopg.adapt import Loader

    class _Float4(Loader):
        def load(self, data: Any) -> float:
            return float4_exact(bytes(data).decode("ascii"))

    raw.adapters.register_loader("float4", _Float4)
    raw.execute("SET extra_float_digits = 3")
