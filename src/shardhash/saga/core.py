"""Sagas: operations across shards as a list of local transactions with
compensations (see docs/saga.md).

A :class:`Saga` is a list of steps.  Each step runs as one local transaction
on the owner of one key, opened by ``cluster.transaction(key)`` (stale
routers fenced, frozen units waited for, a key that moved retried on its new
owner), and commits its effect together with an idempotency record (saga
id, step, direction, result) in a table of the key's group, keyed by the
key: a step re-run finds its record -- on whichever shard owns the key now,
since a migration moves the record with the data -- and returns the recorded
result without running again.  The saga log (state, step, results,
attempts, error, lease) lives in the metadata store; a driver holds a lease
with a fencing counter, so that two drivers never both advance one saga.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import _events
from ..migrate.cluster import Cluster, FenceTimeout, StaleRouteError
from ._tables import DEFAULT_TABLES, KEY_COLUMN, LOG_COLUMNS, LOG_SELECT, Tables, ensure_log, meta_tx

__all__ = ["Saga", "Step", "StepContext", "StepFailed", "LeaseLost", "SagaMetrics", "metrics", "setup", "counts",
           "records", "Pending",
           "status", "list_sagas", "abort", "resume", "pending", "set_fault_hook", "STATES", "FINAL",
           "NoCompensation", "registry"]

log = logging.getLogger("shardhash.saga")

#: Every state of a saga; the final ones.
STATES = ("running", "compensating", "completed", "compensated", "stuck")
FINAL = ("completed", "compensated")
#: States a driver advances (``stuck`` needs an operator: ``resume`` retries its compensations).
ACTIVE = ("running", "compensating")

F = TypeVar("F", bound=Callable[..., Any])

_fault: Callable[[str], None] | None = None


def set_fault_hook(fn: Callable[[str], None] | None) -> None:
    """Call ``fn(point)`` at each named point of a driver (for crash-injection
    tests): ``after-start``, ``lease-acquired``, ``in-step``,
    ``after-step-commit`` (the step committed, its log update not yet),
    ``after-log-update``, ``in-compensation`` (inside the compensation's
    transaction), ``after-compensation-commit``, ``before-final``."""
    global _fault
    if fn is not None and not callable(fn):
        raise TypeError("the fault hook must be callable or None")
    _fault = fn


def _point(name: str) -> None:
    f = _fault
    if f is not None:
        f(name)


class StepFailed(Exception):
    """Raised by a step to fail it permanently (a business refusal, e.g.
    insufficient funds): its transaction rolls back and the saga compensates.
    Any other exception that is not a transient database or routing error
    fails the step permanently too; transient ones are retried."""


class NoCompensation(RuntimeError):
    """A step without a compensation was applied and the saga must compensate: it is ``stuck``."""


class LeaseLost(RuntimeError):
    """Another driver took the saga over (its fencing counter moved on): this one stops."""


def _transient(e: BaseException) -> bool:
    """Whether a step's failure is worth retrying (routing, fencing, a busy or lost database)."""
    if isinstance(e, (StaleRouteError, FenceTimeout, ConnectionError, TimeoutError)):
        return True
    if isinstance(e, sqlite3.OperationalError):
        code = getattr(e, "sqlite_errorcode", None)  # (Python 3.11+)
        if code is None:
            return "locked" in str(e) or "busy" in str(e)
        return (code & 0xFF) in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
    mod = type(e).__module__
    if mod.startswith("psycopg"):
        import psycopg

        if isinstance(e, psycopg.OperationalError):
            return True
        # serialization failure, deadlock, and a unique violation of a record
        # or an event written by a concurrent transaction of the same step
        return getattr(e, "sqlstate", None) in ("40001", "40P01", "23505")
    return False


def _check_key(key: Any, step: str) -> Any:
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise TypeError(f"step {step!r}: its key function must return an int or a str, not "
                        f"{type(key).__name__}")
    if isinstance(key, int) and not -(2 ** 63) <= key < 2 ** 63:
        raise OverflowError(f"step {step!r}: key {key} does not fit in a signed 64-bit integer")
    return key


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be JSON-serialisable: {e}") from None


# --------------------------------------------------------------- metrics


