"""shardhash.dask on a real distributed.LocalCluster (2 worker processes)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from shardhash import JumpRouter, MaglevRouter, RingRouter, analysis, plan
from shardhash import arrow as sa
from tests._support import present

from .conftest import N_FILES, compat_routers, need, sweep_routers

# Every test here starts (or shares) the engine's session: run with -m engines (.ci/post.d/45-engines.sh).
pytestmark = pytest.mark.engines


@pytest.fixture(scope="module")
def shd(dask_client: Any) -> ModuleType:
    need("dask.dataframe", "dask[dataframe]")
    import shardhash.dask as mod

    return mod


def test_route_and_diff_over_8_files(shd: ModuleType, dask_client: Any, data: dict[str, Any]) -> None:
    ids, w = data["ids"], data["w"]
    ddf = shd.read_parquet(data["main"], "id")
    assert ddf.npartitions == N_FILES
    old = MaglevRouter([f"db{i}" for i in range(6)])
    new = RingRouter([f"db{i}" for i in range(7)], vnodes=64)
    citus = compat_routers()["postgres_hash_partition"]
    out = shd.route(ddf, "id", {"old": old, "new": new, "pg": citus}).compute()
    assert out["id"].to_numpy().tolist() == ids.tolist()  # one partition per file, in order
    for col, r in (("old", old), ("new", new), ("pg", citus)):
        assert list(out[col].cat.categories) == list(r.shards)
        assert out[col].cat.codes.to_numpy().tolist() == r.route_many(ids).tolist(), col
    stats: dict[str, Any] = {}
    rep = shd.diff(ddf, "id", old, new, weights="w", stats=stats)
    ref = plan.diff(old, new, ids, weights=w.astype(np.float64)).to_dict()
    assert rep.to_dict() == ref
    # A frame of read_parquet: tasks read runs of row groups themselves (a few per worker thread).
    assert 2 <= stats["partitions"] <= N_FILES
    # Any other frame: one task per partition, over the partition's rows.
    stats = {}
    assert shd.diff(ddf[["id", "w"]], "id", old, new, weights="w", stats=stats).to_dict() == ref
    assert stats["partitions"] == N_FILES
    # Two worker processes, each built each router at most once, however many tasks it ran.
    assert len(stats["builds"]) <= 2 and set(stats["builds"].values()) == {1}
    per_worker = dask_client.run(sa.router_builds)
    assert len(per_worker) == 2
    for builds in per_worker.values():
        for fp in (old.fingerprint, new.fingerprint, citus.fingerprint):
            assert builds.get(fp, 0) <= 1
    assert sum(b.get(old.fingerprint, 0) for b in per_worker.values()) >= 1


def test_meta_matches_the_partitions(shd: ModuleType, data: dict[str, Any]) -> None:
    ddf = shd.read_parquet(data["main"], "id")
    r = JumpRouter(["a", "b", "c"])
    routed = shd.route(ddf, "id", r)
    part = routed.partitions[0].compute()
    assert dict(part.dtypes) == dict(routed.dtypes)
    assert list(routed.dtypes["shard"].categories) == ["a", "b", "c"]
    ind = shd.route(ddf, "id", r, name="n", indices=True)
    assert str(ind.dtypes["n"]) == "int32" and str(ind.partitions[1].compute().dtypes["n"]) == "int32"


def test_every_router_type(shd: ModuleType, data: dict[str, Any]) -> None:
    ints, strs = sweep_routers()
    for key, routers in (("sweep_int", ints), ("sweep_str", strs)):
        ddf = shd.read_parquet(data[key], "id")
        out = shd.route(ddf, "id", routers, indices=True).compute()
        values = data[key + "_ids"].tolist()
        assert out["id"].tolist() == values
        for name, r in routers.items():
            assert out[name].to_numpy().tolist() == r.route_many(values).tolist(), name
    # diff on a compat pair and a raw-key pair (ints), a native pair (strings)
    ddf = shd.read_parquet(data["sweep_int"], "id")
    values = data["sweep_int_ids"]
    for old, new in ((ints["citus"], ints["vitess"]), (ints["range_int"], ints["watermark"])):
        assert shd.diff(ddf, "id", old, new).to_dict() == plan.diff(old, new, values).to_dict()
    sdf = shd.read_parquet(data["sweep_str"], "id")
    old, new = strs["ketama"], strs["redis_cluster"]
    assert shd.diff(sdf, "id", old, new).to_dict() == plan.diff(old, new, data["sweep_str_ids"].tolist()).to_dict()


def test_analyze_equals_shard_load(shd: ModuleType, data: dict[str, Any]) -> None:
    ddf = shd.read_parquet(data["main"], "id", weights="w")
    r = MaglevRouter([f"db{i}" for i in range(5)])
    got = shd.analyze(ddf, "id", r, weights="w", capacity=100)
    ref = analysis.shard_load(r, data["ids"], bytes=data["w"].astype(np.float64))
    assert got.counts.tolist() == ref.counts.tolist()
    assert got.weighted.tolist() == present(ref.bytes).tolist()
    assert got.load_report().imbalance() == ref.imbalance()


def test_plain_dask_dataframes_work_too(shd: ModuleType) -> None:
    import dask.dataframe as dd
    import pandas as pd

    ids = np.arange(20_000, dtype=np.int64) * 7919
    pdf = pd.DataFrame({"id": pd.array([f"u{x}" for x in ids], dtype="string[pyarrow]")})
    ddf = dd.from_pandas(pdf, npartitions=3)  # type: ignore[no-untyped-call]  # dask.dataframe is unannotated
    r = RingRouter(list("abcd"), vnodes=16)
    got = shd.route(ddf, "id", r).compute()
    assert got["shard"].astype(str).tolist() == [r.route(f"u{x}") for x in ids]


# -- bad input ----------------------------------------------------------------------------


def test_missing_column(shd: ModuleType, data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"part-00\.parquet: no column 'user'"):
        shd.read_parquet(data["main"], "user")
    ddf = shd.read_parquet(data["main"], "id")
    with pytest.raises(ValueError, match=r"no column 'user' \(columns: id, w\)"):
        shd.route(ddf, "user", JumpRouter(["a"]))
    with pytest.raises(ValueError, match="no weight column 'bytes'"):
        shd.diff(ddf, "id", JumpRouter(["a"]), JumpRouter(["b"]), weights="bytes")


def test_null_id_names_file_and_row(shd: ModuleType, data: dict[str, Any]) -> None:
    ddf = shd.read_parquet(data["nulls"], "id")
    with pytest.raises(ValueError, match=r"part-3\.parquet: row 1234: id column 'id' is null"):
        shd.diff(ddf, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]))


def test_null_id_in_a_plain_dataframe_names_partition_and_row(shd: ModuleType) -> None:
    import dask.dataframe as dd
    import pandas as pd

    pdf = pd.DataFrame({"id": pd.array(list(range(100)), dtype="Int64")})
    pdf.loc[77, "id"] = pd.NA
    ddf = dd.from_pandas(pdf, npartitions=2)  # type: ignore[no-untyped-call]  # dask.dataframe is unannotated
    with pytest.raises(ValueError, match=r"partition 1: row 27: id column 'id' is null"):
        shd.route(ddf, "id", JumpRouter(["a", "b"])).compute()


def test_mixed_id_kinds_across_files(shd: ModuleType, data: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match=r"mixes id kinds across files \(int in .*a\.parquet; str in .*b\.parquet\)"):
        shd.read_parquet(data["mixed"], "id")
    # Partitions built by hand: an object column is refused, and so is a
    # partition whose ids are of another kind than the DataFrame's meta says.
    import dask.dataframe as dd
    import pandas as pd
    from dask.delayed import delayed

    ints = pd.DataFrame({"id": [1, 2, 3]})
    strs = pd.DataFrame({"id": pd.array(["4", "5"], dtype="string[pyarrow]")})
    mixed = dd.concat([dd.from_pandas(ints, npartitions=1), dd.from_pandas(strs, npartitions=1)])  # type: ignore[no-untyped-call]  # dask.dataframe is unannotated
    with pytest.raises(TypeError, match="ids of dtype object"):
        shd.diff(mixed, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]))
    lying = dd.from_delayed([delayed(ints.copy)(), delayed(strs.copy)()], meta=ints.iloc[:0],
                            verify_meta=False)
    with pytest.raises(TypeError, match="partition 1: id column 'id' holds str ids where int ids were expected"):
        shd.diff(lying, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]))
    with pytest.raises(TypeError, match="partition 1: .*holds str ids where int ids were expected"):
        shd.route(lying, "id", JumpRouter(["a"])).compute()


def test_dask_tokens_follow_the_fingerprint(shd: ModuleType) -> None:
    from dask.base import tokenize

    from shardhash import load_router

    r = MaglevRouter(list("abc"))
    assert tokenize(r) == tokenize(load_router(r.to_json())) == tokenize(sa.ship(r))
    assert tokenize(r) != tokenize(MaglevRouter(list("abcd")))


# -- the ddf.shardhash accessor -----------------------------------------------------------


def test_accessor_delegates_to_the_module(shd: Any, dask_client: Any, data: dict[str, Any]) -> None:
    import dask.dataframe as dd

    assert "shardhash" in dir(dd.DataFrame)
    ddf = shd.read_parquet(data["main"], "id", weights="w")
    ids, w = data["ids"], data["w"]
    old = MaglevRouter([f"acc{i}" for i in range(5)])
    new = JumpRouter([f"acc{i}" for i in range(6)])
    routed = ddf.shardhash.route("id", {"old": old, "new": new}).compute()
    for col, r in (("old", old), ("new", new)):
        assert routed[col].cat.codes.to_numpy().tolist() == r.route_many(ids).tolist(), col
    ind = ddf.shardhash.route("id", new, name="n", indices=True)
    assert str(ind.dtypes["n"]) == "int32"
    stats: dict[str, Any] = {}
    rep = ddf.shardhash.diff("id", old, new, weights="w", stats=stats)
    assert rep.to_dict() == plan.diff(old, new, ids, weights=w.astype(np.float64)).to_dict()
    assert 2 <= stats["partitions"] <= N_FILES  # runs of row groups read by the tasks themselves
    load = ddf.shardhash.analyze("id", new, weights="w", capacity=100)
    ref = analysis.shard_load(new, ids, bytes=w.astype(np.float64))
    assert load.counts is not None and load.weighted is not None and ref.bytes is not None
    assert load.counts.tolist() == ref.counts.tolist() and load.weighted.tolist() == ref.bytes.tolist()
    with pytest.raises(ValueError, match=r"no column 'user' \(columns: id, w\)"):
        ddf.shardhash.route("user", new)


def test_the_core_does_not_register_the_accessor() -> None:
    import subprocess
    import sys

    from .conftest import child_env

    code = ("import shardhash, shardhash.arrow, sys; "
            "assert not any(m == 'dask' or m.startswith('dask.') for m in sys.modules), 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env=child_env())


def test_module_docstring_examples_run(shd: Any) -> None:
    import doctest

    res = doctest.testmod(shd)
    assert res.failed == 0 and res.attempted > 0
