"""The operator's hand on a running migration: pause / resume and a rate
limit on the snapshot copy, both recorded in the metadata store (so another
process -- ``shardhash migrate pause ID`` / ``set ID --max-rows-per-s N`` --
changes what a running executor does at its next chunk boundary).

A pause takes effect in any phase before the fence (``preparing``,
``copying``, ``catching-up``, ``verify-failed``): the copy stops after the
chunk in hand is written and its cursor committed, the catch-up after the
batch in hand; :meth:`Migration.run` then raises :class:`MigrationPaused`
(and refuses to start while the pause stands).  The executor's step into
``freezing`` and a pause exclude each other in one metadata transaction:
either the pause is recorded before the fence (and the executor stops
there) or it is refused because the fence has begun.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import MigrationError

if TYPE_CHECKING:
    from .executor import Migration

#: The states in which a migration may be paused (before the fence).
PAUSABLE = ("preparing", "copying", "catching-up", "verify-failed")
#: How often (seconds) a running copy or catch-up re-reads its controls.
CONTROL_EVERY = 0.25


class MigrationPaused(MigrationError):
    """The migration is paused by its operator (``pause``): nothing more is
    copied or applied until ``resume``."""


def check_rate(v: Any, name: str = "max_rows_per_s") -> float | None:
    """A rate limit in rows per second: a positive number, or None / 0 for none."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name} must be a number of rows per second (or None), not {type(v).__name__}")
    f = float(v)
    if not (f >= 0 and f < 1e12):  # (also refuses NaN)
        raise ValueError(f"{name} must be >= 0 and < 1e12 rows per second (0: no limit), not {v!r}")
    return f or None


def pause(m: Migration) -> None:
    """Record a pause (refused once the fence has begun)."""
    st = m.meta.pause(m.id, PAUSABLE)
    if st not in PAUSABLE:
        raise MigrationError(f"migration {m.id} is {st}: a pause takes effect only before the fence "
                             f"(states {', '.join(PAUSABLE)})")
    m.log("paused by the operator: the executor stops at its next chunk boundary")


def unpause(m: Migration) -> bool:
    """Lift a pause; returns whether one was recorded."""
    was = bool(m.meta.set_paused(m.id, False))
    if was:
        m.log("pause lifted by the operator")
    return was


def set_rate(m: Migration, max_rows_per_s: Any) -> float | None:
    """Record the copy's rate limit (None or 0: none); a running copy
    takes it up within :data:`CONTROL_EVERY` seconds."""
    r = check_rate(max_rows_per_s)
    m.meta.set_rate_limit(m.id, r)
    m.log(f"copy rate limit set to {'none' if r is None else f'{r:,.0f} rows/s'}")
    return r