class SagaMetrics:
    """Counters of saga outcomes and step latencies in this process
    (thread-safe); also reported as events (``saga`` and ``saga_step``) that
    :class:`shardhash.metrics.ShardMetrics` turns into Prometheus metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = {"started": 0, "completed": 0, "compensated": 0, "stuck": 0}
        self._lat: list[float] = []

    def count(self, name: str, state: str) -> None:
        with self._lock:
            self.counts[state] = self.counts.get(state, 0) + 1
        _events.emit("saga", saga=name, state=state)

    def step(self, name: str, step: str, direction: str, seconds: float, ok: bool) -> None:
        with self._lock:
            if len(self._lat) < 1_000_000:
                self._lat.append(seconds)
        _events.emit("saga_step", saga=name, step=step, direction=direction, seconds=seconds, ok=ok)

    def snapshot(self) -> dict[str, Any]:
        """``{"started", "completed", "compensated", "stuck", "step_seconds": {p50, p99, count}}``."""
        with self._lock:
            v = sorted(self._lat)
            out: dict[str, Any] = dict(self.counts)

        def q(p: float) -> float | None:
            return v[min(len(v) - 1, int(p * len(v)))] if v else None

        out["step_seconds"] = {"p50": q(0.5), "p99": q(0.99), "count": len(v)}
        return out

    def reset(self) -> None:
        with self._lock:
            self.counts = {k: 0 for k in self.counts}
            self._lat = []


#: This process's saga metrics.
metrics = SagaMetrics()


# ------------------------------------------------------------------ steps


@dataclass(frozen=True)
class Pending:
    """A semantic lock on a key: saga ``saga_id``'s step ``step`` left it at ``since``."""

    saga_id: str
    step: int
    note: str
    since: float


class StepContext:
    """What a step (or a compensation) gets: the local transaction on the
    owner of its key, plus the saga's outbox and semantic locks.

    ``execute`` / ``executemany`` run SQL in the transaction (``?``
    placeholders on both backends; only rows of ``key`` in tables of the
    group: see docs/migrate.md).  ``saga_id``, ``step`` (its index),
    ``key``, ``shard`` (the owner that runs it) and ``results`` (the
    results of the steps before it) describe it."""

    def __init__(self, tx: Any, saga_id: str, step: int, direction: str, key: Any, results: Sequence[Any],
                 tables: Tables) -> None:
        self.tx, self.saga_id, self.step, self.direction, self.key = tx, saga_id, step, direction, key
        self.results = list(results)
        self.shard: str = tx.shard
        self._t = tables
        self._events = 0
        self.locked = False

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self.tx.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        return self.tx.executemany(sql, rows)

    def emit(self, topic: str, payload: Any = None) -> str:
        """Put an event in the outbox, in this step's transaction (it exists
        exactly when the step's effect does); returns its id, which a
        consumer dedupes on: ``SAGA/STEP/do|undo/N``."""
        if not isinstance(topic, str) or not topic:
            raise TypeError("emit: topic must be a non-empty string")
        body = _dumps(payload, "emit: payload")
        eid = f"{self.saga_id}/{self.step}/{self.direction}/{self._events}"
        self._events += 1
        self.tx.execute(self._t.sql["emit"], (eid, self.key, self.key, topic, body, self.saga_id, time.time()))
        return eid

    def lock(self, note: str = "") -> None:
        """Leave a semantic lock (a ``pending`` marker) on this step's key, in
        its transaction: readers see it through :func:`pending` until the saga
        ends (completed: released by the driver; compensated: by this step's
        compensation, in the compensation's transaction)."""
        if not isinstance(note, str):
            raise TypeError("lock: note must be a string")
        self.tx.execute(self._t.sql["lock"], (self.saga_id, self.key, self.step, note, time.time()))
        self.locked = True

    def unlock(self) -> None:
        """Remove this saga's semantic lock on this step's key (if any)."""
        self.tx.execute(self._t.sql["unlock"], (self.saga_id, self.key))

    def pending(self) -> list[Pending]:
        """The semantic locks on this step's key (of any saga, this one's included)."""
        return _locks_of(self.tx, self.key, self._t)


def _locks_of(tx: Any, key: Any, tables: Tables) -> list[Pending]:
    rows = tx.execute(tables.sql["locks_of"], (key,)).fetchall()
    return [Pending(str(r[0]), int(r[1]), str(r[2]), float(r[3])) for r in rows]


