"""``shardhash route|plan|analyze --engine ...`` over folders of Parquet files.

The tests that start an engine carry the ``engines`` marker (run with -m engines); the refusals
before any engine starts run in the default suite."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardhash import plan
from shardhash.cli import main
from shardhash.routing import JumpRouter, MaglevRouter, Router


@pytest.fixture(scope="module")
def topologies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Router, Router, str, str]:
    d = tmp_path_factory.mktemp("topologies")
    old = MaglevRouter([f"db{i}" for i in range(4)])
    new = JumpRouter([f"db{i}" for i in range(5)])
    (d / "old.json").write_text(old.to_json(), encoding="utf-8")
    (d / "new.json").write_text(new.to_json(), encoding="utf-8")
    return old, new, str(d / "old.json"), str(d / "new.json")


def _read_dataset(folder: str | Path) -> Any:
    import pyarrow.dataset as ds

    return ds.dataset(folder, format="parquet", partitioning="hive").to_table()


def _check_routed(folder: str | Path, ids: Any, router: Router, column: str = "shard") -> None:
    t = _read_dataset(folder)
    got = dict(zip(t.column("id").to_pylist(), [str(x) for x in t.column(column).to_pylist()]))
    assert len(got) == len(ids) == t.num_rows
    want = dict(zip(ids.tolist(), (router.shards[i] for i in router.route_many(ids))))
    assert got == want
    folders = [p for p in os.listdir(folder) if os.path.isdir(os.path.join(folder, p))]
    assert sorted(folders) == sorted(f"{column}={s}" for s in set(want.values()))


@pytest.mark.engines
def test_dask_route_plan_moves_analyze(dask_client: Any, data: dict[str, Any],
                                       topologies: tuple[Router, Router, str, str], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    old, new, old_path, new_path = topologies
    ids, w = data["ids"], data["w"]
    scheduler = dask_client.scheduler.address
    out = tmp_path / "routed"
    assert main(["route", new_path, data["main"], "-o", str(out), "--engine", "dask", "--scheduler", scheduler]) == 0
    _check_routed(str(out), ids, new)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".shardhash-")]
    capsys.readouterr()
    moves = tmp_path / "moves"
    assert main(["plan", old_path, new_path, "--ids", data["main"] + "/*.parquet", "--weights", "w", "--json",
                 "--moves", str(moves), "--engine=dask", "--scheduler", scheduler]) == 0
    got = json.loads(capsys.readouterr().out)
    ref = plan.diff(old, new, ids, weights=w.astype(np.float64))
    assert got["report"] == json.loads(json.dumps(ref.to_dict()))
    t = _read_dataset(str(moves))
    assert t.num_rows == ref.moved
    src = [str(x) for x in t.column("source").to_pylist()]
    dst = [str(x) for x in t.column("destination").to_pylist()]
    moved_ids = t.column("id").to_numpy()
    assert src == [old.shards[i] for i in old.route_many(moved_ids)]
    assert dst == [new.shards[i] for i in new.route_many(moved_ids)]
    assert all(s != d for s, d in zip(src, dst))
    assert main(["analyze", data["main"], "--topology", old_path, "--json", "--engine", "dask",
                 "--scheduler", scheduler]) == 0
    got = json.loads(capsys.readouterr().out)
    counts = np.bincount(old.route_many(ids), minlength=len(old.shards))
    assert {s: v["keys"] for s, v in got["shards"].items()} == dict(zip(old.shards, counts.tolist()))


def test_cli_refuses_bad_input_before_starting_an_engine(data: dict[str, Any],
                                                         topologies: tuple[Router, Router, str, str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    _, new, _, new_path = topologies
    out = tmp_path / "o"
    assert main(["route", new_path, data["mixed"], "-o", str(out), "--engine", "dask"]) == 2
    assert "mixes id kinds across files" in capsys.readouterr().err
    assert main(["route", new_path, data["main"], "-o", str(out), "--engine", "dask", "--column", "user"]) == 2
    assert "part-00.parquet: no column 'user'" in capsys.readouterr().err
    existing = tmp_path / "exists"
    existing.mkdir()
    assert main(["route", new_path, data["main"], "-o", str(existing), "--engine", "spark"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["route", new_path, data["main"], "-o", str(out), "--engine", "ray", "--master", "local"]) == 2
    assert "--master does not apply to --engine ray" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.engines
def test_dask_null_id_leaves_no_output(dask_client: Any, data: dict[str, Any],
                                       topologies: tuple[Router, Router, str, str], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _, _, _, new_path = topologies
    out = tmp_path / "routed"
    rc = main(["route", new_path, data["nulls"], "-o", str(out), "--engine", "dask",
               "--scheduler", dask_client.scheduler.address])
    assert rc == 1
    assert "part-3.parquet: row 1234: id column 'id' is null" in capsys.readouterr().err
    assert not out.exists() and os.listdir(tmp_path) == []


@pytest.mark.engines
@pytest.mark.slow  # (the slowest tests: 7-40 s each on 2 cores; `-m "not slow"` leaves them out)
def test_spark_route(spark: Any, data: dict[str, Any], topologies: tuple[Router, Router, str, str],
                     tmp_path: Path) -> None:
    # (plan --engine spark is shardhash.spark.diff, tested in test_spark.py; the writer is the CLI's own)
    _, new, _, new_path = topologies
    out = tmp_path / "routed"
    assert main(["route", new_path, data["sweep_int"], "-o", str(out), "--engine", "spark"]) == 0
    _check_routed(str(out), data["sweep_int_ids"], new)


@pytest.mark.engines
def test_ray_route(ray_ctx: Any, data: dict[str, Any], topologies: tuple[Router, Router, str, str],
                   tmp_path: Path) -> None:
    # (plan --engine ray is shardhash.ray.diff, tested in test_ray.py; the writer is the CLI's own)
    _, new, _, new_path = topologies
    out = tmp_path / "routed"
    assert main(["route", new_path, data["sweep_str"], "-o", str(out), "--engine", "ray", "--workers", "2"]) == 0
    _check_routed(str(out), data["sweep_str_ids"], new)
