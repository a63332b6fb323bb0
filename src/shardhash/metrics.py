"""What operators watch: Prometheus metrics and structured log records.

The library parts report what they do as events (``shardhash._events``):
routed keys, per-shard operation latencies, errors, stale-route retries,
scatter-gather fan-out and latency, writes to hot keys, migration progress
and verify mismatches, lookup-index reads.  :class:`ShardMetrics` turns them
into ``prometheus_client`` counters and histograms in **one registry** that
the application mounts (``make_wsgi_app``, ``start_http_server`` or its own
``/metrics`` route via :meth:`ShardMetrics.exposition`).

``prometheus_client`` is an optional extra (``pip install
'shardhash[metrics]'``); the core never imports it.  Without it
:class:`ShardMetrics` still works and does nothing (``enabled`` is False).

Every event is also a record of the ``shardhash.events`` logger whose
``shardhash`` attribute holds its fields (shard key, chosen shard, topology
version, migration id, retry reason...); :class:`JsonFormatter` prints them
as one JSON object per line.

>>> from shardhash import metrics, _events
>>> m = metrics.ShardMetrics()
>>> m.attach()
>>> _events.emit("route", shard="s1", keys=3, topology_version=7, shard_key="user:42")
>>> m.value("shardhash_routed_keys_total", shard="s1") if m.enabled else 3.0
3.0
>>> m.detach()
"""

from __future__ import annotations

import json
import logging
from typing import Any

from shardhash import _events