def pending(tx: Any, *, tables: Tables = DEFAULT_TABLES) -> list[Pending]:
    """The semantic locks on the key of a ``cluster.read(key)`` (or
    ``cluster.transaction(key)``) block: which sagas have a step pending on
    it (e.g. a debit whose credit has not happened yet)."""
    key = getattr(tx, "key", None)
    if key is None:
        raise TypeError("pending() needs the transaction of cluster.read(key) or cluster.transaction(key)")
    return _locks_of(tx, key, tables)


@dataclass(frozen=True)
class Step:
    """One step: ``fn(ctx, args)`` on the owner of ``key(args)``; its
    compensation ``compensate(ctx, args, result)`` on the same key's owner.
    ``retries`` transient failures are retried with exponential ``backoff``
    (seconds, doubled each time, capped at 2 s, with jitter) within
    ``deadline`` seconds; then the step fails permanently."""

    name: str
    fn: Callable[[StepContext, Any], Any]
    key: Callable[[Any], Any]
    compensate: Callable[[StepContext, Any, Any], Any] | None
    retries: int
    deadline: float
    backoff: float


#: Sagas by name (the definitions a recovering process drives).
registry: dict[str, Saga] = {}


def _new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _row(r: Sequence[Any]) -> dict[str, Any]:
    d = dict(zip(LOG_COLUMNS, r))
    d["args"] = json.loads(d["args"])
    d["results"] = json.loads(d["results"])
    for k in ("step", "nsteps", "attempts", "fence"):
        d[k] = int(d[k])
    for k in ("lease_until", "created", "updated"):
        d[k] = float(d[k])
    return d