class Controls:
    """A running phase's view of its controls, re-read from the metadata
    store at most every :data:`CONTROL_EVERY` seconds (on the connection the
    caller passes: the copy's writer reads them on the connection it owns)."""

    def __init__(self, m: Migration) -> None:
        self.m = m
        self.paused = False
        self.rate: float | None = None
        self._at = 0.0

    def refresh(self, c: Any = None, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._at >= CONTROL_EVERY:
            self.paused, self.rate = self.m.meta.controls(self.m.id, c)
            self._at = now

    def check(self, where: str) -> None:
        """Raise :class:`MigrationPaused` when a pause is recorded."""
        if self.paused:
            self.m.log(f"paused {where}")
            raise MigrationPaused(f"migration {self.m.id} is paused ({where}); "
                                  f"`shardhash migrate resume {self.m.id}` continues it")


class TokenBucket:
    """Rows per second: :meth:`take` ``n`` rows, sleeping while the bucket
    is in debt.  The burst is a quarter of a second's worth (at least one
    row); the rate may change between calls (``rate`` None: no limit).
    ``sleep`` waits in slices of at most ``slice_s`` and returns early (with
    the debt kept) when ``stop()`` says so."""

    def __init__(self, rate: float | None, burst_s: float = 0.25) -> None:
        self.rate = rate
        self.burst_s = burst_s
        self.tokens = 0.0
        self._t = time.monotonic()
        self._lock = threading.Lock()  # (one bucket for every copy worker: the limit is the total)

    def _refill(self) -> None:
        now = time.monotonic()
        if self.rate is not None:
            self.tokens = min(max(1.0, self.rate * self.burst_s), self.tokens + (now - self._t) * self.rate)
        self._t = now

    def take(self, n: int, stop: Any = None, slice_s: float = 0.1) -> None:
        with self._lock:
            self._take(n, stop, slice_s)

    def _take(self, n: int, stop: Any, slice_s: float) -> None:
        self._refill()
        if self.rate is None:
            self.tokens = 0.0
            return
        self.tokens -= n
        while self.tokens < 0 and self.rate is not None:
            time.sleep(min(slice_s, -self.tokens / self.rate))
            self._refill()
            if stop is not None and stop():
                return

    def chunk_cap(self) -> int | None:
        """The largest chunk that keeps the pace smooth (a quarter second's rows)."""
        return None if self.rate is None else max(1, int(self.rate * self.burst_s))


#: The throttle's first back-off (seconds); it doubles while the signal stays high.
THROTTLE_FIRST_BACKOFF = 0.05
#: The default longest back-off (seconds) between two probes of a high signal.
THROTTLE_MAX_BACKOFF = 5.0


class Throttle:
    """A load signal per (source, destination) pair and a threshold: while
    the signal is above it, the copy's and the catch-up's workers back off
    (``run(throttle=Throttle(...))``, ``--throttle-sql SQL --throttle-above X``).

    ``probe``: an SQL query run on the destination (its first column of its
    first row: a number, e.g. a replica's lag in seconds), or a callable
    ``(source, destination) -> float``.  At each chunk boundary of the copy
    and before each catch-up batch (never under the fence, where a back-off
    would hold writers), every pair of the worker is probed; while one is
    above ``above``, the worker sleeps -- ``first_backoff`` seconds, doubling
    up to ``max_backoff`` -- and probes again.  Each back-off is recorded
    (events: its start and end; ``status``: ``throttle`` per source)."""

    def __init__(self, probe: str | Callable[[tuple[str, str]], float], above: float, *,
                 max_backoff: float = THROTTLE_MAX_BACKOFF, first_backoff: float = THROTTLE_FIRST_BACKOFF) -> None:
        if isinstance(probe, str):
            if not probe.strip():
                raise ValueError("throttle probe: the SQL query is empty")
        elif not callable(probe):
            raise TypeError(f"throttle probe must be an SQL query (str) or a callable (source, destination) -> "
                            f"float, not {type(probe).__name__}")
        self.probe = probe
        self.above = _seconds_or_number(above, "throttle above", low=None)
        self.max_backoff = _seconds_or_number(max_backoff, "throttle max_backoff", low=0.0)
        self.first_backoff = min(_seconds_or_number(first_backoff, "throttle first_backoff", low=0.0),
                                 self.max_backoff)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        what = repr(self.probe) if isinstance(self.probe, str) else getattr(self.probe, "__name__", "callable")
        return f"Throttle({what}, above={self.above:g}, max_backoff={self.max_backoff:g})"

    def signal(self, m: Migration, pair: tuple[str, str]) -> float:
        """The pair's load signal now (a :class:`MigrationError` naming the
        pair when the probe fails or gives no number)."""
        s, d = pair
        if isinstance(self.probe, str):
            b = m.cluster.backend(d)
            with m._on(d, "destination", f"running the throttle probe (pair {s!r} -> {d!r})"):
                row = b.execute(b.conn(), self.probe).fetchone()
            v: Any = None if row is None else row[0]
        else:
            try:
                v = self.probe(pair)
            except Exception as e:
                raise MigrationError(f"migration {m.id}: the throttle probe failed for pair {s!r} -> {d!r}: "
                                     f"{type(e).__name__}: {e}") from e
        f: float | None = None
        if not isinstance(v, bool) and v is not None:
            try:
                f = float(v)
            except (TypeError, ValueError):
                f = None
        if f is None or f != f:
            raise MigrationError(f"migration {m.id}: the throttle probe gave no number for pair {s!r} -> {d!r} "
                                 f"(got {v!r})")
        return f

    def wait(self, m: Migration, source: str, pairs: Sequence[tuple[str, str]],
             stop: Callable[[], bool] | None = None) -> bool:
        """Back off while a pair's signal is above the threshold; returns
        False when ``stop()`` (checked between back-offs: a pause, or another
        worker's error) ended the wait, else True."""
        backoff = self.first_backoff
        waited = 0.0
        high: tuple[tuple[str, str], float] | None = None
        try:
            while True:
                high = None
                for p in pairs:
                    v = self.signal(m, p)
                    if v > self.above:
                        high = (p, v)
                        break
                if high is None:
                    return True
                if waited == 0.0:
                    (s, d), v = high
                    m.log(f"throttle: pair {s} -> {d}: load {v:g} > {self.above:g}; backing off")
                    self._record(m, source, pairs, v, waiting=True, waited=0.0, new=True)
                if stop is not None and stop():
                    return False
                end = time.monotonic() + backoff
                while (left := end - time.monotonic()) > 0:  # (in slices: a stop is seen within 0.25 s)
                    time.sleep(min(left, 0.25))
                    if left > 0.25 and stop is not None and stop():
                        waited += backoff - max(0.0, end - time.monotonic())
                        return False
                waited += backoff
                backoff = min(backoff * 2, self.max_backoff)
        finally:
            if waited:
                last = high[1] if high is not None else None
                m.log(f"throttle: source {source}: backed off {waited:.2f} s"
                      + ("" if high is not None else f" (load back at or below {self.above:g})"))
                self._record(m, source, pairs, last, waiting=False, waited=waited, new=False)

    def _record(self, m: Migration, source: str, pairs: Sequence[tuple[str, str]], signal: float | None, *,
                waiting: bool, waited: float, new: bool) -> None:
        key = "throttle:" + source
        with self._lock, m.meta.tx() as c:
            rec = m.meta.get(m.id, key, None, c) or {"source": source, "backoffs": 0, "seconds": 0.0}
            rec.update({"destinations": sorted({d for _, d in pairs}), "above": self.above, "waiting": waiting})
            if signal is not None:
                rec["signal"] = signal
            if new:
                rec["backoffs"] = int(rec["backoffs"]) + 1
            rec["seconds"] = float(rec["seconds"]) + waited
            m.meta.put(m.id, key, rec, c)


def _seconds_or_number(v: Any, name: str, low: float | None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(v).__name__}")
    f = float(v)
    if f != f or f in (float("inf"), float("-inf")) or (low is not None and not f > low):
        raise ValueError(f"{name} must be a finite number" + (f" > {low:g}" if low is not None else "")
                         + f", not {v!r}")
    return f
