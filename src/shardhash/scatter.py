"""Queries without the shard key: scatter-gather done right.

Send one query to every shard, merge the sorted local results into the
global order, apply the global LIMIT, and hand back a cursor that holds each
shard's position (keyset pagination: the next page asks each shard only for
rows after its own position, never re-reading from offset 0).  Aggregates
are decomposed into per-shard partial aggregates and combined exactly
(COUNT, SUM, MIN, MAX; AVG as SUM/COUNT); COUNT DISTINCT is refused, since
per-shard distinct counts cannot be added.

Shards are plain DB-API 2 connection factories, ``{name: factory}``: a
factory is called once per query and shard, in a worker thread, and the
connection it returns is closed afterwards.  SQLite (``sqlite3.connect``) is
the default dialect (``?`` placeholders); for psycopg pass
``placeholder="%s"``.

>>> import sqlite3, tempfile, os, functools
>>> d = tempfile.mkdtemp()
>>> shards = {}
>>> for i in range(3):
...     path = os.path.join(d, f"s{i}.db")
...     with sqlite3.connect(path) as c:
...         _ = c.execute("CREATE TABLE ev (id INTEGER PRIMARY KEY, ts INTEGER)")
...         _ = c.executemany("INSERT INTO ev VALUES (?, ?)", [(i + 3 * j, j % 4) for j in range(5)])
...     c.close()
...     shards[f"s{i}"] = functools.partial(sqlite3.connect, path)
>>> page = scatter_gather("SELECT id, ts FROM ev", shards, order_by=["ts", "id"], unique="id", limit=4)
>>> page.rows
[(0, 0), (1, 0), (2, 0), (12, 0)]
>>> nxt = scatter_gather("SELECT id, ts FROM ev", shards, order_by=["ts", "id"], unique="id",
...                      limit=4, cursor=page.cursor)
>>> nxt.rows
[(13, 0), (14, 0), (3, 1), (4, 1)]
>>> scatter_aggregate("SELECT ts FROM ev", shards, {"n": "count(*)", "avg_ts": "avg(ts)"}).rows
[{'n': 15, 'avg_ts': 1.2}]
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures as cf
import hashlib
import heapq
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from shardhash import _events

__all__ = [
    "ScatterError",
    "ScatterResult",
    "AggregateResult",
    "scatter_gather",
    "scatter_gather_async",
    "scatter_aggregate",
    "scatter_aggregate_async",
]

Factory = Callable[[], Any]
RowFilter = Callable[[str, list[str], tuple[Any, ...]], bool]
OwnsFilter = Callable[[str, Any], bool]
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ON_PARTIAL = ("fail", "partial")


class ScatterError(RuntimeError):
    """One or more shards failed or timed out (``on_partial="fail"``).

    ``failed`` maps each such shard's name to the reason.
    """

    def __init__(self, failed: Mapping[str, str]) -> None:
        self.failed = dict(failed)
        names = ", ".join(f"{k!r} ({v})" for k, v in sorted(self.failed.items()))
        super().__init__(f"scatter-gather failed on {len(self.failed)} shard(s): {names}")


class _Outcomes:
    """What a result says about its shards: ``failed`` {shard: reason} and
    ``latencies`` {shard: seconds} of the shards that answered."""

    failed: dict[str, str]
    latencies: dict[str, float]

    @property
    def partial(self) -> bool:
        """True when some shard's rows are missing (see ``failed``)."""
        return bool(self.failed)

    @property
    def latency(self) -> float:
        """The query's latency: the slowest shard's (seconds)."""
        return max(self.latencies.values(), default=0.0)


@dataclass
class ScatterResult(_Outcomes):
    """A page of merged rows.

    ``rows`` in the global order; ``columns`` the result's column names;
    ``cursor`` the opaque position to pass for the next page (None when every
    shard is exhausted); ``failed`` {shard: reason} of shards that failed or
    timed out (only with ``on_partial="partial"``); ``latencies`` {shard:
    seconds} of the shards that answered.
    """

    rows: list[tuple[Any, ...]]
    columns: list[str]
    cursor: str | None
    failed: dict[str, str] = field(default_factory=dict)
    latencies: dict[str, float] = field(default_factory=dict)

    @property
    def slowest_shard(self) -> str | None:
        return max(self.latencies, key=self.latencies.__getitem__) if self.latencies else None


