"""Shard an existing database: load an unsharded SQLite or PostgreSQL
database's tables (or CSV or Parquet files, see
:mod:`shardhash.migrate.filesource`) onto their owners
(:meth:`Cluster.import_from`, ``shardhash migrate import``).

For each table of the group, in primary-key order, ``chunk`` rows at a
time (keyset pagination): the chunk's shard keys are routed in one batch
call of the group's router, the rows are grouped per owner and written with
one bulk insert per owner (multi-row ``INSERT`` on SQLite, ``COPY`` on
PostgreSQL).  After the owners commit, the chunk's last primary key is
committed in the metadata store's ``progress`` table (with the per-shard
row counts and checksums of the source rows so far), so an import that
stops (a crash, a refusal) continues from there when run again.  A chunk
written but not yet recorded is written again: rows already on their owner
with the same values are not an error; a row there with other values is a
conflict (:class:`ImportConflict`, nothing of that chunk's cursor recorded).
At the end every shard's rows of each table are counted and checksummed
(order-independent) against the source rows the router assigns to it
(:class:`ImportMismatch` when they differ).

The import is for an initial load: it refuses to run while the group has a
migration in flight (and stops if one starts), and the source must not
change while it runs (the final verify would report the difference).  One
import of a group at a time: a lease in the metadata store (``LEASE_S``).  Use
the live way (the unsharded database as the one shard of a topology, then
``migrate start --add``) for a database that cannot stop.

Tables missing on a shard are created like on the source (between SQLite
and PostgreSQL each column's exact counterpart, see
:mod:`shardhash.migrate.coltypes`); values that a destination column cannot
hold exactly are refused before anything is written.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._hashing import Hasher
from .backend import ShardBackend
from .coltypes import Kind, canonical_row, check_source_values, pair_kinds, translate_ddl
from .executor import MigrationError
from .filesource import is_file_url, stage
from .sqlite import SQLiteShard

__all__ = ["ImportConflict", "ImportMismatch", "ImportReport", "import_from"]

#: Rows read from the source per chunk.
CHUNK = 50_000
#: Seconds an import's lease on its group lasts without a recorded chunk: a
#: second import of the group is refused while the lease is live, and may
#: take it over once it has lapsed (the first then stops at its next chunk).
LEASE_S = 60.0
_LEASE = "import-lease"
_MASK = (1 << 64) - 1


class _ImportFindings(MigrationError):
    """An import error about a list of findings (dicts), told by their
    number and the first: a subclass gives the template (``_message``, for
    ``str.format`` with ``n`` and the first finding's fields) and names the
    attribute that keeps the list (``_found_as``)."""

    _message: ClassVar[str]
    _found_as: ClassVar[str]

    def __init__(self, found: list[dict[str, Any]], **more: Any) -> None:
        setattr(self, self._found_as, found)
        super().__init__(self._message.format(n=len(found), **found[0], **more))


class ImportConflict(_ImportFindings):
    """Rows already on their owner with other values than the source's
    (``conflicts``: dicts with table, shard, key, source and shard rows)."""

    conflicts: list[dict[str, Any]]
    _found_as = "conflicts"
    _message = ("import: {n} row(s) of table {table!r} are already on their owner with other values; first: "
                "primary key {key!r} on shard {shard!r}: source {source!r}, shard {shard_row!r} (remove or fix "
                "those rows, then run the import again)")


class ImportMismatch(_ImportFindings):
    """The final verify found a shard whose rows differ from the source rows it owns
    (``diffs``: dicts with table, shard, expected and found row counts)."""

    diffs: list[dict[str, Any]]
    _found_as = "diffs"
    _message = ("import verify: {n} shard table(s) differ from the source; first: table {table!r} on shard "
                "{shard!r}: {found_rows:,} row(s) there, {expected_rows:,} expected ({what}); rows written "
                "outside the import, or a source that changed while it ran")

    def __init__(self, diffs: list[dict[str, Any]]) -> None:
        d = diffs[0]
        super().__init__(diffs, what="same count, other values" if d["found_rows"] == d["expected_rows"]
                         else "other rows")


@dataclass
class ImportReport:
    """What :func:`import_from` did: rows read from the source, rows written
    (new on their owner), rows found already there with the same values,
    rows per shard and table, seconds and whether the final verify ran."""

    group: str
    rows_read: int = 0
    rows_written: int = 0
    rows_present: int = 0
    per_shard: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0
    verified: bool = False

    @property
    def rows_per_s(self) -> float | None:
        return self.rows_read / self.seconds if self.seconds > 0 and self.rows_read else None

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "rows_read": self.rows_read, "rows_written": self.rows_written,
                "rows_present": self.rows_present, "per_shard": self.per_shard, "seconds": self.seconds,
                "rows_per_s": self.rows_per_s, "verified": self.verified}


_HASHER = Hasher("xxh64", seed=0x5A4D)


def _checksum_v1(rows: Sequence[Sequence[Any]]) -> int:
    """The first checksum (imports recorded without ``"hash": 2``): the sum
    mod 2**64 of each row's xxh64 over its canonical text (see
    :func:`~shardhash.migrate.coltypes.canonical_row`)."""
    if not rows:
        return 0
    return int(_HASHER.hash_array(list(map(canonical_row, rows))).sum(dtype=np.uint64))


# One hasher per kind of value, so that values of different kinds (the
# integer 1, the float 1.0, the text '1', the bytes b'1') hash apart.
_H_INT = Hasher("xxh64", seed=0x4931)      # integers (booleans as 0/1), as 64-bit little-endian
_H_FLOAT = Hasher("xxh64", seed=0x4632)    # floats, by their binary64 bits
_H_TEXT = Hasher("xxh64", seed=0x5433)     # text, by its UTF-8 content
_H_BYTES = Hasher("xxh64", seed=0x4234)    # bytes (memoryview, bytearray: their content)
_H_OTHER = Hasher("xxh64", seed=0x4f35)    # anything else (an integer past 64 bits, ...): repr
_NULL = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _value_hashes(values: Sequence[Any], kind: type) -> np.ndarray:
    """uint64 hashes of values of one Python type; each value's hash depends
    on the value alone (never on the others of the chunk, which differ
    between the source's chunks and the shard's)."""
    n = len(values)
    if kind is type(None):
        return np.full(n, _NULL, dtype=np.uint64)
    if kind is int or kind is bool:
        try:
            return np.asarray(_H_INT.hash_array(np.array(values, dtype=np.int64)), dtype=np.uint64)
        except OverflowError:  # (a value past 64 bits: those by repr, the others as above)
            out = np.empty(n, dtype=np.uint64)
            for i, v in enumerate(values):
                out[i] = (_H_INT.hash_array(np.array([v], dtype=np.int64))[0] if -2**63 <= v < 2**63
                          else _H_OTHER.hash_array(["int:" + repr(v)])[0])
            return out
    if kind is float:
        return np.asarray(_H_FLOAT.hash_array(np.array(values, dtype=np.float64).view(np.int64)), dtype=np.uint64)
    if kind is str:
        try:
            return np.asarray(_H_TEXT.hash_array(list(values)), dtype=np.uint64)
        except (ValueError, TypeError, UnicodeError):  # (a lone surrogate, say: those values by repr)
            out = np.empty(n, dtype=np.uint64)
            for i, v in enumerate(values):
                try:
                    out[i] = _H_TEXT.hash_array([v])[0]
                except (ValueError, TypeError, UnicodeError):
                    out[i] = _H_OTHER.hash_array(["str:" + repr(v)])[0]
            return out
    if kind in (bytes, bytearray, memoryview):
        return np.asarray(_H_BYTES.hash_array(list(values) if kind is bytes else [bytes(v) for v in values]),
                          dtype=np.uint64)
    return np.asarray(_H_OTHER.hash_array([f"{kind.__name__}:{v!r}" for v in values]), dtype=np.uint64)


def _column_hashes(col: Sequence[Any]) -> np.ndarray:
    kinds = set(map(type, col))
    if len(kinds) == 1:
        return _value_hashes(col, kinds.pop())
    out = np.empty(len(col), dtype=np.uint64)
    # (object arrays made with fromiter: assigning a list would make numpy inspect every element)
    vals = np.fromiter(col, dtype=object, count=len(col))
    types = np.fromiter(map(type, col), dtype=object, count=len(col))
    for k in kinds:  # (a column of mixed types: NULLs among values, say)
        sel = types == k
        out[sel] = _value_hashes(vals[sel].tolist(), k)
    return out


def _checksum(rows: Sequence[Sequence[Any]]) -> int:
    """The order-independent checksum of rows: the sum mod 2**64 of each
    row's 64-bit hash, the row's hash mixed from its columns' (each value
    hashed column by column, by its kind: integers and booleans as 64-bit
    integers, floats by their bits, text by content, bytes by content; so
    equal across backends exactly when the values are, as
    :func:`~shardhash.migrate.coltypes.canonical_row` defines it)."""
    if not rows:
        return 0
    acc = np.full(len(rows), np.uint64(0x5A4D2), dtype=np.uint64)
    # (a column at a time through itemgetter: zip(*rows) would allocate an
    # iterator per row, and the garbage collector would then run over them)
    for j in range(len(rows[0])):
        acc ^= _column_hashes(list(map(itemgetter(j), rows)))
        acc *= _M1
        acc ^= acc >> np.uint64(31)
    acc *= _M2
    acc ^= acc >> np.uint64(29)
    return int(acc.sum(dtype=np.uint64))


def _checksum_of(state: dict[str, Any]) -> Callable[[Sequence[Sequence[Any]]], int]:
    """The checksum a table's recorded import progress was summed with."""
    return _checksum if state.get("hash") == 2 else _checksum_v1


