"""shardhash.arrow: the batch kernels every engine adapter runs (no engine needed here)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from .conftest import child_env, need, sweep_routers

pa = pytest.importorskip("pyarrow")

from shardhash import JumpRouter, MaglevRouter, RingRouter, analysis, plan  # noqa: E402
from shardhash import arrow as sa  # noqa: E402
from tests._support import present  # noqa: E402


def test_import_shardhash_imports_no_engine() -> None:
    code = ("import sys, shardhash, shardhash.arrow, shardhash.plan, shardhash.analysis, shardhash.cli; "
            "bad = [m for m in ('dask', 'distributed', 'pyspark', 'ray') if m in sys.modules]; "
            "print(bad)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def _chunked(values: list[Any], kind: str) -> Any:
    typ = pa.int64() if kind == "int" else pa.string()
    half = len(values) // 2
    return pa.chunked_array([pa.array(values[:half], typ), pa.array(values[half:], typ)])


@pytest.mark.parametrize("kind", ["int", "str"])
def test_route_batch_equals_route_many_for_every_router_type(kind: str) -> None:
    ints, strs = sweep_routers()
    routers = ints if kind == "int" else strs
    rng = np.random.default_rng(7)
    if kind == "int":
        values = rng.integers(-(1 << 31), 1 << 31, 4000).tolist()
    else:
        values = [f"k{x}" for x in rng.integers(0, 1 << 40, 4000)]
    table = pa.table({"id": _chunked(values, kind)})
    for name, r in routers.items():
        out = sa.route_batch(table, "id", r, name="s")
        want = [r.shards[i] for i in r.route_many(values)]
        assert out.column("s").to_pylist() == want, name
        assert out.column("id").equals(table.column("id"))
        idx = sa.route_batch(table.to_batches()[0], "id", r, indices=True).column("shard").to_numpy()
        assert idx.tolist() == r.route_many(values[:len(idx)]).tolist(), name


def _splits(n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    cuts = sorted(set(rng.integers(0, n, 9).tolist()) | {0, n})
    return list(zip(cuts[:-1], cuts[1:]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_tree_of_partials_equals_plan_diff(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(-(1 << 62), 1 << 62, 60_000)
    w = rng.integers(0, 1000, len(ids))
    batch = pa.record_batch({"id": ids, "bytes": w})
    pairs = [(MaglevRouter(list("abcd")), JumpRouter(list("abcde"))),
             (RingRouter(list("abc"), vnodes=32), RingRouter(list("abcd"), vnodes=32)),
             (JumpRouter(list("abc")), sweep_routers()[0]["citus"])]
    for old, new in pairs:
        small = ids if new.type_name != "citus" else (ids % (1 << 31))
        b = batch if new.type_name != "citus" else pa.record_batch({"id": small, "bytes": w})
        parts = [sa.diff_batch(b.slice(lo, hi - lo), "id", old, new, "bytes") for lo, hi in _splits(len(ids), rng)]
        order = rng.permutation(len(parts))
        left = parts[order[0]]
        for i in order[1:]:  # a left fold in a random order
            left = left.merge(parts[i]) if rng.random() < 0.5 else parts[i].merge(left)
        tree = sa.tree_reduce(parts)
        want = plan.diff(old, new, small, weights=w.astype(np.float64)).to_dict()
        assert left.report().to_dict() == want
        assert tree.report().to_dict() == want
        back = sa.DiffPartial.from_row(tree.to_row(), old, new)
        assert back.report().to_dict() == want


def test_partials_of_other_routers_do_not_merge() -> None:
    a = sa.diff_batch(pa.record_batch({"id": [1, 2]}), "id", JumpRouter(["a"]), JumpRouter(["a", "b"]))
    b = sa.diff_batch(pa.record_batch({"id": [1, 2]}), "id", JumpRouter(["a"]), JumpRouter(["a", "c"]))
    with pytest.raises(ValueError, match="different routers"):
        a.merge(b)
    c = sa.diff_batch(pa.record_batch({"id": [1, 2], "w": [1, 1]}), "id", JumpRouter(["a"]),
                      JumpRouter(["a", "b"]), "w")
    with pytest.raises(ValueError, match="weights are missing"):
        a.merge(c)
    with pytest.raises(ValueError, match="other routers"):
        sa.DiffPartial.from_row(a.to_row(), JumpRouter(["a"]), JumpRouter(["a", "c"]))


def test_analyze_partials_equal_shard_load() -> None:
    rng = np.random.default_rng(5)
    ids = rng.zipf(1.3, 50_000).astype(np.int64)
    w = rng.integers(1, 100, len(ids))
    r = MaglevRouter(list("abcdef"))
    batch = pa.record_batch({"id": ids, "w": w})
    parts = [sa.analyze_batch(batch.slice(lo, hi - lo), "id", r, "w", capacity=50)
             for lo, hi in _splits(len(ids), rng)]
    got = sa.tree_reduce(parts)
    ref = analysis.shard_load(r, ids, bytes=w.astype(np.float64))
    assert present(got.counts).tolist() == ref.counts.tolist()
    assert present(got.weighted).tolist() == present(ref.bytes).tolist()
    assert got.total == len(ids)
    # Merged Misra-Gries keeps its bound: the true weight of each reported key lies in [low, high].
    exact = dict(analysis.top_k(ids, 10, weights=w.astype(np.float64)))
    assert got.hot.error <= float(w.sum()) / 51
    for key, lo, hi in got.hot.top(5):
        assert lo <= exact.get(key, lo) <= hi
    assert got.hot.top(1)[0][0] == max(exact, key=lambda k: exact[k])


_CHILD = """
import json, pickle, sys
from shardhash import arrow
blob = sys.stdin.buffer.read()
routers = [pickle.loads(blob) for _ in range(5)]
first = routers[0].get()
same = all(r.get() is first for r in routers)
print(json.dumps({"same": same, "builds": arrow.router_builds(), "route": first.route_many([1, 2, 3]).tolist()}))
"""


def test_shipped_router_is_built_once_per_process() -> None:
    r = MaglevRouter([f"s{i}" for i in range(7)])
    blob = pickle.dumps(sa.ship(r))
    assert len(blob) < len(r.to_json()) + 500  # the document, not the table
    res = subprocess.run([sys.executable, "-c", _CHILD], input=blob, capture_output=True, env=child_env(),
                         timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert got == {"same": True, "builds": {r.fingerprint: 1}, "route": r.route_many([1, 2, 3]).tolist()}


def test_shipped_router_refuses_a_forged_document() -> None:
    r = JumpRouter(["a", "b"])
    other = JumpRouter(["a", "b", "c"])
    forged = sa._unship(r.fingerprint + "0", other.to_json(), ("a", "b"))
    with pytest.raises(ValueError, match="fingerprint"):
        forged.get()


def test_dask_tokenize_is_the_fingerprint() -> None:
    r = RingRouter(list("abc"), vnodes=8)
    assert r.__dask_tokenize__() == ("shardhash.router", r.fingerprint)
    assert sa.ship(r).__dask_tokenize__() == r.__dask_tokenize__()


# -- bad input ------------------------------------------------------------------------


def test_missing_column_names_the_source_and_columns() -> None:
    b = pa.record_batch({"user": [1, 2]})
    with pytest.raises(ValueError, match=r"f\.parquet: no column 'id' \(columns: user\)"):
        sa.route_batch(b, "id", JumpRouter(["a"]), source="f.parquet")
    with pytest.raises(ValueError, match="no column 'id'"):
        sa.diff_batch(b, "id", JumpRouter(["a"]), JumpRouter(["b"]))


def test_null_id_names_source_and_row() -> None:
    b = pa.record_batch({"id": pa.array([1, 2, None, 4, None], pa.int64())})
    with pytest.raises(ValueError, match=r"f\.parquet: row 102: id column 'id' is null \(2 null"):
        sa.route_batch(b, "id", JumpRouter(["a"]), source="f.parquet", offset=100)
    with pytest.raises(ValueError, match=r"row 2: id column 'id' is null"):
        sa.diff_batch(b, "id", JumpRouter(["a"]), JumpRouter(["b"]))
    src = pa.array(["x", "x", "y", "y", "y"])
    batches = [pa.record_batch({"id": pa.array([1, 2, 3], pa.int64()), "f": ["x", "y", "y"]}),
               pa.record_batch({"id": pa.array([4, 5, None, 6], pa.int64()), "f": ["x", "y", "y", "y"]})]
    del src
    with pytest.raises(ValueError, match=r"^y: row 3: id column 'id' is null"):
        list(sa.route_batches(batches, "id", JumpRouter(["a"]), source_column="f"))


def test_id_kinds_never_mix() -> None:
    ints = pa.record_batch({"id": pa.array([1, 2], pa.int32())})
    strs = pa.record_batch({"id": pa.array(["1", "2"])})
    r = JumpRouter(["a", "b"])
    sa.route_batch(ints, "id", r, kind="int")
    with pytest.raises(TypeError, match="holds str ids where int ids were expected"):
        sa.route_batch(strs, "id", r, kind="int", source="b.parquet")
    with pytest.raises(TypeError, match="ids must be integers, strings or binary, not double"):
        sa.route_batch(pa.record_batch({"id": [1.5]}), "id", r)


def test_scan_parquet_names_the_file(data: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match=r"mixes id kinds across files \(int in .*a\.parquet; str in .*b\.parquet\)"):
        sa.scan_parquet(sa.parquet_files(data["mixed"]), "id")
    with pytest.raises(ValueError, match=r"part-00\.parquet: no column 'user'"):
        sa.scan_parquet(sa.parquet_files(data["main"]), "user")
    kind, rows = sa.scan_parquet(sa.parquet_files(data["main"]), "id", "w")
    assert (kind, rows) == ("int", len(data["ids"]))
    with pytest.raises(ValueError, match="no Parquet files"):
        sa.parquet_files(data["main"] + "/*.csv")


def test_need_helper_reports_missing_modules() -> None:
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception), match="no_such_engine"):
        need("no_such_engine_module", "no_such_engine")


def test_docstring_examples_run() -> None:
    import doctest

    import shardhash.analysis

    for mod in (sa, shardhash.analysis):
        res = doctest.testmod(mod)
        assert res.failed == 0 and res.attempted > 0, mod.__name__


def test_footers_are_read_on_threads_in_file_order(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many remote files: the footers are read on the footer threads, the
    units are the files' row groups in file order, and the error names the
    first bad file in file order whichever thread read it first."""
    import threading

    import pyarrow.parquet as pq

    files = []
    for i in range(40):
        f = tmp_path / f"part-{i:02d}.parquet"
        pq.write_table(pa.table({"id": pa.array(range(i * 10, i * 10 + 3 + i % 5), pa.int64())}), f,
                       row_group_size=2)
        files.append(str(f))
    seen: set[str] = set()
    opener = sa._open_parquet

    def spy(path: str) -> Any:
        seen.add(threading.current_thread().name.split("_")[0])
        return opener(path)

    monkeypatch.setattr(sa, "_open_parquet", spy)
    kind, units = sa.parquet_units(files, "id", target_rows=2)  # local paths: one by one
    assert kind == "int" and seen == {threading.current_thread().name.split("_")[0]}
    seen.clear()
    monkeypatch.setattr(sa, "_is_remote", lambda path: True)  # as object-storage paths are
    assert sa.parquet_units(files, "id", target_rows=2) == (kind, units)
    assert seen == {"shardhash-footers"}
    expected = []
    for f in files:
        meta = pq.ParquetFile(f).metadata
        start = 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            expected.append(sa.ParquetUnit(f, (g,), start, n))
            start += n
    assert units == expected
    # a file that is not Parquet at position 7 and one without the column at 12 (still "remote")
    (tmp_path / "part-07.parquet").write_bytes(b"not parquet at all")
    pq.write_table(pa.table({"user": [1]}), tmp_path / "part-12.parquet")
    with pytest.raises(ValueError, match=r"part-07\.parquet: not a readable Parquet file"):
        sa.parquet_units(files, "id")
    (tmp_path / "part-07.parquet").unlink()
    pq.write_table(pa.table({"id": pa.array(["x"])}), tmp_path / "part-07.parquet")
    with pytest.raises(TypeError, match=r"mixes id kinds across files \(int in .*part-00\.parquet; str in "
                                        r".*part-07\.parquet\)"):
        sa.parquet_units([f for i, f in enumerate(files) if i != 12], "id")
    with pytest.raises(ValueError, match=r"part-12\.parquet: no column 'id'"):
        sa.parquet_units(files[8:], "id")


def test_a_test_that_starts_an_engine_must_carry_the_engines_marker() -> None:
    from .conftest import unmarked_engine_use

    assert unmarked_engine_use(["tmp_path", "spark", "data"], marked=False) == ["spark"]
    assert unmarked_engine_use(["dask_client", "ray_ctx"], marked=False) == ["dask_client", "ray_ctx"]
    assert unmarked_engine_use(["spark"], marked=True) == []
    assert unmarked_engine_use(["data", "tmp_path"], marked=False) == []