@dataclass
class AggregateResult(_Outcomes):
    """Combined aggregates: one dict per group (group columns, then aggregates)."""

    rows: list[dict[str, Any]]
    failed: dict[str, str] = field(default_factory=dict)
    latencies: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# validation


def _check_shards(shards: Any) -> list[tuple[str, Factory]]:
    if not isinstance(shards, Mapping):
        raise TypeError(f"shards must be a mapping {{name: connection factory}}, not {type(shards).__name__}")
    if not shards:
        raise ValueError("shards must not be empty")
    out = []
    for name, fac in shards.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"shard names must be non-empty str, got {name!r}")
        if not callable(fac):
            raise TypeError(f"shard {name!r}: the factory must be callable (returning a DB-API connection)")
        out.append((name, fac))
    return out


def _ident(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"{what}: {name!r} is not a plain column name ([A-Za-z_][A-Za-z0-9_]*)")
    return name


def _parse_order(order_by: Any, unique: Any) -> list[tuple[str, bool]]:
    """[(column, descending)], ending with the unique tie-breaker column(s)."""
    if isinstance(order_by, str):
        order_by = [order_by]
    if not isinstance(order_by, Sequence):
        raise TypeError("order_by must be a sequence of column names (optionally 'col DESC')")
    cols: list[tuple[str, bool]] = []
    for i, item in enumerate(order_by):
        if isinstance(item, tuple) and len(item) == 2:
            name, d = item
            desc = {"asc": False, "desc": True}.get(str(d).lower())
            if desc is None:
                raise ValueError(f"order_by[{i}]: direction must be 'asc' or 'desc', got {d!r}")
        elif isinstance(item, str):
            parts = item.split()
            if len(parts) == 2 and parts[1].lower() in ("asc", "desc"):
                name, desc = parts[0], parts[1].lower() == "desc"
            elif len(parts) == 1:
                name, desc = parts[0], False
            else:
                raise ValueError(f"order_by[{i}]: expected 'col' or 'col DESC', got {item!r}")
        else:
            raise TypeError(f"order_by[{i}]: expected a column name, got {item!r}")
        name = _ident(name, f"order_by[{i}]")
        if any(c == name for c, _ in cols):
            raise ValueError(f"order_by[{i}]: column {name!r} given twice")
        cols.append((name, desc))
    if unique is None:
        raise ValueError("a unique tie-breaker is required with order_by (unique='id'): without one, "
                         "rows that tie on the ordering columns have no stable order across pages")
    uniq = [unique] if isinstance(unique, str) else list(unique)
    if not uniq:
        raise ValueError("unique must name at least one column")
    for u in uniq:
        _ident(u, "unique")
    # The tie-breaker ends the ordering: append the unique columns not yet in it
    # (ascending); when all are already in order_by they must come last.
    names = [c for c, _ in cols]
    missing = [u for u in uniq if u not in names]
    if not missing and set(names[len(names) - len(uniq):]) != set(uniq):
        raise ValueError(f"the unique tie-breaker column(s) {uniq!r} must come last in order_by {names!r}")
    cols += [(u, False) for u in missing]
    if not cols:
        raise ValueError("order_by must name at least one column")
    return cols


# ---------------------------------------------------------------------------
# ordering and cursors


