"""Operator metrics through ``prometheus_client`` (the optional extra
``shardhash[metrics]``).  Nothing else in shardhash imports it: without the
extra, :func:`publish` does nothing and ``status --json`` still reports the
same figures.

Gauges (label ``migration``): ``shardhash_migration_rows_copied``,
``shardhash_migration_lag_changes``, ``shardhash_migration_lag_seconds``,
``shardhash_migration_copy_rows_per_second``,
``shardhash_migration_verify_mismatches``; counter-like gauges of the
client: ``shardhash_stale_route_retries``; and the histogram
``shardhash_write_pause_seconds`` of the writes that waited for a fence.
"""

from __future__ import annotations

from typing import Any

from ..metrics import available

_REG: dict[str, Any] = {}


def _metric(kind: str, name: str, doc: str, labels: tuple[str, ...] = ("migration",), **kw: Any) -> Any:
    if name not in _REG:
        import prometheus_client as pc

        _REG[name] = getattr(pc, kind)(name, doc, labels, **kw)
    return _REG[name]


def publish(status: dict[str, Any], pauses: list[float] | None = None) -> bool:
    """Set the gauges from a ``Migration.status()`` dict (plus the client
    metrics under ``client_metrics``); False when prometheus_client is absent."""
    if not available():
        return False
    mig = str(status.get("id", ""))
    lag = status.get("lag") or {}
    _metric("Gauge", "shardhash_migration_rows_copied", "rows copied").labels(mig).set(status.get("rows_copied") or 0)
    _metric("Gauge", "shardhash_migration_lag_changes", "captured changes not applied yet").labels(mig).set(
        lag.get("changes") or 0)
    _metric("Gauge", "shardhash_migration_lag_seconds", "estimated catch-up time").labels(mig).set(
        lag.get("seconds") or 0)
    _metric("Gauge", "shardhash_migration_copy_rows_per_second", "rows copied per second").labels(mig).set(
        status.get("copy_rows_copied_per_s") or 0)
    v = status.get("verify") or {}
    _metric("Gauge", "shardhash_migration_verify_mismatches", "rows that differ").labels(mig).set(
        v.get("mismatches") or 0)
    cm = status.get("client_metrics") or {}
    _metric("Gauge", "shardhash_stale_route_retries", "stale-route retries of this process", ()).set(
        cm.get("stale_retries") or 0)
    h = _metric("Histogram", "shardhash_write_pause_seconds", "time writes waited for a fence", (),
                buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
    for p in pauses or ():
        h.observe(p)
    return True
