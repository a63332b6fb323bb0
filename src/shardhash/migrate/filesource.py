"""CSV and Parquet files as the source of an import (``csv:PATH``,
``parquet:PATH``; :func:`shardhash.migrate.importer.import_from`).

``PATH`` is a file when the group has one table, else a folder holding
``<table>.csv`` (or ``.tsv``) / ``<table>.parquet`` for each table of the
group.  The files are read into a private SQLite staging database, one table
per file with its primary key, which the import then reads like any SQLite
source (in primary-key order, resumable from its cursor, verified against
its checksums); the staging database is rebuilt on every run and removed
after it, and the files are never changed.

Each column's type comes from the group's table on the shards when a shard
has it (its primary key too); otherwise the table is created with the
shard-key column as its primary key, typed by the group's ``key_type``
(``int`` or ``str``; CSV needs one of them declared), and the other columns
typed by the Parquet schema (integers, floats, strings, binary, booleans as
0/1) or, from CSV, as text.  A CSV file has a header line; its fields are
read as the column's type: an integer, a float, text as written, bytes as
hex; an empty field is NULL, except in a text column, where it is the empty
string.  A value that does not read as its column's type is refused, naming
the file, the line (or row) and the column; so is a primary key that appears
twice.  CSV needs nothing but the standard library; Parquet needs pyarrow
(``pip install 'shardhash[arrow]'``).
"""

from __future__ import annotations

import csv
import math
import sqlite3
from collections.abc import Iterator, Sequence
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from .coltypes import Kind, column_types, kind_of
from .sqlite import SQLiteShard, qi

__all__ = ["SCHEMES", "is_file_url", "stage"]

SCHEMES = ("csv:", "parquet:")
_BATCH = 50_000
_SUB = 2_000
_CSV_BATCH = 10_000
_SQLITE_OF = {"int": "INTEGER", "bool": "INTEGER", "float": "REAL", "text": "TEXT", "bytes": "BLOB"}


def is_file_url(url: str) -> bool:
    """Whether ``url`` names CSV or Parquet files (``csv:PATH`` or ``parquet:PATH``)."""
    return isinstance(url, str) and url.startswith(SCHEMES)


def _paths(url: str, tables: Sequence[str], base_dir: str | None) -> dict[str, Path]:
    scheme, _, raw = url.partition(":")
    if not raw:
        raise ValueError(f"import source {url!r}: give a path after {scheme}:")
    p = Path(raw)
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    exts = (".csv", ".tsv") if scheme == "csv" else (".parquet", ".pq")
    if p.is_dir():
        out = {}
        for t in tables:
            found = [p / f"{t}{e}" for e in exts if (p / f"{t}{e}").is_file()]
            if not found:
                raise ValueError(f"import source {url!r}: the folder has no {t}{exts[0]} (one file per table of "
                                 f"the group: {', '.join(f'{x}{exts[0]}' for x in tables)})")
            out[t] = found[0]
        return out
    if p.is_file():
        if len(tables) != 1:
            files = ", ".join(f"{x}{exts[0]}" for x in tables)
            raise ValueError(f"import source {url!r} is one file and the group has {len(tables)} tables "
                             f"({', '.join(tables)}): give a folder holding {files}")
        return {tables[0]: p}
    raise ValueError(f"import source {url!r}: no such file or folder")


def _dest_schema(cluster: Any, shards: Sequence[str], table: str
                 ) -> tuple[dict[str, Kind], list[str], set[str]] | None:
    """(column -> kind, primary key, NOT NULL columns) of the table on the first
    shard that has it; None when none has."""
    for sid in shards:
        b = cluster.backend(sid)
        c = b.conn()
        if b.has_table(c, table):
            types = column_types(b, c, table)
            kinds = {name: kind_of(b.kind, table, name, declared) for name, declared, _ in types}
            _, pk = b.table_info(c, table)
            return kinds, list(pk), {name for name, _, notnull in types if notnull}
    return None


def _key_kind(group: Any, table: Any, what: str) -> Kind:
    kt = getattr(group, "key_type", "auto")
    if kt == "int":
        return Kind("int")
    if kt == "str":
        return Kind("text")
    raise ValueError(f"{what}: group {group.name!r} declares key_type {kt!r}; declare key_type = \"int\" or "
                     f"\"str\" in the cluster file (it types the shard-key column {table.key!r} of the table the "
                     f"import creates), or create the table on the shards first")