class _Desc:
    """Reverses the order of a value inside a sort key."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and bool(self.v == other.v)

    __hash__ = None  # type: ignore[assignment]


def _encode_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"b": bytes(v).hex()}
    raise TypeError(f"cursor cannot hold a value of type {type(v).__name__}")


def _decode_value(v: Any) -> Any:
    if isinstance(v, dict):
        return bytes.fromhex(v["b"])
    return v


def _query_id(query: str, params: Sequence[Any], order: list[tuple[str, bool]], names: list[str]) -> str:
    blob = json.dumps([query, [_encode_value(p) for p in params], order, names], separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _make_cursor(qid: str, positions: dict[str, list[Any] | None]) -> str:
    doc = {"q": qid, "pos": {k: None if v is None else [_encode_value(x) for x in v]
                              for k, v in positions.items()}}
    raw = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _read_cursor(cursor: str, qid: str, names: list[str], width: int) -> dict[str, list[Any] | None]:
    if not isinstance(cursor, str):
        raise TypeError(f"cursor must be the str a previous page returned, not {type(cursor).__name__}")
    try:
        doc = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        pos = doc["pos"]
        q = doc["q"]
    except Exception:
        raise ValueError("cursor is not one that scatter_gather returned") from None
    if q != qid:
        raise ValueError("cursor belongs to another query, parameters, ordering or set of shards")
    if not isinstance(pos, dict) or set(pos) != set(names):
        raise ValueError("cursor names other shards than this query")
    out: dict[str, list[Any] | None] = {}
    for k, v in pos.items():
        if v is not None and (not isinstance(v, list) or len(v) != width):
            raise ValueError(f"cursor position of shard {k!r} is malformed")
        out[k] = None if v is None else [_decode_value(x) for x in v]
    return out


def _keyset_sql(order: list[tuple[str, bool]], ph: str) -> str:
    """Rows strictly after a position: (a > ?) OR (a = ? AND b > ?) OR ..."""
    ors = []
    for i, (c, desc) in enumerate(order):
        terms = [f'"{p}" = {ph}' for p, _ in order[:i]]
        terms.append(f'"{c}" {"<" if desc else ">"} {ph}')
        ors.append("(" + " AND ".join(terms) + ")")
    return " OR ".join(ors)


def _keyset_params(order: list[tuple[str, bool]], pos: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i in range(len(order)):
        out += pos[:i] + [pos[i]]
    return out


# ---------------------------------------------------------------------------
# per-shard execution


class _Conns:
    """Connections in use, so that a timeout can interrupt their query."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[str, Any] = {}
        self.abandoned: set[str] = set()

    def open(self, name: str, factory: Factory) -> Any:
        conn = factory()
        with self.lock:
            if name in self.abandoned:
                _close(conn)
                raise TimeoutError("abandoned before it connected")
            self.live[name] = conn
        return conn

    def done(self, name: str) -> None:
        with self.lock:
            conn = self.live.pop(name, None)
        if conn is not None:
            _close(conn)

    def abandon(self, name: str) -> None:
        """Interrupt a shard's running query (sqlite3 interrupt(), psycopg cancel())."""
        with self.lock:
            self.abandoned.add(name)
            conn = self.live.get(name)
        if conn is not None:
            for meth in ("interrupt", "cancel"):
                fn = getattr(conn, meth, None)
                if callable(fn):
                    try:
                        fn()
                    except Exception:
                        pass
                    break


def _close(conn: Any) -> None:
    try:
        conn.close()
    except Exception:
        pass


def _run_one(conns: _Conns, name: str, factory: Factory, sql: str,
             params: Sequence[Any]) -> tuple[list[str], list[tuple[Any, ...]], float]:
    t0 = time.perf_counter()
    conn = conns.open(name, factory)
    try:
        cur = conn.cursor()
        cur.execute(sql, tuple(params))
        cols = [d[0] for d in cur.description]
        rows = [tuple(r) for r in cur.fetchall()]
        try:
            cur.close()
        except Exception:
            pass
        try:  # end the read transaction (psycopg opens one)
            conn.rollback()
        except Exception:
            pass
    finally:
        conns.done(name)
    return cols, rows, time.perf_counter() - t0


def _check_common(query: Any, shards: Any, timeout: Any, concurrency: Any,
                  on_partial: Any) -> list[tuple[str, Factory]]:
    """Check what every fan-out takes; returns the shards as (name, factory) pairs."""
    if not isinstance(query, str) or not query.strip():
        raise TypeError("query must be a non-empty SQL string")
    sh = _check_shards(shards)
    if on_partial not in _ON_PARTIAL:
        raise ValueError(f"on_partial must be one of {_ON_PARTIAL}, got {on_partial!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)
                                    or concurrency < 1):
        raise ValueError(f"concurrency must be a positive int or None, got {concurrency!r}")
    return sh


