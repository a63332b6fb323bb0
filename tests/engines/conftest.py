"""Real engines in local mode, each started once per test session and shut down after it.

In CI (SHARDHASH_CI=1) a missing engine fails its tests; elsewhere they skip with the reason.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from shardhash.routing import Router
from tests._support import child_env, oracle_required

__all__ = ["child_env"]  # re-exported for the engine tests


# Keep every engine on the loopback interface, and let Ray's memory monitor
# leave the workers of a shared machine alone (set before Ray is imported).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# 200,000 ids in 8 files of 3 row groups each (10,000, 10,000 and 5,000 rows): what the engine tests
# check (every id routed as route_many routes it, the partials merged into plan.diff's report, runs of
# row groups spread over the workers) needs many batches and row groups, not many ids; a million made
# each engine pass seconds longer.
N_IDS = 200_000
ROW_GROUP = 10_000
N_FILES = 8
SWEEP_IDS = 80_000


def need(module: str, what: str) -> ModuleType:
    """Import ``module`` or fail (CI) / skip (elsewhere) naming what is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        msg = f"{what} is not installed ({exc}); pip install 'shardhash[test]'"
        if oracle_required():
            pytest.fail(msg)
        pytest.skip(msg)


def compat_routers() -> dict[str, Router]:
    from shardhash.compat import cassandra, citus, ketama, mongo, postgres, redis, vitess

    return {
        "postgres_hash_partition": postgres.HashPartitionRouter([f"p{i}" for i in range(4)], ("bigint",)),
        "citus": citus.CitusRouter(["s0", "s1", "s2", "s3"], "int4"),
        "cassandra_token": cassandra.TokenRouter({"n1": [-6148914691236517206], "n2": [-2],
                                                  "n3": [6148914691236517202]}, cql_type="bigint"),
        "ketama": ketama.KetamaRouter(["a:11211", "b:11211", "c:11211"], flavor="libmemcached"),
        "vitess": vitess.VitessRouter(["-80", "80-"], "hash"),
        "mongo_hashed": mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(4), ["s0", "s1"]),
        "redis_cluster": redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c"])),
    }


def sweep_routers() -> tuple[dict[str, Router], dict[str, Router]]:
    """Every router type (native and compat): ``(for integer ids, for string ids)``.

    A key-prefix router reads tuple keys, not an id column, so it is left out.
    """
    from tests._router_cases import ALL_ROUTERS

    routers = {k: f() for k, f in ALL_ROUTERS.items() if k != "jump_prefix"}
    routers.update(compat_routers())
    text_only = {"range_str", "redis_cluster"}
    int_only = {"range_int", "watermark", "postgres_hash_partition", "citus", "cassandra_token", "vitess"}
    ints = {k: r for k, r in routers.items() if k not in text_only}
    strs = {k: r for k, r in routers.items() if k not in int_only}
    return ints, strs


ENGINE_FIXTURES = ("dask_client", "spark", "ray_ctx")


def unmarked_engine_use(fixturenames: list[str], marked: bool) -> list[str]:
    """The engine fixtures a test uses without the ``engines`` marker: such a test would start a
    JVM or worker processes in the default run, which leaves them to -m engines."""
    return [] if marked else [f for f in ENGINE_FIXTURES if f in fixturenames]


@pytest.fixture(autouse=True)
def _engines_are_marked(request: pytest.FixtureRequest) -> None:
    used = unmarked_engine_use(list(request.fixturenames),
                               request.node.get_closest_marker("engines") is not None)
    if used:
        pytest.fail(f"{request.node.nodeid} uses {', '.join(used)}: mark it @pytest.mark.engines "
                    "(engines run with -m engines, .ci/post.d/45-engines.sh)")


def _write(path: str, table: object) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=ROW_GROUP)


@pytest.fixture(scope="session")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """N_IDS int64 ids with a weight column over 8 Parquet files, and smaller
    int (int32 range) and string sets for the all-types sweep."""
    pa = need("pyarrow", "pyarrow")
    root = tmp_path_factory.mktemp("engines")
    rng = np.random.default_rng(20261201)
    ids = rng.integers(-(1 << 62), 1 << 62, N_IDS, dtype=np.int64)
    w = rng.integers(0, 5000, N_IDS).astype(np.int64)
    out: dict[str, Any] = {"ids": ids, "w": w}
    main = root / "main"
    main.mkdir()
    for i, (a, b) in enumerate(zip(np.array_split(ids, N_FILES), np.array_split(w, N_FILES))):
        _write(str(main / f"part-{i:02d}.parquet"), pa.table({"id": a, "w": b}))
    out["main"] = str(main)
    # distinct ids (the --engine tests map each id to its shard): 80,000 draws from 2**32 values
    # repeat one about as often as not, so draw a few more and keep the first distinct ones
    drawn = rng.integers(-(1 << 31), 1 << 31, SWEEP_IDS + 1_000, dtype=np.int64)
    sweep_int = drawn[np.sort(np.unique(drawn, return_index=True)[1])][:SWEEP_IDS]
    assert sweep_int.size == SWEEP_IDS
    sweep_str = np.array([f"user:{x}" for x in rng.integers(0, 1 << 40, SWEEP_IDS)], dtype=object)
    for name, arr in (("sweep_int", sweep_int), ("sweep_str", sweep_str)):
        d = root / name
        d.mkdir()
        for i, part in enumerate(np.array_split(arr, N_FILES)):
            _write(str(d / f"part-{i:02d}.parquet"), pa.table({"id": pa.array(part.tolist() if arr.dtype == object
                                                                           else part)}))
        out[name] = str(d)
        out[name + "_ids"] = arr
    # Bad inputs: a null id in the 4th file at row 1234; a file of string ids among int files.
    nulls = root / "nulls"
    nulls.mkdir()
    for i in range(4):
        vals: list[Any] = list(range(i * 10_000, (i + 1) * 10_000))
        if i == 3:
            vals[1234] = None
        _write(str(nulls / f"part-{i}.parquet"), pa.table({"id": pa.array(vals, pa.int64())}))
    out["nulls"] = str(nulls)
    out["null_file"] = str(nulls / "part-3.parquet")
    mixed = root / "mixed"
    mixed.mkdir()
    _write(str(mixed / "a.parquet"), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    _write(str(mixed / "b.parquet"), pa.table({"id": pa.array(["4", "5"], pa.string())}))
    out["mixed"] = str(mixed)
    return out


@pytest.fixture(scope="session")
def worker_env() -> Any:
    """Engines' worker processes import the same shardhash as this run."""
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env = child_env()
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def dask_client(worker_env: Any) -> Any:
    need("dask.dataframe", "dask[dataframe]")
    distributed = need("distributed", "distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address="127.0.0.1:0", host="127.0.0.1")
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def spark(worker_env: Any) -> Any:
    need("pyspark", "pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        msg = "Spark needs Java 17 (Debian: openjdk-17-jdk-headless)"
        if oracle_required():
            pytest.fail(msg)
        pytest.skip(msg)
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("shardhash-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 18))
               .config("spark.sql.files.maxPartitionBytes", str(1 << 20))
               .config("spark.driver.memory", "1g")
               .config("spark.pyspark.python", sys.executable)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def ray_ctx(worker_env: Any) -> Any:
    ray = need("ray", "ray[data]")
    need("ray.data", "ray[data]")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=512 << 20,
             log_to_driver=False, configure_logging=False)
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    if hasattr(ctx, "print_on_execution_start"):
        ctx.print_on_execution_start = False
    try:
        yield ray
    finally:
        ray.shutdown()