# ------------------------------------------------------------------ CSV


def _csv_reader(path: Path) -> tuple[Any, list[str], Any]:
    f = open(path, newline="", encoding="utf-8")  # noqa: SIM115 - closed by the caller
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    r = csv.reader(f, delimiter=delim)
    try:
        header = next(r)
    except StopIteration:
        f.close()
        raise ValueError(f"{path}: empty file (a CSV source needs a header line naming the columns)") from None
    except (csv.Error, UnicodeDecodeError) as e:
        f.close()
        raise ValueError(f"{path}: line 1: {e}") from None
    return f, [h.strip() for h in header], r


def _converter(k: Kind) -> Any:
    if k.kind in ("int", "bool"):
        def conv_int(s: str) -> Any:
            if s == "":
                return None
            if k.kind == "bool" and s.lower() in ("true", "false", "t", "f"):
                return int(s.lower() in ("true", "t"))
            return int(s)
        return conv_int
    if k.kind == "float":
        def conv_float(s: str) -> Any:
            if s == "":
                return None
            v = float(s)
            if not _exact_float(v):
                raise ValueError(s)
            return v
        return conv_float
    if k.kind == "bytes":
        return lambda s: None if s == "" else bytes.fromhex(s)
    return None  # text: as written


def _convert_column(k: Kind, col: list[str]) -> list[Any]:
    """A CSV column's fields as its kind's values (ValueError on the first that is not one):
    in one pass of the conversion over the column when it has no empty field."""
    if k.kind == "int" and "" not in col:
        return list(map(int, col))
    if k.kind == "float" and "" not in col:
        vals = list(map(float, col))
        arr = np.array(vals, dtype=np.float64)
        if np.isnan(arr).any() or ((arr == 0) & np.signbit(arr)).any():
            raise ValueError("NaN or -0.0")
        return vals
    cv = _converter(k)
    return list(map(cv, col))


def _csv_rows(path: Path, cols: list[str], kinds: dict[str, Kind], r: Any) -> Iterator[list[tuple[Any, ...]]]:
    """Batches of typed rows, converted a column at a time; a bad field is
    named by its line (or, after a record spanning lines, its data row)."""
    n = len(cols)
    line, done = 1, 0
    batch: list[tuple[Any, ...]] = []
    try:
        while True:
            # (records a few thousand at a time: fewer lists alive at once for the garbage collector to visit)
            recs = list(islice(r, _SUB))
            if not recs:
                if batch:
                    yield batch
                return
            first, last = line, r.line_num
            line = last
            if not all(recs):
                recs = [x for x in recs if x]  # (blank lines)
            exact = last - first == len(recs)  # (each record on one line: its line is known)

            def where(i: int, first: int = first, exact: bool = exact, done: int = done) -> str:
                return f"line {first + i + 1}" if exact else f"data row {done + i + 1}"

            if any(len(x) != n for x in recs):
                i = next(i for i, x in enumerate(recs) if len(x) != n)
                raise ValueError(f"{path}: {where(i)}: {len(recs[i])} field(s), the header names {n}")
            out: list[list[Any]] = []
            for j, c in enumerate(cols):
                col = list(map(itemgetter(j), recs))
                k = kinds[c]
                if k.kind == "text":
                    out.append(col)
                    continue
                try:
                    out.append(_convert_column(k, col))
                except ValueError:
                    cv = _converter(k)
                    for i, v in enumerate(col):
                        try:
                            cv(v)
                        except ValueError:
                            raise ValueError(f"{path}: {where(i)}: column {c!r}: {v!r} is not {_a(k)}") from None
                    raise
            done += len(recs)
            batch.extend(zip(*out))
            if len(batch) >= _CSV_BATCH:
                yield batch
                batch = []
    except (csv.Error, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: line {r.line_num}: {e}") from None


def _exact_float(v: float) -> bool:
    """Whether the staging database (SQLite) keeps ``v`` exactly: not a NaN (stored as NULL) or -0.0 (as 0.0)."""
    return v == v and not (v == 0 and math.copysign(1.0, v) < 0)


def _a(k: Kind) -> str:
    return {"int": "an integer", "bool": "a boolean (0, 1, true or false)",
            "float": "a number (not NaN or -0.0, which the import cannot keep exactly)",
            "bytes": "hex-encoded bytes"}.get(k.kind, "text")


# --------------------------------------------------------------- Parquet


def _arrow_kind(t: Any) -> Kind | None:
    import pyarrow as pa

    if pa.types.is_integer(t):
        return Kind("int")
    if pa.types.is_boolean(t):
        return Kind("bool")
    if pa.types.is_floating(t):
        return Kind("float")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return Kind("text")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return Kind("bytes")
    return None


def _parquet_file(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: reading Parquet needs pyarrow: pip install 'shardhash[arrow]' "
                         "(CSV sources need nothing more)") from None
    try:
        return pq.ParquetFile(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises its own types for a bad file
        raise ValueError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})") from None