Job = tuple[str, Factory, str, list[Any]]
Outcome = dict[str, tuple[list[str], list[tuple[Any, ...]], float]]


def _run_threads(jobs: list[Job], timeout: float | None,
                 concurrency: int | None) -> tuple[Outcome, dict[str, str]]:
    conns = _Conns()
    ex = cf.ThreadPoolExecutor(max_workers=min(concurrency or len(jobs), len(jobs)),
                               thread_name_prefix="shardhash-scatter")
    try:
        futs = {ex.submit(_run_one, conns, n, f, s, p): n for n, f, s, p in jobs}
        done, pending = cf.wait(futs, timeout=timeout)
        return _sort_out(futs, done, pending, conns, timeout)
    finally:
        ex.shutdown(wait=False, cancel_futures=True)


async def _run_async(jobs: list[Job], timeout: float | None,
                     concurrency: int | None) -> tuple[Outcome, dict[str, str]]:
    conns = _Conns()
    sem = asyncio.Semaphore(concurrency or len(jobs))

    async def one(n: str, f: Factory, s: str, p: list[Any]) -> Any:
        async with sem:
            return await asyncio.to_thread(_run_one, conns, n, f, s, p)

    tasks = {asyncio.ensure_future(one(*j)): j[0] for j in jobs}
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    return _sort_out(tasks, done, pending, conns, timeout)


class _Run(Protocol):
    """A shard's run: a thread pool's future or an asyncio task."""

    def cancel(self) -> bool: ...
    def exception(self) -> BaseException | None: ...
    def result(self) -> tuple[list[str], list[tuple[Any, ...]], float]: ...


def _sort_out(names: Mapping[Any, str], done: Iterable[_Run], pending: Iterable[_Run], conns: _Conns,
              timeout: float | None) -> tuple[Outcome, dict[str, str]]:
    """The results of the runs that finished; the failures, and the runs still
    pending at the timeout (cancelled, their queries interrupted)."""
    ok: Outcome = {}
    failed: dict[str, str] = {}
    for run in pending:
        name = names[run]
        run.cancel()
        conns.abandon(name)
        failed[name] = f"timed out after {timeout}s"
    for run in done:
        name = names[run]
        exc = run.exception()
        if exc is not None:
            failed[name] = f"{type(exc).__name__}: {exc}"
        else:
            ok[name] = run.result()
    return ok, failed


def _report(kind: str, jobs: list[Job], ok: Outcome, failed: dict[str, str], on_partial: str) -> dict[str, float]:
    """Emit the fan-out's events; raise on a failure unless partial results are wanted.
    Returns the latencies of the shards that answered."""
    lat = {n: v[2] for n, v in ok.items()}
    _events.emit("scatter", kind=kind, fan_out=len(jobs), failed=sorted(failed), latencies=lat)
    for n, reason in failed.items():
        _events.emit("error", shard=n, op=kind, reason=reason)
    if failed and on_partial == "fail":
        raise ScatterError(failed)
    return lat


# ---------------------------------------------------------------------------
# scatter_gather


@dataclass
class _Plan:
    shards: list[tuple[str, Factory]]
    order: list[tuple[str, bool]]
    limit: int | None
    qid: str
    positions: dict[str, list[Any] | None]
    jobs: list[Job]


