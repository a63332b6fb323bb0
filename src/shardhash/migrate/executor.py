"""The migration executor: prepare, copy, catch up, verify, fence, cut over,
retain, clean up, roll back -- each step idempotent and resumable.

See docs/migrate.md for the protocol, its states and invariants::

    m = Migration.create(cluster, "users", new_router)
    m.run()                  # to 'retained'; call again after any crash
    m.cleanup()              # after the retention window (or m.rollback())

:class:`Migration` holds a migration's record and drives it from state to
state (:meth:`Migration.run`); each phase lives in a module of its own under
:mod:`shardhash.migrate.phases` (prepare, copy, catch-up, verify, cutover,
rollback, cleanup), the start's checks in :mod:`shardhash.migrate.start`,
the errors in :mod:`shardhash.migrate.errors`.  Every statement on the
metadata store is in :mod:`shardhash.migrate.metadata`; what a shard must
offer is :class:`shardhash.migrate.backend.ShardBackend`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from ..routing import Router, load_router
from . import control, preflight
from .cluster import Cluster
from .coltypes import Kind
from .control import MigrationPaused
from .errors import FenceAborted, MigrationError, VerifyMismatch, crash_point, describe_fault, is_db_error
from .metadata import DONE
from .phases import catchup, cleanup, columns, copy, cutover, prepare, rollback, status, verify, workers
from .phases import cutover as cutover_phase
from .phases.copy import COPY_CHUNK, COPY_CHUNK_MAX, COPY_CHUNK_MIN, COPY_CHUNK_SECONDS
from .start import _base as _base  # (these three: their old home)
from .start import _disjoint_filters as _disjoint_filters
from .start import _overlap as _overlap
from .start import active_migrations, check_new_shards, check_start, pending_router
from .start import create as _create
from .units import Membership, Unit
from .watermark import walk_watermark

_is_db_error = is_db_error  # (its old name)

T = TypeVar("T")
R = TypeVar("R")

#: The default deadline of a freeze, in seconds (``run(fence_timeout=...)``).
FENCE_TIMEOUT = 2.0
#: Fence attempts per run before the executor gives up (each aborted one is
#: followed by a catch-up round).
FENCE_ATTEMPTS = 5


def _check_fence_timeout(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"fence_timeout must be a number of seconds, not {type(v).__name__}")
    f = float(v)
    if not (0 < f < 1e6):
        raise ValueError(f"fence_timeout must be > 0 and < 1e6 seconds, not {v!r}")
    return f

__all__ = ["COPY_CHUNK", "COPY_CHUNK_MAX", "COPY_CHUNK_MIN", "COPY_CHUNK_SECONDS", "DONE", "FENCE_ATTEMPTS",
           "FENCE_TIMEOUT", "FenceAborted", "Migration", "MigrationPaused",
           "MigrationError", "VerifyMismatch", "active_migrations", "check_new_shards", "check_start",
           "crash_point", "describe_fault", "pending_router", "walk_watermark"]


def copy_pairs(prog: dict[str, Any]) -> list[dict[str, Any]]:
    """Per source (the copy's workers): rows total / scanned / copied, the
    scan rate of the last run that copied (rows/s) and the ETA it gives."""
    out = []
    for k in sorted(prog):
        if not k.startswith("pair:") or not isinstance(prog[k], dict):
            continue
        p = prog[k]
        el = (p["updated"] - p["started"]) if p.get("updated") else 0.0
        rate = p["run_scanned"] / el if el > 0 and p.get("run_scanned") else None
        left = max(0, int(p.get("rows_total") or 0) - int(p["rows_scanned"]))
        eta = 0.0 if p.get("done") else (left / rate if rate else None)
        out.append({"source": p["source"], "destinations": p["destinations"], "rows_total": p.get("rows_total"),
                    "rows_scanned": p["rows_scanned"], "rows_copied": p["rows_copied"], "done": bool(p.get("done")),
                    "rows_per_s": rate, "eta_s": eta})
    return out


class Migration:
    """One migration of a table group from its current router to a new one.

    The public steps are :meth:`create`, :meth:`run`, :meth:`verify`,
    :meth:`rollback`, :meth:`cleanup` and :meth:`status`; the private
    methods of each phase delegate to its module in
    :mod:`shardhash.migrate.phases` (which calls the others back through
    this object, so a subclass or a test may replace any one step)."""

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
        #: seconds a freeze may hold writers before they may abort it (see :meth:`run`)
        self.fence_timeout = FENCE_TIMEOUT
        #: the operator's pause and rate limit, as the running phase last read them
        self._controls = control.Controls(self)
        self._pausable = False  # (a pause stops catch-up rounds only before the fence)
        #: workers (sources copied, caught up and verified at once); None: the sources, at most the cores
        self.parallel: int | None = None
        #: the load throttle of the copy and the catch-up (``run(throttle=...)``), for this process
        self.throttle: control.Throttle | None = None
        self._pool: workers.Pool | None = None  # (the catch-up's and verify's workers, during run)

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
        return _create(cls, cluster, group, new_router, units=units, max_step_share=max_step_share,
                       mig_id=mig_id, from_version=from_version, info=info, old_router=old_router,
                       new_shards=new_shards)

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
            if not is_db_error(e):
                raise
            raise MigrationError(f"migration {self.id}: {role} shard {shard!r} failed while {what}: "
                                 f"{describe_fault(e)}") from e

    def _involved(self) -> list[str]:
        return sorted(set(self.mem.sources) | set(self.mem.destinations))

    def _workers(self) -> int:
        """Workers for the per-source phases: ``parallel``, else the sources, at most the cores."""
        if self.parallel is not None:
            return self.parallel
        return workers.default_workers(len(self.mem.sources), os.cpu_count())

    def _open_pool(self) -> workers.Pool | None:
        n = min(self._workers(), max(len(self.mem.sources), len(self._involved())))
        if n <= 1:
            return None
        for x in self._involved():
            self.cluster.backend(x)  # (opened here: the workers only look them up)

        def close() -> None:  # (a worker thread's own connections)
            for x in self._involved():
                self.cluster.backend(x).close()
            self.meta.db.close()

        return workers.Pool(n, close)

    def _pair(self, s: str) -> str:
        """A source and its destinations, as a worker's errors name them."""
        return f"source {s!r} -> " + ", ".join(repr(d) for d in sorted({u.destination for u in self.units
                                                                          if u.source == s}))

    def _each(self, items: Sequence[T], fn: Callable[[T], R], what: str,
              describe: Callable[[T], str] | None = None) -> list[R]:
        """``[fn(x) for x in items]``: on the run's workers (one item per
        worker at once, see :class:`~shardhash.migrate.phases.workers.Pool`)
        when it has some, else here, one after the other."""
        pool = self._pool
        if pool is None or len(items) <= 1:
            return [fn(x) for x in items]
        return pool.map(items, fn, describe or (lambda x: self._pair(str(x))), what)

    # -------------------------------------------------------------- run

    def run(self, *, fence_threshold: float = 0.5, chunk: int | None = None, cutover: bool = True,
            max_catchup_seconds: float = 600.0, fence_timeout: float | None = None,
            fence_attempts: int = FENCE_ATTEMPTS, max_rows_per_s: float | None = None,
            skip_preflight: bool = False, max_dest_bytes: int | None = None,
            parallel: int | None = None, throttle: control.Throttle | None = None) -> str:
        """Drive the migration from its recorded state to ``retained`` (or to
        a verified, caught-up state when ``cutover=False``).  Call again after
        any failure or crash: every step resumes where it stopped.  ``chunk``:
        rows per snapshot-copy chunk (default: adaptive, see :meth:`_copy`).

        ``fence_timeout`` (seconds, default :data:`FENCE_TIMEOUT`): the
        deadline of a freeze, recorded on each source with its frozen units.
        A writer that waits past it asks the metadata store and, unless the
        cutover has committed, aborts the fence attempt and writes on; the
        executor then catches up again and fences anew, at most
        ``fence_attempts`` times in this run (see docs/migrate.md).

        ``max_rows_per_s``: a limit on the rows the snapshot copy reads per
        second, recorded in the metadata store (0: no limit; None, the
        default: keep the recorded one) and changeable while the copy runs
        (:meth:`set_max_rows_per_s`).  A pause (:meth:`pause`) stops the run
        at its next chunk boundary before the fence with
        :class:`MigrationPaused`; the run refuses to start while one stands
        (:meth:`unpause` lifts it).

        Before the copy's first row, a preflight (:mod:`shardhash.migrate.preflight`)
        compares each destination's estimated share of the copy with the room
        the backend can tell (``max_dest_bytes``: a limit on a destination's
        size) and refuses with :class:`~shardhash.migrate.preflight.PreflightError`;
        ``skip_preflight=True`` copies anyway.

        ``parallel``: sources copied at once by workers of their own (each
        with its own connections and committed cursors, so a crash re-copies
        at most one chunk per worker); default: the number of sources, at
        most the cores.  The first worker's error stops the others at their
        next chunk boundary and is raised with a note naming its source and
        destinations.  The catch-up, the verify and the check under the
        fence run per source (or shard side) on ``parallel`` workers too,
        kept for this run (:meth:`_each`).

        ``throttle``: a :class:`~shardhash.migrate.control.Throttle` (a load
        probe per (source, destination) pair and a threshold): the copy's
        and the catch-up's workers back off while a pair's signal is above
        it (None, the default: none in this run)."""
        if max_rows_per_s is not None:
            control.check_rate(max_rows_per_s)
        preflight.check_limit(max_dest_bytes)
        if throttle is not None:
            if not isinstance(throttle, control.Throttle):
                raise TypeError(f"throttle must be a shardhash.migrate.Throttle, not {type(throttle).__name__}")
            self.throttle = throttle
        if parallel is not None:
            if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
                raise ValueError(f"parallel must be an int >= 1 (copy workers), not {parallel!r}")
            self.parallel = parallel
        if fence_timeout is not None:
            self.fence_timeout = _check_fence_timeout(fence_timeout)
        if isinstance(fence_attempts, bool) or not isinstance(fence_attempts, int) or fence_attempts < 1:
            raise ValueError(f"fence_attempts must be an int >= 1, not {fence_attempts!r}")
        self._pool = self._open_pool()
        try:
            st = "reading its state"
            try:
                st = self.state
                if max_rows_per_s is not None:
                    control.set_rate(self, max_rows_per_s)
                if st in control.PAUSABLE:
                    self._controls.refresh(force=True)
                    self._controls.check(f"before {st}")
                if st == "rolled-back" and self._reverse_unfinished():
                    return self.rollback()
                if st in ("retained", "cleaning", "cleaned", "rolled-back"):
                    return st
                if st == "rolling-back":
                    self.rollback()
                    return self.state
                if st == "preparing":
                    self._prepare()
                    self._controls.refresh(force=True)
                    self._controls.check("after preparing")
                    self._set("copying")
                    st = "copying"
                if st == "copying":
                    if not skip_preflight and not self.meta.get(self.id, "copied"):
                        # (before any row is copied: a resumed copy's rows are already there)
                        for line in preflight.describe(preflight.check(self, max_dest_bytes)):
                            self.log("preflight: " + line)
                    self._copy(chunk)
                    self._set("catching-up")
                    st = "catching-up"
                if st == "verify-failed":
                    self.meta.put(self.id, "verify", None)
                    self._set("catching-up")
                    st = "catching-up"
                if st == "catching-up":
                    self._pausable = True
                    try:
                        self._catch_up_until(fence_threshold, max_catchup_seconds)
                        self.verify()
                        if not cutover:
                            return self.state
                        self._wait_turn()
                        self._catch_up_until(fence_threshold, max_catchup_seconds)
                        self._settle()
                        self._catch_up_until(fence_threshold, max_catchup_seconds)
                    finally:
                        self._pausable = False
                    # (one transaction with the pause flag: a pause recorded before it
                    # stops the run here, one after it is refused)
                    if not self.meta.set_state_unless_paused(self.id, "freezing"):
                        self._controls.refresh(force=True)
                        self._controls.check("before the fence")
                    self.log("state -> freezing")
                    st = "freezing"
                if st == "freezing":
                    for n in range(1, fence_attempts + 1):
                        try:
                            self._freeze_and_commit()
                            break
                        except FenceAborted as e:
                            self.log(f"{e}: catching up again before the next fence")
                            cutover_phase.after_abort(self)
                            if n == fence_attempts:
                                raise MigrationError(
                                    f"migration {self.id}: {n} fence attempt(s) in a row were aborted by writers "
                                    f"that waited past fence_timeout ({self.fence_timeout:g} s): the drain under "
                                    f"the fence takes longer; resume with a larger fence_timeout or a smaller "
                                    f"fence_threshold") from e
                            self._catch_up_until(fence_threshold, max_catchup_seconds)
                            self._settle()
                            self._catch_up_until(fence_threshold, max_catchup_seconds)
                    st = "cutover"
                if st == "cutover":
                    self._reconcile()
                    self._retain()
                self.meta.set_state(self.id, self.state, error=None)
                return self.state
            except (VerifyMismatch, MigrationPaused):
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
        finally:
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.close()

    def _db_error(self, e: BaseException, what: str) -> BaseException:
        """A database error that no step named (the metadata store's, say) as
        a :class:`MigrationError` naming the step; anything else as it is."""
        if isinstance(e, MigrationError) or not isinstance(e, Exception) or not is_db_error(e):
            return e
        return MigrationError(f"migration {self.id}: a database error while {what}: {describe_fault(e)}")

    # ------------------------------------------------------------- phases

    def _prepare(self) -> None:
        prepare.prepare(self)

    def _copy(self, chunk: int | None = None) -> None:
        """The snapshot copy: :func:`shardhash.migrate.phases.copy.copy`."""
        copy.copy(self, chunk)

    def _write_copy(self, s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        copy.write_copy(self, s, d, dc, table, cols, rows)

    def _column_kinds(self, s: str, d: str, table: str, values: bool = False) -> dict[str, Kind] | None:
        return columns.column_kinds(self, s, d, table, values)

    def _check_column_types(self, values: bool = False) -> None:
        columns.check_column_types(self, values)

    def _check_values(self, s: str, d: str, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        columns.check_values(self, s, d, table, cols, rows)

    def _check_collisions(self, s: str, d: str, db: Any, dc: Any, table: str,
                          rows: Sequence[Sequence[Any]]) -> None:
        columns.check_collisions(self, s, d, db, dc, table, rows)

    def _cid(self, shard: str) -> int:
        return catchup.cid(self, shard)

    def catch_up(self, limit: int = 2000, upto: dict[str, int] | None = None) -> tuple[int, int]:
        """Apply one batch of captured changes per source; returns (applied, pending).
        Before the fence, a recorded pause stops the run here (between batches)."""
        if self._pausable:
            self._controls.refresh(force=True)  # (one metadata read per batch)
            self._controls.check("between catch-up batches")
        return catchup.catch_up(self, limit, upto)

    # --------------------------------------------------- operator controls

    def pause(self) -> None:
        """Pause the migration (any state before the fence): a running
        executor stops at its next chunk boundary, cursors committed, and
        :meth:`run` raises :class:`MigrationPaused` until :meth:`unpause`."""
        control.pause(self)

    def unpause(self) -> bool:
        """Lift a pause (then :meth:`run` continues); returns whether one stood."""
        return control.unpause(self)

    def set_max_rows_per_s(self, rows_per_s: float | None) -> float | None:
        """Limit the snapshot copy to ``rows_per_s`` rows read per second (None
        or 0: no limit); a running copy takes it up within a quarter second."""
        return control.set_rate(self, rows_per_s)

    def _sync(self, s: str, batch: Sequence[tuple[int, str, str]]) -> None:
        catchup.sync(self, s, batch)

    def _catch_up_until(self, threshold: float, max_seconds: float) -> None:
        catchup.catch_up_until(self, threshold, max_seconds)

    def _unit_sums(self, shard: str, side: str, units: set[int], keys_of: set[int] | None = None
                   ) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, int], dict[Any, int]]]:
        return verify.unit_sums(self, shard, side, units, keys_of)

    def verify(self) -> dict[str, Any]:
        """Compare per unit (and table) the row count and an order-independent
        checksum of the rows on the source and the destination
        (:func:`shardhash.migrate.phases.verify.verify`); on a ``retained``
        migration, :meth:`verify_retained`.  Raises :class:`VerifyMismatch`."""
        return verify.verify(self)

    def verify_retained(self) -> dict[str, Any]:
        """Compare the retained copies with the rows on their owners
        (:func:`shardhash.migrate.phases.verify.verify_retained`)."""
        return verify.verify_retained(self)

    def _changed_keys(self) -> set[tuple[str, tuple[Any, ...]]]:
        return verify.changed_keys(self)

    def _compare(self, s: str, keys: dict[str, list[tuple[Any, ...]]]) -> list[dict[str, Any]]:
        return verify.compare(self, s, keys)

    def _settle(self, small: int = 64, rounds: int = 10) -> None:
        verify.settle(self, small, rounds)

    def _final_check(self) -> list[dict[str, Any]]:
        return verify.final_check(self)

    def _set_units(self, shard: str, role: str, frm: Sequence[str], to: str) -> None:
        cutover.set_units(self, shard, role, frm, to)

    def _wait_turn(self) -> None:
        cutover.wait_turn(self)

    def _freeze_and_commit(self) -> None:
        cutover.freeze_and_commit(self)

    def _reconcile(self) -> None:
        cutover.reconcile(self)

    def _retain(self) -> None:
        cutover.retain(self)

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
        return rollback.rollback(self)

    def _create_reverse(self, rev_id: str, cur: Router, back: Router, units: list[Unit]) -> Migration:
        return rollback.create_reverse(self, rev_id, cur, back, units)

    # ----------------------------------------------------------- cleanup

    def _delete_members(self, side: str, chunk: int = 5000) -> int:
        return cleanup.delete_members(self, side, chunk)

    def cleanup(self) -> int:
        """Delete the retained source copy of the moved rows and stop the
        reverse capture (:func:`shardhash.migrate.phases.cleanup.cleanup`);
        returns the number of rows deleted."""
        return cleanup.cleanup(self)

    # ------------------------------------------------------------ status

    def next_step(self, state: str | None = None) -> str:
        """What to run next, for an operator (the CLI's words)."""
        return status.next_step(self, state)

    def status(self) -> dict[str, Any]:
        out = status.status(self)
        paused, rate = self.meta.controls(self.id)
        # (a pause stands only before the fence: after it, the flag is moot)
        out["paused"] = paused and out["state"] in control.PAUSABLE
        out["max_rows_per_s"] = rate
        prog = self.meta.progress(self.id)
        out["copy_pairs"] = copy_pairs(prog)
        out["throttle"] = [prog[k] for k in sorted(prog) if k.startswith("throttle:") and isinstance(prog[k], dict)]
        return out

    def captures(self) -> list[dict[str, Any]]:
        """This migration's change captures that still exist on a shard, with
        their pending (not yet applied) change rows."""
        return status.captures(self)