def _fits_arrow(path: Path, name: str, have: Kind | None, arrow_type: Any, want: Kind) -> None:
    ok = have is not None and (have.kind == want.kind or (want.kind in ("int", "bool") and have.kind in ("int", "bool"))
                               or (want.kind == "float" and have.kind == "int"))
    if not ok:
        raise ValueError(f"{path}: column {name!r} is Parquet {arrow_type}, which the table's {want.kind} column "
                         "cannot hold exactly")


def _parquet_rows(path: Path, pf: Any, cols: list[str], kinds: dict[str, Kind]) -> Iterator[list[tuple[Any, ...]]]:
    to_float = [kinds[c].kind == "float" for c in cols]
    done = 0
    for batch in pf.iter_batches(batch_size=_BATCH, columns=cols):
        data = []
        for j, c in enumerate(cols):
            vals = batch.column(j).to_pylist()
            if to_float[j]:
                vals = [None if v is None else float(v) for v in vals]
                bad = next((i for i, v in enumerate(vals) if v is not None and not _exact_float(v)), None)
                if bad is not None:
                    raise ValueError(f"{path}: row {done + bad + 1}: column {c!r}: {vals[bad]!r} (NaN and -0.0 "
                                     "cannot be imported exactly: they would arrive as NULL and 0.0)")
            elif kinds[c].kind in ("int", "bool"):
                vals = [int(v) if isinstance(v, bool) else v for v in vals]
            data.append(vals)
        done += batch.num_rows
        yield list(zip(*data))


# ----------------------------------------------------------------- staging


def stage(cluster: Any, group: Any, url: str, shards: Sequence[str], base_dir: str | None,
          folder: Path) -> SQLiteShard:
    """Read the group's files (see the module docstring) into an SQLite
    database in ``folder``; its backend (the import's source)."""
    paths = _paths(url, [t.name for t in group.tables], base_dir)
    db = SQLiteShard(folder / "staging.db", synchronous="OFF")
    c = sqlite3.connect(folder / "staging.db", isolation_level=None)
    try:
        c.execute("PRAGMA journal_mode=MEMORY")  # (not OFF: a refused chunk is rolled back to its savepoint)
        c.execute("PRAGMA synchronous=OFF")
        for t in group.tables:
            _stage_table(cluster, group, t, paths[t.name], url.startswith("csv:"), shards, c)
    finally:
        c.close()
    return db


