"""shardhash.ray on a real local Ray (2 CPUs).

Each Ray Data pass starts an actor pool, so the checks share passes: several
routers are routed side by side in one pass.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from shardhash import JumpRouter, MaglevRouter, RingRouter, plan

from .conftest import N_FILES, compat_routers, sweep_routers

# Every test here starts (or shares) the engine's session: run with -m engines (.ci/post.d/45-engines.sh).
pytestmark = pytest.mark.engines

# Two actors on two CPUs, each reserving half a CPU so Ray Data's own small
# tasks (listing files) can run beside them.
POOL = {"concurrency": 2, "num_cpus": 0.5}


@pytest.fixture(scope="module")
def shr(ray_ctx: Any) -> ModuleType:
    import shardhash.ray as mod

    return mod


def _read(ray_ctx: Any, path: str, **kw: Any) -> Any:
    import ray.data

    return ray.data.read_parquet(path, override_num_blocks=N_FILES, **kw)


def _table(ds: Any) -> Any:
    import pyarrow as pa
    import ray

    return pa.concat_tables(ray.get(ds.to_arrow_refs()))


@pytest.mark.slow  # (the slowest tests: 7-40 s each on 2 cores; `-m "not slow"` leaves them out)
def test_route_and_diff_over_8_files(shr: ModuleType, ray_ctx: Any, data: dict[str, Any]) -> None:
    ids, w = data["ids"], data["w"]
    ds = _read(ray_ctx, data["main"])
    old = MaglevRouter([f"db{i}" for i in range(6)])
    new = RingRouter([f"db{i}" for i in range(7)], vnodes=64)
    pg = compat_routers()["postgres_hash_partition"]
    out = _table(shr.route(ds, "id", {"old": old, "new": new, "pg": pg}, **POOL))
    order = np.argsort(out.column("id").to_numpy())
    ref_order = np.argsort(ids)
    assert out.column("id").to_numpy()[order].tolist() == ids[ref_order].tolist()
    for col, r in (("old", old), ("new", new), ("pg", pg)):
        assert out.schema.field(col).type.value_type == "string"
        got = out.column(col).combine_chunks().indices.to_numpy()
        assert got[order].tolist() == r.route_many(ids)[ref_order].tolist(), col
    stats: dict[str, Any] = {}
    rep = shr.diff(ds, "id", old, new, weights="w", stats=stats, **POOL)
    assert rep.to_dict() == plan.diff(old, new, ids, weights=w.astype(np.float64)).to_dict()
    # Two actors: the routers were built once in each, whatever the number of batches.
    assert 1 <= len(stats["builds"]) <= 2 and set(stats["builds"].values()) == {1}
    assert stats["partials"] >= len(stats["builds"])


@pytest.mark.slow  # (the slowest tests: 7-40 s each on 2 cores; `-m "not slow"` leaves them out)
def test_every_router_type(shr: ModuleType, ray_ctx: Any, data: dict[str, Any]) -> None:
    ints, strs = sweep_routers()
    for key, routers in (("sweep_int", ints), ("sweep_str", strs)):
        out = _table(shr.route(_read(ray_ctx, data[key]), "id", routers, indices=True, **POOL))
        values = out.column("id").to_pylist()
        assert sorted(values) == sorted(data[key + "_ids"].tolist())
        for name, r in routers.items():
            assert out.column(name).to_pylist() == r.route_many(values).tolist(), name
        # diff over the files read by the tasks themselves, for every router against one other
        ds = shr.read_parquet(data[key], "id")
        names = list(routers)
        for a, b in zip(names, names[1:] + names[:1]):
            old, new = routers[a], routers[b]
            got = shr.diff(ds, "id", old, new, **POOL).to_dict()
            assert got == plan.diff(old, new, data[key + "_ids"]).to_dict(), (a, b)


def test_bad_input(shr: ModuleType, ray_ctx: Any, data: dict[str, Any]) -> None:
    ds = _read(ray_ctx, data["main"])
    with pytest.raises(ValueError, match=r"no column 'user' \(columns: id, w\)"):
        shr.route(ds, "user", JumpRouter(["a"]))
    nulls = _read(ray_ctx, data["nulls"], include_paths=True)
    with pytest.raises(Exception, match=r"part-3\.parquet: row 1234: id column 'id' is null"):
        shr.diff(nulls, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]), source_column="path", **POOL)


# -- one block per file: the work spreads over the workers ------------------------------------


def test_read_parquet_gives_one_block_per_file(shr: Any, ray_ctx: Any, data: dict[str, Any]) -> None:
    # Ray's own reader packs these eight small files into one block (one task would do all the work).
    ds = shr.read_parquet(data["main"], "id")
    assert ds.materialize().num_blocks() == N_FILES
    assert ds.schema().names == ["id", "w"]
    assert shr.read_parquet(data["main"], "id", columns=[]).schema().names == ["id"]
    assert shr.read_parquet(data["main"], "id", include_paths=True).schema().names == ["id", "w", "path"]


def test_the_files_spread_over_the_actors_and_tasks(shr: Any, ray_ctx: Any, data: dict[str, Any]) -> None:
    ids, w = data["ids"], data["w"]
    # Routers no other test ships: Ray's pooled worker processes outlive a test, and count builds across tests.
    old = MaglevRouter([f"spread{i}" for i in range(6)])
    new = JumpRouter([f"spread{i}" for i in range(7)])
    ref = plan.diff(old, new, ids, weights=w.astype(np.float64)).to_dict()
    ds = shr.read_parquet(data["main"], "id", weights="w")
    stats: dict[str, Any] = {}
    assert shr.diff(ds, "id", old, new, weights="w", stats=stats, compute="actors", **POOL).to_dict() == ref
    # One partial per file: eight units of work, not one block. Which of the pool's two actors takes
    # each is Ray's choice (on a loaded machine one actor may take all eight), so the test asserts
    # at most two processes, each building the routers once (a partial records its process).
    assert stats["partials"] == N_FILES, stats
    assert 1 <= len(stats["peak_rss"]) <= 2 and set(stats["builds"].values()) == {1}, stats
    # Tasks (the default) read the files' pieces themselves: a few runs of row groups per CPU,
    # each returning only its partial.
    stats = {}
    assert shr.diff(ds, "id", old, new, weights="w", stats=stats, **POOL).to_dict() == ref
    assert 2 <= stats["partials"] <= N_FILES and set(stats["builds"].values()) == {1}, stats
    got = shr.analyze(ds, "id", new, weights="w", capacity=100, **POOL)
    assert got.counts.tolist() == np.bincount(new.route_many(ids), minlength=7).tolist()
    assert got.weighted.tolist() == np.bincount(new.route_many(ids), weights=w, minlength=7).tolist()
    import pyarrow as pa
    import ray

    routed = pa.concat_tables(ray.get(shr.route(ds, "id", new, indices=True, **POOL).to_arrow_refs()))
    order = np.argsort(routed.column("id").to_numpy())
    assert routed.column("shard").to_numpy()[order].tolist() == new.route_many(ids)[np.argsort(ids)].tolist()


def test_read_parquet_bad_input(shr: Any, ray_ctx: Any, data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"part-00\.parquet: no column 'user'"):
        shr.read_parquet(data["main"], "user")
    with pytest.raises(TypeError, match=r"mixes id kinds across files"):
        shr.read_parquet(data["mixed"], "id")
    nulls = shr.read_parquet(data["nulls"], "id")
    with pytest.raises(Exception, match=r"part-3\.parquet: row 1234: id column 'id' is null"):
        shr.diff(nulls, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]), **POOL)
    with pytest.raises(Exception, match=r"part-3\.parquet: row 1234: id column 'id' is null"):
        shr.analyze(nulls, "id", JumpRouter(["a"]), **POOL)
    with pytest.raises(ValueError, match=r"no column 'user' \(columns: id, w\)"):
        shr.diff(shr.read_parquet(data["main"], "id"), "user", JumpRouter(["a"]), JumpRouter(["b"]), **POOL)
    with pytest.raises(ValueError, match="compute must be one of 'tasks', 'actors', not 'threads'"):
        shr.route(shr.read_parquet(data["main"], "id"), "id", JumpRouter(["a"]), compute="threads")
