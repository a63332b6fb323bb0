"""The migration executor: prepare, copy, catch up, verify, fence, cut over,
retain, clean up, roll back -- each step idempotent and resumable.

See docs/migrate.md for the protocol, its states and invariants::

    m = Migration.create(cluster, "users", new_router)
    m.run()                  # to 'retained'; call again after any crash
    m.cleanup()              # after the retention window (or m.rollback())
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

from .. import _events
from ..hashing import hash_array
from ..routing import Router, load_router
from .cluster import Cluster
from .coltypes import ColumnTypeError, Kind, canonical_row, check_rows, check_source_values, pair_kinds
from .metadata import ACTIVE, COMMITTED
from .sqlite import decode_pk, qi
from .units import Membership, Unit, units_for

__all__ = ["Migration", "MigrationError", "VerifyMismatch", "crash_point", "pending_router", "walk_watermark"]

#: Terminal or holding states: a group with a migration in any other state is busy.
DONE = ("cleaned", "rolled-back")


class MigrationError(RuntimeError):
    """A migration cannot proceed (the message says why; the state is recorded)."""


class VerifyMismatch(MigrationError):
    """Verify found rows that differ between source and destination."""

    def __init__(self, mig: str, diffs: list[dict[str, Any]]) -> None:
        self.diffs = diffs
        first = ", ".join(f"{d['table']}{d['pk']}" for d in diffs[:10])
        super().__init__(f"migration {mig}: verify found {len(diffs)} differing row(s); first: {first}")


def crash_point(name: str) -> None:
    """Test hook: SIGKILL this process when ``SHARDHASH_MIGRATE_CRASH`` names
    this point (after ``SHARDHASH_MIGRATE_CRASH_SKIP`` earlier hits)."""
    if os.environ.get("SHARDHASH_MIGRATE_CRASH") != name:
        return
    skip = int(os.environ.get("SHARDHASH_MIGRATE_CRASH_SKIP", "0"))
    if skip > 0:
        os.environ["SHARDHASH_MIGRATE_CRASH_SKIP"] = str(skip - 1)
        return
    os.kill(os.getpid(), signal.SIGKILL)


#: SQLite's primary result codes and their fixed messages (sqlite3_errstr),
#: for Pythons whose sqlite3 errors carry no code (before 3.11).
_SQLITE_CODES = {13: ("full", "database or disk is full"), 8: ("readonly", "attempt to write a readonly database"),
                 14: ("unreachable", "unable to open database file"), 10: ("unreachable", "disk I/O error")}
#: PostgreSQL SQLSTATEs (or their two-character classes) and what they mean for an operator.
_PG_STATES = {"53100": "full", "25006": "readonly", "08": "unreachable", "57P01": "unreachable",
              "57P02": "unreachable", "57P03": "unreachable", "42P01": "gone", "3F000": "gone"}


def _fault_kind(e: BaseException) -> str | None:
    """What a database error is, from its class and code (SQLite's result
    code, PostgreSQL's SQLSTATE), never from words in its message: "full",
    "readonly", "unreachable", "gone" (a prepared table or schema is missing) or None."""
    if isinstance(e, (ConnectionError, TimeoutError)):
        return "unreachable"
    if isinstance(e, OSError):
        import errno

        return {errno.ENOSPC: "full", errno.EROFS: "readonly", errno.ENOENT: "unreachable",
                errno.ENOTDIR: "unreachable", errno.EIO: "unreachable", errno.ENXIO: "unreachable",
                errno.ESTALE: "unreachable"}.get(e.errno or 0)
    mod = type(e).__module__
    if mod.startswith("sqlite3"):
        code = getattr(e, "sqlite_errorcode", None)
        if code is not None:
            return _SQLITE_CODES.get(int(code) & 0xFF, (None, ""))[0]
        return next((k for k, msg in _SQLITE_CODES.values() if str(e) == msg), None)
    if mod.startswith("psycopg"):
        state = getattr(e, "sqlstate", None)
        if state is None:  # (a client-side error: the connection is lost or closed)
            import psycopg

            return "unreachable" if isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError)) else None
        return _PG_STATES.get(state) or _PG_STATES.get(state[:2])
    return None


def describe_fault(e: BaseException) -> str:
    """What a database error means for an operator (full disk, lost
    connection, read-only file), or its own text."""
    text = f"{type(e).__name__}: {e}".strip()
    kind = _fault_kind(e)
    if kind == "full":
        return f"the disk is full ({text}); free space, then resume"
    if kind == "readonly":
        return f"the database cannot be written ({text}); make it writable, then resume"
    if kind == "unreachable":
        return f"the shard is unreachable or its connection was lost ({text}); bring it back, then resume"
    if kind == "gone":
        return (f"the shard is unreachable or its prepared tables are gone ({text}); on a cluster that "
                f"`shardhash migrate init` has not set up yet, run it; else bring them back, then resume")
    return text


def _is_db_error(e: BaseException) -> bool:
    if isinstance(e, (ConnectionError, OSError)) or type(e).__module__.startswith(("sqlite3", "psycopg")):
        return True
    return any(c.__module__.startswith(("sqlite3", "psycopg")) for c in type(e).__mro__)


def _row_hashes(rows: Sequence[Sequence[Any]]) -> np.ndarray:
    """Hashes of the rows' canonical values (equal on two backends exactly
    when the values are, see :func:`coltypes.canonical_row`)."""
    if not rows:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(hash_array([canonical_row(r) for r in rows]), dtype=np.uint64)


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


class Migration:
    """One migration of a table group from its current router to a new one."""

    def __init__(self, cluster: Cluster, mig_id: str) -> None:
        rec = cluster.metadata.migration(mig_id)
        if rec is None:
            raise KeyError(f"no migration {mig_id!r}")
        self.cluster = cluster
        self.id = mig_id
        self.group = cluster.group(rec["group"])
        self.old: Router = load_router(json.loads(rec["old_router"]))
        self.new: Router = load_router(json.loads(rec["new_router"]))
        self.units = [Unit.from_dict(u) for u in rec["units"]]
        self.mem = Membership(self.old, self.new, self.units)
        self.info: dict[str, Any] = rec["info"]
        self.capture = self.info.get("capture", mig_id)
        self.log_fn: Callable[[str], None] | None = None
        #: called with a dict (phase, rows_copied, rows_scanned, rows_total,
        #: rows_per_s, eta_s, lag_changes, lag_s) at most every ``progress_every`` s
        self.progress_fn: Callable[[dict[str, Any]], None] | None = None
        self.progress_every = 1.0
        self._last_tick = 0.0
        self.meta = cluster.metadata
        self._tables: dict[str, tuple[list[str], list[str], int]] = {}
        self._kinds: dict[str, dict[str, Kind]] = {}  # (see _column_kinds)

    # ------------------------------------------------------------- create

    @classmethod
    def create(cls, cluster: Cluster, group: str | None, new_router: Router, *,
               units: Sequence[Unit] | None = None, max_step_share: float = 0.02,
               mig_id: str | None = None, from_version: int | None = None,
               info: dict[str, Any] | None = None, old_router: Router | None = None,
               new_shards: dict[str, tuple[str, list[str]]] | None = None) -> Migration:
        """Record a new migration (state ``preparing``); :meth:`run` executes it.

        The migration starts from the group's *pending* router
        (:func:`pending_router`): the current topology, or the target of the
        newest migration of the group that has not cut over yet -- so
        ``new_router`` must be planned from that router, and the migrations
        cut over in the order they were created.  ``from_version`` (the
        version the plan was made from) must be that router's version.  A
        migration whose units overlap those of a migration still holding
        the group (any state before ``cleaned`` / ``rolled-back``) is refused;
        non-overlapping ones run side by side.

        ``new_shards`` (shard id -> (primary URL, replica URLs)) registers
        shards in the shard map in the same metadata transaction that records
        the migration (a crash before it leaves nothing, after it ``resume``
        finishes); an id already mapped to another primary is refused.  Every
        check of :func:`check_start` runs first."""
        g = cluster.group(group)
        meta = cluster.metadata
        meta.setup()
        cur = cluster.refresh(g.name)
        if not isinstance(new_router, Router):
            raise TypeError(f"new_router must be a Router, not {type(new_router).__name__}")
        new_shards = check_start(cluster, g.name, new_router, new_shards)
        mig = mig_id or f"m{int(time.time())}-{uuid.uuid4().hex[:6]}"
        now = time.time()
        with meta.tx() as c:
            # (inside the store's write transaction: two executors creating
            # migrations of one group are serialised, the second sees the first)
            holders = [m for m in meta.migrations(g.name) if m["state"] not in DONE]
            base, pending = _base(cur, holders)
            old = old_router if old_router is not None else base
            if from_version is not None and from_version != base.version:
                what = "is at version" if pending is None else \
                    f"will be at version (once migration {pending} cuts over)"
                raise MigrationError(f"the plan was made from topology version {from_version}, but group "
                                     f"{g.name!r} {what} {base.version}: plan again from the current "
                                     f"topology (shardhash.migrate.executor.pending_router)")
            if new_router.version <= base.version:
                if pending is None:
                    raise MigrationError(f"the new router's version ({new_router.version}) must be greater "
                                         f"than the current version ({base.version})")
                raise MigrationError(f"the new router's version ({new_router.version}) must be greater than "
                                     f"the pending version ({base.version}): group {g.name!r} is held by "
                                     f"migration {pending}, which cuts over to version {base.version} first; "
                                     f"plan on top of its target (shardhash.migrate.executor.pending_router) "
                                     f"or finish it first")
            us = list(units) if units is not None else units_for(old, new_router, max_step_share=max_step_share)
            for h in holders:
                hu = [Unit.from_dict(u) for u in h["units"]]
                # (hash filters compare only in one hash space)
                same = load_router(json.loads(h["new_router"])).hasher == new_router.hasher
                clash = _overlap(hu, us, same)
                if clash is not None:
                    a, b = clash
                    raise MigrationError(
                        f"group {g.name!r}: the new migration's unit {b.index} ({b.source} -> {b.destination}) "
                        f"overlaps unit {a.index} ({a.source} -> {a.destination}) of migration {h['id']} "
                        f"(state {h['state']}), which holds those keys: finish, clean up or roll it back first")
            inf = dict(info or {})
            # The version clients route with while this migration copies: its
            # sources own the units under every router from there on.
            inf.setdefault("base_version", cur.version)
            if pending is not None:
                inf.setdefault("after", pending)
            for sid, (url, reps) in new_shards.items():
                try:
                    meta.add_shard(c, sid, url, reps)
                except ValueError as e:
                    raise MigrationError(str(e)) from None
            c.execute("INSERT INTO migrations VALUES (?, ?, 'preparing', ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                      (mig, g.name, inf.get("kind", "reshard"), old.version, new_router.version,
                       old.to_json(), new_router.to_json(), json.dumps([u.to_dict() for u in us]),
                       json.dumps(inf), now, now))
            c.execute("INSERT INTO events(ts, mig, msg) VALUES (?, ?, ?)",
                      (now, mig, f"created: group {g.name} version {old.version} -> {new_router.version}, "
                                 f"{len(us)} unit(s)" + (f", after {pending}" if pending else "")
                                 + (f", shard(s) {', '.join(sorted(new_shards))} added to the shard map"
                                    if new_shards else "")))
        if new_shards:
            cluster.refresh(g.name)  # (the shard map now names the new shards)
        return cls(cluster, mig)

    # ------------------------------------------------------------ helpers

    @property
    def state(self) -> str:
        rec = self.meta.migration(self.id)
        assert rec is not None
        return str(rec["state"])

    def _set(self, state: str) -> None:
        self.meta.set_state(self.id, state)
        self.log(f"state -> {state}")

    def log(self, msg: str) -> None:
        line = f"[{self.id} v{self.old.version}->v{self.new.version}] {msg}"
        self.meta.log(self.id, msg)
        if self.log_fn is not None:
            self.log_fn(line)

    def _table(self, shard: str, table: str) -> tuple[list[str], list[str], int]:
        k = f"{shard}/{table}"
        if k not in self._tables:
            b = self.cluster.backend(shard)
            cols, pk = b.table_info(b.conn(), table)
            key = next(t.key for t in self.group.tables if t.name == table)
            self._tables[k] = (cols, pk, cols.index(key))
        return self._tables[k]

    def _check_keys(self, table: str, keys: Sequence[Any], rows: Sequence[Sequence[Any]], pkx: Sequence[int]) -> None:
        kt = self.group.key_type
        allowed = {int} if kt == "int" else {str} if kt == "str" else {int, str}
        if set(map(type, keys)) <= allowed:
            return
        for i, k in enumerate(keys):
            ok = (isinstance(k, int) and not isinstance(k, bool)) if kt == "int" else \
                isinstance(k, str) if kt == "str" else (isinstance(k, (int, str)) and not isinstance(k, bool))
            if not ok:
                pk = tuple(rows[i][j] for j in pkx)
                raise MigrationError(f"table {table!r}, row with primary key {pk!r}: shard-key value {k!r} "
                                     f"has type {type(k).__name__}; group {self.group.name!r} needs "
                                     f"{'int' if kt == 'int' else 'str' if kt == 'str' else 'int or str'} keys")

    def _tick(self, force: bool = False, **fig: Any) -> None:
        if self.progress_fn is None:
            return
        now = time.perf_counter()
        if force or now - self._last_tick >= self.progress_every:
            self._last_tick = now
            self.progress_fn(fig)

    @contextmanager
    def _on(self, shard: str, role: str, what: str) -> Iterator[None]:
        """Name the shard, its role and the step in a database error."""
        try:
            yield
        except MigrationError:
            raise
        except Exception as e:
            if not _is_db_error(e):
                raise
            raise MigrationError(f"migration {self.id}: {role} shard {shard!r} failed while {what}: "
                                 f"{describe_fault(e)}") from e

    def _involved(self) -> list[str]:
        return sorted(set(self.mem.sources) | set(self.mem.destinations))

    # -------------------------------------------------------------- run

    def run(self, *, fence_threshold: float = 0.5, chunk: int | None = None, cutover: bool = True,
            max_catchup_seconds: float = 600.0) -> str:
        """Drive the migration from its recorded state to ``retained`` (or to
        a verified, caught-up state when ``cutover=False``).  Call again after
        any failure or crash: every step resumes where it stopped.  ``chunk``:
        rows per snapshot-copy chunk (default: adaptive, see :meth:`_copy`)."""
        st = "reading its state"
        try:
            st = self.state
            if st == "rolled-back" and self._reverse_unfinished():
                return self.rollback()
            if st in ("retained", "cleaning", "cleaned", "rolled-back"):
                return st
            if st == "rolling-back":
                self.rollback()
                return self.state
            if st == "preparing":
                self._prepare()
                self._set("copying")
                st = "copying"
            if st == "copying":
                self._copy(chunk)
                self._set("catching-up")
                st = "catching-up"
            if st == "verify-failed":
                self.meta.put(self.id, "verify", None)
                self._set("catching-up")
                st = "catching-up"
            if st == "catching-up":
                self._catch_up_until(fence_threshold, max_catchup_seconds)
                self.verify()
                if not cutover:
                    return self.state
                self._wait_turn()
                self._catch_up_until(fence_threshold, max_catchup_seconds)
                self._settle()
                self._catch_up_until(fence_threshold, max_catchup_seconds)
                self._set("freezing")
                st = "freezing"
            if st == "freezing":
                self._freeze_and_commit()
                st = "cutover"
            if st == "cutover":
                self._reconcile()
                self._retain()
            self.meta.set_state(self.id, self.state, error=None)
            return self.state
        except VerifyMismatch:
            raise
        except Exception as e:
            err = self._db_error(e, f"running step {st!r}")
            try:
                self.meta.set_state(self.id, self.state, error=f"{type(err).__name__}: {err}")
                self.log(f"error: {type(err).__name__}: {err}")
            except Exception:
                pass
            if err is not e:
                raise err from e
            raise

    def _db_error(self, e: BaseException, what: str) -> BaseException:
        """A database error that no step named (the metadata store's, say) as
        a :class:`MigrationError` naming the step; anything else as it is."""
        if isinstance(e, MigrationError) or not isinstance(e, Exception) or not _is_db_error(e):
            return e
        return MigrationError(f"migration {self.id}: a database error while {what}: {describe_fault(e)}")

    # ------------------------------------------------------------ prepare

    def _prepare(self) -> None:
        cl = self.cluster
        srcs, dsts = self.mem.sources, self.mem.destinations
        for s in srcs:
            with self._on(s, "source", "preparing"):
                cl.prepare_shard(s)
        for d in dsts:
            with self._on(d, "destination", "preparing (creating its tables)"):
                cl.prepare_shard(d, create_from=srcs[0] if srcs else None)
        self._check_column_types(values=True)
        for s in srcs:
            b = cl.backend(s)
            for t in self.group.tables:
                cols, pk, kx = self._table(s, t.name)
                rows = b.scan(b.conn(), t.name, cols, pk, None, 200)
                self._check_keys(t.name, [r[kx] for r in rows], rows, [cols.index(k) for k in pk])
        old_doc, new_doc = self.old.to_json(), self.new.to_json()
        base_version = min(int(self.info.get("base_version", self.old.version)), self.old.version)
        for shard in self._involved():
            b = cl.backend(shard)
            with b.writing() as c:
                b.put_routers(c, self.id, old_doc, new_doc)
                for u in self.units:
                    for role, who, state in (("source", u.source, "copying"),
                                             ("destination", u.destination, "importing")):
                        if who == shard:
                            b.put_unit(c, self.group.name, self.id, u.index, role, state, self.new.version,
                                       json.dumps(dict(u.to_dict(), from_version=base_version)))
                if shard in srcs and not self.info.get("skip_copy"):
                    # Capture starts in the same transaction that makes the
                    # units visible, before any snapshot is taken.
                    b.start_capture(c, self.capture, self.group.name)
                b.bump_epoch(c)
            crash_point("prepare-shard")
        for s in srcs:
            b = cl.backend(s)
            if b.capture_id(b.conn(), self.capture) is None:
                raise MigrationError(f"shard {s!r} has no change capture {self.capture!r}")
        self.log(f"prepared: sources {srcs}, destinations {dsts}")

    # --------------------------------------------------------------- copy

    def _copy(self, chunk: int | None = None) -> None:
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
        in flight."""
        if self.info.get("skip_copy"):
            return
        cl = self.cluster
        t0 = time.perf_counter()
        prog = {"copied": int(self.meta.get(self.id, "copied", 0)), "scanned": 0}
        copied0 = prog["copied"]
        ids = [u for u in self.units if u.kind == "ids"]
        # unit index -> index of its destination in dsts (batch selection below)
        dsts = self.mem.destinations
        unit_dst = np.array([dsts.index(u.destination) for u in self.units], dtype=np.int64)
        size = COPY_CHUNK if chunk is None else max(1, int(chunk))
        total = 0
        if self.progress_fn is not None:
            for s in self.mem.sources:
                b = cl.backend(s)
                total += sum(b.count(b.conn(), t.name) for t in self.group.tables)
        for s in self.mem.sources:
            sb = cl.backend(s)
            # Only this source's units: a shard that is also a destination (a
            # change of strategy over the same shards) holds copies of other
            # sources' rows, which are not its to copy.
            mine = np.array([u.source == s for u in self.units] + [False], dtype=bool)
            # Its own connection: one read transaction (one snapshot) per table.
            sc = sb.connect()
            try:
                for t in self.group.tables:
                    ck = f"cursor:{s}:{t.name}"
                    cur = self.meta.get(self.id, ck)
                    if cur == "done":
                        continue
                    cols, pk, kx = self._table(s, t.name)
                    pkx = [cols.index(k) for k in pk]
                    where, args = "", ()  # type: tuple[str, tuple[int, ...]]
                    if ids and len(ids) == len(self.units):
                        where = qi(cols[kx]) + " BETWEEN ? AND ?"
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
                            self._write_copy(_s, d, dc, _t, _c, drows)
                            if n == 0:
                                crash_point("copy-chunk")
                            prog["copied"] += len(drows)
                        # (one metadata transaction per chunk; the last one marks the table done)
                        with self.meta.tx(mconn) as mc:
                            self.meta.put(self.id, _k, cursor, mc)
                            self.meta.put(self.id, "copied", prog["copied"], mc)
                            if extra:
                                self.meta.put(self.id, extra[0], extra[1], mc)
                        _done[0] = cursor == "done"
                        prog["scanned"] += n_scanned

                    reader = _Reader(partial(sb.scan, sc, t.name, cols, pk, where=where, args=args), cur,
                                     pkx, size, thread=sb.prefetch)
                    writer = _Writer(write)
                    try:
                        t_last = time.perf_counter()
                        for rows, last in reader:
                            keys = [r[kx] for r in rows]
                            self._check_keys(t.name, keys, rows, pkx)
                            ui = self.mem.assign(keys)
                            sel = np.flatnonzero(mine[ui])  # (ui == -1 picks the final False)
                            dix = unit_dst[ui[sel]]
                            parts = []
                            for j in np.unique(dix).tolist():
                                d = dsts[j]
                                pick = sel if len(dsts) == 1 else sel[dix == j]
                                # (this thread's connections, handed to the writer, which
                                # uses them while this thread does not)
                                with self._on(d, "destination", f"copying {t.name!r} from {s!r}"):
                                    dc = cl.backend(d).conn()
                                parts.append((d, dc, [rows[i] for i in pick.tolist()]))
                            writer.put((parts, self.meta.db.conn(), "done" if last else [rows[-1][j] for j in pkx],
                                        len(rows), snap))
                            snap = []
                            # (put waits while the writer is busy: in the steady state
                            # this loop runs at the pace of the slowest stage)
                            now = time.perf_counter()
                            if chunk is None:
                                size = _next_chunk(size, len(rows), now - t_last)
                                reader.size = size
                            t_last = now
                            if self.progress_fn is not None and now - self._last_tick >= self.progress_every:
                                writer.finish()  # (no write in flight while the callback runs)
                                el = time.perf_counter() - t0
                                rate = prog["scanned"] / el if el > 0 else 0.0
                                left = total - prog["scanned"]
                                self._tick(phase="copy", rows_copied=prog["copied"], rows_scanned=prog["scanned"],
                                           rows_total=total, rows_per_s=rate,
                                           eta_s=left / rate if rate and total else None)
                            _events.emit("migration_progress", migration_id=self.id, copied=prog["copied"],
                                         scanned=prog["scanned"], total=total if self.progress_fn is not None else None)
                        writer.finish()
                    finally:
                        writer.close()
                        reader.close()
                        sb.rollback(sc)
                    if not done[0]:  # (no rows, or the last chunk was full: the next read found none)
                        with self.meta.tx() as mc:
                            self.meta.put(self.id, ck, "done", mc)
                            if snap:
                                self.meta.put(self.id, snap[0], snap[1], mc)
            finally:
                sc.close()
        dt = time.perf_counter() - t0
        copied_now = prog["copied"] - copied0
        if prog["scanned"] and dt > 0:
            # (measured over this run only: a resume that finds the copy done
            # keeps the rates the run that copied measured)
            scan_rate, copy_rate = prog["scanned"] / dt, copied_now / dt
            with self.meta.tx() as mc:
                self.meta.put(self.id, "copy_scanned_rate", scan_rate, mc)
                self.meta.put(self.id, "copy_copied_rate", copy_rate, mc)
            self.log(f"copy done: {prog['copied']} rows copied ({prog['scanned']} scanned in {dt:.1f} s: "
                     f"{scan_rate:,.0f} rows/s scanned, {copy_rate:,.0f} rows/s copied)")
        else:
            self.log(f"copy done: {prog['copied']} rows copied (no source row scanned in this run)")

    def _write_copy(self, s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        """Write one chunk's rows for destination ``d`` (connection ``dc``):
        all at once when none of them is there yet (the fast path: SQLite
        multi-row INSERTs in one transaction, PostgreSQL one COPY); else -- a
        resumed chunk, or a primary key taken by another row -- the checked
        upsert."""
        db = self.cluster.backend(d)
        self._check_values(s, d, table, cols, rows)
        with self._on(d, "destination", f"copying {table!r} from {s!r}"):
            if db.copy_new(dc, table, cols, rows):
                return
            with db.writing(dc):
                self._check_collisions(s, d, db, dc, table, rows)
                db.upsert(dc, table, cols, rows)

    def _column_kinds(self, s: str, d: str, table: str, values: bool = False) -> dict[str, Kind] | None:
        """Between shards of different backends (SQLite and PostgreSQL): each
        column's kind on the destination, checked against the source's type
        (and, with ``values``, every value on the source); None between shards
        of one backend."""
        sb, db = self.cluster.backend(s), self.cluster.backend(d)
        if sb.kind == db.kind:
            return None
        k = f"{s}>{d}/{table}"
        kinds = self._kinds.get(k)
        try:
            if kinds is None:
                with self._on(d, "destination", f"reading the column types of {table!r}"):
                    kinds = pair_kinds(sb, sb.conn(), db, db.conn(), table)
            if values:
                with self._on(s, "source", f"checking the values of {table!r} for {d!r}"):
                    check_source_values(sb, sb.conn(), table, kinds)
        except ColumnTypeError as e:
            raise MigrationError(f"migration {self.id}: cannot copy from shard {s!r} ({sb.kind}) to shard {d!r} "
                                 f"({db.kind}): {e}") from e
        self._kinds[k] = kinds
        return kinds

    def _check_column_types(self, values: bool = False) -> None:
        for s in self.mem.sources:
            for d in self.mem.destinations:
                for t in self.group.tables:
                    self._column_kinds(s, d, t.name, values)

    def _check_values(self, s: str, d: str, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Refuse a row that the destination's columns cannot hold exactly
        (between backends; before the write, which might convert it)."""
        kinds = self._column_kinds(s, d, table)
        if kinds is None:
            return
        _, pk, _kx = self._table(s, table)
        try:
            check_rows(table, cols, pk, kinds, self.cluster.backend(d).kind, rows)
        except ColumnTypeError as e:
            raise MigrationError(f"migration {self.id}: cannot copy from shard {s!r} to shard {d!r}: {e}") from e

    # ----------------------------------------------------------- catch-up

    def _cid(self, shard: str) -> int:
        b = self.cluster.backend(shard)
        cid = b.capture_id(b.conn(), self.capture)
        if cid is None:
            raise MigrationError(f"shard {shard!r} lost change capture {self.capture!r}")
        return cid

    def catch_up(self, limit: int = 2000, upto: dict[str, int] | None = None) -> tuple[int, int]:
        """Apply one batch of captured changes per source; returns (applied, pending)."""
        cl = self.cluster
        applied = 0
        pending = 0
        for s in self.mem.sources:
            sb = cl.backend(s)
            with self._on(s, "source", "reading its captured changes"):
                sc = sb.conn()
                cid = self._cid(s)
                batch = sb.pending(sc, cid, limit)
            if upto is not None:
                batch = [r for r in batch if r[0] <= upto[s]]
            if batch:
                self._sync(s, batch)
                with self._on(s, "source", "marking captured changes applied"), sb.writing(sc):
                    sb.mark_applied(sc, [r[0] for r in batch])
                applied += len(batch)
            with self._on(s, "source", "counting its captured changes"):
                pending += sb.pending_count(sc, cid)
        return applied, pending

    def _sync(self, s: str, batch: Sequence[tuple[int, str, str]]) -> None:
        """Make the destinations' copy of every listed row match the source's now."""
        cl = self.cluster
        sb = cl.backend(s)
        by_tbl: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
        for _, tbl, pkj in batch:
            by_tbl[tbl].add(decode_pk(pkj))
        writes: dict[str, list[tuple[str, str, list[Any], list[Any]]]] = defaultdict(list)
        for tbl, pks in by_tbl.items():
            cols, pk, kx = self._table(s, tbl)
            pkx = [cols.index(k) for k in pk]
            plist = sorted(pks, key=repr)
            rows = sb.fetch(sb.conn(), tbl, cols, pk, plist)
            ui = self.mem.assign([r[kx] for r in rows]).tolist()
            want: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}
            for r, u in zip(rows, ui):
                if u >= 0 and self.units[u].source == s:  # (not another source's copy held here)
                    want[tuple(r[j] for j in pkx)] = (self.units[u].destination, r)
            for d in self.mem.destinations:
                db = cl.backend(d)
                with self._on(d, "destination", "reading rows to catch up"):
                    have = db.fetch(db.conn(), tbl, cols, pk, plist)
                hu = self.mem.assign([r[kx] for r in have]).tolist()
                dels = []
                for r, u in zip(have, hu):
                    k = tuple(r[j] for j in pkx)
                    if (u >= 0 and self.units[u].source == s and self.units[u].destination == d
                            and (k not in want or want[k][0] != d)):
                        dels.append(k)
                ups = [r for (dd, r) in want.values() if dd == d]
                if ups or dels:
                    writes[d].append((tbl, "x", ups, dels))
        for d, items in writes.items():
            db = cl.backend(d)
            with self._on(d, "destination", "applying captured changes"), db.writing() as dc:
                for tbl, _, ups, dels in items:
                    cols, pk, _kx = self._table(s, tbl)
                    if dels:
                        db.delete(dc, tbl, pk, dels)
                    if ups:
                        self._check_values(s, d, tbl, cols, ups)
                        self._check_collisions(s, d, db, dc, tbl, ups)
                        db.upsert(dc, tbl, cols, ups)
        crash_point("catch-up-batch")

    def _check_collisions(self, s: str, d: str, db: Any, dc: Any, table: str,
                          rows: Sequence[Sequence[Any]]) -> None:
        """Refuse to overwrite a destination row that is not this source's copy
        of a moving row (primary keys must be unique across the group's shards)."""
        cols, pk, kx = self._table(s, table)
        pkx = [cols.index(k) for k in pk]
        have = db.fetch(dc, table, cols, pk, [tuple(r[j] for j in pkx) for r in rows])
        if not have:
            return
        hu = self.mem.assign([r[kx] for r in have]).tolist()
        for r, u in zip(have, hu):
            if u < 0 or self.units[u].source != s or self.units[u].destination != d:
                k = tuple(r[j] for j in pkx)
                raise MigrationError(f"table {table!r}: primary key {k!r} from shard {s!r} already exists on "
                                     f"shard {d!r} for another key ({r[kx]!r}); primary keys must be unique "
                                     f"across the group's shards")

    def _catch_up_until(self, threshold: float, max_seconds: float) -> None:
        t_start = time.perf_counter()
        # The apply rate is measured, never assumed: None until a batch of
        # changes was applied (then a moving average, kept across runs); with
        # no rate, the lag in seconds is 0 when nothing is pending, else unknown.
        prev = self.meta.get(self.id, "catchup_rate")
        rate: float | None = float(prev) if prev else None
        last_log = 0.0
        while True:
            t0 = time.perf_counter()
            applied, pending = self.catch_up()
            dt = time.perf_counter() - t0
            if applied and dt > 0:
                rate = applied / dt if rate is None else 0.7 * rate + 0.3 * (applied / dt)
            est: float | None = 0.0 if pending == 0 else (pending / rate if rate else None)
            if rate is not None:
                # (the progress line names a rate: none before one is measured)
                self._tick(phase="catch-up", lag_changes=pending, lag_s=est, rows_per_s=rate)
            now = time.perf_counter()
            done = est is not None and est < threshold and applied < 2000
            if done or now - last_log > 1.0:
                with self.meta.tx() as mc:
                    self.meta.put(self.id, "lag", {"changes": pending, "seconds": est}, mc)
                    if rate is not None:
                        self.meta.put(self.id, "catchup_rate", rate, mc)
                last_log = now
            if done:
                return
            if now - t_start > max_seconds:
                raise MigrationError(f"catch-up did not get below {threshold} s of lag in {max_seconds:.0f} s "
                                     f"({pending} changes pending): writes outpace the copy; resume later")

    # ------------------------------------------------------------- verify

    def _unit_sums(self, shard: str, side: str, units: set[int], keys_of: set[int] | None = None
                   ) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, int], dict[Any, int]]]:
        """Per (table, unit): [count, checksum]; with keys_of, per-key row hashes of those units."""
        with self._on(shard, side, "verifying (reading its rows)"):
            return self._unit_sums_of(shard, side, units, keys_of)

    def _unit_sums_of(self, shard: str, side: str, units: set[int], keys_of: set[int] | None
                      ) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, int], dict[Any, int]]]:
        b = self.cluster.backend(shard)
        c = b.connect()
        sums: dict[tuple[str, int], list[int]] = {}
        per_key: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
        try:
            b.begin_read(c)
            for t in self.group.tables:
                cols, pk, kx = self._table(shard, t.name)
                pkx = [cols.index(k) for k in pk]
                for rows in b.scan_chunks(c, t.name, cols, pk, 20000):
                    ui = self.mem.assign([r[kx] for r in rows])
                    sel = np.flatnonzero(ui >= 0)
                    if sel.size == 0:
                        continue
                    hs = _row_hashes([rows[i] for i in sel])
                    for i, h in zip(sel.tolist(), hs.tolist()):
                        u = int(ui[i])
                        unit = self.units[u]
                        if u not in units or (unit.source if side == "source" else unit.destination) != shard:
                            continue
                        acc = sums.setdefault((t.name, u), [0, 0])
                        acc[0] += 1
                        acc[1] = (acc[1] + h) & 0xFFFFFFFFFFFFFFFF
                        if keys_of is not None and u in keys_of:
                            per_key[(t.name, u)][tuple(rows[i][j] for j in pkx)] = h
            b.rollback(c)
        finally:
            c.close()
        return sums, per_key

    def verify(self) -> dict[str, Any]:
        """Compare per unit (and table) the row count and an order-independent
        checksum of the rows on the source and the destination.  Resumable
        (verified units are recorded).  Keys with changes still being caught
        up are excused here and checked again under the fence.  Raises
        :class:`VerifyMismatch` listing the first differing primary keys.

        On a ``retained`` migration (after the cutover, before the cleanup):
        :meth:`verify_retained`."""
        if self.state == "retained":
            return self.verify_retained()
        state = self.meta.get(self.id, "verify") or {"verified": []}
        if len(state["verified"]) >= len(self.units):
            state = {"verified": []}  # a finished verify is never resumed: start over
        if not state["verified"]:
            # A fresh verify: forget what was applied before it, so that the
            # changes applied from now on are the ones checked under the fence.
            for s in self.mem.sources:
                b = self.cluster.backend(s)
                with self._on(s, "source", "starting a verify"), b.writing() as c:
                    b.forget_applied(c, self._cid(s))
        todo = {u.index for u in self.units} - set(state["verified"])
        t0 = time.perf_counter()
        src: dict[tuple[str, int], list[int]] = {}
        dst: dict[tuple[str, int], list[int]] = {}
        for s in self.mem.sources:
            src.update(self._unit_sums(s, "source", todo)[0])
        for d in self.mem.destinations:
            dst.update(self._unit_sums(d, "destination", todo)[0])
        bad_units = {u for (t, u) in set(src) | set(dst) if src.get((t, u), [0, 0]) != dst.get((t, u), [0, 0])}
        diffs: list[dict[str, Any]] = []
        if bad_units:
            ps: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
            pd: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
            for s in self.mem.sources:
                for k, v in self._unit_sums(s, "source", bad_units, bad_units)[1].items():
                    ps[k].update(v)
            for d in self.mem.destinations:
                for k, v in self._unit_sums(d, "destination", bad_units, bad_units)[1].items():
                    pd[k].update(v)
            # (collected after the scans: any key changed before or during them is listed)
            excused = self._changed_keys()
            for key in sorted(set(ps) | set(pd), key=repr):
                a, b2 = ps.get(key, {}), pd.get(key, {})
                for pk in sorted(set(a) | set(b2), key=repr):
                    if a.get(pk) != b2.get(pk) and (key[0], pk) not in excused:
                        diffs.append({"table": key[0], "unit": key[1], "pk": list(pk),
                                      "source": pk in a, "destination": pk in b2})
        rows = sum(v[0] for v in src.values())
        result = {"units": len(self.units), "checked": len(todo), "rows": rows,
                  "mismatches": len(diffs), "first": diffs[:10], "seconds": time.perf_counter() - t0}
        self.meta.put(self.id, "verify_result", result)
        if diffs:
            self.meta.put(self.id, "verify", {"verified": []})
            self._set("verify-failed")
            _events.emit("verify_mismatch", migration_id=self.id, count=len(diffs))
            raise VerifyMismatch(self.id, diffs)
        self.meta.put(self.id, "verify", {"verified": sorted(set(state["verified"]) | todo)})
        self.log(f"verify: {len(todo)} unit(s), {rows} rows, 0 mismatches ({result['seconds']:.2f} s)")
        return result

    def verify_retained(self) -> dict[str, Any]:
        """After the cutover, before the cleanup (state ``retained``): compare
        the retained copies on the old sources with the rows on their owners,
        row by row, for every moved unit.  The retained copy is the rows as
        they were at the cutover; the owners take writes since, and each of
        those is in the owner's reverse capture (started before the cutover
        committed).  So a row that differs (or exists on one side only) is
        ``changed_since_cutover`` when its key was written on the owner after
        the cutover, and a mismatch otherwise: equality is promised only for
        rows nobody wrote since.  Changes nothing but the recorded verify
        result (the migration stays ``retained``); raises
        :class:`VerifyMismatch` listing the first mismatches."""
        state = self.state
        if state != "retained":
            raise MigrationError(f"migration {self.id} is {state}: the retained copies are compared only while "
                                 f"it is retained (after the cutover, before the cleanup)")
        t0 = time.perf_counter()
        every = {u.index for u in self.units}
        ps: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
        pd: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
        for s in self.mem.sources:
            for k, v in self._unit_sums(s, "source", every, every)[1].items():
                ps[k].update(v)
        for d in self.mem.destinations:
            for k, v in self._unit_sums(d, "destination", every, every)[1].items():
                pd[k].update(v)
        # (listed after the scans: a write committed before a scan read its row is listed)
        written: set[tuple[str, tuple[Any, ...]]] = set()
        cap = self.id + ":reverse"
        for d in self.mem.destinations:
            b = self.cluster.backend(d)
            with self._on(d, "destination", "listing the keys written since the cutover"):
                cid = b.capture_id(b.conn(), cap)
                if cid is None:
                    raise MigrationError(f"migration {self.id}: shard {d!r} has no capture {cap!r}, so the rows "
                                         f"written there since the cutover are unknown: nothing to compare")
                written.update((tbl, decode_pk(pk)) for tbl, pk in b.all_keys(b.conn(), cid))
        diffs: list[dict[str, Any]] = []
        changed = 0
        for key in sorted(set(ps) | set(pd), key=repr):
            a, b2 = ps.get(key, {}), pd.get(key, {})
            for pk in sorted(set(a) | set(b2), key=repr):
                if a.get(pk) == b2.get(pk):
                    continue
                if (key[0], pk) in written:
                    changed += 1
                else:
                    diffs.append({"table": key[0], "unit": key[1], "pk": list(pk),
                                  "source": pk in a, "destination": pk in b2})
        rows = sum(len(v) for v in ps.values())
        result = {"retained": True, "units": len(self.units), "checked": len(every), "rows": rows,
                  "changed_since_cutover": changed, "mismatches": len(diffs), "first": diffs[:10],
                  "seconds": time.perf_counter() - t0}
        self.meta.put(self.id, "verify_result", result)
        if diffs:
            _events.emit("verify_mismatch", migration_id=self.id, count=len(diffs))
            raise VerifyMismatch(self.id, diffs)
        self.log(f"verify (retained copies against their owners): {rows} rows in {len(every)} unit(s), "
                 f"{changed} changed since the cutover, 0 mismatches ({result['seconds']:.2f} s)")
        return result

    def _changed_keys(self) -> set[tuple[str, tuple[Any, ...]]]:
        out = set()
        for s in self.mem.sources:
            b = self.cluster.backend(s)
            c = b.conn()
            with self._on(s, "source", "listing its changed keys"):
                for tbl, pk in b.all_keys(c, self._cid(s)):
                    out.add((tbl, decode_pk(pk)))
        return out

    def _compare(self, s: str, keys: dict[str, list[tuple[Any, ...]]]) -> list[dict[str, Any]]:
        """Rows of source ``s`` (by table and primary key) that differ from
        their destination copy right now (or exist where they should not)."""
        cl = self.cluster
        sb = cl.backend(s)
        diffs: list[dict[str, Any]] = []
        for tbl, pks in keys.items():
            pks = sorted(set(pks), key=repr)
            cols, pk, kx = self._table(s, tbl)
            pkx = [cols.index(k) for k in pk]
            with self._on(s, "source", "reading changed rows to compare"):
                srows = sb.fetch(sb.conn(), tbl, cols, pk, pks)
            su = self.mem.assign([r[kx] for r in srows]).tolist()
            want = {tuple(r[j] for j in pkx): (self.units[u].destination, tuple(r))
                    for r, u in zip(srows, su) if u >= 0 and self.units[u].source == s}
            # Rows the source holds outside the units need no look at the
            # destinations (the shard key is immutable); members and deleted
            # rows do.
            present = {tuple(r[j] for j in pkx) for r in srows}
            look = [k for k in pks if k in want or k not in present]
            if not look:
                continue
            for d in self.mem.destinations:
                db = cl.backend(d)
                with self._on(d, "destination", "reading changed rows to compare"):
                    drows = db.fetch(db.conn(), tbl, cols, pk, look)
                du = self.mem.assign([r[kx] for r in drows]).tolist()
                have = {tuple(r[j] for j in pkx): tuple(r) for r, u in zip(drows, du)
                        if u >= 0 and self.units[u].source == s and self.units[u].destination == d}
                for k in set(have) | {k for k, (dd, _) in want.items() if dd == d}:
                    w = want.get(k)
                    if w is None or w[0] != d or have.get(k) != w[1]:
                        diffs.append({"table": tbl, "pk": list(k), "source": s, "destination": d})
        return diffs

    def _settle(self, small: int = 64, rounds: int = 10) -> None:
        """Before the fence: check, live, the rows changed since the full
        verify and forget them once equal, so that the check under the fence
        only covers the last few changes (the pause does not grow with the
        unit).  A difference is excused while the key has a pending change."""
        for _ in range(rounds):
            total = 0
            for s in self.mem.sources:
                b = self.cluster.backend(s)
                with self._on(s, "source", "checking the rows changed since the verify"):
                    c = b.conn()
                    cid = self._cid(s)
                    while True:
                        rows = b.dirty_rows(c, cid, 5000)
                        if len(rows) < small:
                            break
                        total += len(rows)
                        keys: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
                        for _, tbl, pk in rows:
                            keys[tbl].append(decode_pk(pk))
                        diffs = self._compare(s, keys)
                        if diffs:
                            pend = {(t, decode_pk(p)) for t, p in b.pending_keys(c, cid)}
                            real = [d for d in diffs if (d["table"], tuple(d["pk"])) not in pend]
                            if real:
                                self.meta.put(self.id, "verify_result", {"mismatches": len(real), "first": real[:10]})
                                self.meta.put(self.id, "verify", {"verified": []})
                                self._set("verify-failed")
                                raise VerifyMismatch(self.id, real)
                        with b.writing(c):
                            b.forget(c, [r[0] for r in rows])
                        if len(rows) < 5000:
                            break
            self.catch_up(limit=5000)
            if total < small * max(1, len(self.mem.sources)):
                return

    def _final_check(self) -> list[dict[str, Any]]:
        """Under the fence, after the drain: every row changed since the full
        verify (and not settled since) must be identical on its destination
        (or absent on both)."""
        diffs: list[dict[str, Any]] = []
        for s in self.mem.sources:
            sb = self.cluster.backend(s)
            keys: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
            with self._on(s, "source", "listing the rows changed since the verify"):
                for tbl, pk in sb.dirty(sb.conn(), self._cid(s)):
                    keys[tbl].append(decode_pk(pk))
            diffs.extend(self._compare(s, keys))
        return diffs

    # ---------------------------------------------------- fence and cutover

    def _set_units(self, shard: str, role: str, frm: Sequence[str], to: str) -> None:
        b = self.cluster.backend(shard)
        with b.writing() as c:
            b.set_unit_state(c, self.id, role, frm, to)
            b.bump_epoch(c)

    def _wait_turn(self) -> None:
        """Migrations of one group cut over in the order they were created: a
        migration planned on top of another one's target waits (with a clear
        error; the state stays ``catching-up``) until that one has cut over."""
        cur = self.meta.topology(self.group.name)
        if cur is None or int(cur[0]) == self.old.version:
            return
        ahead = self.info.get("after")
        rec = self.meta.migration(ahead) if ahead else None
        if rec is not None and rec["state"] not in COMMITTED and rec["state"] != "rolled-back":
            raise MigrationError(f"migration {self.id} is copied, caught up and verified; its cutover waits for "
                                 f"migration {ahead} (state {rec['state']}), which cuts over to version "
                                 f"{self.old.version} first: resume this one after it")
        raise MigrationError(f"group {self.group.name!r} is at version {cur[0]}, but this migration was planned "
                             f"from version {self.old.version}: roll it back and plan again")

    def _freeze_and_commit(self) -> None:
        cl = self.cluster
        t0 = time.time()
        upto: dict[str, int] = {}
        for s in self.mem.sources:
            b = cl.backend(s)
            with self._on(s, "source", "freezing its units"):
                self._set_units(s, "source", ("copying",), "frozen")
                upto[s] = b.position(b.conn())
        self.meta.put(self.id, "frozen_at", self.meta.get(self.id, "frozen_at") or t0)
        timings = {"freeze": time.time() - t0}
        crash_point("after-freeze")
        # Drain: every change committed before the freeze (ids <= upto).
        while True:
            applied, _ = self.catch_up(limit=5000, upto=upto)
            if applied == 0:
                break
        timings["drain"] = time.time() - t0
        diffs = self._final_check()
        timings["final_check"] = time.time() - t0
        if diffs:
            for s in self.mem.sources:
                self._set_units(s, "source", ("frozen",), "copying")
            # (the writers are released: the next freeze is timed from its own start)
            self.meta.put(self.id, "frozen_at", None)
            self.meta.put(self.id, "verify_result", {"mismatches": len(diffs), "first": diffs[:10], "final": True})
            self.meta.put(self.id, "verify", {"verified": []})
            self._set("verify-failed")
            _events.emit("verify_mismatch", migration_id=self.id, count=len(diffs))
            raise VerifyMismatch(self.id, diffs)
        for d in self.mem.destinations:
            b = cl.backend(d)
            with self._on(d, "destination", "starting the reverse capture"), b.writing() as c:
                b.start_capture(c, self.id + ":reverse", self.group.name)
                b.bump_epoch(c)  # (clients learn that the group has a capture here)
        crash_point("before-commit")
        meta = self.meta
        with meta.tx() as c:
            cur = c.execute("SELECT version FROM topology WHERE grp = ?", (self.group.name,)).fetchone()
            if cur is not None and int(cur[0]) != self.old.version:
                raise MigrationError(f"group {self.group.name!r} moved to version {cur[0]} meanwhile; "
                                     f"expected {self.old.version}")
            meta.set_topology(c, self.group.name, self.new.version, self.new.to_json())
            meta.set_state(self.id, "cutover", c=c)
            meta.put(self.id, "committed_at", time.time(), c)
            timings["commit"] = time.time() - t0
            meta.put(self.id, "fence_timings", timings, c)
        self.log(f"cutover committed: group {self.group.name} is at version {self.new.version}")
        crash_point("after-commit")

    def _reconcile(self) -> None:
        """Bring the shards' ownership records in line with the metadata commit.

        The write pause (freeze to release) is recorded from the two events:
        the freeze time, and the time this call released the sources' units
        (``released_at``).  A re-run after a crash that came after the
        release keeps the recorded figure, never "now minus the freeze"."""
        for d in self.mem.destinations:
            with self._on(d, "destination", "taking ownership of the moved units"):
                self._set_units(d, "destination", ("importing",), "owned")
        crash_point("after-destination-owned")
        held = False
        for s in self.mem.sources:
            b = self.cluster.backend(s)
            with self._on(s, "source", "reading its unit records"):
                held = held or any(r[1] == self.id and r[3] == "source" and r[4] in ("copying", "frozen")
                                   for r in b.unit_rows(b.conn(), self.group.name))
        for s in self.mem.sources:
            with self._on(s, "source", "releasing the moved units"):
                self._set_units(s, "source", ("copying", "frozen"), "moved")
        released = time.time()
        crash_point("after-sources-moved")
        frozen_at = self.meta.get(self.id, "frozen_at")
        if held:
            pause = None if frozen_at is None else released - float(frozen_at)
            with self.meta.tx() as c:
                self.meta.put(self.id, "released_at", released, c)
                self.meta.put(self.id, "unit_pause_seconds", pause, c)
            note = "unknown" if pause is None else f"{pause:.3f} s"
        elif self.meta.get(self.id, "released_at") is None:
            # Released by an executor that was killed before it recorded the
            # time: the figure is unknown (not the time since the freeze).
            self.meta.put(self.id, "unit_pause_seconds", None)
            note = "not recorded (the executor that released the units was killed before recording it)"
        else:
            pause = self.meta.get(self.id, "unit_pause_seconds")
            note = "unknown" if pause is None else f"{float(pause):.3f} s (recorded at the release)"
        for s in self.mem.sources:
            b = self.cluster.backend(s)
            with self._on(s, "source", "dropping its change capture"), b.writing() as c:
                b.drop_capture(c, self.capture)
        crash_point("after-reconcile")
        self.log(f"ownership reconciled; write pause {note}")

    def _retain(self) -> None:
        """``cutover`` -> ``retained``; for a reverse migration, in the same
        metadata transaction, its forward migration becomes ``rolled-back``
        (never one without the other)."""
        fwd = self.info.get("reverse_of")
        with self.meta.tx() as c:
            self.meta.set_state(self.id, "retained", c=c)
            if fwd:
                # A completed rollback: the forward migration's copy is the retained one now.
                self.meta.set_state(fwd, "rolled-back", c=c)
        self.log("state -> retained" + (f"; migration {fwd} is rolled-back" if fwd else ""))
        crash_point("after-retained")

    def _info(self) -> dict[str, Any]:
        """The recorded ``info`` (another executor may have changed it)."""
        rec = self.meta.migration(self.id)
        assert rec is not None
        return dict(rec["info"])

    def _reverse_unfinished(self) -> bool:
        """Whether this (forward) migration has a reverse migration that has
        not reached ``retained`` yet."""
        rev_id = self._info().get("reverse")
        if not rev_id:
            return False
        rec = self.meta.migration(rev_id)
        return rec is not None and rec["state"] not in ("retained", "cleaning", "cleaned")

    # ---------------------------------------------------------- rollback

    def rollback(self) -> str:
        """Undo the migration (see :meth:`_rollback`); a database error no
        step named is a :class:`MigrationError` naming the rollback."""
        try:
            return self._rollback()
        except Exception as e:
            err = self._db_error(e, "rolling back")
            if err is not e:
                raise err from e
            raise

    def _rollback(self) -> str:
        """Undo the migration.

        Before the cutover: unfreeze the sources, drop the captures, delete the
        destination copies.  After it (until cleanup): the changes the
        destinations accepted since the cutover are applied back to the
        sources by a reverse migration to a new version that routes like the
        old one; ownership returns at its own cutover, and this migration
        becomes ``rolled-back`` in the metadata transaction that makes the
        reverse one ``retained``.  Call again after any crash: it resumes the
        reverse migration."""
        st = self.state
        if st in ("cleaning", "cleaned"):
            raise MigrationError(f"migration {self.id} is {st}: the source copy is gone, rollback is impossible")
        if st == "rolled-back":
            if self._reverse_unfinished():
                # (recorded by an older executor before its reverse finished: finish it)
                rev = Migration(self.cluster, self._info()["reverse"])
                rev.log_fn = self.log_fn
                rev.run()
            return self.state
        later = [m["id"] for m in self.meta.migrations(self.group.name)
                 if m["state"] not in DONE and m["id"] != self.id and m["info"].get("after") == self.id
                 and m["id"] != self.info.get("reverse")]
        if later:
            raise MigrationError(f"migration {self.id} cannot be rolled back while migration(s) "
                                 f"{', '.join(later)} planned on top of it hold the group: roll those back "
                                 f"(or finish them) first")
        # (``committed_at`` is written by the cutover's metadata transaction)
        committed = self.meta.get(self.id, "committed_at") is not None or st in COMMITTED
        if st in ("retained", "cutover") and not self.info.get("reverse"):
            top = self.meta.topology(self.group.name)
            if top is not None and int(top[0]) != self.new.version:
                raise MigrationError(f"migration {self.id} cannot be rolled back: group {self.group.name!r} has "
                                     f"moved on to version {top[0]} since its cutover (version "
                                     f"{self.new.version}); a rollback would undo the later migration too")
        if committed:
            if st == "cutover":
                self._reconcile()
                self._retain()
            rev_id = self.info.get("reverse") or f"{self.id}-rollback"
            if self.meta.migration(rev_id) is None:
                cur = self.cluster.refresh(self.group.name)
                back = self.old.with_version(cur.version + 1)
                units = [Unit.from_dict(dict(u.to_dict(), source=u.destination, destination=u.source))
                         for u in self.units]
                # The group is held by this migration: mark it rolling back
                # (and name its reverse migration) first, in one transaction.
                with self.meta.tx() as c:
                    r = c.execute("SELECT info FROM migrations WHERE id = ?", (self.id,)).fetchone()
                    info = dict(json.loads(r[0]), reverse=rev_id)
                    c.execute("UPDATE migrations SET info = ? WHERE id = ?", (json.dumps(info), self.id))
                    self.meta.set_state(self.id, "rolling-back", c=c)
                self.info["reverse"] = rev_id
                self.log("state -> rolling-back")
                crash_point("rollback-marked")
                rev = self._create_reverse(rev_id, cur, back, units)
                crash_point("rollback-reverse-created")
            else:
                if self.state != "rolling-back":
                    self._set("rolling-back")
                rev = Migration(self.cluster, rev_id)
            rev.log_fn = self.log_fn
            rev.run()
            return self.state
        # Before the cutover.
        for s in self.mem.sources:
            with self._on(s, "source", "unfreezing its units for the rollback"):
                self._set_units(s, "source", ("frozen",), "copying")
        self.meta.put(self.id, "frozen_at", None)
        self._set("rolling-back")
        crash_point("rollback-before-cutover-marked")
        for shard in self._involved():
            b = self.cluster.backend(shard)
            with self._on(shard, "source" if shard in self.mem.sources else "destination",
                          "dropping its captures and unit records for the rollback"):
                # The system tables in a transaction of their own (a shard the
                # run never prepared may lack them); then the epoch before any
                # table: a client write holds the epoch row (FOR SHARE) before
                # it touches a table, so taking the row first waits for the
                # writes in flight and then holds off new ones.  A table lock
                # taken first (the index ensure_system creates, a dropped
                # trigger) deadlocked with such a write on PostgreSQL: the
                # write held the row and waited for the table, the rollback
                # held the table and waited for the row.
                with b.writing() as c:
                    b.ensure_system(c)
                with b.writing() as c:
                    b.bump_epoch(c)
                    b.drop_capture(c, self.capture)
                    b.drop_capture(c, self.id + ":reverse")
                    b.delete_units(c, self.id)
            crash_point("rollback-before-cutover-shard")
        self._delete_members("destination")
        crash_point("rollback-before-cutover-deleted")
        self._set("rolled-back")
        return "rolled-back"

    def _create_reverse(self, rev_id: str, cur: Router, back: Router, units: list[Unit]) -> Migration:
        now = time.time()
        info = {"kind": "rollback", "reverse_of": self.id, "skip_copy": True, "capture": self.id + ":reverse"}
        with self.meta.tx() as c:
            c.execute("INSERT INTO migrations VALUES (?, ?, 'preparing', 'rollback', ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                      (rev_id, self.group.name, cur.version, back.version, cur.to_json(), back.to_json(),
                       json.dumps([u.to_dict() for u in units]), json.dumps(info), now, now))
        return Migration(self.cluster, rev_id)

    # ----------------------------------------------------------- cleanup

    def _delete_members(self, side: str, chunk: int = 5000) -> int:
        cl = self.cluster
        shards = self.mem.sources if side == "source" else self.mem.destinations

        def holder(u: int) -> str:  # the shard on this side of unit u
            return self.units[u].source if side == "source" else self.units[u].destination

        total = 0
        what = "the retained copy" if side == "source" else "the copy"
        for sh in shards:
            b = cl.backend(sh)
            for t in self.group.tables:
                with self._on(sh, side, f"deleting {what} of {t.name!r}"):
                    c = b.conn()
                    if not b.has_table(c, t.name):
                        continue
                    cols, pk, kx = self._table(sh, t.name)
                    pkx = [cols.index(k) for k in pk]
                    for rows in b.scan_chunks(c, t.name, cols, pk, chunk):
                        ui = self.mem.assign([r[kx] for r in rows]).tolist()
                        dels = [tuple(r[j] for j in pkx) for r, u in zip(rows, ui) if u >= 0 and holder(u) == sh]
                        if dels:
                            with b.writing(c):
                                b.delete(c, t.name, pk, dels)
                            total += len(dels)
                            crash_point("cleanup-chunk")
        return total

    def cleanup(self) -> int:
        """Delete the retained source copy of the moved rows (in chunks) and
        stop the reverse capture: rollback is impossible afterwards.

        A migration in ``cutover`` (a crash after its metadata commit) is
        reconciled first.  A ``rolled-back`` migration's cleanup is its
        reverse migration's: the copy the rollback left on the old
        destinations is deleted and the old sources' reverse capture is
        stopped.  Returns the number of rows deleted."""
        st = self.state
        if st == "rolled-back":
            rev_id = self._info().get("reverse")
            if not rev_id or self.meta.migration(rev_id) is None:
                return 0  # (rolled back before its cutover: nothing was retained)
            if self._reverse_unfinished():
                self.rollback()
            rev = Migration(self.cluster, rev_id)
            rev.log_fn = self.log_fn
            return rev.cleanup()
        if st == "cleaned":
            return 0  # (idempotent: a crash may have come after the last step)
        if st == "cutover":
            self.run()  # (reconciles: cutover -> retained)
            st = self.state
        if st not in ("retained", "cleaning"):
            raise MigrationError(f"migration {self.id} is {st}: only a retained migration can be cleaned up; "
                                 f"{self.next_step(st)}")
        try:
            self._set("cleaning")
            crash_point("cleanup-marked")
            n = self._delete_members("source")
            crash_point("cleanup-deleted")
            for d in self.mem.destinations:
                b = self.cluster.backend(d)
                with self._on(d, "destination", "dropping its reverse capture"), b.writing() as c:
                    b.drop_capture(c, self.id + ":reverse")
            crash_point("cleanup-capture-dropped")
            self._set("cleaned")
        except Exception as e:
            err = self._db_error(e, "cleaning up")
            if err is not e:
                raise err from e
            raise
        self.log(f"cleanup: {n} retained rows deleted")
        return n

    def next_step(self, state: str | None = None) -> str:
        """What to run next, for an operator (the CLI's words)."""
        st = self.state if state is None else state
        rec = self.meta.migration(self.id)
        assert rec is not None
        info = rec["info"]
        fwd = info.get("reverse_of")
        if fwd:  # a reverse migration (a rollback of ``fwd``)
            if st in ("retained", "cleaning"):
                return (f"run `cleanup {fwd}` (deletes the copy the rollback left on the old destinations "
                        f"and stops the reverse capture)")
            if st == "cleaned":
                return "nothing: the rollback is complete and cleaned up"
            return f"run `rollback {fwd}` (or `resume {self.id}`) to finish the rollback"
        if st == "rolled-back":
            rev = info.get("reverse")
            rrec = self.meta.migration(rev) if rev else None
            if rrec is None or rrec["state"] == "cleaned":
                return "nothing: the migration is rolled back" + (" and cleaned up" if rrec else "")
            if rrec["state"] in ("retained", "cleaning"):
                return (f"run `cleanup {self.id}` (deletes the copy the rollback left on the old destinations "
                        f"and stops the reverse capture)")
            return f"run `rollback {self.id}` to finish the rollback"
        if st == "rolling-back":
            return f"run `rollback {self.id}` (or `resume {self.id}`) to finish the rollback"
        if st in ("retained", "cleaning"):
            return (f"run `cleanup {self.id}` after the retention window, or `rollback {self.id}`"
                    if st == "retained" else f"run `cleanup {self.id}` to finish the cleanup")
        if st == "cleaned":
            return "nothing: the migration is complete"
        if st == "cutover":
            return f"run `resume {self.id}` (or `cleanup {self.id}`, which reconciles first)"
        return f"run `resume {self.id}` to finish it (then `cleanup {self.id}`), or `rollback {self.id}`"

    # ------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        rec = self.meta.migration(self.id)
        assert rec is not None
        prog = self.meta.progress(self.id)
        out = {
            "id": self.id, "group": rec["group"], "state": rec["state"], "error": rec["error"],
            "kind": rec["kind"], "from_version": rec["from_version"], "to_version": rec["to_version"],
            "units": len(self.units), "sources": self.mem.sources, "destinations": self.mem.destinations,
            "rows_copied": prog.get("copied", 0),
            # (measured rates only: null when nothing was measured)
            "copy_rows_scanned_per_s": prog.get("copy_scanned_rate"),
            "copy_rows_copied_per_s": prog.get("copy_copied_rate"),
            "lag": prog.get("lag"), "catchup_changes_per_s": prog.get("catchup_rate"),
            "verify": prog.get("verify_result"), "write_pause_seconds": prog.get("unit_pause_seconds"),
            "frozen_at": prog.get("frozen_at"), "released_at": prog.get("released_at"),
            "info": rec["info"], "captures": self.captures(), "next": self.next_step(rec["state"]),
        }
        return out

    def captures(self) -> list[dict[str, Any]]:
        """This migration's change captures that still exist on a shard, with
        their pending (not yet applied) change rows: a capture nobody
        consumes shows here as a growing ``pending``."""
        out = []
        names = [(s, self.capture) for s in self.mem.sources] + \
                [(d, self.id + ":reverse") for d in self.mem.destinations]
        for shard, name in names:
            b = self.cluster.backend(shard)
            try:
                c = b.conn()
                cid = b.capture_id(c, name)
                if cid is None:
                    continue
                out.append({"shard": shard, "capture": name, "pending": b.pending_count(c, cid)})
            except Exception as e:  # noqa: BLE001 - status reports, never fails on one shard
                if not _is_db_error(e):
                    raise
                if "no such table" in str(e) or "does not exist" in str(e):
                    continue  # (a shard never prepared: no capture)
                out.append({"shard": shard, "capture": name, "error": describe_fault(e)})
        return out