def _plan_gather(query: Any, shards: Any, params: Any, order_by: Any, unique: Any, limit: Any,
                 cursor: Any, timeout: Any, concurrency: Any, on_partial: Any, placeholder: str) -> _Plan:
    sh = _check_common(query, shards, timeout, concurrency, on_partial)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    params = list(params or ())
    order = _parse_order(order_by, unique)
    names = [n for n, _ in sh]
    qid = _query_id(query, params, order, names)
    positions: dict[str, list[Any] | None] = (_read_cursor(cursor, qid, names, len(order)) if cursor is not None
                                              else {n: None for n in names})
    cols = ", ".join(f'"{c}" {"DESC" if d else "ASC"}' for c, d in order)
    base = f"SELECT * FROM ({query}) AS _sg_q"
    jobs: list[Job] = []
    for name, fac in sh:
        sql, p = base, list(params)
        pos = positions[name]
        if pos is not None:
            sql += f" WHERE {_keyset_sql(order, placeholder)}"
            p += _keyset_params(order, pos)
        sql += f" ORDER BY {cols}"
        if limit is not None:
            # Over-fetch: the global first `limit` rows can all come from one
            # shard, so each shard is asked for `limit`, plus one row that
            # tells whether the shard has more after this page.
            sql += f" LIMIT {limit + 1}"
        jobs.append((name, fac, sql, p))
    return _Plan(sh, order, limit, qid, positions, jobs)


def _merge(plan: _Plan, ok: Outcome, failed: dict[str, str], on_partial: str, kind: str,
           keep: RowFilter | None = None) -> ScatterResult:
    lat = _report(kind, plan.jobs, ok, failed, on_partial)
    columns: list[str] | None = None
    for n, _ in plan.shards:
        if n in ok:
            c = ok[n][0]
            if columns is None:
                columns = c
            elif c != columns:
                raise ValueError(f"shard {n!r} returned columns {c!r}, others {columns!r}")
    if columns is None:  # every shard failed
        return ScatterResult([], [], _make_cursor(plan.qid, plan.positions), failed, lat)
    try:
        idx = [columns.index(c) for c, _ in plan.order]
    except ValueError:
        raise ValueError(f"order_by columns {[c for c, _ in plan.order]!r} must be columns of the "
                         f"query's result {columns!r}") from None
    descs = [d for _, d in plan.order]

    def sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(_Desc(row[i]) if d else row[i] for i, d in zip(idx, descs))

    streams = []
    more: dict[int, bool] = {}
    after: dict[int, tuple[Any, ...]] = {}  # the over-fetched row's key, per shard that has more
    for si, (n, _) in enumerate(plan.shards):
        if n not in ok:
            continue
        rows = ok[n][1]
        for r in rows:
            for i, (col, _) in zip(idx, plan.order):
                if r[i] is None:
                    raise ValueError(f"shard {n!r}: ordering column {col!r} is NULL in row {r!r}; "
                                     f"keyset pagination needs NOT NULL ordering columns")
        more[si] = False
        if plan.limit is not None and len(rows) > plan.limit:
            more[si] = True
            after[si] = sort_key(rows[plan.limit])
            rows = rows[: plan.limit]
        streams.append([(sort_key(r), si, r) for r in rows])
    sizes = {s[0][1]: len(s) for s in streams if s}
    # No row may be emitted past the last fetched row of a shard that has
    # more: that shard's next rows could sort before it.  (With every row
    # kept, `limit` rows per shard make this bound unreachable within a page;
    # with `keep` filtering rows out, it is what keeps the order exact.)
    bounds = [s[-1][0] for s in streams if s and more[s[0][1]]]
    bound = min(bounds) if bounds else None
    used: dict[int, int] = {}
    out: list[tuple[Any, ...]] = []
    last: dict[int, tuple[Any, ...]] = {}
    prev: tuple[Any, ...] | None = None
    prev_shard = -1
    for k, si, r in heapq.merge(*streams, key=lambda t: t[0]):
        if plan.limit is not None and len(out) >= plan.limit:
            break
        if bound is not None and bound < k:
            break
        last[si] = r
        used[si] = used.get(si, 0) + 1
        if keep is not None and not keep(plan.shards[si][0], columns, r):
            continue  # skipped, but its shard's position moves past it
        if prev is not None and not (prev < k):
            raise ValueError(
                f"the tie-breaker {[c for c, _ in plan.order]!r} is not unique: shards "
                f"{plan.shards[prev_shard][0]!r} and {plan.shards[si][0]!r} hold rows with the same "
                f"ordering key {tuple(r[i] for i in idx)!r}")
        prev, prev_shard = k, si
        out.append(r)
    for si, size in sizes.items():
        if used.get(si, 0) < size:  # rows fetched but not reached by this page
            more[si] = True
    # A page boundary inside a run of equal keys on one shard would lose the
    # rest of the run (the next page asks for keys after it): check the row
    # after each shard's position too.
    by_si = {s[0][1]: s for s in streams if s}
    for si, r in last.items():
        u = used[si]
        nxt = by_si[si][u][0] if u < sizes[si] else after.get(si)
        if nxt is not None and nxt == sort_key(r):
            raise ValueError(
                f"the tie-breaker {[c for c, _ in plan.order]!r} is not unique: shard "
                f"{plan.shards[si][0]!r} holds two rows with the ordering key {tuple(r[i] for i in idx)!r}")
    # Every shard that answered moves to the last key the merge reached: all
    # of its rows up to that key were fetched and consumed (a shard with more
    # rows bounds the merge by its last fetched row), so nothing is skipped,
    # and the position means the same on every shard -- rows that a cutover
    # moved between pages are neither returned twice nor missed.  A shard
    # that failed keeps its position.
    positions = dict(plan.positions)
    if last:
        reached = max(last.values(), key=sort_key)
        for n, _ in plan.shards:
            if n in ok:
                positions[n] = [reached[i] for i in idx]
    any_more = bool(failed) or any(more.values())
    cursor = _make_cursor(plan.qid, positions) if any_more and plan.limit is not None else None
    return ScatterResult(out, list(columns), cursor, dict(failed), lat)


