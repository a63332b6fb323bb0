"""The transactional outbox's relay: delivers the events that saga steps
put in the outbox (``ctx.emit``) at least once, in per-key order.

An event is a row of the outbox table, a table of the group keyed by the
step's key: it commits with the step's effect, on the key's owner, and a
migration moves it with the data.  The relay finds the keys with undelivered
events on each shard (those the shard owns under the current router), reads
each key's events in ``seq`` order through ``cluster.read(key)``, hands them
to the consumer, then marks them delivered through
``cluster.transaction(key)``.  A crash between the delivery and the mark
delivers them again: consumers dedupe on :attr:`Event.id`.  Run one relay
per group (two relays would each keep per-key order, but could interleave
their deliveries of one key).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from ..migrate.cluster import Cluster
from ._tables import DEFAULT_TABLES, Tables

__all__ = ["Event", "Relay"]


@dataclass(frozen=True)
class Event:
    """One outbox event: ``id`` (``SAGA/STEP/do|undo/N``, stable: dedupe on
    it), ``key`` (the step's key), ``seq`` (1, 2, ... per key, in commit
    order), ``topic``, ``payload`` (the JSON value), ``saga_id``, ``created``."""

    id: str
    key: Any
    seq: int
    topic: str
    payload: Any
    saga_id: str | None
    created: float


class Relay:
    """Delivers a group's outbox events (see the module docstring).

    ``batch``: events read per key at a time."""

    def __init__(self, cluster: Cluster, group: str | None = None, *, tables: Tables = DEFAULT_TABLES,
                 batch: int = 100) -> None:
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 100_000:
            raise ValueError(f"batch must be an integer in 1..100000, not {batch!r}")
        self.cluster, self.group, self.tables, self.batch = cluster, cluster.group(group).name, tables, batch
        self.delivered = 0

    def _owned_keys(self, query: str, params: tuple[Any, ...] | None = None) -> list[Any]:
        """The keys the outbox query ``query`` finds on each shard, kept on the
        shard that owns them under the current router."""
        router = self.cluster.refresh(self.group)
        keys: list[Any] = []
        for sid in self.cluster.shard_ids():
            b = self.cluster.backend(sid)
            c = b.conn()
            b.begin_read(c)
            try:
                if not b.has_table(c, self.tables.outbox):
                    continue
                sql = self.tables.sql[query]
                found = [r[0] for r in (c.execute(sql) if params is None else c.execute(sql, params)).fetchall()]
            finally:
                b.rollback(c)
            keys += [k for k in found if router.route(k) == sid]
        return keys

    def _keys(self) -> list[Any]:
        """Keys with undelivered events, on the shards that own them under the current router."""
        return self._owned_keys("pending_keys")

    def _read(self, key: Any) -> list[Event]:
        with self.cluster.read(key, group=self.group) as tx:
            rows = tx.execute(self.tables.sql["events_of"], (key, self.batch)).fetchall()
        return [Event(str(r[0]), r[1], int(r[2]), str(r[3]), json.loads(r[4]), r[5], float(r[6])) for r in rows]

    def _mark(self, key: Any, events: list[Event]) -> None:
        if not events:
            return
        now = time.time()
        with self.cluster.transaction(key, group=self.group) as tx:
            tx.executemany(self.tables.sql["mark"], [(now, e.id, key) for e in events])
        self.delivered += len(events)

    def poll(self, consumer: Callable[[Event], Any]) -> int:
        """One pass: hand every undelivered event to ``consumer`` (per key in
        ``seq`` order) and mark it delivered after the call returns.  When the
        consumer raises, that key's remaining events wait for the next pass
        (the events it accepted before are marked); the error is raised after
        the other keys were served.  Returns the number delivered."""
        if not callable(consumer):
            raise TypeError("consumer must be callable")
        n = 0
        first: BaseException | None = None
        for key in self._keys():
            while True:
                events = self._read(key)
                done: list[Event] = []
                try:
                    for e in events:
                        consumer(e)
                        done.append(e)
                except Exception as exc:  # noqa: BLE001 - raised after the other keys
                    if first is None:
                        first = exc
                    self._mark(key, done)
                    n += len(done)
                    break
                self._mark(key, done)
                n += len(done)
                if len(events) < self.batch:
                    break
        if first is not None:
            raise first
        return n

    def run(self, consumer: Callable[[Event], Any], *, stop: threading.Event, interval: float = 0.5) -> int:
        """Poll until ``stop`` is set (a consumer's error is logged, its events retried at the next pass)."""
        import logging

        total = 0
        while not stop.is_set():
            try:
                total += self.poll(consumer)
            except Exception as e:  # noqa: BLE001 - retried at the next pass
                logging.getLogger("shardhash.saga").warning("outbox consumer failed: %s: %s", type(e).__name__, e)
            if stop.wait(interval):
                break
        return total

    def events(self, *, stop: threading.Event | None = None, interval: float = 0.5,
               follow: bool = False) -> Generator[Event, None, None]:
        """The undelivered events as an iterator.  An event is marked delivered
        once the consumer asks for the next one (so one that was being
        handled when the loop broke or crashed is delivered again).  Without
        ``follow`` it ends when no event is left; with it, it polls every
        ``interval`` seconds until ``stop`` is set."""
        while True:
            got = 0
            for key in self._keys():
                while True:
                    events = self._read(key)
                    for e in events:
                        yield e
                        self._mark(key, [e])
                        got += 1
                    if len(events) < self.batch:
                        break
            if not follow and got == 0:
                return
            if follow and got == 0:
                if stop is not None and stop.wait(interval):
                    return
                if stop is None:
                    time.sleep(interval)

    def purge(self, older_than: float) -> int:
        """Delete the events delivered more than ``older_than`` seconds ago (through each key's owner)."""
        cut = time.time() - float(older_than)
        n = 0
        for k in self._owned_keys("delivered_keys", (cut,)):
            with self.cluster.transaction(k, group=self.group) as tx:
                n += max(0, tx.execute(self.tables.sql["purge"], (k, cut)).rowcount or 0)
        return n
