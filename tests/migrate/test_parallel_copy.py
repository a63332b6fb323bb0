"""The copy's workers: sources copied at once (``run(parallel=N)``), each
with its own connections and cursors; the first error stops the others and
names its source and destination (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster, Migration, MigrationError

from ._harness import add_shard_migration, drop_cluster, shard_rows

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _start(root: Path, backend: str, users: int) -> tuple[Cluster, Migration, set[int]]:
    _, cl, m, moved = add_shard_migration(root, backend, users)
    return cl, m, moved


@pytest.mark.parametrize("parallel", [1, 3])
def test_workers_copy_sources_at_once_and_no_more(root: Path, backend: str, parallel: int) -> None:
    cl, m, moved = _start(root, backend, 1600)
    lock = threading.Lock()
    now, most, sources = [0], [0], set()

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
            sources.add(s)
        time.sleep(0.02)  # (long enough for the workers' chunks to overlap)
        try:
            Migration._write_copy(m, s, d, dc, table, cols, rows)
        finally:
            with lock:
                now[0] -= 1

    m._write_copy = write_copy  # type: ignore[method-assign]
    assert m.run(chunk=40, parallel=parallel) == "retained"
    assert sources == set(FOUR)
    if parallel == 1:
        assert most[0] == 1
    else:
        assert 2 <= most[0] <= parallel
    assert set(shard_rows(root, "s4")) == moved
    st = m.status()
    assert st["rows_copied"] == len(moved) and st["verify"]["mismatches"] == 0
    cl.close()


def test_an_error_in_one_worker_stops_the_others_and_names_its_pair(root: Path, backend: str) -> None:
    cl, m, moved = _start(root, backend, 1600)
    fail = [True]
    after: list[str] = []
    failed = threading.Event()

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        if failed.is_set():
            after.append(s)
        if s == "s1" and fail[0]:
            failed.set()
            raise MigrationError("boom")
        Migration._write_copy(m, s, d, dc, table, cols, rows)
        time.sleep(0.01)

    m._write_copy = write_copy  # type: ignore[method-assign]
    with pytest.raises(MigrationError, match=r"boom \(in the copy worker for source 's1' -> 's4'\)"):
        m.run(chunk=40, parallel=4)
    # the others stopped at a chunk boundary: at most the chunk each had in hand and
    # the one it put before the failing worker's error reached the pool (of 10 each)
    assert all(after.count(s) <= 2 for s in FOUR), (after, m.meta.events(m.id))
    assert len(shard_rows(root, "s4")) < len(moved)
    assert m.state == "copying" and "s1" in m.status()["error"]
    fail[0] = False
    assert Migration(cl, m.id).run(parallel=4) == "retained"
    assert set(shard_rows(root, "s4")) == moved
    cl.close()


def test_bad_parallel_is_refused(tmp_path: Path) -> None:
    cl, m, _ = _start(tmp_path, "sqlite", 50)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="parallel"):
            m.run(parallel=bad)  # type: ignore[arg-type]
    assert m.state == "preparing"
    cl.close()


def test_status_shows_progress_and_eta_per_pair(root: Path, backend: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.migrate.cli import _print_status

    cl, m, moved = _start(root, backend, 1600)
    n = [0]

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        Migration._write_copy(m, s, d, dc, table, cols, rows)
        n[0] += 1
        if n[0] == 3:
            m.pause()

    m._write_copy = write_copy  # type: ignore[method-assign]
    with pytest.raises(MigrationError):
        m.run(chunk=40, parallel=1)
    pairs = m.status()["copy_pairs"]
    assert pairs and all(p["destinations"] == ["s4"] for p in pairs)
    first = pairs[0]
    on_source = len(shard_rows(root, first["source"]))
    assert first["rows_total"] == on_source and not first["done"]
    assert 0 < first["rows_scanned"] < on_source and first["rows_copied"] <= first["rows_scanned"]
    assert first["rows_per_s"] is not None and first["rows_per_s"] > 0 and first["eta_s"] is not None
    _print_status(m.status(), False)
    assert f"copy {first['source']} -> s4: {first['rows_scanned']:,} of {on_source:,} rows scanned" \
        in capsys.readouterr().out
    m.unpause()
    assert Migration(cl, m.id).run(chunk=40) == "retained"
    pairs = m.status()["copy_pairs"]
    assert sorted(p["source"] for p in pairs) == FOUR and all(p["done"] and p["eta_s"] == 0 for p in pairs)
    assert sum(p["rows_copied"] for p in pairs) == len(moved)
    assert all(p["rows_scanned"] == p["rows_total"] for p in pairs)
    cl.close()
