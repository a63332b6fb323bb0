"""A pause with parallel copy workers: every worker stops at its next chunk
boundary -- no chunk that was not yet handed to a worker's writer when the
pause was recorded is written (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration
from shardhash.migrate.control import MigrationPaused

from ._harness import drop_cluster, make_cluster, shard_rows

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def test_no_worker_starts_a_chunk_after_the_pause_is_recorded(root: Path, backend: str) -> None:
    """Both workers wait at their second chunk's boundary (the first chunk
    written, its cursor committed and the controls read after it) while the
    operator records a pause; then they go on.  Each must read the pause at
    that boundary: a value read before it (at the previous commit, or by the
    other worker) would let one more chunk through per worker."""
    path = make_cluster(root, FOUR, users=2000, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new, max_step_share=0.05)
    moved = {k for k in range(1, 2001) if old.route(k) != new.route(k)}
    other = Cluster.load(path)  # (the operator: another view of the store)
    op = Migration(other, m.id)
    lock = threading.Lock()
    writes: list[tuple[str, float]] = []
    first_written: dict[str, threading.Event] = {s: threading.Event() for s in FOUR}
    calls: dict[str, int] = {}
    recorded: list[float] = []

    def record_pause() -> None:  # (run by the last worker to reach the barrier)
        op.pause()
        recorded.append(time.perf_counter())

    barrier = threading.Barrier(2, action=record_pause, timeout=60)

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        with lock:
            writes.append((s, time.perf_counter()))
        Migration._write_copy(m, s, d, dc, table, cols, rows)
        first_written[s].set()

    def check_keys(table: str, keys: Sequence[Any], rows: Sequence[Sequence[Any]], pkx: Sequence[int]) -> None:
        Migration._check_keys(m, table, keys, rows, pkx)
        if not threading.current_thread().name.startswith("shardhash-copy-worker"):
            return
        s = str(old.route(keys[0]))
        calls[s] = calls.get(s, 0) + 1
        if calls[s] != 2 or recorded:
            return
        # the first chunk written; wait for its cursor's commit (and the read after it)
        assert first_written[s].wait(60)
        deadline = time.monotonic() + 60
        while other.metadata.get(m.id, f"cursor:{s}:users") is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.2)
        barrier.wait()

    m._write_copy = write_copy  # type: ignore[method-assign]
    m._check_keys = check_keys  # type: ignore[method-assign]
    with pytest.raises(MigrationPaused, match="paused"):
        m.run(chunk=100, parallel=2)
    assert recorded, "the workers never met at the barrier"
    late = [s for s, t in writes if t > recorded[0]]
    assert late == [], f"chunks written after the pause was recorded: {late}"
    assert len(writes) == 2 and {s for s, _ in writes} == set(calls)
    st = m.status()
    assert st["state"] == "copying" and st["paused"] is True
    assert st["rows_copied"] == len(shard_rows(root, "s4"))
    # the resume copies the rest, nothing twice
    assert m.unpause() is True
    m2 = Migration(cl, m.id)
    assert m2.run(chunk=100, parallel=2) == "retained"
    assert set(shard_rows(root, "s4")) == moved
    assert m2.status()["rows_copied"] == len(moved)
    other.close()
    cl.close()
