"""Planning on Dask, Spark and Ray against one process, over ids in 16 Parquet files.

For each engine (2 workers, local) and the single process (``plan.diff`` over
the same files, its default threads), the wall time of one full move report
over every id, then:

* the engine overhead as a ratio ``engine time / single-process time``;
* peak RSS per worker process (from the partials' ``peak_rss``);
* ids/s per worker (ids / time / 2).

Every engine's report is also checked to equal the single process's.

Sizes: ``SHARDHASH_BENCH_ENGINE_IDS`` ids (default 200,000, so the file runs
as a quick test; the figures in bench/README.md use 100,000,000, which writes
~1.6 GB of Parquet to ``SHARDHASH_BENCH_DIR`` or a temporary folder).
``SHARDHASH_BENCH_ENGINES`` (default ``dask``) lists the engines to run, e.g.
``dask,spark,ray``.  Results are printed and written as JSON to
``SHARDHASH_BENCH_ENGINES_OUT`` when set.  ``python bench/engines_100m.py``
is the full-size run (engine start-up, cold and warm runs timed apart).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardhash import plan, routing

N_FILES = 16
WORKERS = 2


def _ids() -> int:
    return int(os.environ.get("SHARDHASH_BENCH_ENGINE_IDS", "200000"))


def _engines() -> list[str]:
    return [e for e in os.environ.get("SHARDHASH_BENCH_ENGINES", "dask").split(",") if e]


def _write(folder: Path, n: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(100)
    files = []
    per = -(-n // N_FILES)
    for i in range(N_FILES):
        m = max(0, min(per, n - i * per))
        ids = rng.integers(-(1 << 62), 1 << 62, m, dtype=np.int64)
        f = folder / f"part-{i:02d}.parquet"
        pq.write_table(pa.table({"id": ids}), f, row_group_size=1 << 20)
        files.append(str(f))
    return files


def _single(files: list[str], old: Any, new: Any) -> Any:
    from shardhash.io import open_ids

    total = None
    for f in files:
        rep = plan.diff(old, new, open_ids(f, column="id"))
        total = rep.matrix if total is None else total + rep.matrix
    return total


def _dask(files: list[str], old: Any, new: Any) -> tuple[Any, dict[str, Any]]:
    from distributed import Client, LocalCluster

    import shardhash.dask as shd

    # distributed is unannotated
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]
                      dashboard_address="127.0.0.1:0", host="127.0.0.1") as cluster, \
            Client(cluster):  # type: ignore[no-untyped-call]
        ddf = shd.read_parquet(files, "id")
        t0 = time.perf_counter()
        stats: dict[str, Any] = {}
        rep = shd.diff(ddf, "id", old, new, stats=stats)
        stats["seconds"] = time.perf_counter() - t0
    return rep, stats


def _spark(files: list[str], old: Any, new: Any) -> tuple[Any, dict[str, Any]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import shardhash.spark as shs

    spark = (SparkSession.builder.master(f"local[{WORKERS}]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 20)).getOrCreate())
    try:
        df = spark.read.parquet(*files)
        t0 = time.perf_counter()
        stats: dict[str, Any] = {}
        rep = shs.diff(df, "id", old, new, stats=stats)
        stats["seconds"] = time.perf_counter() - t0
    finally:
        spark.stop()
    return rep, stats


def _ray(files: list[str], old: Any, new: Any) -> tuple[Any, dict[str, Any]]:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray
    import ray.data

    import shardhash.ray as shr

    ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        ds = shr.read_parquet(files, "id")  # one block per file (Ray's reader packs small files into one)
        t0 = time.perf_counter()
        stats: dict[str, Any] = {}
        rep = shr.diff(ds, "id", old, new, stats=stats, concurrency=WORKERS)
        stats["seconds"] = time.perf_counter() - t0
    finally:
        ray.shutdown()
    return rep, stats


RUNNERS = {"dask": _dask, "spark": _spark, "ray": _ray}


def test_engines_against_one_process(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    for e in _engines():
        pytest.importorskip({"dask": "distributed", "spark": "pyspark", "ray": "ray"}[e])
    n = _ids()
    base = os.environ.get("SHARDHASH_BENCH_DIR")
    folder = Path(tempfile.mkdtemp(dir=base)) if base else tmp_path
    try:
        files = _write(folder, n)
        old = routing.MaglevRouter([f"db{i}" for i in range(8)])
        new = routing.JumpRouter([f"db{i}" for i in range(9)])
        t0 = time.perf_counter()
        ref = _single(files, old, new)
        single = time.perf_counter() - t0
        rows: dict[str, Any] = {"ids": n, "files": N_FILES, "single_process_s": single,
                                "single_ids_per_s": n / single, "engines": {}}
        for e in _engines():
            rep, stats = RUNNERS[e](files, old, new)
            assert rep.matrix.tolist() == ref.tolist(), e
            secs = stats["seconds"]
            rows["engines"][e] = {
                "seconds": secs,
                "overhead_ratio": secs / single,
                "ids_per_s_per_worker": n / secs / WORKERS,
                "peak_rss_mib_per_worker": sorted(v / 2**20 for v in stats["peak_rss"].values()),
                "worker_processes": len(stats["peak_rss"]),
                "partials": stats.get("partials", stats.get("partitions")),
            }
    finally:
        if base:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n{n:,} ids in {N_FILES} files; single process {single:.2f} s ({n / single / 1e6:.1f} M ids/s)")
    for e, r in rows["engines"].items():
        rss = ", ".join(f"{x:.0f}" for x in r["peak_rss_mib_per_worker"])
        print(f"  {e:<6} {r['seconds']:8.2f} s  {r['overhead_ratio']:5.2f}x single  "
              f"{r['ids_per_s_per_worker'] / 1e6:6.2f} M ids/s/worker  peak RSS MiB per worker: {rss}")
    out = os.environ.get("SHARDHASH_BENCH_ENGINES_OUT")
    if out:
        Path(out).write_text(json.dumps(rows, indent=2), encoding="utf-8")
