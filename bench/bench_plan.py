"""Benchmarks of migration planning, beside the routing it is built on.

* ``plan.diff`` (route under two topologies and count the move matrix, in
  chunks) over 10M keys against one ``route_many`` of the same keys on the new
  topology: the ratio ``diff / route_many`` is printed and stored in
  ``extra_info`` (target: <= 2.5).
* A plan over 100M ids streamed from a generated Parquet file by the
  ``shardhash plan`` command in a child process: wall time and the child's
  peak RSS (target: <= 1 GiB).  Opt-in: ``SHARDHASH_BENCH_BIG=1`` (it writes
  ~800 MB to a temporary directory, or to ``SHARDHASH_BENCH_DIR``).

10M keys with ``--benchmark-enable``; with ``--benchmark-disable`` (the
default) the sizes are small and each benchmark runs once as a plain test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench._timing import best, enabled
from shardhash import plan, routing

BIG = 10_000_000
FOUR = [f"s{i}" for i in range(4)]


def _pair(kind: str) -> tuple[routing.Router, routing.Router]:
    old: routing.Router
    if kind == "jump":
        old = routing.JumpRouter(FOUR)
    elif kind == "ring":
        old = routing.RingRouter(FOUR, vnodes=256)
    elif kind == "buckets":
        old = routing.BucketRouter(FOUR, [FOUR[b * 4 // 4096] for b in range(4096)])
    elif kind == "maglev":
        old = routing.MaglevRouter(FOUR, table_size=65537)
    else:
        old = routing.ModuloRouter(FOUR)
    new, _ = plan.add_shards(old, "s4")
    return old, new


@pytest.mark.parametrize("kind", ["modulo", "jump", "ring", "buckets", "maglev"])
def test_diff_vs_route_many(benchmark: Any, kind: str) -> None:
    n = BIG if enabled(benchmark) else 50_000
    keys = np.random.default_rng(1).integers(0, 1 << 62, size=n, dtype=np.int64)
    old, new = _pair(kind)
    rep = benchmark(plan.diff, old, new, keys)
    assert rep.total == n
    assert rep.moved == int(np.count_nonzero(
        np.asarray(old.shards)[old.route_many(keys)] != np.asarray(new.shards)[new.route_many(keys)]))
    if enabled(benchmark):
        ours = float(benchmark.stats.stats.min)
        route = best(lambda: new.route_many(keys))
        benchmark.extra_info["diff_over_route_many"] = round(ours / route, 3)
        benchmark.extra_info["ns_per_key"] = round(ours / n * 1e9, 2)
        print(f"\nplan.diff {kind} 4->5 over {n:,} keys: {ours:.3f} s ({ours / n * 1e9:.1f} ns/key); "
              f"one route_many: {route:.3f} s; diff/route_many = {ours / route:.2f}x (target <= 2.5)")


def _command() -> list[str]:
    exe = shutil.which("shardhash", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "shardhash"]


def _write_ids(path: Path, n: int, chunk: int = 1_000_000) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2)
    schema = pa.schema([("user_id", pa.int64())])
    with pq.ParquetWriter(path, schema, compression="snappy") as w:
        for s in range(0, n, chunk):
            ids = rng.integers(0, 1 << 62, size=min(chunk, n - s), dtype=np.int64)
            w.write_table(pa.table({"user_id": ids}, schema=schema), row_group_size=chunk)


def _run_plan_child(old: Path, new: Path, ids: Path) -> tuple[dict[str, Any], float, int]:
    """Run ``shardhash plan`` in a child; return its JSON, wall time and peak RSS (bytes)."""
    code = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'rc': p.returncode, 'err': p.stderr[-2000:], 'out': p.stdout, 'dt': dt, 'rss_kib': rss}))\n"
    )
    cmd = [sys.executable, "-c", code, *_command(), "plan", str(old), str(new), "--ids", str(ids), "--json", "-q"]
    res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert res["rc"] == 0, res["err"]
    return json.loads(res["out"]), res["dt"], res["rss_kib"] * 1024


@pytest.mark.skipif(sys.platform == "win32", reason="peak RSS via resource.getrusage (POSIX)")
def test_plan_streamed_from_parquet(benchmark: Any) -> None:
    pytest.importorskip("pyarrow")
    big = os.environ.get("SHARDHASH_BENCH_BIG", "") not in ("", "0")
    n = 100_000_000 if big else 300_000
    base = os.environ.get("SHARDHASH_BENCH_DIR") or None
    with tempfile.TemporaryDirectory(dir=base) as d:
        dd = Path(d)
        old, new = _pair("jump")
        (dd / "old.json").write_text(old.to_json())
        (dd / "new.json").write_text(new.to_json())
        ids = dd / "ids.parquet"
        t0 = time.perf_counter()
        _write_ids(ids, n)
        t_gen = time.perf_counter() - t0
        out, dt, rss = _run_plan_child(dd / "old.json", dd / "new.json", ids)
        rep = out["report"]
        assert rep["total"] == n
        assert abs(rep["moved_fraction"] - 0.2) < 0.01
        benchmark.extra_info.update({"ids": n, "seconds": round(dt, 2), "peak_rss_mib": round(rss / 2**20, 1)})
        print(f"\nshardhash plan over {n:,} ids streamed from Parquet ({ids.stat().st_size / 2**20:,.0f} MiB, "
              f"written in {t_gen:.1f} s): {dt:.1f} s, {n / dt / 1e6:.1f} M ids/s, "
              f"peak RSS {rss / 2**20:,.0f} MiB (target <= 1024 MiB)")
        if big:
            assert rss <= 1 << 30, f"peak RSS {rss / 2**20:.0f} MiB exceeds 1 GiB"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