class Saga:
    """A saga definition: a name and its steps (see the module docstring).

    ``group``: the table group whose tables hold the saga's records (default:
    the cluster's only group); ``tables``: their names; ``lease``: seconds a
    driver holds a saga without renewing; ``log_steps``: record each step's
    progress in the saga log (False: only the start and the end -- a
    recovering driver re-runs the steps from the first, each finding its
    record; fewer metadata commits); ``compensation_retries``: attempts of a
    compensation before the saga is ``stuck``.

    Creating a Saga registers it by name (a later definition of the same name
    replaces it), so that :func:`resume` and :meth:`recover` find it."""

    def __init__(self, name: str, *, group: str | None = None, tables: Tables = DEFAULT_TABLES,
                 lease: float = 30.0, log_steps: bool = True, compensation_retries: int = 5) -> None:
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValueError(f"a saga's name must be a non-empty string of at most 200 characters, not {name!r}")
        if not isinstance(tables, Tables):
            raise TypeError(f"tables must be a Tables, not {type(tables).__name__}")
        if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not 0.05 <= lease <= 86400:
            raise ValueError(f"lease must be a number of seconds in 0.05..86400, not {lease!r}")
        if isinstance(compensation_retries, bool) or not isinstance(compensation_retries, int) \
                or not 0 <= compensation_retries <= 1000:
            raise ValueError(f"compensation_retries must be an integer in 0..1000, not {compensation_retries!r}")
        self.name, self.group, self.tables = name, group, tables
        self.lease, self.log_steps = float(lease), bool(log_steps)
        self.compensation_retries = compensation_retries
        self.steps: list[Step] = []
        registry[name] = self

    def __repr__(self) -> str:
        return f"Saga({self.name!r}, steps={[s.name for s in self.steps]})"

    def step(self, *, key: Callable[[Any], Any], compensate: Callable[[StepContext, Any, Any], Any] | None = None,
             retries: int = 5, deadline: float = 30.0, backoff: float = 0.02,
             name: str | None = None) -> Callable[[F], F]:
        """Decorator: add ``fn(ctx, args)`` as the next step (see :class:`Step`)."""
        if not callable(key):
            raise TypeError("step: key must be a function of the saga's arguments")
        if compensate is not None and not callable(compensate):
            raise TypeError("step: compensate must be callable or None")
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 1000:
            raise ValueError(f"step: retries must be an integer in 0..1000, not {retries!r}")
        for what, v in (("deadline", deadline), ("backoff", backoff)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 86400:
                raise ValueError(f"step: {what} must be a number of seconds in 0..86400, not {v!r}")

        def add(fn: F) -> F:
            if not callable(fn):
                raise TypeError("step: decorate a function")
            n = str(name or getattr(fn, "__name__", None) or f"step{len(self.steps)}")
            if any(s.name == n for s in self.steps):
                raise ValueError(f"saga {self.name!r} already has a step named {n!r}")
            self.steps.append(Step(n, fn, key, compensate, retries, float(deadline), float(backoff)))
            return fn

        return add

    # ------------------------------------------------------------- start

    def start(self, cluster: Cluster, args: Any, *, idempotency_key: str | None = None, run: bool = True) -> str:
        """Record a new saga with ``args`` (any JSON value) and, with ``run``,
        drive it to its end in this thread; returns its id.

        With ``idempotency_key``, a second ``start`` with the same key returns
        the first saga's id (and drives it only if no live driver holds it);
        the same key with other arguments is a ValueError."""
        if not self.steps:
            raise ValueError(f"saga {self.name!r} has no steps")
        if idempotency_key is not None and (not isinstance(idempotency_key, str) or not idempotency_key
                                            or len(idempotency_key) > 1000):
            raise ValueError("idempotency_key must be a non-empty string of at most 1000 characters or None")
        body = _dumps(args, "the saga's arguments")
        for s in self.steps:
            _check_key(s.key(args), s.name)
        meta = cluster.metadata
        ensure_log(meta)
        sid = f"{self.name}-{uuid.uuid4().hex[:16]}"
        owner = _new_owner()
        now = time.time()
        c = meta.db.conn()
        if run:
            fence, lease_until, who = 1, now + self.lease, owner
        else:
            fence, lease_until, who = 0, 0.0, None
        cur = c.execute("INSERT INTO sagas (id, name, idem_key, state, step, nsteps, args, results, attempts, error, "
                        "owner, lease_until, fence, created, updated) VALUES (?, ?, ?, 'running', 0, ?, ?, '[]', 0, "
                        "NULL, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (sid, self.name, idempotency_key, len(self.steps), body, who, lease_until, fence, now, now))
        if cur.rowcount != 1:
            r = c.execute("SELECT id, args, state FROM sagas WHERE name = ? AND idem_key = ?",
                          (self.name, idempotency_key)).fetchone()
            if r is None:  # (an id collision: 64 random bits)
                raise RuntimeError("could not record the saga; try again")
            if json.dumps(json.loads(r[1]), sort_keys=True) != body:
                raise ValueError(f"idempotency key {idempotency_key!r} was used by saga {r[0]} with other "
                                 f"arguments ({r[1]})")
            if run and r[2] in ACTIVE:
                self._take_and_drive(cluster, str(r[0]), force=False)
            return str(r[0])
        metrics.count(self.name, "started")
        _point("after-start")
        if run:
            try:
                self._drive(cluster, sid, owner, fence)
            except LeaseLost:
                pass
        return sid

    # ------------------------------------------------------------- drive

    def _take_and_drive(self, cluster: Cluster, sid: str, *, force: bool) -> str | None:
        """Take the saga's lease (when it expired, or ``force``) and drive it;
        returns its state after, or None when another driver holds it."""
        got = _acquire(cluster, sid, self.lease, force=force)
        if got is None:
            return None
        owner, fence = got
        _point("lease-acquired")
        try:
            return self._drive(cluster, sid, owner, fence)
        except LeaseLost:
            return None

    def _drive(self, cluster: Cluster, sid: str, owner: str, fence: int) -> str:
        d = _Driver(self, cluster, sid, owner, fence)
        return d.run()

    # ----------------------------------------------------------- recover

    @staticmethod
    def recover(cluster: Cluster, *, once: bool = False, poll: float = 1.0, stop: threading.Event | None = None,
                names: Sequence[str] | None = None) -> int:
        """The recovery worker: drive every saga whose driver died (state
        ``running`` or ``compensating``, lease expired) with the registered
        definitions, until ``stop`` is set (``once``: one pass).  Returns the
        number of sagas it drove to an end.  Run any number of them: a lease
        goes to one worker at a time."""
        if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not 0 < poll <= 3600:
            raise ValueError(f"poll must be a number of seconds in (0, 3600], not {poll!r}")
        ensure_log(cluster.metadata)
        done = 0
        while True:
            for sid, name in _expired(cluster, names):
                saga = registry.get(name)
                if saga is None:
                    log.warning("saga %s: no definition of %r is registered in this process; left alone", sid, name)
                    continue
                st = saga._take_and_drive(cluster, sid, force=False)
                if st is not None and st not in ACTIVE:
                    done += 1
            if once or (stop is not None and stop.is_set()):
                return done
            if stop is not None:
                if stop.wait(poll):
                    return done
            else:
                time.sleep(poll)


def _expired(cluster: Cluster, names: Sequence[str] | None) -> list[tuple[str, str]]:
    rows = cluster.metadata.db.conn().execute(
        "SELECT id, name FROM sagas WHERE state IN ('running', 'compensating') AND lease_until < ? "
        "ORDER BY created", (time.time(),)).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows if names is None or r[1] in names]


def _acquire(cluster: Cluster, sid: str, lease: float, *, force: bool = False,
             states: Sequence[str] = ACTIVE) -> tuple[str, int] | None:
    """Take saga ``sid``'s lease: bump its fencing counter, record this driver
    as the owner.  None when it is not in ``states`` or another driver's lease
    is still valid (unless ``force``)."""
    owner = _new_owner()
    now = time.time()
    with meta_tx(cluster.metadata) as c:
        lock = "" if cluster.metadata.kind == "sqlite" else " FOR UPDATE"
        r = c.execute("SELECT state, lease_until, fence FROM sagas WHERE id = ?" + lock, (sid,)).fetchone()
        if r is None:
            raise KeyError(f"no saga {sid!r} in the saga log")
        if r[0] not in states or (not force and float(r[1]) >= now):
            return None
        fence = int(r[2]) + 1
        c.execute("UPDATE sagas SET owner = ?, lease_until = ?, fence = ?, updated = ? WHERE id = ?",
                  (owner, now + lease, fence, now, sid))
    return owner, fence


class _Driver:
    """Drives one saga while it holds the lease (``fence``)."""

    def __init__(self, saga: Saga, cluster: Cluster, sid: str, owner: str, fence: int) -> None:
        self.saga, self.cluster, self.sid, self.owner, self.fence = saga, cluster, sid, owner, fence
        self.c = cluster.metadata.db.conn()
        self.lease_until = time.time() + saga.lease
        self.attempts = 0
        self._renew: Callable[[], None] = lambda: None

    def _save(self, state: str, step: int, results: Sequence[Any], error: str | None = None) -> None:
        """Write the driver's progress to the log if it still holds the lease
        (else LeaseLost); renews the lease."""
        now = time.time()
        cur = self.c.execute("UPDATE sagas SET state = ?, step = ?, results = ?, error = COALESCE(?, error), "
                             "attempts = ?, lease_until = ?, updated = ? WHERE id = ? AND fence = ?",
                             (state, step, _dumps(list(results), "step results"), error, self.attempts,
                              now + self.saga.lease, now, self.sid, self.fence))
        if cur.rowcount != 1:
            raise LeaseLost(f"saga {self.sid}: another driver took it over (fencing counter moved past "
                            f"{self.fence})")
        self.lease_until = now + self.saga.lease

    def run(self) -> str:
        r = self.c.execute(LOG_SELECT + " WHERE id = ?", (self.sid,)).fetchone()
        row = _row(r)
        if row["fence"] != self.fence:
            raise LeaseLost(f"saga {self.sid}: taken over before it started")
        steps = self.saga.steps
        n = len(steps)
        if row["nsteps"] != n:
            raise ValueError(f"saga {self.sid} was started with {row['nsteps']} steps; the definition of "
                             f"{self.saga.name!r} in this process has {n}")
        args = row["args"]
        self.attempts = row["attempts"]
        results: list[Any] = list(row["results"])
        state, i = row["state"], row["step"]
        name = self.saga.name

        def renew() -> None:
            if self.lease_until - time.time() < self.saga.lease / 2:
                self._save(state, i, results)

        self._renew = renew
        while True:
            if state == "running":
                if i >= n:
                    self._release_locks(args, results)
                    _point("before-final")
                    self._save("completed", n, results)
                    metrics.count(name, "completed")
                    return "completed"
                renew()
                outcome, value = self._attempt(i, "do", args, [r["v"] for r in results[:i]])
                if outcome == "applied":
                    del results[i:]
                    results.append(value)
                    i += 1
                    _point("after-step-commit")
                    if self.saga.log_steps and i < n:
                        self._save(state, i, results)
                        _point("after-log-update")
                    continue
                if outcome == "cancelled":
                    # (a compensation already cancelled this step: another driver owns the saga)
                    raise LeaseLost(f"saga {self.sid}: step {steps[i].name!r} was cancelled by a compensation")
                state, i = "compensating", n - 1
                self._save(state, i, results, str(value)[:2000])
            elif state == "compensating":
                if i < 0:
                    _point("before-final")
                    self._save("compensated", -1, results)
                    metrics.count(name, "compensated")
                    return "compensated"
                renew()
                outcome, value = self._attempt(i, "undo", args, [r["v"] for r in results[:i]])
                if outcome == "failed":
                    self._save("stuck", i, results, str(value)[:2000])
                    metrics.count(name, "stuck")
                    log.warning("saga %s is stuck: the compensation of step %r failed: %s", self.sid,
                                steps[i].name, value)
                    return "stuck"
                _point("after-compensation-commit")
                i -= 1
                if self.saga.log_steps and i >= 0:
                    self._save(state, i, results)
                    _point("after-log-update")
            else:
                return str(state)

    def _release_locks(self, args: Any, results: Sequence[dict[str, Any]]) -> None:
        t = self.saga.tables
        for s, r in zip(self.saga.steps, results):
            if r.get("lock"):
                key = s.key(args)
                with self.cluster.transaction(key, group=self.saga.group) as tx:
                    tx.execute(t.sql["unlock"], (self.sid, key))

    def _attempt(self, i: int, direction: str, args: Any, prior: Sequence[Any]) -> tuple[str, Any]:
        """Run step ``i`` (forward ``do`` or ``undo``) with retries: ('applied',
        {"v": result, "lock": bool}) | ('skipped', None) | ('cancelled', None) |
        ('failed', reason)."""
        st = self.saga.steps[i]
        budget = st.retries if direction == "do" else self.saga.compensation_retries
        t_end = time.monotonic() + st.deadline
        tries = 0
        while True:
            t0 = time.perf_counter()
            try:
                out = self._once(st, i, direction, args, prior)
                metrics.step(self.saga.name, st.name, direction, time.perf_counter() - t0, True)
                return out
            except StepFailed as e:
                metrics.step(self.saga.name, st.name, direction, time.perf_counter() - t0, False)
                if direction == "do":
                    return "failed", f"step {st.name!r} failed: {e}"
                err: BaseException = e
            except NoCompensation as e:
                return "failed", str(e)
            except Exception as e:  # noqa: BLE001 - classified: retried, or the step fails
                metrics.step(self.saga.name, st.name, direction, time.perf_counter() - t0, False)
                if direction == "do" and not _transient(e):
                    return "failed", f"step {st.name!r} failed: {type(e).__name__}: {e}"
                err = e
            tries += 1
            self.attempts += 1
            if tries > budget or (direction == "do" and time.monotonic() >= t_end):
                what = "step" if direction == "do" else "compensation of step"
                return "failed", (f"{what} {st.name!r} failed after {tries} attempts: "
                                  f"{type(err).__name__}: {err}")
            delay = min(2.0, st.backoff * (2 ** (tries - 1))) * (0.5 + random.random() / 2)
            time.sleep(delay)
            self._renew()

    def _once(self, st: Step, i: int, direction: str, args: Any, prior: Sequence[Any]) -> tuple[str, Any]:
        t = self.saga.tables
        key = _check_key(st.key(args), st.name)
        sid = self.sid
        with self.cluster.transaction(key, group=self.saga.group) as tx:
            rec = tx.execute(t.sql["record"], (sid, i, direction)).fetchone()
            if direction == "do":
                if rec is not None:
                    if rec[0] == "cancelled":
                        return "cancelled", None
                    return "applied", json.loads(rec[1])
                ctx = StepContext(tx, sid, i, "do", key, prior, t)
                _point("in-step")
                value = st.fn(ctx, args)
                out = {"v": value, "lock": ctx.locked}
                tx.execute(t.sql["put_record"], (sid, i, "do", key, "applied",
                                                 _dumps(out, f"the result of step {st.name!r}"), time.time()))
                return "applied", out
            if rec is not None:
                return ("applied" if rec[0] == "applied" else "skipped"), json.loads(rec[1])
            fwd = tx.execute(t.sql["record"], (sid, i, "do")).fetchone()
            now = time.time()
            if fwd is None or fwd[0] != "applied":
                # the step never ran: cancel it, so that no stale driver can run it later
                if fwd is None:
                    tx.execute(t.sql["put_record"], (sid, i, "do", key, "cancelled", "null", now))
                tx.execute(t.sql["put_record"], (sid, i, "undo", key, "skipped", "null", now))
                return "skipped", None
            if st.compensate is None:
                raise NoCompensation(f"step {st.name!r} has no compensation, and it was applied (a step without "
                                     "compensation must not be followed by steps that can fail)")
            ctx = StepContext(tx, sid, i, "undo", key, prior, t)
            ctx.unlock()
            value = st.compensate(ctx, args, json.loads(fwd[1])["v"])
            _point("in-compensation")
            tx.execute(t.sql["put_record"], (sid, i, "undo", key, "applied",
                                             _dumps({"v": value}, f"the compensation result of {st.name!r}"), now))
            return "applied", {"v": value}


# ------------------------------------------------------- operator actions


def setup(cluster: Cluster, group: str | None = None, *, key_type: str | None = None,
          tables: Tables = DEFAULT_TABLES) -> None:
    """Create the saga log in the metadata store and the saga tables on every
    shard of the shard map (idempotent), then ``cluster.init()`` (which puts
    the migration triggers and the client's guard on them).  The group must
    list the three tables (``tables.entries()``) in the cluster file;
    ``key_type`` (int or str) defaults to the group's."""
    g = cluster.group(group)
    have = {t.name.lower(): t.key for t in g.tables}
    missing = [e for e in tables.entries() if have.get(e["name"].lower()) != KEY_COLUMN]
    if missing:
        lines = ", ".join(f'{{ name = "{e["name"]}", key = "{KEY_COLUMN}" }}' for e in missing)
        raise ValueError(f"group {g.name!r} must list the saga's tables, keyed by {KEY_COLUMN!r}, so that a migration "
                         f"moves them with the data: add {lines} to groups.{g.name}.tables in the cluster file")
    kt = key_type or g.key_type
    if kt not in ("int", "str"):
        raise ValueError(f"group {g.name!r} has key_type {g.key_type!r}: pass key_type='int' or 'str' (the type of "
                         "the keys the saga's steps use), or set key_type in the cluster file")
    cluster.metadata.setup()
    ensure_log(cluster.metadata)
    for sid in cluster.shard_ids():
        b = cluster.backend(sid)
        with b.writing() as c:
            for stmt in tables.ddl(b.kind, kt):
                c.execute(stmt)
    cluster.init()


def status(cluster: Cluster, saga_id: str) -> dict[str, Any]:
    """The saga log's record of one saga (KeyError when unknown): id, name,
    idem_key, state, step, nsteps, args, results, attempts, error, owner,
    lease_until, fence, created, updated."""
    ensure_log(cluster.metadata)
    r = cluster.metadata.db.conn().execute(LOG_SELECT + " WHERE id = ?", (saga_id,)).fetchone()
    if r is None:
        raise KeyError(f"no saga {saga_id!r} in the saga log")
    d = _row(r)
    d["results"] = [x.get("v") if isinstance(x, dict) else x for x in d["results"]]
    return d


def list_sagas(cluster: Cluster, *, state: str | None = None, name: str | None = None,
               limit: int | None = None) -> list[dict[str, Any]]:
    """Sagas of the log (oldest first), optionally of one state and name."""
    if state is not None and state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer, not {limit!r}")
    ensure_log(cluster.metadata)
    q = LOG_SELECT + (" WHERE (CAST(? AS TEXT) IS NULL OR state = ?) AND (CAST(? AS TEXT) IS NULL OR name = ?)"
                      " ORDER BY created, id")
    params: list[Any] = [state, state, name, name]
    if limit is not None:
        q += " LIMIT ?"
        params.append(limit)
    out = []
    for r in cluster.metadata.db.conn().execute(q, params).fetchall():
        d = _row(r)
        d["results"] = [x.get("v") if isinstance(x, dict) else x for x in d["results"]]
        out.append(d)
    return out


def counts(cluster: Cluster) -> dict[str, int]:
    """Sagas per state in the log."""
    ensure_log(cluster.metadata)
    rows = cluster.metadata.db.conn().execute("SELECT state, COUNT(*) FROM sagas GROUP BY state").fetchall()
    out = {s: 0 for s in STATES}
    out.update({str(r[0]): int(r[1]) for r in rows})
    return out


def resume(cluster: Cluster, saga_id: str, *, force: bool = False) -> str:
    """Drive one saga now with its registered definition; returns its state.

    A ``running`` or ``compensating`` saga is taken over when its lease
    expired (``force``: at once -- the fencing counter stops the old driver
    at its next log update, and the idempotency records make any step it
    still commits a no-op for this one).  A ``stuck`` saga retries its
    compensations (after an operator fixed their cause)."""
    st = status(cluster, saga_id)
    saga = registry.get(st["name"])
    if saga is None:
        raise LookupError(f"saga {saga_id}: no definition of {st['name']!r} is registered in this process (import "
                          "the module that defines it)")
    if st["state"] in FINAL:
        return str(st["state"])
    if st["state"] == "stuck":
        with meta_tx(cluster.metadata) as c:
            c.execute("UPDATE sagas SET state = 'compensating', updated = ? WHERE id = ? AND state = 'stuck'",
                      (time.time(), saga_id))
        force = True
    got = saga._take_and_drive(cluster, saga_id, force=force)
    return str(status(cluster, saga_id)["state"]) if got is None else got


def abort(cluster: Cluster, saga_id: str, *, drive: bool = True, reason: str = "aborted by an operator") -> str:
    """Stop a ``running`` saga and compensate it: the log says
    ``compensating`` (the current driver's lease is revoked: its next log
    update fails, and a compensation cancels any step it did not commit
    yet).  With ``drive`` and the saga's definition registered, the
    compensations run now; otherwise a recovery worker or ``resume`` runs
    them.  Returns the state after; a saga that already ended is left as it
    is (its state is returned)."""
    ensure_log(cluster.metadata)
    with meta_tx(cluster.metadata) as c:
        lock = "" if cluster.metadata.kind == "sqlite" else " FOR UPDATE"
        r = c.execute("SELECT state, nsteps, name FROM sagas WHERE id = ?" + lock, (saga_id,)).fetchone()
        if r is None:
            raise KeyError(f"no saga {saga_id!r} in the saga log")
        if r[0] != "running":
            return str(r[0])
        c.execute("UPDATE sagas SET state = 'compensating', step = ?, error = ?, owner = NULL, lease_until = 0, "
                  "fence = fence + 1, updated = ? WHERE id = ?", (int(r[1]) - 1, reason, time.time(), saga_id))
    if drive and str(r[2]) in registry:
        return resume(cluster, saga_id, force=True)
    return "compensating"


def records(cluster: Cluster, saga_id: str) -> list[dict[str, Any]]:
    """The idempotency records of a saga, read from its steps' owners (needs its definition)."""
    st = status(cluster, saga_id)
    saga = registry.get(st["name"])
    if saga is None:
        raise LookupError(f"no definition of {st['name']!r} is registered in this process")
    out: list[dict[str, Any]] = []
    seen: set[Any] = set()
    for s in saga.steps:
        key = s.key(st["args"])
        if key in seen:
            continue
        seen.add(key)
        with cluster.read(key, group=saga.group) as tx:
            for r in tx.execute(saga.tables.sql["records_of"], (saga_id,)).fetchall():
                if r[3] == key:
                    out.append({"step": int(r[1]), "direction": r[2], "key": r[3], "status": r[4],
                                "result": json.loads(r[5]), "at": float(r[6]), "shard": tx.shard})
    return sorted(out, key=lambda d: (d["step"], d["direction"]))
