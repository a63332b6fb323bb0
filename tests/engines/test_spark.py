"""shardhash.spark on a real local[2] Spark session (Java from Debian packages)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from shardhash import JumpRouter, MaglevRouter, RingRouter, analysis, plan
from tests._support import present

from .conftest import compat_routers, sweep_routers

# Every test here starts (or shares) the engine's session: run with -m engines (.ci/post.d/45-engines.sh).
pytestmark = pytest.mark.engines


@pytest.fixture(scope="module")
def shs(spark: Any) -> ModuleType:
    import shardhash.spark as mod

    return mod


def _arrow(df: Any) -> Any:
    """Collect a Spark DataFrame as an Arrow table (toArrow on Spark 4, via pandas before)."""
    import pyarrow as pa

    if hasattr(df, "toArrow"):
        return df.toArrow()
    return pa.Table.from_pandas(df.toPandas(), preserve_index=False)


def test_plain_parquet_scans_are_read_by_the_workers(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    df = spark.read.parquet(data["main"])
    assert len(shs._parquet_scan(df, ["id"]) or []) == 8
    assert len(shs._parquet_scan(df.select("id"), ["id"]) or []) == 8
    assert shs._parquet_scan(df.filter("id > 0"), ["id"]) is None
    assert shs._parquet_scan(df.withColumn("x", df.id + 1), ["id"]) is None
    assert shs._parquet_scan(spark.createDataFrame([(1,)], ["id"]), ["id"]) is None


@pytest.mark.slow  # (the slowest tests: 7-40 s each on 2 cores; `-m "not slow"` leaves them out)
@pytest.mark.parametrize("parquet", [True, False], ids=["workers-read-parquet", "dataframe-rows"])
def test_route_and_diff_over_8_files(shs: ModuleType, spark: Any, data: dict[str, Any],
                                            parquet: bool) -> None:
    ids, w = data["ids"], data["w"]
    df = spark.read.parquet(data["main"])
    assert df.rdd.getNumPartitions() >= 8
    old = MaglevRouter([f"db{i}" for i in range(6)])
    new = RingRouter([f"db{i}" for i in range(7)], vnodes=64)
    pg = compat_routers()["postgres_hash_partition"]
    out = _arrow(shs.route(df, "id", {"old": old, "new": new, "pg": pg}, indices=True, parquet=parquet))
    assert out.column_names == ["id", "w", "old", "new", "pg"]
    order = np.argsort(out.column("id").to_numpy())
    ref_order = np.argsort(ids)
    assert out.column("id").to_numpy()[order].tolist() == ids[ref_order].tolist()
    for col, r in (("old", old), ("new", new), ("pg", pg)):
        assert out.column(col).to_numpy()[order].tolist() == r.route_many(ids)[ref_order].tolist(), col
    assert out.column("w").to_numpy()[order].tolist() == w[ref_order].tolist()
    stats: dict[str, Any] = {}
    rep = shs.diff(df, "id", old, new, weights="w", stats=stats, parquet=parquet)
    assert rep.to_dict() == plan.diff(old, new, ids, weights=w.astype(np.float64)).to_dict()
    if parquet:  # a few tasks (whole row groups each), not one per Spark partition
        assert 2 <= stats["partials"] <= 8
    else:
        assert stats["partials"] == df.rdd.getNumPartitions()
    # local[2]: each Python worker process built the routers once, however many partitions it served.
    assert 1 <= len(stats["builds"]) < stats["partials"]
    assert set(stats["builds"].values()) == {1}


def test_shard_names_and_schema(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    df = spark.read.parquet(data["sweep_str"])
    r = RingRouter(list("abc"), vnodes=8)
    routed = shs.route(df, "id", r)
    assert routed.schema["shard"].dataType.simpleString() == "string"
    rows = routed.limit(500).collect()
    assert [x["shard"] for x in rows] == [r.route(x["id"]) for x in rows]


def test_every_router_type(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    ints, strs = sweep_routers()
    for key, routers in (("sweep_int", ints), ("sweep_str", strs)):
        out = _arrow(shs.route(spark.read.parquet(data[key]), "id", routers, indices=True))
        values = out.column("id").to_pylist()
        assert sorted(values) == sorted(data[key + "_ids"].tolist())
        for name, r in routers.items():
            assert out.column(name).to_pylist() == r.route_many(values).tolist(), name
    df = spark.read.parquet(data["sweep_int"])
    old, new = ints["citus"], ints["watermark"]
    ref = plan.diff(old, new, data["sweep_int_ids"]).to_dict()
    assert shs.diff(df, "id", old, new).to_dict() == ref
    assert shs.diff(df, "id", old, new, parquet=False).to_dict() == ref
    df = spark.read.parquet(data["sweep_str"])
    old, new = strs["redis_cluster"], strs["maglev"]
    assert shs.diff(df, "id", old, new).to_dict() == plan.diff(old, new, data["sweep_str_ids"]).to_dict()
    # the same answers when the rows come from the DataFrame rather than from the files
    out = _arrow(shs.route(df.filter("id is not null"), "id", {"r": old}, indices=True))
    assert out.column("r").to_pylist() == old.route_many(out.column("id").to_pylist()).tolist()


@pytest.mark.parametrize("parquet", [True, False], ids=["workers-read-parquet", "dataframe-rows"])
def test_analyze_equals_shard_load(shs: ModuleType, spark: Any, data: dict[str, Any], parquet: bool) -> None:
    df = spark.read.parquet(data["main"])
    r = MaglevRouter([f"db{i}" for i in range(5)])
    got = shs.analyze(df, "id", r, weights="w", capacity=100, parquet=parquet)
    ref = analysis.shard_load(r, data["ids"], bytes=data["w"].astype(np.float64))
    assert got.counts.tolist() == ref.counts.tolist()
    assert got.weighted.tolist() == present(ref.bytes).tolist()


def test_missing_column(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    df = spark.read.parquet(data["main"])
    with pytest.raises(ValueError, match=r"no column 'user' \(columns: id, w\)"):
        shs.route(df, "user", JumpRouter(["a"]))
    with pytest.raises(ValueError, match="no weight column 'bytes'"):
        shs.diff(df, "id", JumpRouter(["a"]), JumpRouter(["b"]), weights="bytes")


@pytest.mark.parametrize("parquet", [True, False], ids=["workers-read-parquet", "dataframe-rows"])
def test_null_id_names_file_and_row(shs: ModuleType, spark: Any, data: dict[str, Any], parquet: bool) -> None:
    df = spark.read.parquet(data["nulls"])
    where = r"part-3\.parquet: row 1234: id column 'id' is null"
    with pytest.raises(Exception, match=where):
        shs.diff(df, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]), parquet=parquet)
    with pytest.raises(Exception, match=where):
        shs.analyze(df, "id", JumpRouter(["a"]), parquet=parquet)
    with pytest.raises(Exception, match=where):
        shs.route(df, "id", JumpRouter(["a"]), parquet=parquet).collect()


def test_mixed_id_kinds_across_files_are_refused(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    # Spark takes the column's type from one file; the footers of all of them say otherwise.
    df = spark.read.parquet(data["mixed"])
    mixed = r"mixes id kinds across files \(int in .*a\.parquet; str in .*b\.parquet\)"
    with pytest.raises(TypeError, match=mixed):
        shs.diff(df, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]))
    with pytest.raises(TypeError, match=mixed):
        shs.route(df, "id", JumpRouter(["a"]))
    with pytest.raises(TypeError, match=mixed):
        shs.analyze(df, "id")
    with pytest.raises(Exception):  # noqa: B017, PT011 - Spark's own error reading the other file; never a mixture
        shs.diff(df, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]), parquet=False)


def test_mixed_id_kinds_are_refused(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    # Spark gives a DataFrame one type per column; a column of the wrong kind is refused up front.
    df = spark.createDataFrame([(1.5,), (2.5,)], ["id"])
    with pytest.raises(TypeError, match="ids must be integers, strings or binary, not double"):
        shs.route(df, "id", JumpRouter(["a"]))


def test_route_keeps_the_dataframes_column_order(shs: ModuleType, spark: Any, data: dict[str, Any]) -> None:
    # Workers read the columns from the files; the output follows the DataFrame's order, not the file's.
    df = spark.read.parquet(data["main"]).select("w", "id")
    assert shs._parquet_scan(df, ["w", "id"]) is not None
    r = JumpRouter([f"s{i}" for i in range(5)])
    routed = shs.route(df, "id", r, indices=True)
    assert routed.columns == ["w", "id", "shard"]
    rows = routed.limit(1000).collect()
    weight = dict(zip(data["ids"].tolist(), data["w"].tolist()))
    assert all(x["w"] == weight[x["id"]] for x in rows)
    assert [x["shard"] for x in rows] == r.route_many([x["id"] for x in rows]).tolist()