def _stage_table(cluster: Any, group: Any, t: Any, path: Path, is_csv: bool, shards: Sequence[str],
                 c: sqlite3.Connection) -> None:
    dest = _dest_schema(cluster, shards, t.name)
    pf = None
    f = None
    try:
        if is_csv:
            f, cols, reader = _csv_reader(path)
        else:
            pf = _parquet_file(path)
            schema = pf.schema_arrow
            cols = list(schema.names)
        dup = sorted({x for x in cols if cols.count(x) > 1})
        if dup:
            raise ValueError(f"{path}: column(s) named twice: {', '.join(dup)}")
        if t.key not in cols:
            raise ValueError(f"{path}: no column {t.key!r} (the shard key of table {t.name!r} in group "
                             f"{group.name!r}); its columns: {', '.join(cols)}")
        kinds: dict[str, Kind] = {}
        notnull: set[str] = set()
        if dest is not None:
            dkinds, pk, notnull = dest
            missing = [x for x in cols if x not in dkinds]
            if missing:
                raise ValueError(f"{path}: column(s) {', '.join(map(repr, missing))} are not in table {t.name!r} "
                                 f"on the shards")
            kinds = {x: dkinds[x] for x in cols}
            absent = [k for k in pk if k not in cols]
            if absent:
                raise ValueError(f"{path}: no column {absent[0]!r}, part of table {t.name!r}'s primary key on "
                                 "the shards")
            if pf is not None:
                for j, x in enumerate(cols):
                    _fits_arrow(path, x, _arrow_kind(schema.field(j).type), schema.field(j).type, kinds[x])
        else:
            pk = [t.key]
            key = _key_kind(group, t, str(path)) if (is_csv or group.key_type != "auto") else None
            for j, x in enumerate(cols):
                if is_csv:
                    kinds[x] = key if x == t.key and key is not None else Kind("text")
                    continue
                ak = _arrow_kind(schema.field(j).type)
                if ak is None:
                    raise ValueError(f"{path}: column {x!r} is Parquet {schema.field(j).type}, which no shard "
                                     "column holds exactly (integers, floats, strings, binary and booleans do)")
                if x == t.key and key is not None and ak.kind != key.kind:
                    raise ValueError(f"{path}: the shard-key column {x!r} is Parquet {schema.field(j).type}, and "
                                     f"group {group.name!r} declares key_type {group.key_type!r}")
                kinds[x] = ak
        notnull |= set(pk)
        defs = [f"{qi(x)} {_SQLITE_OF[kinds[x].kind]}{' NOT NULL' if x in notnull else ''}" for x in cols]
        c.execute(f"DROP TABLE IF EXISTS {qi(t.name)}")
        c.execute(f"CREATE TABLE {qi(t.name)} ({', '.join(defs)}, PRIMARY KEY ({', '.join(qi(k) for k in pk)}))")
        q = f"INSERT INTO {qi(t.name)} VALUES ({', '.join('?' for _ in cols)})"
        rows = _csv_rows(path, cols, kinds, reader) if is_csv else _parquet_rows(path, pf, cols, kinds)
        c.execute("BEGIN")
        done = 0
        for batch in rows:
            c.execute("SAVEPOINT chunk")
            try:
                c.executemany(q, batch)
            except (sqlite3.IntegrityError, OverflowError) as e:
                c.execute("ROLLBACK TO chunk")
                raise ValueError(_bad_batch(c, path, is_csv, t.name, cols, pk, notnull, batch, done, e)) from None
            c.execute("RELEASE chunk")
            done += len(batch)
        c.execute("COMMIT")
    finally:
        if f is not None:
            f.close()


def _bad_batch(c: sqlite3.Connection, path: Path, is_csv: bool, table: str, cols: list[str], pk: list[str],
               notnull: set[str], batch: list[tuple[Any, ...]], done: int, e: Exception) -> str:
    """The refusal of a batch that would not insert (the staging table holds the
    batches before it): a primary key seen twice, a NULL in it, or an integer
    out of range, named by the row's position in the file."""
    pkx = [cols.index(k) for k in pk]
    seen: set[tuple[Any, ...]] = set()
    where_pk = " AND ".join(f"{qi(k)} = ?" for k in pk)
    for i, r in enumerate(batch):
        k = tuple(r[j] for j in pkx)
        where = f"{'data row' if is_csv else 'row'} {done + i + 1}"
        if any(v is None for v in k):
            return f"{path}: {where}: primary key {pk} of table {table!r} is empty"
        try:
            earlier = c.execute(f"SELECT 1 FROM {qi(table)} WHERE {where_pk}", k).fetchone() is not None
        except OverflowError:
            earlier = False
        if k in seen or earlier:
            return f"{path}: {where}: primary key {k[0] if len(k) == 1 else k!r} appears twice"
        seen.add(k)
        for j, v in enumerate(r):
            if v is None and cols[j] in notnull:
                return f"{path}: {where}: column {cols[j]!r} is empty, and it is NOT NULL in table {table!r}"
            if isinstance(v, int) and not -2**63 <= v < 2**63:
                return f"{path}: {where}: column {cols[j]!r}: {v} is outside the 64-bit integer range"
    return f"{path}: table {table!r}: {type(e).__name__}: {e}"
