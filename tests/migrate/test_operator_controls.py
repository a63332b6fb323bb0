"""The operator's hand on a migration: pause / resume before the fence and a
rate limit on the snapshot copy, recorded in the metadata store and changed
while the copy runs (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster, Migration, MigrationError
from shardhash.migrate.control import MigrationPaused, TokenBucket

from ._harness import add_shard_migration, drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _start(root: Path, backend: str, users: int) -> tuple[Path, Cluster, Migration, set[int]]:
    """A cluster of four shards and a migration that adds s4; the keys it moves."""
    return add_shard_migration(root, backend, users)


@pytest.mark.parametrize("parallel", [1, 2])
def test_pause_during_the_copy_stops_at_the_chunk_boundary_and_resume_finishes(root: Path, backend: str,
                                                                              parallel: int) -> None:
    path, cl, m, moved = _start(root, backend, 2000)
    writes: list[int] = []
    started: list[tuple[str, float]] = []  # (source, when its write began)
    recorded: list[float] = []  # (when the pause was committed)
    lock = threading.Lock()
    other = Cluster.load(path)  # (the operator: another process's view of the store)
    op = Migration(other, m.id)

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        with lock:
            started.append((s, time.perf_counter()))
        Migration._write_copy(m, s, d, dc, table, cols, rows)
        with lock:
            writes.append(len(rows))
            first = len(writes) == 1
        if first:
            op.pause()
            recorded.append(time.perf_counter())

    m._write_copy = write_copy  # type: ignore[method-assign]
    with pytest.raises(MigrationPaused, match="paused"):
        m.run(chunk=100, parallel=parallel)
    # Each worker stops at its next chunk boundary: after the pause is recorded,
    # only a chunk already in a writer's hands may still be written -- none for
    # the worker that paused (its chunk was written), at most one for each other.
    # (Chunks the other worker writes while the pause's transaction is under way
    # come before the pause and are not counted.)
    assert recorded
    late = [s for s, t in started if t > recorded[0]]
    assert len(late) <= parallel - 1 and len(set(late)) == len(late), (late, started)
    if parallel == 1:
        assert len(writes) == 1, writes
    n_writes = len(writes)
    st = m.status()
    assert st["state"] == "copying" and st["paused"] is True and st["error"] is None
    assert st["rows_copied"] == sum(writes) == len(shard_rows(root, "s4"))
    assert any(k.startswith("cursor:") and v not in (None, "done") for k, v in m.meta.progress(m.id).items())
    # while paused, a run refuses to start (the operator's hand wins)
    with pytest.raises(MigrationPaused):
        Migration(cl, m.id).run(chunk=100)
    assert len(writes) == n_writes
    assert m.unpause() is True
    m2 = Migration(cl, m.id)
    assert m2.run(chunk=100) == "retained"
    assert set(shard_rows(root, "s4")) == moved
    st = m2.status()
    assert st["paused"] is False and st["verify"]["mismatches"] == 0
    # the resume re-copied nothing: rows copied is exactly the moved rows
    assert st["rows_copied"] == len(moved)
    # after the fence a pause is refused, with the reason
    with pytest.raises(MigrationError, match="before the fence"):
        m2.pause()
    other.close()
    cl.close()


def test_pause_during_the_catch_up_and_before_the_fence(root: Path, backend: str) -> None:
    path, cl, m, moved = _start(root, backend, 600)
    assert m.run(chunk=200, cutover=False) == "catching-up"
    # a pause recorded while the run settles stops it at the next catch-up batch
    other = Cluster.load(path)

    def settle(small: int = 64, rounds: int = 10) -> None:
        Migration(other, m.id).pause()
        Migration._settle(m, small, rounds)

    m._settle = settle  # type: ignore[method-assign]
    with pytest.raises(MigrationPaused, match="catch-up"):
        m.run()
    assert m.status()["state"] == "catching-up" and m.status()["paused"]
    assert m.unpause()
    # a pause recorded after the last catch-up round, just before the step
    # into the fence: the step and the pause exclude each other
    m3 = Migration(cl, m.id)
    calls = [0]

    def catch_up_until(threshold: float, max_seconds: float) -> None:
        Migration._catch_up_until(m3, threshold, max_seconds)
        calls[0] += 1
        if calls[0] == 3:  # (the last round before the fence)
            Migration(other, m3.id).pause()

    m3._catch_up_until = catch_up_until  # type: ignore[method-assign]
    with pytest.raises(MigrationPaused, match="before the fence"):
        m3.run()
    assert calls[0] == 3
    assert m3.status()["state"] == "catching-up" and m3.status()["paused"]
    m3.unpause()
    assert Migration(cl, m.id).run() == "retained"
    assert set(shard_rows(root, "s4")) == moved
    other.close()
    cl.close()


def test_rate_limit_holds_the_copy_to_its_pace(root: Path, backend: str) -> None:
    users, rate = 1200, 800.0
    _, cl, m, moved = _start(root, backend, users)
    t0 = time.perf_counter()
    assert m.run(cutover=False, max_rows_per_s=rate) == "catching-up"
    assert m.status()["max_rows_per_s"] == rate
    dt = time.perf_counter() - t0
    # the copy scans every row of the four sources: at 800 rows/s, >= 1.5 s
    # (less one quarter-second burst); well below that means no limit held
    assert dt >= users / rate - 0.25, dt
    # and the limit is a pace, not a stall (a loaded machine: a wide margin)
    assert dt < 3 * users / rate + 5, dt
    assert set(shard_rows(root, "s4")) == moved
    cl.close()


def test_rate_limit_is_changed_while_the_copy_runs(root: Path, backend: str) -> None:
    users, rate = 2000, 200.0  # (10 s at that pace)
    path, cl, m, moved = _start(root, backend, users)
    other = Cluster.load(path)
    first = [True]

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        Migration._write_copy(m, s, d, dc, table, cols, rows)
        if first[0]:
            first[0] = False
            assert Migration(other, m.id).set_max_rows_per_s(0) is None  # (lifted)

    m._write_copy = write_copy  # type: ignore[method-assign]
    t0 = time.perf_counter()
    assert m.run(cutover=False, max_rows_per_s=rate) == "catching-up"
    dt = time.perf_counter() - t0
    assert dt < 0.5 * users / rate, dt  # the lifted limit was taken up
    assert m.status()["max_rows_per_s"] is None
    assert set(shard_rows(root, "s4")) == moved
    other.close()
    cl.close()


def test_bad_controls_are_refused(root: Path, backend: str) -> None:
    _, cl, m, _ = _start(root, backend, 50)
    with pytest.raises(ValueError, match="max_rows_per_s"):
        m.run(max_rows_per_s=-1)
    with pytest.raises(TypeError, match="max_rows_per_s"):
        m.run(max_rows_per_s="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_rows_per_s"):
        m.set_max_rows_per_s(float("nan"))
    assert m.state == "preparing"  # (refused before anything ran)
    cl.close()


def test_token_bucket_paces_rows() -> None:
    b = TokenBucket(2000.0)
    t0 = time.perf_counter()
    for _ in range(25):
        b.take(100)
    dt = time.perf_counter() - t0
    assert dt >= 2500 / 2000 - 0.3, dt  # (minus at most the burst)
    assert b.chunk_cap() == 500
    b.rate = None
    t0 = time.perf_counter()
    b.take(10**9)
    assert time.perf_counter() - t0 < 0.5 and b.chunk_cap() is None


def test_cli_pause_set_status_resume(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, FOUR, users=400, extra_shards=["s4"], backend=backend)
    cfg = ["--config", str(path)]
    assert main(["migrate", "init", *cfg]) == 0
    assert main(["migrate", "start", *cfg, "--add", "s4", "--no-cutover", "-q"]) == 0
    capsys.readouterr()
    assert main(["migrate", "pause", *cfg]) == 0
    out = capsys.readouterr().out
    assert "catching-up (paused)" in out
    assert main(["migrate", "set", *cfg, "--max-rows-per-s", "500", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["paused"] is True and st["max_rows_per_s"] == 500
    assert main(["migrate", "set", *cfg]) == 2
    assert "--max-rows-per-s" in capsys.readouterr().err
    assert main(["migrate", "set", *cfg, "--max-rows-per-s", "-5"]) == 2
    assert "must be >= 0" in capsys.readouterr().err
    assert main(["migrate", "resume", *cfg, "--json", "--max-rows-per-s", "0"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["state"] == "retained" and st["paused"] is False and st["max_rows_per_s"] is None
    assert main(["migrate", "pause", *cfg]) == 2
    assert "before the fence" in capsys.readouterr().err


def test_a_writer_sees_no_difference_while_paused(root: Path, backend: str) -> None:
    """A paused migration keeps capturing: writes made while it is paused
    reach the destination after the resume."""
    path, cl, m, moved = _start(root, backend, 300)
    assert m.run(cutover=False) == "catching-up"
    m.pause()
    k = next(iter(sorted(moved)))
    with cl.transaction(k) as tx:
        tx.execute(upsert(tx), (k, "while paused", 7.0))
    m.unpause()
    assert Migration(cl, m.id).run() == "retained"
    assert shard_rows(root, "s4")[k][1] == "while paused"
    cl.close()
