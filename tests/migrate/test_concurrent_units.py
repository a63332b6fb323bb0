"""Two migrations in one table group: disjoint units run side by side (and
cut over in order); overlapping ones are refused with a clear error."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster, Migration, MigrationError
from shardhash.migrate.executor import pending_router
from shardhash.routing import BucketRouter, Router

from ._harness import drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]
ALL = FOUR + ["s4"]
USERS = 3000
BUCKETS = 16


def _moved(base: Router, moves: dict[int, str]) -> BucketRouter:
    """``base`` (a BucketRouter) with some buckets placed elsewhere, version + 1."""
    doc = base.to_dict()
    placement = [doc["shards"][i] for i in doc["params"]["placement"]]
    for b, s in moves.items():
        placement[b] = s
    return BucketRouter(ALL, placement, version=base.version + 1)


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _placement(root: Path) -> dict[Any, list[str]]:
    seen: dict[Any, list[str]] = {}
    for s in ALL:
        for k in shard_rows(root, s):
            seen.setdefault(k, []).append(s)
    return seen


def test_disjoint_migrations_run_side_by_side(root: Path, backend: str) -> None:
    r0 = BucketRouter(FOUR, [FOUR[b % 4] for b in range(BUCKETS)])
    path = make_cluster(root, FOUR, r0, users=USERS, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    # A: buckets 0 and 4 (of s0) go to s4.  B, planned on top of A's target:
    # bucket 1 (of s1) goes to s4, bucket 6 (of s2) to s3 -- no key is in both.
    r1 = _moved(cl.router("users"), {0: "s4", 4: "s4"})
    a = Migration.create(cl, "users", r1)
    base = pending_router(cl, "users")
    assert base.version == r1.version and base.to_dict() == r1.to_dict()
    r2 = _moved(base, {1: "s4", 6: "s3"})
    b = Migration.create(cl, "users", r2)
    assert a.state == b.state == "preparing"

    stop = threading.Event()
    acked: dict[int, int | None] = {}
    errors: list[BaseException] = []

    def writer() -> None:
        w = Cluster.load(path, retries=8)
        seq = 0
        try:
            while not stop.is_set():
                seq += 1
                k = 1 + seq * 13 % USERS
                with w.transaction(k) as tx:
                    if seq % 9 == 0:
                        tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        acked[k] = None
                    else:
                        tx.execute(upsert(tx), (k, "w", seq))
                        acked[k] = seq
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            w.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        # Both copy, catch up and verify side by side ...
        results: dict[str, str] = {}

        def prep(m: Migration) -> None:
            c2 = Cluster.load(path)
            try:
                results[m.id] = Migration(c2, m.id).run(chunk=300, cutover=False)
            finally:
                c2.close()

        ts = [threading.Thread(target=prep, args=(m,)) for m in (a, b)]
        for x in ts:
            x.start()
        for x in ts:
            x.join()
        assert results == {a.id: "catching-up", b.id: "catching-up"}, results
        # ... and cut over in order: B's turn comes after A's.
        with pytest.raises(MigrationError, match=f"waits for migration {a.id}"):
            b.run()
        assert b.state == "catching-up"
        assert a.run() == "retained"
        assert b.run() == "retained"
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert cl.refresh("users").version == r2.version
    # A cannot be rolled back under B's cutover (it would undo B).
    with pytest.raises(MigrationError, match=f"while migration\\(s\\) {b.id} planned on top of it"):
        a.rollback()
    b.cleanup()
    with pytest.raises(MigrationError, match=f"moved on to version {r2.version}"):
        a.rollback()
    assert a.state == "retained"
    a.cleanup()
    seen = _placement(root)
    for k, places in seen.items():
        assert places == [r2.route(k)], (k, places)
    for k, v in acked.items():
        row = shard_rows(root, r2.route(k)).get(k)
        assert (row[2] if row else None) == v, (k, row, v)
    moved_a = sum(1 for k in seen if r1.route(k) == "s4" and r0.route(k) == "s0")
    moved_b = sum(1 for k in seen if r2.route(k) != r1.route(k))
    assert moved_a > 0 and moved_b > 0
    cl.close()


def test_overlapping_migration_is_refused(root: Path, backend: str) -> None:
    r0 = BucketRouter(FOUR, [FOUR[b % 4] for b in range(BUCKETS)])
    path = make_cluster(root, FOUR, r0, users=500, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    r1 = _moved(cl.router("users"), {0: "s4", 4: "s4"})
    a = Migration.create(cl, "users", r1)
    # Bucket 4 again, from s4 (where A puts it) to s2: the keys A moves.
    back = _moved(pending_router(cl, "users"), {4: "s2"})
    with pytest.raises(MigrationError, match=rf"unit 0 \(s4 -> s2\) overlaps unit \d \(s0 -> s4\) of migration {a.id}"):
        Migration.create(cl, "users", back)
    # A plan made from the current (not the pending) topology is refused too.
    with pytest.raises(MigrationError, match="plan again"):
        Migration.create(cl, "users", _moved(cl.router("users"), {2: "s0"}).with_version(9),
                         from_version=cl.router("users").version)
    assert [m["id"] for m in cl.metadata.migrations("users")] == [a.id]
    # Once A is done, the same move is a migration of its own.
    assert a.run() == "retained"
    with pytest.raises(MigrationError, match="overlaps"):
        Migration.create(cl, "users", back)  # still held: A is retained, not cleaned
    a.cleanup()
    m = Migration.create(cl, "users", back)
    assert m.run() == "retained"
    m.cleanup()
    for k, places in _placement(root).items():
        assert places == [back.route(k)], (k, places)
    cl.close()