def _enc(v: Any) -> Any:
    # a primary-key value as JSON (bytes tagged: JSON has none)
    return {"hex": bytes(v).hex()} if isinstance(v, (bytes, bytearray, memoryview)) else v


def _dec(v: Any) -> Any:
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) else v


def _active(cluster: Any, group: str, c: Any = None) -> str | None:
    r = cluster.metadata.active_migration(group, c)
    return None if r is None else f"{r[0]} ({r[1]})"


def _progress_key(url: str, table: str) -> tuple[str, str]:
    # (the source URL hashed: it may hold a password)
    return f"import:{table}", hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _take_lease(cluster: Any, group: str, token: str, c: Any, *, first: bool) -> None:
    """In the metadata transaction ``c``: hold (``first``: take) the group's
    import lease for ``token``, refusing while another import holds a live one."""
    now = time.time()
    held = cluster.metadata.get(_LEASE, group, c=c)
    if held is not None and held.get("token") != token:
        if first and now - float(held.get("at", 0.0)) < LEASE_S:
            raise MigrationError(
                f"group {group!r}: another import is running (pid {held.get('pid')} on {held.get('host')!r}, "
                f"last chunk recorded {now - float(held['at']):.0f} s ago): one import of a group at a time; "
                f"run this one again when it is done, or after {LEASE_S:.0f} s without a chunk if it died")
        if not first:
            raise MigrationError(f"import of group {group!r} stopped: its lease lapsed (no chunk recorded for "
                                 f"{LEASE_S:.0f} s) and another import took the group over")
    cluster.metadata.put(_LEASE, group, {"token": token, "pid": os.getpid(), "host": socket.gethostname(),
                                         "at": now}, c)


