"""The catch-up, the verify and the check under the fence run one worker per
source (with its destinations) at once, bounded by ``parallel``, with the
same results as one worker; the first error stops the others and names its
pair (SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration, MigrationError
from tests._support import fork_child as _fork

from ._harness import drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]
USERS = 400


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    for sub in ("p1", "p2", "e"):
        drop_cluster(tmp_path / sub, backend)


def _start(root: Path, backend: str) -> tuple[Cluster, Migration, list[int]]:
    """Four shards, a migration that adds s4, copied (not cut over); the moved keys."""
    path = make_cluster(root, FOUR, users=USERS, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new, mig_id="m1")
    assert m.run(chunk=200, cutover=False, parallel=1) == "catching-up"
    return cl, m, sorted(k for k in range(1, USERS + 1) if old.route(k) != new.route(k))


def _writes(cl: Cluster, moved: list[int]) -> None:
    """The same live writes on every cluster: updates, deletes and new rows
    of moved keys (on every source) and updates of keys that stay."""
    for i, k in enumerate(moved[::2]):
        with cl.transaction(k) as tx:
            if i % 3 == 0:
                tx.execute("DELETE FROM users WHERE id = ?", (k,))
            else:
                tx.execute(upsert(tx), (k, f"changed {k}", i))
    for k in range(USERS + 1, USERS + 41):
        with cl.transaction(k) as tx:
            tx.execute(upsert(tx), (k, f"new {k}", 1))
    for k in range(1, 21):
        with cl.transaction(k) as tx:
            tx.execute(upsert(tx), (k, f"again {k}", 2))


class _Overlap:
    """How many calls of a wrapped step were under way at once (at most)."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def wrap(self, fn: Any) -> Any:
        def inner(*a: Any, **kw: Any) -> Any:
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
                self.threads.add(threading.current_thread().name)
            try:
                time.sleep(0.02)  # (long enough for the workers' calls to overlap)
                return fn(*a, **kw)
            finally:
                with self.lock:
                    self.now -= 1
        return inner


@pytest.mark.slow  # (two clusters, each migrated with live writes: about 6 s on PostgreSQL)
def test_catch_up_and_verify_per_pair_at_once_equal_one_worker(root: Path, backend: str) -> None:
    results: dict[int, Any] = {}
    for par in (1, 2):
        cl, m, moved = _start(root / f"p{par}", backend)
        _writes(cl, moved)
        m2 = Migration(cl, m.id)
        sync, sums = _Overlap(), _Overlap()
        m2._sync = sync.wrap(m2._sync)  # type: ignore[method-assign]
        m2._unit_sums = sums.wrap(m2._unit_sums)  # type: ignore[method-assign]
        assert m2.run(parallel=par) == "retained"
        st = m2.status()
        assert st["verify"]["mismatches"] == 0
        results[par] = ({s: shard_rows(root / f"p{par}", s) for s in FOUR + ["s4"]},
                        st["verify"]["rows"], st["rows_copied"])
        if par == 1:
            assert sync.most == 1 and sums.most == 1
        else:
            # one worker per source at once, never more than ``parallel``
            assert sync.most == 2 and sums.most == 2, (sync.most, sums.most)
            assert all(t.startswith("shardhash-pair-worker") for t in sync.threads | sums.threads)
        cl.close()
    assert results[1] == results[2]
    # (the writes reached the new owner)
    rows = results[2][0]["s4"]
    assert any(v[1].startswith("changed") for v in rows.values())


def test_an_error_in_one_catch_up_worker_stops_the_others_and_names_its_pair(root: Path, backend: str) -> None:
    cl, m, moved = _start(root / "e", backend)
    old = cl.router()
    # a pending change on every source
    for s in FOUR:
        k = next(k for k in moved if old.route(k) == s)
        with cl.transaction(k) as tx:
            tx.execute(upsert(tx), (k, "pending", 5))
    m2 = Migration(cl, m.id)
    started: list[tuple[str, float]] = []
    failed: list[float] = []
    lock = threading.Lock()

    def sync(s: str, batch: Any) -> None:
        with lock:
            started.append((s, time.perf_counter()))
        if s == "s1":
            failed.append(time.perf_counter())
            raise MigrationError("injected fault")
        time.sleep(0.2)
        Migration._sync(m2, s, batch)

    m2._sync = sync  # type: ignore[method-assign]
    with pytest.raises(MigrationError, match=r"injected fault \(in the catch-up worker for source 's1' -> 's4'\)"):
        m2.run(parallel=2)
    # the batch under way (s0's: 0.2 s longer than s1's) was finished; the
    # sources not started when s1 failed (s2, s3) were not started after it
    assert failed and sorted(s for s, _ in started) == ["s0", "s1"]
    st = m2.status()
    assert st["state"] == "catching-up" and "s1" in (st["error"] or "")
    # a resume finishes, every change applied
    assert Migration(cl, m.id).run(parallel=2) == "retained"
    s4 = shard_rows(root / "e", "s4")
    assert sum(1 for v in s4.values() if v[1] == "pending") == 4
    assert set(s4) == set(moved)
    cl.close()




@pytest.mark.slow  # (a forked executor killed twice, then resumed)
@pytest.mark.parametrize("skip", [0, 3])
def test_an_executor_killed_in_a_parallel_catch_up_batch_resumes(root: Path, backend: str, skip: int) -> None:
    """SIGKILL in a catch-up batch on a worker (the first one, or a later one
    while other workers' batches are under way): the resume applies every
    change, once, and the migration verifies and cuts over."""
    cl, m, moved = _start(root / "e", backend)
    _writes(cl, moved)
    want = {k: v for s in FOUR for k, v in shard_rows(root / "e", s).items() if k in set(moved) or k > USERS}
    path = str(root / "e" / "cluster.json")
    cl.close()

    def body() -> None:
        Migration(Cluster.load(path), m.id).run(parallel=2)

    _, status = os.waitpid(_fork(body, {"SHARDHASH_MIGRATE_CRASH": "catch-up-batch",
                                        "SHARDHASH_MIGRATE_CRASH_SKIP": str(skip)}), 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    cl2 = Cluster.load(path)
    m2 = Migration(cl2, m.id)
    assert m2.state == "catching-up"
    assert m2.run(parallel=2) == "retained"
    assert m2.status()["verify"]["mismatches"] == 0
    new = cl2.router()
    # every row on its owner (the sources keep retained copies: not counted) as written
    got = {k: v for s in FOUR + ["s4"] for k, v in shard_rows(root / "e", s).items() if new.route(k) == s}
    assert {k: got.get(k) for k in want} == want
    assert not (set(moved) - set(want)) & set(got)  # (the deleted ones are gone)
    assert any(new.route(k) == "s4" for k in want if k > USERS)
    cl2.close()