def scatter_gather(query: str, shards: Mapping[str, Factory], *, params: Sequence[Any] = (),
                   order_by: Sequence[Any] | str, unique: str | Sequence[str], limit: int | None = None,
                   cursor: str | None = None, timeout: float | None = None, concurrency: int | None = None,
                   on_partial: str = "fail", placeholder: str = "?",
                   row_filter: RowFilter | None = None) -> ScatterResult:
    """Run ``query`` on every shard and merge the results in the global order.

    ``query`` is a SELECT; its result must include the ``order_by`` columns.
    It is wrapped as ``SELECT * FROM (query) WHERE <after cursor> ORDER BY
    ... LIMIT limit+1`` on each shard, so every shard sorts and limits its
    own rows and the merge reads at most ``limit + 1`` rows per shard.

    ``order_by``: column names, ``"col DESC"`` or ``(col, "desc")``; ordering
    columns must be NOT NULL.  ``unique``: the tie-breaker column(s), unique
    across all shards (required; appended to the ordering when missing, and
    checked: two merged rows with the same ordering key are a ValueError).
    ``cursor``: the ``cursor`` of the previous page; ``None`` for the first.
    ``timeout``: seconds for the whole fan-out (a late shard's query is
    interrupted); ``concurrency``: at most this many shards at once.
    ``on_partial="fail"`` raises ScatterError naming the failed shards;
    ``"partial"`` returns the rows of the shards that answered, with
    ``failed`` naming the others (their position in the cursor is kept, so a
    later page still reads their rows — after rows that sort later).
    ``row_filter(shard, columns, row) -> bool``: rows it rejects are left
    out (their shard's position still moves past them); a page may then hold
    fewer than ``limit`` rows while the cursor goes on (Cluster.scatter_gather
    uses it to drop rows a shard holds but does not own during a migration).
    """
    plan = _plan_gather(query, shards, params, order_by, unique, limit, cursor, timeout, concurrency,
                        on_partial, placeholder)
    ok, failed = _run_threads(plan.jobs, timeout, concurrency)
    return _merge(plan, ok, failed, on_partial, "gather", row_filter)


async def scatter_gather_async(query: str, shards: Mapping[str, Factory], *, params: Sequence[Any] = (),
                               order_by: Sequence[Any] | str, unique: str | Sequence[str],
                               limit: int | None = None, cursor: str | None = None,
                               timeout: float | None = None, concurrency: int | None = None,
                               on_partial: str = "fail", placeholder: str = "?",
                               row_filter: RowFilter | None = None) -> ScatterResult:
    """:func:`scatter_gather` for asyncio: the same arguments and result.

    Each shard's blocking DB-API query runs in ``asyncio.to_thread``; at most
    ``concurrency`` at once.
    """
    plan = _plan_gather(query, shards, params, order_by, unique, limit, cursor, timeout, concurrency,
                        on_partial, placeholder)
    ok, failed = await _run_async(plan.jobs, timeout, concurrency)
    return _merge(plan, ok, failed, on_partial, "gather", row_filter)