def _base(cur: Router, holders: Sequence[dict[str, Any]]) -> tuple[Router, str | None]:
    """The router a new migration of the group starts from: the target of the
    newest holder that has not cut over (and its id), else the current one."""
    pend = [h for h in holders if h["state"] not in COMMITTED and h["state"] != "rolling-back"
            and int(h["to_version"]) > cur.version]
    if not pend:
        return cur, None
    top = max(pend, key=lambda h: int(h["to_version"]))
    return load_router(json.loads(top["new_router"])), str(top["id"])


def check_new_shards(cluster: Cluster, new_shards: dict[str, tuple[str, list[str]]] | None
                     ) -> dict[str, tuple[str, list[str]]]:
    """Shards to register (id -> (primary, replicas)), validated like the
    cluster file's (ValueError); MigrationError for an id that the shard map
    already has with another primary."""
    from .cluster import _check_shard_id, _check_url

    add: dict[str, tuple[str, list[str]]] = {}
    for sid, (url, reps) in (new_shards or {}).items():
        try:
            _check_shard_id(sid, "--add")
            for i, u in enumerate([url, *reps]):
                _check_url(u, "--primary" if i == 0 else "--replica")
        except ValueError as e:
            raise ValueError(str(e).replace("cluster document: ", "", 1)) from None
        add[sid] = (url, [r for r in reps if r != url])
    smap = cluster.shard_map()
    for sid, (url, _) in add.items():
        if sid in smap and smap[sid][0] != url:
            raise MigrationError(f"shard {sid!r} is already in the shard map with primary {smap[sid][0]!r}, "
                                 f"not {url!r}: pick another shard id, or move the shard with Cluster.failover")
    return add


