"""The snapshot copy: every row of the moving units, from one consistent
snapshot per source table, to its destination.

A pipeline of three threads per table: a reader (:class:`_Reader`) fetches
the next chunk in the snapshot's read transaction, the caller routes the
current one, and a writer (:class:`_Writer`) writes the previous one to its
destinations and then commits its cursor -- at most one chunk is in the
writer's hands, so a crash re-copies at most one.  Chunk sizes adapt to the
time a chunk takes (:data:`COPY_CHUNK_SECONDS`).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _events
from ..control import Controls, MigrationPaused, TokenBucket
from ..errors import MigrationError, crash_point
from .workers import Stopped, default_workers, run_pool

if TYPE_CHECKING:
    from ..executor import Migration


#: The adaptive snapshot copy (``run(chunk=None)``, the default): the first
#: chunk's rows, the time a chunk should take, and the bounds of its size.
#: A chunk is the unit of resumption (its cursor is committed after it) and,
#: on SQLite, one write transaction on its destination: long enough that
#: per-chunk round trips do not bound the rate, short enough that a resume
#: re-copies little and writers to the destination's own keys wait little.
COPY_CHUNK = 10_000
COPY_CHUNK_SECONDS = 0.25
COPY_CHUNK_MIN = 1_000
COPY_CHUNK_MAX = 200_000


def _next_chunk(size: int, rows: int, seconds: float) -> int:
    """The next chunk's size from the last chunk's (``rows`` scanned in
    ``seconds``): aim at :data:`COPY_CHUNK_SECONDS`, at most doubling or
    halving per chunk."""
    if rows < size or seconds <= 0:  # (the last, short chunk says nothing)
        return size
    want = rows * COPY_CHUNK_SECONDS / seconds
    return int(min(COPY_CHUNK_MAX, max(COPY_CHUNK_MIN, size // 2, min(size * 2, want))))


class _Reader:
    """The source side of the snapshot copy: chunks of rows in primary-key
    order, each read (on a thread of its own) while the caller writes the
    previous one.  ``read(after, n)`` returns the ``n`` rows after primary
    key ``after``; ``size`` may change between chunks.  Only the thread
    uses the source connection until :meth:`close` returns."""

    def __init__(self, read: Callable[[Any, int], list[tuple[Any, ...]]], after: Any, pkx: Sequence[int],
                 size: int, *, thread: bool = True) -> None:
        self._read = read
        self._after = after
        self._pkx = list(pkx)
        self.size = size
        self._q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._t: threading.Thread | None = None
        if thread:
            self._t = threading.Thread(target=self._run, name="shardhash-copy-reader", daemon=True)
            self._t.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                n = self.size
                rows = self._read(self._after, n)
                if rows:
                    self._after = [rows[-1][j] for j in self._pkx]
                if not self._put(("rows", (rows, len(rows) < n))) or len(rows) < n:
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            self._put(("error", e))

    def _put(self, item: tuple[str, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[tuple[list[tuple[Any, ...]], bool]]:
        """(rows, last): ``last`` when the read returned fewer rows than it
        asked for (nothing follows); empty chunks are not yielded."""
        while self._t is None:  # (no thread: read when asked)
            n = self.size
            rows = self._read(self._after, n)
            if rows:
                self._after = [rows[-1][j] for j in self._pkx]
                yield rows, len(rows) < n
            if len(rows) < n:
                return
        while True:
            kind, v = self._q.get()
            if kind == "error":
                raise v
            if v[0]:
                yield v
            if v[1]:
                return

    def close(self) -> None:
        self._stop.set()
        if self._t is not None:
            self._t.join()


class _Writer:
    """The destination side of the snapshot copy: ``fn(item)`` for every
    :meth:`put` item, in order, on a thread of its own; :meth:`put` waits
    while an item is in hand (one at a time) and raises the first error of
    ``fn`` (after which nothing more is written)."""

    def __init__(self, fn: Callable[[Any], None]) -> None:
        self._fn = fn
        self._q: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
        self._err: BaseException | None = None
        self._t = threading.Thread(target=self._run, name="shardhash-copy-writer", daemon=True)
        self._t.start()

    def _run(self) -> None:
        while True:
            more, item = self._q.get()
            if not more:
                return
            if self._err is None:
                try:
                    self._fn(item)
                except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                    self._err = e
            self._q.task_done()

    def _check(self) -> None:
        if self._err is not None:
            raise self._err

    def put(self, item: Any) -> None:
        self._check()
        self._q.join()  # (the previous item is written: at most one in hand)
        self._check()
        self._q.put((True, item))

    def finish(self) -> None:
        """Wait until every item is written; raise the first error."""
        self._q.join()
        self._check()

    def close(self) -> None:
        """Stop the thread (after the item in hand, if any)."""
        self._q.put((False, None))
        self._t.join()


def copy(m: Migration, chunk: int | None = None, parallel: int | None = None) -> None:
    """The snapshot copy (see docs/migrate.md), as a pipeline of three
    threads per table: one reads the next chunk from the source (in the
    snapshot's read transaction) while this one routes the current chunk
    and another writes the previous one to its destinations and then
    commits its cursor -- at most one chunk is in the writer's hands, so
    a crash re-copies at most one.  ``chunk``: rows scanned per source
    read and per cursor commit; ``None`` (the default) adapts it to the
    time a chunk takes (:data:`COPY_CHUNK_SECONDS`, between
    :data:`COPY_CHUNK_MIN` and :data:`COPY_CHUNK_MAX` rows, from
    :data:`COPY_CHUNK`).  The writer uses this thread's connections (so
    a fault on "the executor's connection" hits the copy), never while
    this thread does; ``progress_fn`` runs on this thread, with no write
    in flight.

    ``parallel``: sources copied at once, each by a worker of its own (its
    own connections, cursors and pipeline; see :mod:`.workers`); default:
    the number of sources, at most the cores.  With one, the sources are
    copied one after the other on this thread."""
    if m.info.get("skip_copy"):
        return
    cl = m.cluster
    t0 = time.perf_counter()
    prog = {"copied": int(m.meta.get(m.id, "copied", 0)), "scanned": 0}
    copied0 = prog["copied"]
    ids = [u for u in m.units if u.kind == "ids"]
    # unit index -> index of its destination in dsts (batch selection below)
    dsts = m.mem.destinations
    unit_dst = np.array([dsts.index(u.destination) for u in m.units], dtype=np.int64)
    size0 = COPY_CHUNK if chunk is None else max(1, int(chunk))
    plock = threading.Lock()  # (the counters and their metadata rows, shared by the workers)
    tlock = threading.Lock()  # (the progress callback)
    stop = threading.Event()  # (set when a worker failed: the others stop at a chunk boundary)
    # The operator's pause and rate limit (shardhash.migrate.control): read
    # here, then by the writer after each chunk's commit, on its connection.
    ctl = m._controls
    ctl.refresh(force=True)
    ctl.check("before the copy")
    bucket = TokenBucket(ctl.rate)
    total = 0
    if m.progress_fn is not None:
        for s in m.mem.sources:
            b = cl.backend(s)
            total += sum(b.count(b.conn(), t.name) for t in m.group.tables)
    def one_source(s: str) -> None:
        size = size0
        sb = cl.backend(s)
        # Only this source's units: a shard that is also a destination (a
        # change of strategy over the same shards) holds copies of other
        # sources' rows, which are not its to copy.
        mine = np.array([u.source == s for u in m.units] + [False], dtype=bool)
        # This pair's progress (status: copy_pairs), kept across runs
        pk_ = f"pair:{s}"
        rec = m.meta.get(m.id, pk_) or {}
        pair: dict[str, Any] = {
            "source": s, "destinations": sorted({u.destination for u in m.units if u.source == s}),
            "rows_total": rec.get("rows_total"), "rows_scanned": int(rec.get("rows_scanned", 0)),
            "rows_copied": int(rec.get("rows_copied", 0)), "started": time.time(), "run_scanned": 0,
            "updated": None, "done": False}
        # This worker's view of the operator's controls (its own: a value
        # another worker read must not stand for this worker's boundary)
        wctl = Controls(m)
        wctl.paused, wctl.rate = ctl.paused, ctl.rate
        tpairs = [(s, d) for d in pair["destinations"]]

        def throttle_stop() -> bool:  # (between back-offs: another worker failed, or a pause)
            if stop.is_set():
                return True
            wctl.refresh(m.meta.db.conn(), force=True)
            return wctl.paused
        if pair["rows_total"] is None:
            pair["rows_total"] = sum(sb.count(sb.conn(), t.name) for t in m.group.tables)
        # Its own connection: one read transaction (one snapshot) per table.
        sc = sb.connect()
        try:
            for t in m.group.tables:
                ck = f"cursor:{s}:{t.name}"
                cur = m.meta.get(m.id, ck)
                if cur == "done":
                    continue
                cols, pk, kx = m._table(s, t.name)
                pkx = [cols.index(k) for k in pk]
                where, args = "", ()  # type: tuple[str, tuple[int, ...]]
                if ids and len(ids) == len(m.units):
                    # (in the source's own quoting and placeholder style)
                    where = sb.quote_ident(cols[kx]) + " BETWEEN " + sb.placeholder + " AND " + sb.placeholder
                    args = (min(u.lo for u in ids), max(u.hi for u in ids))
                sb.begin_read(sc)
                # (recorded with the first chunk's cursor)
                snap: list[Any] = [] if cur is not None else [f"snapshot_position:{s}:{t.name}",
                                                              sb.position(sc)]
                done = [False]

                def write(item: tuple[list[tuple[str, Any, list[tuple[Any, ...]]]], Any, Any, int, list[Any]],
                          _s: str = s, _t: str = t.name, _c: list[str] = cols, _k: str = ck,
                          _done: list[bool] = done) -> None:
                    parts, mconn, cursor, n_scanned, extra = item
                    for n, (d, dc, drows) in enumerate(parts):
                        m._write_copy(_s, d, dc, _t, _c, drows)
                        if n == 0:
                            crash_point("copy-chunk")
                        with plock:
                            prog["copied"] += len(drows)
                        pair["rows_copied"] += len(drows)
                    pair["rows_scanned"] += n_scanned
                    pair["run_scanned"] += n_scanned
                    pair["updated"] = time.time()
                    # (one metadata transaction per chunk; the last one marks the table done)
                    with plock, m.meta.tx(mconn) as mc:
                        m.meta.put(m.id, _k, cursor, mc)
                        m.meta.put(m.id, "copied", prog["copied"], mc)
                        m.meta.put(m.id, pk_, pair, mc)
                        if extra:
                            m.meta.put(m.id, extra[0], extra[1], mc)
                        prog["scanned"] += n_scanned
                    _done[0] = cursor == "done"

                cap0 = bucket.chunk_cap()
                reader = _Reader(partial(sb.scan, sc, t.name, cols, pk, where=where, args=args), cur,
                                 pkx, size if cap0 is None else min(size, cap0), thread=sb.prefetch)
                writer = _Writer(write)

                def idle_refresh(_w: _Writer = writer) -> bool:
                    # (the writer idle, this thread may use the metadata connection)
                    _w.finish()
                    wctl.refresh(m.meta.db.conn())
                    bucket.rate = wctl.rate
                    return wctl.paused

                try:
                    t_last = time.perf_counter()
                    for rows, last in reader:
                        if stop.is_set():
                            raise Stopped()
                        # a chunk boundary: stop here when paused (the chunks put so far
                        # are written and their cursors committed); else keep the pace
                        bucket.rate = wctl.rate
                        if not wctl.paused:
                            bucket.take(len(rows), stop=idle_refresh)
                        keys = [r[kx] for r in rows]
                        m._check_keys(t.name, keys, rows, pkx)
                        ui = m.mem.assign(keys)
                        sel = np.flatnonzero(mine[ui])  # (ui == -1 picks the final False)
                        dix = unit_dst[ui[sel]]
                        parts = []
                        for j in np.unique(dix).tolist():
                            d = dsts[j]
                            pick = sel if len(dsts) == 1 else sel[dix == j]
                            # (this thread's connections, handed to the writer, which
                            # uses them while this thread does not)
                            with m._on(d, "destination", f"copying {t.name!r} from {s!r}"):
                                dc = cl.backend(d).conn()
                            parts.append((d, dc, [rows[i] for i in pick.tolist()]))
                        # The chunk boundary: the previous chunk is written and its cursor
                        # committed (put waits for it anyway), and the controls are read
                        # now, by this worker, on its own connection -- not a value read
                        # before this chunk was routed, nor one another worker read.
                        writer.finish()
                        if m.throttle is not None:  # (backs off while a destination's load is high)
                            m.throttle.wait(m, s, tpairs, stop=throttle_stop)
                            if stop.is_set():
                                raise Stopped()
                        wctl.refresh(m.meta.db.conn(), force=True)
                        wctl.check(f"copying {t.name!r} from {s!r}")
                        writer.put((parts, m.meta.db.conn(), "done" if last else [rows[-1][j] for j in pkx],
                                    len(rows), snap))
                        snap = []
                        # (put waits while the writer is busy: in the steady state
                        # this loop runs at the pace of the slowest stage)
                        now = time.perf_counter()
                        if chunk is None:
                            size = _next_chunk(size, len(rows), now - t_last)
                        cap = bucket.chunk_cap()  # (rate-limited: small chunks, a smooth pace)
                        reader.size = size if cap is None else min(size, cap)
                        t_last = now
                        if m.progress_fn is not None and now - m._last_tick >= m.progress_every:
                            writer.finish()  # (no write in flight while the callback runs)
                            el = time.perf_counter() - t0
                            rate = prog["scanned"] / el if el > 0 else 0.0
                            left = total - prog["scanned"]
                            with tlock:
                                m._tick(phase="copy", rows_copied=prog["copied"], rows_scanned=prog["scanned"],
                                        rows_total=total, rows_per_s=rate,
                                        eta_s=left / rate if rate and total else None)
                        _events.emit("migration_progress", migration_id=m.id, copied=prog["copied"],
                                     scanned=prog["scanned"], total=total if m.progress_fn is not None else None)
                    writer.finish()
                except BaseException:
                    stop.set()  # (the other workers stop at their next chunk, not after this cleanup)
                    raise
                finally:
                    writer.close()
                    reader.close()
                    sb.rollback(sc)
                if not done[0]:  # (no rows, or the last chunk was full: the next read found none)
                    with m.meta.tx() as mc:
                        m.meta.put(m.id, ck, "done", mc)
                        if snap:
                            m.meta.put(m.id, snap[0], snap[1], mc)
            pair["done"] = True
            m.meta.put(m.id, pk_, pair)
        finally:
            sc.close()

    srcs = list(m.mem.sources)
    par = parallel if parallel is not None else getattr(m, "parallel", None)
    n = default_workers(len(srcs), os.cpu_count()) if par is None else int(par)
    if n <= 1 or len(srcs) <= 1:
        for s in srcs:
            one_source(s)
    else:
        for x in m._involved():
            cl.backend(x)  # (opened here: the workers only look them up)

        def close() -> None:  # (the worker thread's own connections)
            for x in m._involved():
                cl.backend(x).close()
            m.meta.db.close()

        def describe(s: str) -> str:
            return f"source {s!r} -> " + ", ".join(repr(u) for u in sorted({u.destination for u in m.units
                                                                          if u.source == s}))

        def pooled(s: str) -> None:
            try:
                one_source(s)
            except (Stopped, MigrationPaused):
                raise
            except Exception as e:
                if isinstance(e, MigrationError) and repr(s) not in str(e):
                    raise MigrationError(f"{e} (in the copy worker for {describe(s)})") from e
                raise

        m.log(f"copy: {min(n, len(srcs))} worker(s) for {len(srcs)} source(s)")
        run_pool(srcs, pooled, n, stop, describe, close)
    dt = time.perf_counter() - t0
    copied_now = prog["copied"] - copied0
    if prog["scanned"] and dt > 0:
        # (measured over this run only: a resume that finds the copy done
        # keeps the rates the run that copied measured)
        scan_rate, copy_rate = prog["scanned"] / dt, copied_now / dt
        with m.meta.tx() as mc:
            m.meta.put(m.id, "copy_scanned_rate", scan_rate, mc)
            m.meta.put(m.id, "copy_copied_rate", copy_rate, mc)
        m.log(f"copy done: {prog['copied']} rows copied ({prog['scanned']} scanned in {dt:.1f} s: "
                 f"{scan_rate:,.0f} rows/s scanned, {copy_rate:,.0f} rows/s copied)")
    else:
        m.log(f"copy done: {prog['copied']} rows copied (no source row scanned in this run)")


def write_copy(m: Migration, s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
    """Write one chunk's rows for destination ``d`` (connection ``dc``):
    all at once when none of them is there yet (the fast path: SQLite
    multi-row INSERTs in one transaction, PostgreSQL one COPY); else -- a
    resumed chunk, or a primary key taken by another row -- the checked
    upsert."""
    db = m.cluster.backend(d)
    m._check_values(s, d, table, cols, rows)
    with m._on(d, "destination", f"copying {table!r} from {s!r}"):
        if db.copy_new(dc, table, cols, rows):
            return
        with db.writing(dc):
            m._check_collisions(s, d, db, dc, table, rows)
            db.upsert(dc, table, cols, rows)