__all__ = ["ShardMetrics", "JsonFormatter", "available", "LATENCY_BUCKETS"]

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
FAN_OUT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def available() -> bool:
    """True when ``prometheus_client`` can be imported."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


class ShardMetrics:
    """Counters and histograms of shardhash's events in one registry.

    ``registry``: a ``prometheus_client.CollectorRegistry`` to register in
    (a new one by default: mount ``m.registry``).  ``attach()`` starts
    listening to the events of this process, ``detach()`` stops.

    Metrics (all prefixed ``shardhash_``): ``routed_keys_total{shard}``,
    ``shard_op_seconds{shard,op}`` (histogram: per-shard latency
    percentiles), ``errors_total{shard,op}``,
    ``client_stale_retries_total{shard}``, ``scatter_queries_total{kind}``,
    ``scatter_fan_out`` and ``scatter_latency_seconds`` (histograms; the
    latency of a scatter-gather query is its slowest shard's),
    ``scatter_failed_shards_total{shard}``, ``hot_writes_total{hot}`` (the
    share of traffic on hot keys is ``hot="true"`` over the sum),
    ``hot_reads_total{hot}`` (likewise for reads), ``copy_rows_done{migration}``,
    ``copy_rows_scanned{migration}`` and ``copy_rows_planned{migration}``
    (gauges: progress = scanned / planned),
    ``verify_mismatches_total{migration}``,
    ``lookups_total{index,result}``, ``sagas_total{saga,state}`` (state:
    started, completed, compensated, stuck) and
    ``saga_step_seconds{saga,step}`` (histogram: step latency percentiles;
    docs/saga.md).
    """

    def __init__(self, registry: Any = None) -> None:
        self.enabled = available()
        self.registry = registry
        self._m: dict[str, Any] = {}
        if not self.enabled:
            return
        import prometheus_client as pc

        if self.registry is None:
            self.registry = pc.CollectorRegistry(auto_describe=True)
        reg = self.registry

        def c(name: str, doc: str, labels: tuple[str, ...] = ()) -> None:
            self._m[name] = pc.Counter(name, doc, labels, registry=reg)

        def h(name: str, doc: str, labels: tuple[str, ...] = (), buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
            self._m[name] = pc.Histogram(name, doc, labels, registry=reg, buckets=buckets)

        def g(name: str, doc: str, labels: tuple[str, ...] = ()) -> None:
            self._m[name] = pc.Gauge(name, doc, labels, registry=reg)

        c("shardhash_routed_keys", "keys routed, by chosen shard", ("shard",))
        h("shardhash_shard_op_seconds", "latency of cluster operations, by shard and operation", ("shard", "op"))
        c("shardhash_errors", "failed shard operations", ("shard", "op"))
        c("shardhash_client_stale_retries", "operations retried after a stale route", ("shard",))
        c("shardhash_scatter_queries", "scatter-gather queries", ("kind",))
        h("shardhash_scatter_fan_out", "shards a scatter-gather query was sent to", buckets=FAN_OUT_BUCKETS)
        h("shardhash_scatter_latency_seconds", "scatter-gather latency (the slowest shard's)")
        c("shardhash_scatter_failed_shards", "shards that failed or timed out in a scatter-gather", ("shard",))
        c("shardhash_hot_writes", "writes routed by a hot-key policy, hot or not", ("hot",))
        c("shardhash_hot_reads", "reads through a hot-key policy (a hot key's fan out to its sub-keys)", ("hot",))
        g("shardhash_copy_rows_done", "rows a migration copied so far", ("migration",))
        g("shardhash_copy_rows_scanned", "source rows a migration scanned so far", ("migration",))
        g("shardhash_copy_rows_planned", "source rows a migration has to scan", ("migration",))
        c("shardhash_verify_mismatches", "rows that differ after a migration copy", ("migration",))
        c("shardhash_lookups", "lookup-index reads", ("index", "result"))
        c("shardhash_sagas", "sagas started, and sagas that ended, by final state", ("saga", "state"))
        h("shardhash_saga_step_seconds", "latency of saga steps and compensations", ("saga", "step"))

    # -- listening ---------------------------------------------------------------

    def attach(self) -> None:
        """Receive this process's events (idempotent)."""
        _events.subscribe(self)

    def detach(self) -> None:
        _events.unsubscribe(self)

    def __call__(self, event: str, f: dict[str, Any]) -> None:
        if not self.enabled:
            return
        m = self._m
        if event == "route":
            m["shardhash_routed_keys"].labels(str(f.get("shard"))).inc(f.get("keys", 1))
        elif event == "shard_op":
            m["shardhash_shard_op_seconds"].labels(str(f.get("shard")), str(f.get("op"))).observe(f["seconds"])
            if not f.get("ok", True):
                m["shardhash_errors"].labels(str(f.get("shard")), str(f.get("op"))).inc()
        elif event == "error":
            m["shardhash_errors"].labels(str(f.get("shard")), str(f.get("op"))).inc()
        elif event == "stale_route_retry":
            m["shardhash_client_stale_retries"].labels(str(f.get("shard"))).inc()
        elif event == "scatter":
            m["shardhash_scatter_queries"].labels(str(f.get("kind", "gather"))).inc()
            m["shardhash_scatter_fan_out"].observe(f.get("fan_out", 0))
            lat = f.get("latencies") or {}
            if lat:
                m["shardhash_scatter_latency_seconds"].observe(max(lat.values()))
            for s, sec in lat.items():
                m["shardhash_shard_op_seconds"].labels(str(s), "scatter").observe(sec)
            for s in f.get("failed") or ():
                m["shardhash_scatter_failed_shards"].labels(str(s)).inc()
        elif event == "hot_write":
            m["shardhash_hot_writes"].labels("true" if f.get("hot") else "false").inc()
        elif event == "hot_read":
            m["shardhash_hot_reads"].labels("true" if f.get("hot", True) else "false").inc()
        elif event == "migration_progress":
            mig = str(f.get("migration_id"))
            m["shardhash_copy_rows_done"].labels(mig).set(f.get("copied", 0))
            if f.get("scanned") is not None:
                m["shardhash_copy_rows_scanned"].labels(mig).set(f["scanned"])
            if f.get("total") is not None:
                m["shardhash_copy_rows_planned"].labels(mig).set(f["total"])
        elif event == "verify_mismatch":
            m["shardhash_verify_mismatches"].labels(str(f.get("migration_id"))).inc(f.get("count", 1))
        elif event == "lookup":
            result = "orphan" if f.get("orphan") else ("hit" if f.get("found") else "miss")
            m["shardhash_lookups"].labels(str(f.get("index")), result).inc()
        elif event == "saga":
            m["shardhash_sagas"].labels(str(f.get("saga")), str(f.get("state"))).inc()
        elif event == "saga_step":
            m["shardhash_saga_step_seconds"].labels(str(f.get("saga")), str(f.get("step"))).observe(f["seconds"])

    # -- reading -----------------------------------------------------------------

    def value(self, name: str, **labels: str) -> float | None:
        """The current value of one sample (None when absent or disabled).

        ``name`` is a sample name (``..._total``, ``..._count``, ``..._sum``
        or a gauge's name).
        """
        if not self.enabled:
            return None
        v = self.registry.get_sample_value(name, labels or None)
        return None if v is None else float(v)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format (b"" when disabled)."""
        if not self.enabled:
            return b""
        from prometheus_client import generate_latest

        return bytes(generate_latest(self.registry))


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the
    event's fields (``record.shardhash``) when the record carries them.

    >>> import logging
    >>> rec = logging.LogRecord("shardhash.events", logging.WARNING, __file__, 1, "x", (), None)
    >>> rec.shardhash = {"event": "stale_route_retry", "shard": "s1", "retry_reason": "stale route"}
    >>> json.loads(JsonFormatter().format(rec))["shard"]
    's1'
    """

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"time": record.created, "level": record.levelname, "logger": record.name,
                               "message": record.getMessage()}
        extra = getattr(record, "shardhash", None)
        if isinstance(extra, dict):
            doc.update(extra)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False, sort_keys=True)