def check_start(cluster: Cluster, group: str | None, new_router: Router,
                new_shards: dict[str, tuple[str, list[str]]] | None = None) -> dict[str, tuple[str, list[str]]]:
    """The checks a start runs before it records anything (a dry run runs
    the same ones, so it fails the same way): every shard of the new router
    is in the shard map or in ``new_shards``, every shard of the pending
    and the new router can be reached (a new SQLite file is not created:
    its folder must exist and be writable), and every shard that owns keys
    now has every table of the group.  Returns the shards of
    ``new_shards`` that are not in the shard map yet (validated like the
    cluster file's); MigrationError otherwise, naming the command to run."""
    from .cluster import open_backend

    add = check_new_shards(cluster, new_shards)
    smap = cluster.shard_map()
    conf = cluster.file or "CLUSTER"
    for s in new_router.shards:
        if s in smap or s in add:
            continue
        seed = cluster._seed_shards.get(s)
        if seed is not None:
            reps = "".join(f" --replica {r}" for r in seed[1])
            raise MigrationError(
                f"the new router names shard {s!r}, which is in the cluster file but not in the metadata store's "
                f"shard map: run `shardhash migrate init --config {conf}` (it registers the cluster file's new "
                f"shards), or start with `shardhash migrate start --config {conf} --add {s} "
                f"--primary {seed[0]}{reps}`")
        raise MigrationError(
            f"the new router names shard {s!r}, which is not in the shard map: register it as you start, "
            f"with `shardhash migrate start --config {conf} --add {s} --primary URL [--replica URL ...]`")
    old = pending_router(cluster, group)
    g = cluster.group(group)
    tables = g.tables
    owners = cluster.router(g.name).shards  # (the current topology: a pending migration's targets
    #                                         get their tables when it prepares)
    for s in sorted(set(old.shards) | set(new_router.shards)):
        url = add[s][0] if s in add else smap[s][0]
        b = open_backend(url, cluster.base_dir)
        try:
            if b.kind == "sqlite" and not os.path.exists(b.path):
                parent = os.path.dirname(os.path.abspath(b.path))
                if not os.path.isdir(parent):
                    raise ConnectionError(f"cannot open {b.path}: folder {parent} does not exist")
                if not os.access(parent, os.W_OK | os.X_OK):
                    raise ConnectionError(f"cannot create {b.path}: folder {parent} is not writable")
            else:
                c = b.connect()
                try:
                    c.execute("SELECT 1").fetchone()
                    # (a shard that owns keys now needs every table of the group)
                    missing = [t.name for t in tables if s in owners and not b.has_table(c, t.name)]
                finally:
                    c.close()
                if missing:
                    raise MigrationError(f"shard {s!r} owns keys of group {g.name!r} but has no table "
                                         f"{missing[0]!r}: nothing was started; create it there (or restore "
                                         f"it) first")
        except MigrationError:
            raise
        except Exception as e:
            if not _is_db_error(e):
                raise
            where = "its --primary URL" if s in add else "its primary in the metadata store's shard map"
            raise MigrationError(f"shard {s!r} cannot be reached ({type(e).__name__}: {e}): nothing was "
                                 f"started; check {where}, or bring the database up") from None
    return {s: v for s, v in add.items() if s not in smap}


