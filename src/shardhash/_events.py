"""Operational events: one tiny hook the library parts call, no dependencies.

Library code calls :func:`emit` with an event name and fields; every
listener registered with :func:`subscribe` receives them (``shardhash.metrics``
registers one that feeds Prometheus counters), and the ``shardhash.events``
logger gets a structured record whose ``shardhash`` attribute holds the
fields (at DEBUG, or WARNING for failures).  With no listener and the logger
not enabled for the level, ``emit`` costs one list check and one
``isEnabledFor``.

Events and their fields (documented in docs/metrics.md):

* ``route``       shard, keys, topology_version, shard_key, group
* ``hot_write``   shard, hot (bool), sub_key, topology_version
* ``hot_read``    key, hot (bool), fan_out, group
* ``scatter``     fan_out, failed (list), latencies ({shard: seconds}), kind
* ``shard_op``    shard, op, seconds, ok
* ``error``       shard, op, reason
* ``stale_route_retry``  shard, group, shard_key, topology_version, current_version,
  retry_reason, retried, migration_id (of the migration whose record made the route stale)
* ``migration_progress`` migration_id, copied, scanned, total (None unless counted)
* ``verify_mismatch``    migration_id, count
* ``lookup``      index, shard, found, orphan
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["emit", "subscribe", "unsubscribe"]

Listener = Callable[[str, dict[str, Any]], None]

_lock = threading.Lock()
_listeners: tuple[Listener, ...] = ()
log = logging.getLogger("shardhash.events")

# A stale route that was refreshed and retried is the protocol working as
# designed during a migration: INFO, so that an application without logging
# configured (Python's last-resort handler prints WARNING and up) is not
# flooded; errors and verify mismatches need an operator: WARNING.
_WARN = frozenset({"error", "verify_mismatch"})
_INFO = frozenset({"stale_route_retry"})


def subscribe(fn: Listener) -> None:
    """Call ``fn(event, fields)`` for every event from now on."""
    global _listeners
    if not callable(fn):
        raise TypeError("listener must be callable")
    with _lock:
        if fn not in _listeners:
            _listeners = _listeners + (fn,)


def unsubscribe(fn: Listener) -> None:
    """Stop calling ``fn`` (no error when it was not subscribed)."""
    global _listeners
    with _lock:
        _listeners = tuple(x for x in _listeners if x is not fn)


def emit(event: str, **fields: Any) -> None:
    """Send one event to the listeners and the ``shardhash.events`` logger.

    A listener that raises is logged and skipped: observing never breaks the
    operation observed.
    """
    for fn in _listeners:  # a tuple: safe against concurrent (un)subscribe
        try:
            fn(event, fields)
        except Exception:  # pragma: no cover - defensive
            log.exception("shardhash event listener %r failed on %s", fn, event)
    level = logging.WARNING if event in _WARN else logging.INFO if event in _INFO else logging.DEBUG
    if log.isEnabledFor(level):
        log.log(level, "%s %s", event, fields, extra={"shardhash": {"event": event, **fields}})
