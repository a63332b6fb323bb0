"""The engines benchmark at full size: ``python bench/engines_100m.py [--ids N] [--engines dask,spark,ray]``.

Writes N ids (default 100,000,000) of random int64 into 16 Parquet files
under ``--dir`` (default: a temporary folder, removed afterwards; an existing
folder with the 16 files is reused), then times one move report (``diff``,
Maglev 8 shards -> jump 9 shards) over every id:

* one process: ``plan.diff`` per file (what ``shardhash plan --ids FILE``
  runs), default threads, the matrices summed;
* each engine with 2 local workers: the engine's start-up (cluster, session,
  Ray runtime) timed apart, then a **cold** run (the first: worker processes
  import shardhash and build the routers) and **warm** runs (the same
  cluster again).  Every engine's matrix is checked against the single
  process's.

Reported per engine: seconds, the ratio to the single process (cold and best
warm), ids/s per worker (ids / warm seconds / 2), peak RSS per worker process
(from the partials), and the 1-minute load average before and after, since
the figures mean little without it on a shared machine.  ``--json FILE``
writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from shardhash import plan, routing

N_FILES = 16
WORKERS = 2


def write_ids(folder: Path, n: int) -> list[str]:
    """``n`` random int64 ids over 16 Parquet files (reused when already there with that many rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [folder / f"part-{i:02d}.parquet" for i in range(N_FILES)]
    if all(f.exists() for f in files) and sum(pq.read_metadata(f).num_rows for f in files) == n:
        return [str(f) for f in files]
    rng = np.random.default_rng(100)
    per = -(-n // N_FILES)
    for i, f in enumerate(files):
        m = max(0, min(per, n - i * per))
        pq.write_table(pa.table({"id": rng.integers(-(1 << 62), 1 << 62, m, dtype=np.int64)}), f,
                       row_group_size=1 << 20)
    return [str(f) for f in files]


def single(files: list[str], old: Any, new: Any) -> np.ndarray:
    from shardhash.io import open_ids

    total = np.zeros((len(old.shards), len(new.shards)), dtype=np.int64)
    for f in files:
        total += plan.diff(old, new, open_ids(f, column="id")).matrix
    return total


# Each engine: a context manager that starts it (yielding a function that runs one diff).
Runner = Callable[[list[str], Any, Any], Any]


@contextmanager
def dask_engine() -> Iterator[Runner]:
    from distributed import Client, LocalCluster

    import shardhash.dask as shd

    cluster = LocalCluster(  # type: ignore[no-untyped-call]  # distributed: unannotated
        n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0", host="127.0.0.1")
    with cluster, Client(cluster):  # type: ignore[no-untyped-call]  # distributed: unannotated
        def run(files: list[str], old: Any, new: Any) -> Any:
            stats: dict[str, Any] = {}
            return shd.diff(shd.read_parquet(files, "id"), "id", old, new, stats=stats), stats

        yield run


@contextmanager
def spark_engine() -> Iterator[Runner]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import shardhash.spark as shs

    spark = (SparkSession.builder.master(f"local[{WORKERS}]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 20)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        def run(files: list[str], old: Any, new: Any) -> Any:
            stats: dict[str, Any] = {}
            return shs.diff(spark.read.parquet(*files), "id", old, new, stats=stats), stats

        yield run
    finally:
        spark.stop()


@contextmanager
def ray_engine() -> Iterator[Runner]:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    import ray.data

    import shardhash.ray as shr

    ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False

        def run(files: list[str], old: Any, new: Any) -> Any:
            stats: dict[str, Any] = {}
            return shr.diff(shr.read_parquet(files, "id"), "id", old, new, stats=stats, concurrency=WORKERS), stats

        yield run
    finally:
        ray.shutdown()


ENGINES = {"dask": dask_engine, "spark": spark_engine, "ray": ray_engine}


def import_cost(runs: int = 3) -> float:
    """Seconds a fresh worker process spends importing shardhash (beyond numpy and
    pyarrow, which the engines' workers load anyway): the part of a cold run that is ours."""
    import subprocess

    def best(code: str) -> float:
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            out.append(time.perf_counter() - t0)
        return min(out)

    base = best("import numpy, pyarrow.parquet")
    return max(0.0, best("import numpy, pyarrow.parquet, shardhash.arrow") - base)


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def measure(files: list[str], n: int, engines: list[str], warm_runs: int = 2) -> dict[str, Any]:
    old = routing.MaglevRouter([f"db{i}" for i in range(8)])
    new = routing.JumpRouter([f"db{i}" for i in range(9)])
    ref = single(files, old, new)  # pages the files in, as the engines' reads will find them
    singles: list[float] = []

    def time_single() -> float:
        t0 = time.perf_counter()
        if single(files, old, new).tolist() != ref.tolist():
            raise AssertionError("the single process is not deterministic")
        singles.append(time.perf_counter() - t0)
        return singles[-1]

    l0 = load()
    one = min(time_single(), time_single())
    imp = import_cost()
    rows: dict[str, Any] = {"ids": n, "files": len(files), "workers": WORKERS, "single_process_s": singles,
                            "single_load": [l0, load()], "worker_import_s": imp, "engines": {}}
    print(f"{n:,} ids in {len(files)} files; one process {one:.2f} s ({n / one / 1e6:.1f} M ids/s), "
          f"load {l0:.1f}; a worker's import of shardhash {imp:.2f} s", flush=True)
    for e in engines:
        l0 = load()
        t0 = time.perf_counter()
        with ENGINES[e]() as run:
            startup = time.perf_counter() - t0
            times: list[float] = []
            rss: dict[str, int] = {}
            for _ in range(1 + warm_runs):
                t0 = time.perf_counter()
                rep, stats = run(files, old, new)
                times.append(time.perf_counter() - t0)
                if rep.matrix.tolist() != ref.tolist():
                    raise AssertionError(f"{e}: the move matrix differs from the single process's")
                for k, v in stats["peak_rss"].items():
                    rss[k] = max(rss.get(k, 0), v)
        warm = min(times[1:]) if warm_runs else times[0]
        one = min(time_single(), one)  # the single process again, right after the engine: same window
        r = {"single_s": one, "startup_s": startup, "cold_s": times[0], "warm_s": times[1:],
             "cold_ratio": times[0] / one, "warm_ratio": warm / one, "ids_per_s_per_worker": n / warm / WORKERS,
             "peak_rss_mib_per_worker": sorted(v / 2**20 for v in rss.values()),
             "partials": stats.get("partials", stats.get("partitions")), "load": [l0, load()]}
        rows["engines"][e] = r
        print(f"  {e:<6} start-up {startup:6.2f} s  cold {times[0]:7.2f} s ({r['cold_ratio']:5.2f}x)  "
              f"warm {warm:7.2f} s ({r['warm_ratio']:5.2f}x)  {r['ids_per_s_per_worker'] / 1e6:6.2f} M ids/s/worker  "
              f"peak RSS MiB {', '.join(f'{x:.0f}' for x in r['peak_rss_mib_per_worker'])}  "
              f"({len(rss)} processes)  load {l0:.1f} -> {r['load'][1]:.1f}  (one process {one:.2f} s)",
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", type=int, default=100_000_000)
    ap.add_argument("--engines", default="dask,spark,ray")
    ap.add_argument("--dir", help="folder for the Parquet files (kept; reused when it holds them)")
    ap.add_argument("--warm-runs", type=int, default=2)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="shardhash-engines-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        files = write_ids(folder, args.ids)
        print(f"ids ready in {time.perf_counter() - t0:.1f} s under {folder}", flush=True)
        rows = measure(files, args.ids, [e for e in args.engines.split(",") if e], args.warm_runs)
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
