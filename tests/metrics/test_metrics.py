"""shardhash.metrics: Prometheus counters from events, no-op without the extra, structured logs."""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import _events
from shardhash.metrics import JsonFormatter, ShardMetrics, available
from shardhash.scatter import scatter_gather
from tests._support import child_env, oracle_required

if not available():
    if oracle_required():
        pytest.fail("prometheus_client (the 'metrics' extra) is required in CI")
    pytest.skip("prometheus_client not installed", allow_module_level=True)


@pytest.fixture
def m() -> Iterator[ShardMetrics]:
    mm = ShardMetrics()
    mm.attach()
    yield mm
    mm.detach()


def _shards(tmp_path: Path, n: int = 3) -> dict[str, Callable[[], sqlite3.Connection]]:
    out: dict[str, Callable[[], sqlite3.Connection]] = {}
    for i in range(n):
        p = tmp_path / f"s{i}.db"
        c = sqlite3.connect(p)
        c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        c.executemany("INSERT INTO t VALUES (?)", [(i + n * j,) for j in range(10)])
        c.commit()
        c.close()
        out[f"s{i}"] = functools.partial(sqlite3.connect, str(p))
    return out


def test_scatter_gather_is_counted(m: ShardMetrics, tmp_path: Path) -> None:
    shards = _shards(tmp_path)

    def down() -> sqlite3.Connection:
        raise OSError("down")

    scatter_gather("SELECT id FROM t", shards, order_by=["id"], unique="id", limit=5)
    shards["s1"] = down
    scatter_gather("SELECT id FROM t", shards, order_by=["id"], unique="id", limit=5, on_partial="partial")
    assert m.value("shardhash_scatter_queries_total", kind="gather") == 2
    assert m.value("shardhash_scatter_fan_out_count") == 2 and m.value("shardhash_scatter_fan_out_sum") == 6
    assert m.value("shardhash_scatter_failed_shards_total", shard="s1") == 1
    assert m.value("shardhash_errors_total", shard="s1", op="gather") == 1
    assert m.value("shardhash_shard_op_seconds_count", shard="s0", op="scatter") == 2
    assert m.value("shardhash_scatter_latency_seconds_count") == 2
    text = m.exposition().decode()
    assert "shardhash_scatter_queries_total" in text


def test_other_events(m: ShardMetrics) -> None:
    _events.emit("route", shard="s0", keys=5, topology_version=3, shard_key=1)
    _events.emit("hot_write", shard="s0", hot=True, sub_key=2, topology_version=3)
    _events.emit("hot_write", shard="s1", hot=False, sub_key=0, topology_version=3)
    _events.emit("stale_route_retry", shard="s2", topology_version=3, retry_reason="stale route")
    _events.emit("migration_progress", migration_id="m1", copied=50, scanned=120, total=200)
    _events.emit("verify_mismatch", migration_id="m1", count=2)
    _events.emit("shard_op", shard="s0", op="write", seconds=0.002, ok=False)
    _events.emit("lookup", index="email", shard="s0", found=True, orphan=False)
    assert m.value("shardhash_routed_keys_total", shard="s0") == 5
    assert m.value("shardhash_hot_writes_total", hot="true") == 1
    assert m.value("shardhash_hot_writes_total", hot="false") == 1
    assert m.value("shardhash_client_stale_retries_total", shard="s2") == 1
    assert m.value("shardhash_copy_rows_done", migration="m1") == 50
    assert m.value("shardhash_copy_rows_planned", migration="m1") == 200
    assert m.value("shardhash_copy_rows_scanned", migration="m1") == 120
    assert m.value("shardhash_verify_mismatches_total", migration="m1") == 2
    assert m.value("shardhash_errors_total", shard="s0", op="write") == 1
    assert m.value("shardhash_lookups_total", index="email", result="hit") == 1
    m.detach()
    _events.emit("route", shard="s0", keys=5)
    assert m.value("shardhash_routed_keys_total", shard="s0") == 5


def test_two_instances_two_registries() -> None:
    a, b = ShardMetrics(), ShardMetrics()
    a.attach()
    try:
        _events.emit("route", shard="x", keys=1)
    finally:
        a.detach()
    assert a.value("shardhash_routed_keys_total", shard="x") == 1
    assert b.value("shardhash_routed_keys_total", shard="x") is None


def test_structured_log_records(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="shardhash.events"):
        _events.emit("stale_route_retry", shard="s2", topology_version=9, shard_key="user:1",
                     migration_id="m7", retry_reason="shard gave the key away")
    (rec,) = [r for r in caplog.records if r.name == "shardhash.events"]
    assert rec.levelno == logging.INFO  # a retried stale route is routine; errors are WARNING
    doc = json.loads(JsonFormatter().format(rec))
    assert doc["event"] == "stale_route_retry" and doc["topology_version"] == 9
    assert doc["shard_key"] == "user:1" and doc["migration_id"] == "m7" and doc["shard"] == "s2"
    assert doc["retry_reason"] == "shard gave the key away"


def test_a_failing_listener_does_not_break_the_operation(caplog: pytest.LogCaptureFixture) -> None:
    def bad(event: str, fields: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    _events.subscribe(bad)
    try:
        _events.emit("route", shard="s0", keys=1)
    finally:
        _events.unsubscribe(bad)
    assert any("listener" in r.getMessage() for r in caplog.records)


def test_core_never_imports_prometheus_and_metrics_is_a_no_op_without_it() -> None:
    code = (
        "import sys\n"
        "import shardhash, shardhash.scatter, shardhash.hotkeys\n"
        "assert 'prometheus_client' not in sys.modules, 'core imported prometheus_client'\n"
        "sys.modules['prometheus_client'] = None  # as if not installed\n"
        "from shardhash import metrics, _events\n"
        "m = metrics.ShardMetrics(); m.attach()\n"
        "_events.emit('route', shard='s0', keys=1)\n"
        "assert not m.enabled and m.value('shardhash_routed_keys_total', shard='s0') is None\n"
        "assert m.exposition() == b''\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_names_never_collide_with_the_migration_gauges() -> None:
    import prometheus_client

    from shardhash.migrate import metrics as mig_metrics

    assert mig_metrics.publish({"id": "m-names", "rows_copied": 1, "client_metrics": {}}, [0.01])
    theirs = {mf.name for mf in prometheus_client.REGISTRY.collect() if mf.name.startswith("shardhash_")}
    ours = {mf.name for mf in ShardMetrics().registry.collect()}
    assert theirs and ours and not theirs & ours


def test_log_levels_by_event(caplog: pytest.LogCaptureFixture) -> None:
    # Errors and verify mismatches need an operator (WARNING); a retried stale
    # route is routine during a migration (INFO); routed keys are DEBUG.
    with caplog.at_level(logging.DEBUG, logger="shardhash.events"):
        for event in ("error", "verify_mismatch", "stale_route_retry", "route"):
            _events.emit(event, shard="s1")
    levels = {r.__dict__["shardhash"]["event"]: r.levelno for r in caplog.records if r.name == "shardhash.events"}
    assert levels == {"error": logging.WARNING, "verify_mismatch": logging.WARNING,
                      "stale_route_retry": logging.INFO, "route": logging.DEBUG}
