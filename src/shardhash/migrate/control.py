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