def _drop_lease(cluster: Any, group: str, token: str) -> None:
    """Give the group's import lease back (if it is still this import's)."""
    with cluster.metadata.tx() as c:
        held = cluster.metadata.get(_LEASE, group, c=c)
        if held is not None and held.get("token") == token:
            cluster.metadata.put(_LEASE, group, None, c)


def _commit_cursor(cluster: Any, group: str, mig: str, key: str, state: dict[str, Any], token: str) -> None:
    """Record a table's import cursor (and sums) and renew the import's lease,
    refusing when a migration of the group started meanwhile or another import
    took the group over."""
    with cluster.metadata.tx() as c:
        act = _active(cluster, group, c)
        if act is not None:
            raise MigrationError(f"import of group {group!r} stopped: migration {act} started meanwhile "
                                 f"(run the import again once it is done)")
        _take_lease(cluster, group, token, c, first=False)
        cluster.metadata.put(mig, key, state, c)


def _prepare(cluster: Any, group: Any, src: SQLiteShard, sc: Any, table: Any, shards: Sequence[str]) -> tuple[
        list[str], list[str]]:
    """Create the table on shards that lack it, check each shard's columns
    (and, between backend kinds, the source's values); the source's (columns, primary key)."""
    cols, pk = src.table_info(sc, table.name)
    if table.key not in cols:
        raise ValueError(f"source table {table.name!r} has no column {table.key!r} (the shard key of group "
                         f"{group.name!r})")
    checked: set[str] = set()
    for sid in shards:
        b = cluster.backend(sid)
        with b.writing() as c:
            b.lock_schema(c)
            b.ensure_system(c)
            if not b.has_table(c, table.name):
                b.create_from(c, translate_ddl(src, sc, table.name, b.kind))
            dcols, dpk = b.table_info(c, table.name)
            missing = [x for x in cols if x not in dcols]
            if missing:
                raise ValueError(f"table {table.name!r} on shard {sid!r} lacks the source's column(s) "
                                 f"{', '.join(map(repr, missing))}")
            if list(dpk) != list(pk):
                raise ValueError(f"table {table.name!r} on shard {sid!r} has primary key {dpk} and the source "
                                 f"{pk}: they must be the same")
            kinds: dict[str, Kind] = {}
            if b.kind != src.kind:
                kinds = pair_kinds(src, sc, b, c, table.name)
            b.install_triggers(c, group.name, table.name, dpk, table.key)
        if kinds and b.kind not in checked:
            check_source_values(src, sc, table.name, kinds)
            checked.add(b.kind)
    return cols, pk


