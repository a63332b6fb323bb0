"""Queries without the shard key: scatter-gather done right.

Send one query to every shard, merge the sorted local results into the
global order, apply the global LIMIT, and hand back a cursor that holds the
last ordering key the merge reached (keyset pagination: the next page asks
each shard only for rows after it, never re-reading from offset 0; a shard
that failed keeps a position of its own until it has caught up).  Aggregates
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
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
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
_IDENT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
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


def _qi(name: str, what: str) -> str:
    """Validate a column name (a plain identifier) and quote it: the one place
    an identifier enters scatter's SQL (SQLite and PostgreSQL quote alike)."""
    return '"' + _ident(name, what) + '"'


def _sql_key(v: Any) -> tuple[Any, ...]:
    """A sort key that orders values as SQLite does across storage classes:
    NULL < INTEGER/REAL (numerically) < TEXT (code points: BINARY collation
    of UTF-8) < BLOB (bytes).  Other types (e.g. PostgreSQL dates) come
    after, compared among themselves as Python compares them (types it
    cannot compare are a ValueError in the merge); a float NaN sorts after
    every number (as PostgreSQL orders it)."""
    if v is None:
        return (0,)
    if isinstance(v, (int, float, Decimal)):
        if v != v:  # NaN
            return (1, 1)
        return (1, 0, v)
    if isinstance(v, str):
        return (2, v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return (3, bytes(v))
    return (4, v)


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


def _order_key(descs: Sequence[bool], values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_Desc(_sql_key(v)) if d else _sql_key(v) for v, d in zip(values, descs))


_INT64 = (-(2**63), 2**63 - 1)


def _encode_value(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        raise ValueError("a cursor cannot hold a NaN ordering value; order by a column without NaN")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"b": bytes(v).hex()}
    raise ValueError(f"a cursor cannot hold an ordering value of type {type(v).__name__} "
                     f"(only int, float, str and bytes)")


def _param_id(v: Any) -> Any:
    """A stable rendering of a query parameter for the query id."""
    try:
        return _encode_value(v)
    except ValueError:
        return {"r": type(v).__name__ + ":" + repr(v)}


_BAD_CURSOR = "not a cursor of this query"


def _bad(why: str) -> ValueError:
    return ValueError(f"{_BAD_CURSOR}: {why}")


def _decode_value(v: Any) -> Any:
    """A position value from a cursor: only what _encode_value writes, and only
    values every driver binds (int64, non-NaN floats, UTF-8 text, bytes)."""
    if isinstance(v, bool):
        raise _bad("a position holds a boolean")
    if isinstance(v, int):
        if not _INT64[0] <= v <= _INT64[1]:
            raise _bad("a position holds an integer outside 64 bits")
        return v
    if isinstance(v, float):
        if v != v:
            raise _bad("a position holds NaN")
        return v
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad("a position holds text that is not UTF-8") from None
        return v
    if isinstance(v, dict) and set(v) == {"b"} and isinstance(v["b"], str):
        try:
            return bytes.fromhex(v["b"])
        except ValueError:
            raise _bad("a position holds malformed bytes") from None
    raise _bad(f"a position holds a {type(v).__name__}")


def _query_id(query: str, params: Sequence[Any] | Mapping[str, Any], order: list[tuple[str, bool]]) -> str:
    ps: Any = ({"m": sorted([k, _param_id(v)] for k, v in params.items())} if isinstance(params, Mapping)
               else [_param_id(p) for p in params])
    blob = json.dumps([query, ps, order], separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


Pos = list[Any]


@dataclass
class _CursorState:
    """What a cursor holds.  ``g``: the global position, the ordering key of
    the last row the merge reached (None: the start).  Every row up to ``g``
    has been returned, except on the shards in ``lag``: a shard that failed
    (``on_partial="partial"``), or is still catching up after it did, has
    returned its rows only up to its own position ``lag[shard]`` (< ``g``).
    ``epoch``: the caller's token for the ownership of rows (Cluster: the
    router's version); lagging positions are only valid under it."""

    g: Pos | None
    lag: dict[str, Pos | None]
    epoch: str | None


def _digest(body: str) -> str:
    return hashlib.sha256(b"shardhash-scatter-cursor\0" + body.encode("utf-8")).hexdigest()[:16]


def _make_cursor(qid: str, st: _CursorState) -> str:
    def enc(p: Pos | None) -> Any:
        return None if p is None else [_encode_value(x) for x in p]

    body = json.dumps({"q": qid, "g": enc(st.g), "lag": {k: enc(v) for k, v in st.lag.items()},
                       "e": st.epoch}, separators=(",", ":"), sort_keys=True)
    raw = json.dumps({"v": 2, "d": _digest(body), "b": body}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii")


def _read_cursor(cursor: Any, qid: str, names: list[str], order: list[tuple[str, bool]],
                 epoch: str | None) -> _CursorState:
    """The cursor's state, checked whole before any shard is asked: any
    defect is a ValueError (never a shard's failure)."""
    if not isinstance(cursor, str):
        raise TypeError(f"cursor must be the str a previous page returned, not {type(cursor).__name__}")
    try:
        outer = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        body = outer["b"]
        ok = isinstance(outer, dict) and outer.get("v") == 2 and isinstance(body, str)
        ok = ok and isinstance(outer.get("d"), str) and outer["d"] == _digest(body)
        doc = json.loads(body) if ok else None
    except Exception:
        raise _bad("it is not one that scatter_gather returned") from None
    if not isinstance(doc, dict) or set(doc) != {"q", "g", "lag", "e"}:
        raise _bad("it is not one that scatter_gather returned, or it was altered")
    if doc["q"] != qid:
        raise _bad("it belongs to another query, parameters or ordering")
    width = len(order)
    descs = [d for _, d in order]

    def pos(v: Any, what: str) -> Pos | None:
        if v is None:
            return None
        if not isinstance(v, list) or len(v) != width:
            raise _bad(f"the position {what} is malformed")
        return [_decode_value(x) for x in v]

    g = pos(doc["g"], "of the page")
    lag_doc, e = doc["lag"], doc["e"]
    if not isinstance(lag_doc, dict) or not (e is None or isinstance(e, str)):
        raise _bad("it was altered")
    lag: dict[str, Pos | None] = {}
    for k, v in lag_doc.items():
        p = pos(v, f"of shard {k!r}")
        if g is None or (p is not None and not _order_key(descs, p) < _order_key(descs, g)):
            raise _bad(f"the position of shard {k!r} is not behind the page's")
        lag[k] = p
    if lag:
        gone = sorted(set(lag) - set(names))
        if gone:
            raise ValueError(f"the cursor holds rows not yet read from shard(s) {gone!r} (they failed or were "
                             f"catching up), which this query does not name; start again from the first page")
        if e != epoch:
            raise ValueError(f"the cursor holds rows not yet read from shard(s) {sorted(lag)!r} (they failed or "
                             f"were catching up), but the ownership of rows changed since (epoch {e!r}, now "
                             f"{epoch!r}): those rows may have moved; start again from the first page")
    return _CursorState(g, lag, e)


_STYLES = ("?", "%s")


class _Binder:
    """Placeholders and values of one shard's statement: positional, or named
    (``:name`` / ``%(name)s``) when the query's params are a mapping."""

    def __init__(self, style: str, params: Sequence[Any] | Mapping[str, Any]) -> None:
        self.style = style
        self.named = isinstance(params, Mapping)
        self.values: Any = dict(params) if isinstance(params, Mapping) else list(params)
        self.n = 0

    def add(self, v: Any) -> str:
        if self.named:
            name = f"_sg_{self.n}"
            self.n += 1
            self.values[name] = v
            return f":{name}" if self.style == "?" else f"%({name})s"
        self.values.append(v)
        return self.style


def _keyset_sql(order: list[tuple[str, bool]], pos: Pos, b: _Binder) -> str:
    """Rows strictly after a position: (a > ?) OR (a = ? AND b > ?) OR ..."""
    ors = []
    for i, (c, desc) in enumerate(order):
        terms = [f"{_qi(p, 'order_by')} = {b.add(pos[j])}" for j, (p, _) in enumerate(order[:i])]
        terms.append(f"{_qi(c, 'order_by')} {'<' if desc else '>'} {b.add(pos[i])}")
        ors.append("(" + " AND ".join(terms) + ")")
    return " OR ".join(ors)


def _check_params(params: Any) -> Sequence[Any] | Mapping[str, Any]:
    if params is None:
        return []
    if isinstance(params, Mapping):
        for k in params:
            if not isinstance(k, str) or not _IDENT.match(k):
                raise ValueError(f"params: the name {k!r} is not a plain parameter name ([A-Za-z_][A-Za-z0-9_]*)")
            if k.startswith("_sg_"):
                raise ValueError(f"params: the name {k!r} is reserved (scatter's own parameters start with _sg_)")
        return dict(params)
    if isinstance(params, (str, bytes, bytearray)) or not isinstance(params, Sequence):
        raise TypeError(f"params must be a sequence (positional placeholders) or a mapping (named ones), "
                        f"not {type(params).__name__}")
    return list(params)


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
             params: Any) -> tuple[list[str], list[tuple[Any, ...]], float]:
    t0 = time.perf_counter()
    conn = conns.open(name, factory)
    try:
        cur = conn.cursor()
        if params:  # a mapping for named placeholders, else a tuple
            cur.execute(sql, dict(params) if isinstance(params, Mapping) else tuple(params))
        else:  # no parameters: the driver does not parse placeholders (a literal % stays as it is)
            cur.execute(sql)
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


Job = tuple[str, Factory, str, Any]  # name, factory, SQL, params (a list or a dict)
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

    async def one(n: str, f: Factory, s: str, p: Any) -> Any:
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
    state: _CursorState
    start: dict[str, Pos | None]  # each shard's position this page starts after
    jobs: list[Job]


def _styles(placeholder: Any, names: list[str]) -> dict[str, str]:
    """Each shard's placeholder style: one for all, or {shard: style}."""
    if isinstance(placeholder, str):
        per = {n: placeholder for n in names}
    elif isinstance(placeholder, Mapping):
        missing = [n for n in names if n not in placeholder]
        if missing:
            raise ValueError(f"placeholder: no style for shard(s) {missing!r}")
        per = {n: placeholder[n] for n in names}
    else:
        raise TypeError(f"placeholder must be '?', '%s' or a mapping {{shard: style}}, not {placeholder!r}")
    for n, st_ in per.items():
        if st_ not in _STYLES:
            raise ValueError(f"placeholder of shard {n!r}: expected '?' (sqlite3) or '%s' (psycopg), got {st_!r}")
    return per


def _plan_gather(query: Any, shards: Any, params: Any, order_by: Any, unique: Any, limit: Any,
                 cursor: Any, timeout: Any, concurrency: Any, on_partial: Any, placeholder: Any,
                 epoch: Any = None) -> _Plan:
    sh = _check_common(query, shards, timeout, concurrency, on_partial)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    if epoch is not None and not isinstance(epoch, str):
        raise TypeError(f"epoch must be a str or None, not {type(epoch).__name__}")
    prm = _check_params(params)
    order = _parse_order(order_by, unique)
    names = [n for n, _ in sh]
    styles = _styles(placeholder, names)
    qid = _query_id(query, prm, order)
    state = (_read_cursor(cursor, qid, names, order, epoch) if cursor is not None
             else _CursorState(None, {}, epoch))
    state.epoch = epoch
    cols = ", ".join(f"{_qi(c, 'order_by')} {'DESC' if d else 'ASC'}" for c, d in order)
    jobs: list[Job] = []
    start: dict[str, Pos | None] = {}
    for name, fac in sh:
        b = _Binder(styles[name], prm)
        tail = ""
        pos = state.lag[name] if name in state.lag else state.g
        start[name] = pos
        if pos is not None:
            tail += " WHERE " + _keyset_sql(order, pos, b)
        tail += " ORDER BY " + cols
        if limit is not None:
            # Over-fetch: the global first `limit` rows can all come from one
            # shard, so each shard is asked for `limit`, plus one row that
            # tells whether the shard has more after this page.
            tail += " LIMIT " + b.add(limit + 1)
        q = query
        if styles[name] == "%s" and not prm and b.values:
            # A query without params is literal text (psycopg does not parse
            # it); with scatter's own params it is parsed: a literal % must be
            # written %% then, on every page alike.
            q = query.replace("%", "%%")
        jobs.append((name, fac, "SELECT * FROM (" + q + ") AS _sg_q" + tail, b.values))
    return _Plan(sh, order, limit, qid, state, start, jobs)


def _first(t: tuple[Any, ...]) -> Any:
    return t[0]


def _walk(plan: _Plan, streams: list[list[tuple[tuple[Any, ...], int, tuple[Any, ...]]]],
          bound: tuple[Any, ...] | None, columns: list[str], values: Callable[[tuple[Any, ...]], list[Any]],
          less: Callable[[tuple[Any, ...], tuple[Any, ...]], bool], ocols: list[str],
          keep: RowFilter | None) -> tuple[list[tuple[Any, ...]], list[int], list[Any] | None]:
    """Merge the shards' sorted rows: the page's rows, how many rows of each
    stream were consumed, and the ordering values of the last one (None)."""
    consumed = [0] * len(streams)
    out: list[tuple[Any, ...]] = []
    last: tuple[Any, ...] | None = None
    limit = plan.limit
    # The merge goes by groups of rows with equal ordering keys (copies of a
    # row on several shards during a migration): a group is consumed whole
    # or not at all, so no page boundary falls between two rows of one key,
    # and a group that keeps two rows is a duplicate tie-breaker wherever it
    # falls, also just past the end of a page.
    filtering = False
    try:
        for k, grp in itertools.groupby(heapq.merge(*streams, key=_first), key=_first):
            if bound is not None and bound < k:
                break
            group = list(grp)
            if keep is None:
                kept = [(si, r) for _k, si, r in group]
            else:
                filtering = True
                kept = [(si, r) for _k, si, r in group if keep(plan.shards[si][0], columns, r)]
                filtering = False
            if len(kept) > 1:
                raise ValueError(f"the tie-breaker {ocols!r} is not unique: shards "
                                 f"{[plan.shards[si][0] for si, _ in kept]!r} hold rows with the same "
                                 f"ordering key {tuple(values(kept[0][1]))!r}")
            if kept and limit is not None and len(out) >= limit:
                break
            for _k, si, _r in group:
                consumed[si] += 1
            if kept:
                out.append(kept[0][1])
            last = group[0][2]
    except TypeError as e:
        if filtering:  # the row_filter's own error
            raise
        raise ValueError(f"ordering columns {ocols!r}: values of types that cannot be compared ({e})") from None
    reached = None if last is None else values(last)
    return out, consumed, reached


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
    if columns is None:  # every shard failed: every position stays
        return ScatterResult([], [], _make_cursor(plan.qid, plan.state), failed, lat)
    try:
        idx = [columns.index(c) for c, _ in plan.order]
    except ValueError:
        raise ValueError(f"order_by columns {[c for c, _ in plan.order]!r} must be columns of the "
                         f"query's result {columns!r}") from None
    descs = [d for _, d in plan.order]
    ocols = [c for c, _ in plan.order]

    def values(row: tuple[Any, ...]) -> list[Any]:
        return [row[i] for i in idx]

    st = plan.state
    answered = [(si, n, ok[n][1]) for si, (n, _) in enumerate(plan.shards) if n in ok]
    for _si, n, rows in answered:
        for col, i in zip(ocols, idx):
            bad = next((r for r in rows if r[i] is None), None)
            if bad is not None:
                raise ValueError(f"shard {n!r}: ordering column {col!r} is NULL in row {bad!r}; "
                                 f"keyset pagination needs NOT NULL ordering columns")
    # A column whose values (and positions) are all numbers, all text or all
    # bytes orders as Python orders them; only a column that mixes storage
    # classes (or holds a NaN) needs SQLite's cross-type key.
    positions = [p for p in [st.g, *st.lag.values()] if p is not None]
    plain: list[bool] = []
    for j, i in enumerate(idx):
        types = {type(r[i]) for _si, _n, rows in answered for r in rows} | {type(p[j]) for p in positions}
        nums = types <= {int, float, bool}
        nan = float in types and any(isinstance(v, float) and v != v for v in
                                     [*(r[i] for _si, _n, rows in answered for r in rows), *(p[j] for p in positions)])
        plain.append((nums and not nan) or types == {str} or types == {bytes})

    def key(vals: Sequence[Any]) -> tuple[Any, ...]:
        return tuple((v if pl else _sql_key(v)) if not d else _Desc(v if pl else _sql_key(v))
                     for v, d, pl in zip(vals, descs, plain))

    def less(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        try:
            return bool(a < b)
        except TypeError:
            raise ValueError(f"ordering columns {ocols!r}: values of types that cannot be compared "
                             f"with each other ({a!r}, {b!r})") from None

    streams: list[list[tuple[tuple[Any, ...], int, tuple[Any, ...]]]] = [[] for _ in plan.shards]
    more: dict[int, bool] = {}
    for si, n, rows in answered:
        keyed = [(key([r[i] for i in idx]), si, r) for r in rows]
        # Each shard's rows must come strictly increasing in the merge's
        # order: an equal key is a duplicate tie-breaker (keyset paging
        # would skip the second copy), a smaller one a shard that sorts
        # differently (e.g. a PostgreSQL text collation other than "C").
        try:
            increasing = all(x[0] < y[0] for x, y in zip(keyed, keyed[1:]))
        except TypeError:
            increasing = False
        if not increasing:
            for x, y in zip(keyed, keyed[1:]):
                if not less(x[0], y[0]):
                    vals = tuple(values(y[2]))
                    if x[0] == y[0]:
                        raise ValueError(f"the tie-breaker {ocols!r} is not unique: shard {n!r} holds two "
                                         f"rows with the ordering key {vals!r}")
                    raise ValueError(f"shard {n!r} returned rows out of the merge's order at {vals!r} "
                                     f"(text must sort by code point: COLLATE \"C\" on PostgreSQL)")
        more[si] = plan.limit is not None and len(keyed) > plan.limit
        if more[si]:
            keyed = keyed[: plan.limit]  # the over-fetched row was checked above
        streams[si] = keyed
    # No row may be emitted past the last fetched row of a shard that has
    # more: that shard's next rows could sort before it.  (With every row
    # kept, `limit` rows per shard make this bound unreachable within a page;
    # with `keep` filtering rows out, it is what keeps the order exact.)
    bounds = [s[-1][0] for si, s in enumerate(streams) if s and more[si]]
    bound = min(bounds) if bounds else None
    out, consumed, reached = _walk(plan, streams, bound, columns, values, less, ocols, keep)
    # Positions.  Every row up to `reached` of each shard that answered was
    # fetched and consumed (the merge is in order, and bounded by the last
    # fetched row of every shard with more), so the global position moves
    # to `reached`; it means the same on every shard, so rows that a
    # cutover moves between shards between two pages are neither returned
    # twice nor missed, and a shard added meanwhile starts there.  A shard
    # that failed keeps its own position, as does one catching up whose
    # position is still behind `reached`: each resumes from where it was,
    # the others are not moved back.
    g = st.g
    if reached is not None and (g is None or less(key(g), key(reached))):
        g = reached
    exhausted: dict[str, bool] = {}
    lag: dict[str, Pos | None] = {}
    for si, (n, _) in enumerate(plan.shards):
        p = plan.start[n]
        if n in ok:
            exhausted[n] = not more[si] and consumed[si] == len(streams[si])
            if exhausted[n]:
                p = g  # every row of the shard was returned
            elif reached is not None and (p is None or less(key(p), key(reached))):
                p = reached
        if g is not None and (p is None or less(key(p), key(g))):
            lag[n] = p
    new = _CursorState(g, lag, st.epoch)
    done = not failed and not lag and all(exhausted.get(n, False) for n, _ in plan.shards)
    cursor = None if done else _make_cursor(plan.qid, new)
    return ScatterResult(out, list(columns), cursor, dict(failed), lat)


Params = Sequence[Any] | Mapping[str, Any]


def scatter_gather(query: str, shards: Mapping[str, Factory], *, params: Params = (),
                   order_by: Sequence[Any] | str, unique: str | Sequence[str], limit: int | None = None,
                   cursor: str | None = None, timeout: float | None = None, concurrency: int | None = None,
                   on_partial: str = "fail", placeholder: str | Mapping[str, str] = "?",
                   row_filter: RowFilter | None = None, epoch: str | None = None) -> ScatterResult:
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
    ``failed`` naming the others (the cursor keeps their own positions, so
    once they answer again their missed rows are returned, once, in order,
    before the rows that follow -- while the other shards go on from where
    they were).
    ``params``: a sequence for positional placeholders, or a mapping for
    named ones (``:name`` in sqlite3, ``%(name)s`` in psycopg), bound as the
    driver binds them.  ``placeholder``: ``"?"`` (sqlite3) or ``"%s"``
    (psycopg), or a mapping ``{shard: style}`` for shards of both kinds.
    ``row_filter(shard, columns, row) -> bool``: rows it rejects are left
    out (their shard's position still moves past them); a page may then hold
    fewer than ``limit`` rows while the cursor goes on (Cluster.scatter_gather
    uses it to drop rows a shard holds but does not own during a migration).
    ``epoch``: an opaque token for who owns which rows (Cluster passes its
    router's version); a cursor still holding a failed shard's own position
    is refused under another epoch (the rows it has not read may have moved).
    A cursor that this query did not return is a ValueError.
    """
    plan = _plan_gather(query, shards, params, order_by, unique, limit, cursor, timeout, concurrency,
                        on_partial, placeholder, epoch)
    ok, failed = _run_threads(plan.jobs, timeout, concurrency)
    return _merge(plan, ok, failed, on_partial, "gather", row_filter)


async def scatter_gather_async(query: str, shards: Mapping[str, Factory], *, params: Params = (),
                               order_by: Sequence[Any] | str, unique: str | Sequence[str],
                               limit: int | None = None, cursor: str | None = None,
                               timeout: float | None = None, concurrency: int | None = None,
                               on_partial: str = "fail", placeholder: str | Mapping[str, str] = "?",
                               row_filter: RowFilter | None = None, epoch: str | None = None) -> ScatterResult:
    """:func:`scatter_gather` for asyncio: the same arguments and result.

    Each shard's blocking DB-API query runs in ``asyncio.to_thread``; at most
    ``concurrency`` at once.
    """
    plan = _plan_gather(query, shards, params, order_by, unique, limit, cursor, timeout, concurrency,
                        on_partial, placeholder, epoch)
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
    if len(set(group)) != len(group):
        raise ValueError(f"group_by names a column twice: {group!r}")
    clash = [name for name, _fn, _col in aggs if name in group]
    if clash:
        raise ValueError(f"aggregate name(s) {clash!r} are also group_by columns: each result row holds both, "
                         f"so name the aggregates otherwise")
    if (key_column is None) != (owns is None):
        raise TypeError("key_column and owns go together: both (an ownership filter) or neither")
    if owns is not None and not callable(owns):
        raise TypeError(f"owns must be callable (shard, key) -> bool, not {type(owns).__name__}")
    prm = _check_params(params)
    sel = [_qi(g, "group_by") for g in group]
    if key_column is not None:
        # Partial aggregates per (group, shard key): the merge keeps a
        # shard's partials only for the keys the shard owns.
        sel.append(f'{_qi(key_column, "key_column")} AS _sg_key')
    for i, (_, fn, col) in enumerate(aggs):
        arg = "*" if col == "*" else _qi(col, "aggregate column")
        if fn == "avg":  # AVG = SUM / COUNT of the non-NULL values
            sel += [f"SUM({arg}) AS _a{i}s", f"COUNT({arg}) AS _a{i}c"]
        else:
            sel.append(f"{fn.upper()}({arg}) AS _a{i}")
    sql = f"SELECT {', '.join(sel)} FROM ({query}) AS _sg_q"
    by = [_qi(g, "group_by") for g in group] + ([_qi(key_column, "key_column")] if key_column is not None else [])
    if by:
        sql += " GROUP BY " + ", ".join(by)
    jobs: list[Job] = [(n, f, sql, prm) for n, f in sh]
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
                elif b is not None:  # MIN and MAX in SQLite's order across types
                    cur[j] = b if a is None else (min(a, b, key=_sql_key) if fn == "min"
                                                  else max(a, b, key=_sql_key))
                j += 1
    if not plan.group and not acc:
        acc[()] = [None] * sum(2 if fn == "avg" else 1 for _, fn, _ in plan.aggs)
    out = []
    try:
        groups = sorted(acc, key=lambda t: tuple(_sql_key(x) for x in t))
    except TypeError:
        raise ValueError(f"group_by {plan.group!r}: group keys of types that cannot be compared") from None
    for g in groups:
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
                      group_by: Sequence[str] | str = (), params: Params = (),
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
                                  group_by: Sequence[str] | str = (), params: Params = (),
                                  timeout: float | None = None, concurrency: int | None = None,
                                  on_partial: str = "fail", key_column: str | None = None,
                                  owns: OwnsFilter | None = None) -> AggregateResult:
    """:func:`scatter_aggregate` for asyncio."""
    plan = _plan_aggregate(query, shards, aggregates, group_by, params, timeout, concurrency, on_partial,
                           key_column, owns)
    ok, failed = await _run_async(plan.jobs, timeout, concurrency)
    return _combine(plan, ok, failed, on_partial)
