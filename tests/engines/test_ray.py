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


def test_route_and_diff_1m_ids_over_8_files(shr: ModuleType, ray_ctx: Any, data: dict[str, Any]) -> None:
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


def test_every_router_type(shr: ModuleType, ray_ctx: Any, data: dict[str, Any]) -> None:
    ints, strs = sweep_routers()
    for key, routers in (("sweep_int", ints), ("sweep_str", strs)):
        out = _table(shr.route(_read(ray_ctx, data[key]), "id", routers, indices=True, **POOL))
        values = out.column("id").to_pylist()
        assert sorted(values) == sorted(data[key + "_ids"].tolist())
        for name, r in routers.items():
            assert out.column(name).to_pylist() == r.route_many(values).tolist(), name


def test_bad_input(shr: ModuleType, ray_ctx: Any, data: dict[str, Any]) -> None:
    ds = _read(ray_ctx, data["main"])
    with pytest.raises(ValueError, match=r"no column 'user' \(columns: id, w\)"):
        shr.route(ds, "user", JumpRouter(["a"]))
    nulls = _read(ray_ctx, data["nulls"], include_paths=True)
    with pytest.raises(Exception, match=r"part-3\.parquet: row 1234: id column 'id' is null"):
        shr.diff(nulls, "id", JumpRouter(["a"]), JumpRouter(["a", "b"]), source_column="path", **POOL)