def _write(b: ShardBackend, sid: str, table: str, cols: Sequence[str], pk: Sequence[str],
           rows: list[tuple[Any, ...]]) -> tuple[int, list[dict[str, Any]]]:
    """Write rows to their owner; (rows new there, conflicts)."""
    c = b.conn()
    if b.copy_new(c, table, cols, rows):
        return len(rows), []
    pkx = [list(cols).index(k) for k in pk]
    with b.writing(c):
        have = {tuple(r[j] for j in pkx): r for r in b.fetch(c, table, cols, pk, [[r[j] for j in pkx] for r in rows])}
        fresh = [r for r in rows if tuple(r[j] for j in pkx) not in have]
        if fresh:
            b.insert_absent(c, table, cols, fresh)
    conflicts = []
    for r in rows:
        there = have.get(tuple(r[j] for j in pkx))
        if there is not None and canonical_row(there) != canonical_row(r):
            k = tuple(r[j] for j in pkx)
            conflicts.append({"table": table, "shard": sid, "key": k[0] if len(k) == 1 else k, "source": tuple(r),
                              "shard_row": tuple(there)})
    # (the fresh rows of a chunk with conflicts stay: they are the source's
    # own; its cursor is not recorded, so a re-run reports the conflict again)
    new = len(fresh)
    return new, conflicts


def _connect_source(src: SQLiteShard) -> Any:
    """A connection to the source; an SQLite file read-only (the import
    changes nothing there, not even its journal mode; a missing file is an error)."""
    if src.kind != "sqlite":
        return src.connect()
    path = Path(src.path)
    if not path.is_file():
        raise ValueError(f"import source {src.path}: no such SQLite file")
    try:
        return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error as e:
        raise ConnectionError(f"cannot open {src.path}: {e}") from e


@dataclass
class _Chunk:
    rows: int
    after: list[Any]
    sums: dict[str, tuple[int, int]]
    parts: list[tuple[str, list[tuple[Any, ...]]]]
    future: Future[list[tuple[int, int, list[dict[str, Any]]]]] | None = None