# ---------------------------------------------------------------------------
# aggregates

_AGG = re.compile(r"^\s*(count|sum|min|max|avg)\s*\(\s*(distinct\s+)?(\*|[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$",
                  re.IGNORECASE)


def _parse_aggs(aggregates: Any) -> list[tuple[str, str, str]]:
    if not isinstance(aggregates, Mapping) or not aggregates:
        raise TypeError("aggregates must be a non-empty mapping {output name: 'func(column)'}")
    out = []
    for name, spec in aggregates.items():
        _ident(name, "aggregate name")
        if not isinstance(spec, str):
            raise TypeError(f"aggregate {name!r}: expected a string like 'sum(amount)', got {spec!r}")
        m = _AGG.match(spec)
        if m is None:
            raise ValueError(f"aggregate {name!r}: {spec!r} is not one of count(*), count(col), "
                             f"sum(col), min(col), max(col), avg(col)")
        fn, distinct, col = m.group(1).lower(), m.group(2), m.group(3)
        if distinct:
            raise ValueError(f"aggregate {name!r}: {spec!r} is refused: per-shard distinct counts cannot "
                             f"be added (a value on two shards would count twice); count distinct values "
                             f"by scattering 'SELECT DISTINCT {col} ...' and merging, or use a sketch")
        if col == "*" and fn != "count":
            raise ValueError(f"aggregate {name!r}: only count takes '*'")
        out.append((name, fn, col))
    return out


@dataclass
class _AggPlan:
    aggs: list[tuple[str, str, str]]
    group: list[str]
    jobs: list[Job]
    owns: OwnsFilter | None = None


def _plan_aggregate(query: Any, shards: Any, aggregates: Any, group_by: Any, params: Any, timeout: Any,
                    concurrency: Any, on_partial: Any, key_column: Any = None,
                    owns: Any = None) -> _AggPlan:
    sh = _check_common(query, shards, timeout, concurrency, on_partial)
    aggs = _parse_aggs(aggregates)
    group = [group_by] if isinstance(group_by, str) else list(group_by or ())
    for g in group:
        _ident(g, "group_by")
    if (key_column is None) != (owns is None):
        raise TypeError("key_column and owns go together: both (an ownership filter) or neither")
    if owns is not None and not callable(owns):
        raise TypeError(f"owns must be callable (shard, key) -> bool, not {type(owns).__name__}")
    sel = [f'"{g}"' for g in group]
    if key_column is not None:
        # Partial aggregates per (group, shard key): the merge keeps a
        # shard's partials only for the keys the shard owns.
        sel.append(f'"{_ident(key_column, "key_column")}" AS _sg_key')
    for i, (_, fn, col) in enumerate(aggs):
        arg = "*" if col == "*" else f'"{col}"'
        if fn == "avg":  # AVG = SUM / COUNT of the non-NULL values
            sel += [f"SUM({arg}) AS _a{i}s", f"COUNT({arg}) AS _a{i}c"]
        else:
            sel.append(f"{fn.upper()}({arg}) AS _a{i}")
    sql = f"SELECT {', '.join(sel)} FROM ({query}) AS _sg_q"
    by = [f'"{g}"' for g in group] + ([f'"{key_column}"'] if key_column is not None else [])
    if by:
        sql += " GROUP BY " + ", ".join(by)
    jobs = [(n, f, sql, list(params or ())) for n, f in sh]
    return _AggPlan(aggs, group, jobs, owns)