def pending_router(cluster: Cluster, group: str | None = None) -> Router:
    """The router to plan a new migration of ``group`` from: the current
    topology, or the target of the newest migration that has not cut over
    yet (a migration planned from it cuts over after that one)."""
    g = cluster.group(group)
    cur = cluster.refresh(g.name)
    return _base(cur, [m for m in cluster.metadata.migrations(g.name) if m["state"] not in DONE])[0]


def _disjoint_filters(a: Unit, b: Unit, same_hash: bool = True) -> bool:
    """Whether no key can pass both units' own filters.  Hash filters
    (intervals, buckets) compare only when both migrations hash keys with
    the same hasher (``same_hash``)."""
    if same_hash and a.kind in ("range", "ranges") and b.kind in ("range", "ranges"):
        ia, ib = sorted(a.intervals()), sorted(b.intervals())
        i = j = 0
        while i < len(ia) and j < len(ib):
            if ia[i][1] < ib[j][0]:
                i += 1
            elif ib[j][1] < ia[i][0]:
                j += 1
            else:
                return False
        return True
    if a.kind == b.kind == "ids":
        return a.hi < b.lo or b.hi < a.lo
    if same_hash and a.kind == b.kind == "buckets" and a.modulus == b.modulus:
        return not (set(a.buckets) & set(b.buckets))
    return False