def _write_parts(cluster: Any, table: str, cols: Sequence[str], pk: Sequence[str],
                 parts: list[tuple[str, list[tuple[Any, ...]]]]) -> list[tuple[int, int, list[dict[str, Any]]]]:
    """(rows, rows new, conflicts) of each owner's part of a chunk, written (in the writer thread)."""
    out = []
    for sid, part in parts:
        new, bad = _write(cluster.backend(sid), sid, table, cols, pk, part)
        out.append((len(part), new, bad))
    return out


def _finish(cluster: Any, group: str, mig: str, key: str, state: dict[str, Any], ch: _Chunk,
            rep: ImportReport, token: str) -> None:
    """Wait for a chunk's writes; record its cursor and sums (ImportConflict instead when a row conflicted)."""
    assert ch.future is not None
    conflicts: list[dict[str, Any]] = []
    for n, new, bad in ch.future.result():
        rep.rows_written += new
        rep.rows_present += n - new - len(bad)
        conflicts.extend(bad)
    if conflicts:
        raise ImportConflict(conflicts)
    for sid, (n, sm) in ch.sums.items():
        n0, s0 = state["sums"][sid]
        state["sums"][sid] = [n0 + n, (s0 + sm) & _MASK]
    state["after"] = ch.after
    state["rows"] += ch.rows
    rep.rows_read += ch.rows
    _commit_cursor(cluster, group, mig, key, state, token)


def import_from(cluster: Any, url: str, group: str | None = None, *, chunk: int = CHUNK, verify: bool = True,
                base_dir: str | None = None, on_chunk: Callable[[str, int], None] | None = None) -> ImportReport:
    """Load the group's tables from the unsharded database at ``url``
    (``sqlite:PATH`` or ``postgresql:…``), or from CSV or Parquet files
    (``csv:PATH``, ``parquet:PATH``: a file, or a folder with one file per
    table, see :mod:`shardhash.migrate.filesource`), onto their owners; see
    the module docstring.  Resumable and idempotent; returns an :class:`ImportReport`.
    ``on_chunk(table, rows_done)`` is called after each chunk is recorded."""

    if isinstance(chunk, bool) or not isinstance(chunk, int) or not 1 <= chunk <= 10_000_000:
        raise ValueError(f"chunk must be an integer in 1..10000000, not {chunk!r}")
    g = cluster.group(group)
    if not cluster.metadata.shard_map_or_none():
        raise MigrationError("the metadata store is not initialised: run `shardhash migrate init` "
                             "(Cluster.init()) before the import")
    act = _active(cluster, g.name)
    if act is not None:
        raise MigrationError(f"group {g.name!r} has migration {act} in flight: the import is for an initial load "
                             "and runs only when no migration of the group is active")
    token = uuid.uuid4().hex
    with cluster.metadata.tx() as c:
        _take_lease(cluster, g.name, token, c, first=True)
    try:
        return _import(cluster, url, g, token, chunk, verify, base_dir, on_chunk)
    finally:
        _drop_lease(cluster, g.name, token)