def _combine(plan: _AggPlan, ok: Outcome, failed: dict[str, str], on_partial: str) -> AggregateResult:
    lat = _report("aggregate", plan.jobs, ok, failed, on_partial)
    ng = len(plan.group)
    owns = plan.owns
    skip = ng + (owns is not None)
    acc: dict[tuple[Any, ...], list[Any]] = {}
    for n, _f, _s, _p in plan.jobs:  # in shard order: float sums do not depend on arrival order
        if n not in ok:
            continue
        for r in ok[n][1]:
            if owns is not None and not owns(n, r[ng]):
                continue  # a copy this shard holds but does not own
            g = tuple(r[:ng])
            parts = list(r[skip:])
            cur = acc.get(g)
            if cur is None:
                acc[g] = parts
                continue
            j = 0
            for _name, fn, _col in plan.aggs:
                if fn == "avg":
                    cur[j] = _add(cur[j], parts[j])
                    cur[j + 1] = _add(cur[j + 1], parts[j + 1])
                    j += 2
                    continue
                a, b = cur[j], parts[j]
                if fn in ("count", "sum"):
                    cur[j] = _add(a, b)
                elif b is not None:
                    cur[j] = b if a is None else (min(a, b) if fn == "min" else max(a, b))
                j += 1
    if not plan.group and not acc:
        acc[()] = [None] * sum(2 if fn == "avg" else 1 for _, fn, _ in plan.aggs)
    out = []
    for g in sorted(acc, key=lambda t: tuple((x is not None, x) for x in t)):
        parts = acc[g]
        row: dict[str, Any] = dict(zip(plan.group, g))
        j = 0
        for name, fn, _col in plan.aggs:
            if fn == "avg":
                s, c = parts[j], parts[j + 1]
                row[name] = None if not c else s / c
                j += 2
            else:
                v = parts[j]
                row[name] = (v or 0) if fn == "count" else v
                j += 1
        out.append(row)
    return AggregateResult(out, dict(failed), lat)


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def scatter_aggregate(query: str, shards: Mapping[str, Factory], aggregates: Mapping[str, str], *,
                      group_by: Sequence[str] | str = (), params: Sequence[Any] = (),
                      timeout: float | None = None, concurrency: int | None = None,
                      on_partial: str = "fail", key_column: str | None = None,
                      owns: OwnsFilter | None = None) -> AggregateResult:
    """Aggregate ``query``'s rows over every shard, exactly.

    ``aggregates`` maps output names to ``count(*)``, ``count(col)``,
    ``sum(col)``, ``min(col)``, ``max(col)`` or ``avg(col)``; each shard
    computes partial aggregates (AVG as SUM and COUNT) grouped by
    ``group_by``, and the partials are combined (COUNTs and SUMs added, MIN
    and MAX of the partials, AVG = total SUM / total COUNT).  ``count(distinct
    col)`` is refused with a ValueError.  Groups come back sorted by their
    key (NULL first).  ``timeout``/``concurrency``/``on_partial`` as in
    :func:`scatter_gather`.

    Ownership filter: with ``key_column`` (a column of ``query``'s result
    holding the shard key) and ``owns(shard, key) -> bool``, each shard
    computes its partials per ``(group, key)`` and only those of the keys it
    owns are combined -- so rows a shard holds but does not own (copies a
    migration is making, or retained after its cutover) count once, on their
    owner.  The shards then return one row per distinct key and group, not
    per group.  (``Cluster.scatter_aggregate`` passes the group's router.)
    """
    plan = _plan_aggregate(query, shards, aggregates, group_by, params, timeout, concurrency, on_partial,
                           key_column, owns)
    ok, failed = _run_threads(plan.jobs, timeout, concurrency)
    return _combine(plan, ok, failed, on_partial)


async def scatter_aggregate_async(query: str, shards: Mapping[str, Factory], aggregates: Mapping[str, str], *,
                                  group_by: Sequence[str] | str = (), params: Sequence[Any] = (),
                                  timeout: float | None = None, concurrency: int | None = None,
                                  on_partial: str = "fail", key_column: str | None = None,
                                  owns: OwnsFilter | None = None) -> AggregateResult:
    """:func:`scatter_aggregate` for asyncio."""
    plan = _plan_aggregate(query, shards, aggregates, group_by, params, timeout, concurrency, on_partial,
                           key_column, owns)
    ok, failed = await _run_async(plan.jobs, timeout, concurrency)
    return _combine(plan, ok, failed, on_partial)