def _overlap(held: Sequence[Unit], new: Sequence[Unit], same_hash: bool = True) -> tuple[Unit, Unit] | None:
    """A pair (held unit, new unit) that may share a key, or None.

    Membership is exact (a key belongs to a unit when the unit's old router
    places it on the unit's source and its new router on its destination).
    The new migration is planned from the held one's target (or a later
    one's, which agrees with it on the held keys), where a key of a held
    unit lives on that unit's destination: a new unit can only hold it when
    it moves keys *from* that destination, and when their own filters (hash
    ranges, bucket sets, id ranges) intersect.  Anything not provably
    disjoint counts as overlapping."""
    for a in held:
        for b in new:
            if b.source != a.destination:
                continue
            if not _disjoint_filters(a, b, same_hash):
                return a, b
    return None


def active_migrations(cluster: Cluster) -> list[str]:
    return [m["id"] for m in cluster.metadata.migrations() if m["state"] in ACTIVE + COMMITTED[:1]]


def walk_watermark(cluster: Cluster, group: str | None = None, *, batch: int | None = None,
                   max_batches: int | None = None, log: Callable[[str], None] | None = None,
                   **run_kw: Any) -> Router:
    """Run a watermark resharding to its end.

    The group's router must be a :class:`~shardhash.routing.WatermarkRouter`
    (ids at or above K follow the new layout, so new ids go there at once).
    Each batch ``[K - batch, K)`` (``batch`` defaults to the total number of
    shards) is a migration of its own -- copied, caught up, verified, fenced
    and committed as a router with the watermark lowered, version + 1 --
    then its retained copy is cleaned up.  When K is at or below the lowest
    id of every table, a last migration fences the ids below K and the
    topology becomes the new router itself.  Resumable: an interrupted
    batch is finished first.  Returns the group's router at the end (or after
    ``max_batches`` batches)."""
    from ..routing import WatermarkRouter

    g = cluster.group(group)
    done = 0
    for rec in cluster.metadata.migrations(g.name):
        if rec["state"] not in DONE and rec["info"].get("kind") == "watermark":
            m = Migration(cluster, rec["id"])
            m.log_fn = log
            m.run(**run_kw)
            if m.state == "retained":
                m.cleanup()
    while max_batches is None or done < max_batches:
        cur = cluster.refresh(g.name)
        if not isinstance(cur, WatermarkRouter):
            return cur
        k = cur.watermark
        j = int(batch) if batch is not None else len(cur.shards)
        if j < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        lowest: int | None = None
        for s in cur.shards:
            b = cluster.backend(s)
            c = b.conn()
            for t in g.tables:
                if b.has_table(c, t.name):
                    v = b.min_key(c, t.name, t.key)
                    if v is not None and (lowest is None or v < lowest):
                        lowest = int(v)
        pairs = [(s, d) for s in cur.old.shards for d in cur.new.shards if s != d]
        lo64 = -(1 << 63)
        if lowest is None or k <= lowest:
            new: Router = cur.new.with_version(cur.version + 1)
            lo, hi = lo64, k - 1
        else:
            new = cur.lowered(max(k - j, lo64), version=cur.version + 1)
            lo, hi = max(k - j, lo64), k - 1
        units = [Unit(i, s, d, "ids", lo, hi) for i, (s, d) in enumerate(pairs)]
        m = Migration.create(cluster, g.name, new, units=units, info={"kind": "watermark"})
        m.log_fn = log
        m.run(**run_kw)
        m.cleanup()
        done += 1
    return cluster.refresh(g.name)