def _import(cluster: Any, url: str, g: Any, token: str, chunk: int, verify: bool, base_dir: str | None,
            on_chunk: Callable[[str, int], None] | None) -> ImportReport:
    """:func:`import_from`'s work, under the group's import lease."""
    from .cluster import open_backend

    router = cluster.refresh(g.name)
    shards = list(router.shards)
    t0 = time.perf_counter()
    rep = ImportReport(g.name, per_shard={s: {} for s in shards})
    staging = None
    if is_file_url(url):  # CSV / Parquet: read into an SQLite staging database, the import's source
        staging = tempfile.TemporaryDirectory(prefix="shardhash-import-", ignore_cleanup_errors=True)
        try:
            src = stage(cluster, g, url, shards, base_dir, Path(staging.name))
        except BaseException:
            staging.cleanup()
            raise
    else:
        src = open_backend(url, base_dir)
    try:
        sc = _connect_source(src)
    except BaseException:
        if staging is not None:
            staging.cleanup()
        raise
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shardhash-import")
    try:
        for t in g.tables:
            cols, pk = _prepare(cluster, g, src, sc, t, shards)
            pkx = [cols.index(k) for k in pk]
            kx = cols.index(t.key)
            mig, key = _progress_key(url, t.name)
            state = cluster.metadata.get(mig, key) or {"after": None, "done": False, "rows": 0, "hash": 2,
                                                       "sums": {s: [0, 0] for s in shards}}
            checksum = _checksum_of(state)
            if set(state["sums"]) != set(shards):
                raise MigrationError(f"import of table {t.name!r}: the recorded progress was made for shards "
                                     f"{sorted(state['sums'])}, the router has {sorted(shards)}")
            after = None if state["after"] is None else [_dec(v) for v in state["after"]]
            # A pipeline of two: chunk k is written (by the writer thread) while
            # chunk k+1 is read, routed and checksummed; chunk k's cursor is
            # recorded once its writes have committed, before k+1's are sent.
            pending: _Chunk | None = None
            while not state["done"]:
                rows = src.scan(sc, t.name, cols, pk, after, chunk)
                nxt: _Chunk | None = None
                if rows:
                    owners = router.route_many([r[kx] for r in rows]).tolist()
                    per: list[list[tuple[Any, ...]]] = [[] for _ in shards]
                    for r, o in zip(rows, owners):
                        per[o].append(r)
                    parts = [(shards[i], p) for i, p in enumerate(per) if p]
                    after = [rows[-1][j] for j in pkx]
                    nxt = _Chunk(len(rows), [_enc(v) for v in after], {sid: (len(p), checksum(p)) for sid, p in parts},
                                 parts)
                if pending is not None:
                    _finish(cluster, g.name, mig, key, state, pending, rep, token)
                    pending = None
                    if on_chunk is not None:
                        on_chunk(t.name, int(state["rows"]))
                if nxt is None:
                    state["done"] = True
                    _commit_cursor(cluster, g.name, mig, key, state, token)
                    break
                nxt.future = pool.submit(_write_parts, cluster, t.name, cols, pk, nxt.parts)
                pending = nxt
            for sid in shards:
                rep.per_shard[sid][t.name] = int(state["sums"][sid][0])
        if verify:
            _verify(cluster, g, src, sc, url, shards)
            rep.verified = True
    finally:
        sc.close()
        try:  # (after any write in flight: the writer's connections)
            pool.submit(lambda: [cluster.backend(sid).close() for sid in shards]).result()
        finally:
            pool.shutdown(wait=True)
            if staging is not None:
                staging.cleanup()
    rep.seconds = time.perf_counter() - t0
    return rep


def _verify(cluster: Any, g: Any, src: SQLiteShard, sc: Any, url: str, shards: Sequence[str]) -> None:
    """Every shard's rows of each table against the recorded counts and
    checksums of the source rows the router assigns to it."""
    diffs = []
    for t in g.tables:
        cols, pk = src.table_info(sc, t.name)
        state = cluster.metadata.get(*_progress_key(url, t.name))
        checksum = _checksum_of(state)
        for sid in shards:
            b = cluster.backend(sid)
            c = b.conn()
            n, s = 0, 0
            for rows in b.scan_chunks(c, t.name, cols, pk, CHUNK):
                n += len(rows)
                s += checksum(rows)
            want_n, want_s = state["sums"][sid]
            if n != want_n or (s & _MASK) != want_s:
                diffs.append({"table": t.name, "shard": sid, "expected_rows": int(want_n), "found_rows": n})
    if diffs:
        raise ImportMismatch(diffs)


def describe(rep: ImportReport) -> str:
    """A short text of a report (the CLI's output)."""
    lines = [f"imported group {rep.group}: {rep.rows_read:,} row(s) read, {rep.rows_written:,} written, "
             f"{rep.rows_present:,} already there"
             + (f", {rep.rows_per_s:,.0f} rows/s" if rep.rows_per_s else "")
             + (", verified (rows and checksums per shard)" if rep.verified else "")]
    for sid, tables in rep.per_shard.items():
        lines.append(f"  {sid}: " + ", ".join(f"{t} {n:,}" for t, n in tables.items()))
    return "\n".join(lines)

