"""shardhash.ids and the id_bucket router: the layout and its document, the
generator (monotonic, clock steps, uniqueness across processes), routing by
the embedded bucket, the frozen vectors, and a migration that moves buckets."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash.ids import ClockWentBackwards, IdGenerator, IdLayout
from shardhash.migrate import Cluster, Migration
from shardhash.routing import IdBucketRouter, load_router
from tests._support import VECTORS, examples, ill_typed


def test_layout_checks_widths_and_round_trips_its_document() -> None:
    lay = IdLayout()
    assert lay.time_bits + lay.sequence_bits + lay.worker_bits + lay.bucket_bits == 63
    assert IdLayout.from_dict(lay.to_dict()) == lay == IdLayout.from_dict(lay.to_json())
    with pytest.raises(ValueError, match="must be 63"):
        IdLayout(bucket_bits=11)
    with pytest.raises(ValueError, match="time_bits must be in 32..60"):
        IdLayout(time_bits=20, sequence_bits=24, worker_bits=9, bucket_bits=10)
    with pytest.raises(TypeError, match="worker_bits must be an int"):
        IdLayout(worker_bits=ill_typed(5.0))
    with pytest.raises(ValueError, match="unknown field 'shard_bits'"):
        IdLayout.from_dict({**lay.to_dict(), "shard_bits": 3})
    with pytest.raises(ValueError, match="missing field"):
        IdLayout.from_dict({"format": "shardhash.idlayout/1", "epoch_ms": 0})
    with pytest.raises(ValueError, match="format"):
        IdLayout.from_dict({**lay.to_dict(), "format": "x"})
    with pytest.raises(ValueError, match="worker must be in 0..31"):
        lay.compose(lay.epoch_ms, 0, 32, 0)
    with pytest.raises(ValueError, match="time_ms"):
        lay.compose(lay.epoch_ms - 1, 0, 0, 0)
    with pytest.raises(ValueError, match="0..2\\*\\*63-1"):
        lay.bucket_of(-1)
    with pytest.raises(TypeError, match="an id is an int"):
        lay.bucket_of(ill_typed("12"))


@settings(max_examples=examples(100))
@given(st.integers(0, 2**41 - 1), st.integers(0, 127), st.integers(0, 31), st.integers(0, 1023))
def test_fields_round_trip(t: int, s: int, w: int, b: int) -> None:
    lay = IdLayout()
    i = lay.compose(lay.epoch_ms + t, s, w, b)
    assert 0 <= i < 2**63
    assert (lay.time_of(i), lay.sequence_of(i), lay.worker_of(i), lay.bucket_of(i)) == (lay.epoch_ms + t, s, w, b)


def test_frozen_vectors() -> None:
    data = json.loads((VECTORS / "ids" / "id_bucket.json").read_text())
    for case in data["cases"]:
        lay = IdLayout.from_dict(case["layout"])
        for f, want in zip(case["fields"], case["ids"]):
            assert lay.compose(*f) == want
            assert [lay.time_of(want), lay.sequence_of(want), lay.worker_of(want), lay.bucket_of(want)] == f
        doc = case["router"]
        shards = doc["shards"]
        r = IdBucketRouter(shards, lay, [shards[i] for i in doc["params"]["placement"]])
        assert r.to_dict()["params"] == doc["params"] and r.to_dict()["type"] == doc["type"]
        assert [r.route_index(i) for i in case["ids"]] == case["routes"]
        assert r.route_many(np.array(case["ids"], dtype=np.int64)).tolist() == case["routes"]
        assert load_router(r.to_json()) == r


class Clock:
    """A clock the test moves by hand (``steps``: readings returned in turn, the last one repeated)."""

    def __init__(self, *steps: int) -> None:
        self.steps = list(steps)
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]


def test_generator_is_strictly_increasing_whatever_the_buckets() -> None:
    lay = IdLayout()
    gen = IdGenerator(lay, worker=7)
    rng = np.random.default_rng(5)
    ids = [gen.next_id(int(b)) for b in rng.integers(0, lay.buckets, 3000)]
    assert all(a < b for a, b in zip(ids, ids[1:]))
    assert {lay.worker_of(i) for i in ids} == {7}
    spread = [gen.next_id() for _ in range(2 * lay.buckets)]  # buckets in turn
    assert np.bincount([lay.bucket_of(i) for i in spread]).tolist() == [2] * lay.buckets


def test_a_full_millisecond_waits_for_the_next() -> None:
    lay = IdLayout(sequence_bits=1, worker_bits=11)  # two ids per millisecond
    t0 = lay.epoch_ms + 1000
    clock = Clock(t0, t0, t0, t0, t0 + 1)
    gen = IdGenerator(lay, worker=0, clock=clock)
    ids = [gen.next_id(0) for _ in range(3)]
    assert [lay.time_of(i) for i in ids] == [t0, t0, t0 + 1]
    assert [lay.sequence_of(i) for i in ids] == [0, 1, 0]


def test_clock_going_backwards_waits_a_little_and_refuses_a_lot() -> None:
    lay = IdLayout()
    t0 = lay.epoch_ms + 10_000
    clock = Clock(t0, t0 - 3, t0 - 1, t0 + 2)
    gen = IdGenerator(lay, worker=1, clock=clock, max_backwards_ms=5)
    a = gen.next_id(0)
    b = gen.next_id(0)  # the clock read 3 then 1 ms behind: waited until it passed t0
    assert b > a and lay.time_of(b) == t0 + 2 and clock.reads == 4
    far = IdGenerator(lay, worker=1, clock=Clock(t0, t0 - 6), max_backwards_ms=5)
    first = far.next_id(0)
    with pytest.raises(ClockWentBackwards, match="6 ms"):
        far.next_id(0)
    assert first > 0


def test_a_forked_generator_refuses_to_mint() -> None:
    gen = IdGenerator(IdLayout(), worker=2)
    gen.next_id()
    gen._pid = os.getpid() + 1  # (what a forked child sees)
    with pytest.raises(RuntimeError, match="another process"):
        gen.next_id()


def _mint(worker: int, n: int, q: Any) -> None:
    gen = IdGenerator(IdLayout(sequence_bits=3, worker_bits=9), worker=worker)  # (8 per ms: many collide in time)
    q.put([gen.next_id(worker % 4) for _ in range(n)])


def test_ids_are_unique_across_processes_minting_at_once() -> None:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_mint, args=(w, 4000, q)) for w in range(4)]
    for p in procs:
        p.start()
    lists = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    every = [i for ids in lists for i in ids]
    assert len(every) == 16_000 and len(set(every)) == 16_000
    for ids in lists:
        assert all(a < b for a, b in zip(ids, ids[1:]))
    lay = IdLayout(sequence_bits=3, worker_bits=9)
    times = [lay.time_of(i) for i in every]
    assert len(set(times)) < len(every)  # (ids of one millisecond from several processes did occur)


def test_router_routes_by_the_embedded_bucket_and_checks_keys() -> None:
    lay = IdLayout(bucket_bits=4, worker_bits=11)
    r = IdBucketRouter(["a", "b", "c"], lay)
    assert r.placement_ids == ("a",) * 6 + ("b",) * 5 + ("c",) * 5
    gen = IdGenerator(lay, worker=3)
    ids = [gen.next_id(b) for b in range(16)]
    assert [r.route(i) for i in ids] == list(r.placement_ids)
    assert r.route_many(ids).tolist() == r.route_many(np.array(ids, dtype=np.uint64)).tolist() \
        == [r.route_index(i) for i in ids]
    with pytest.raises(TypeError, match="routes ids"):
        r.route(ill_typed("5"))
    with pytest.raises(ValueError, match="0..2\\*\\*63-1"):
        r.route(-1)
    with pytest.raises(ValueError, match="keys\\[1\\]"):
        r.route_many(np.array([1, -3]))
    with pytest.raises(TypeError, match="hashes"):
        r.route_hashes([1])
    with pytest.raises(ValueError, match="16 buckets"):
        IdBucketRouter(["a"], lay, ["a"] * 15)
    grown = r.with_shards(["a", "b", "c", "d"])
    moved = [b for b in range(16) if grown.placement_ids[b] != r.placement_ids[b]]
    assert {grown.placement_ids[b] for b in moved} == {"d"} and len(moved) == 4
    assert load_router(grown.to_dict()) == grown and grown.version == r.version + 1


def test_a_migration_moves_buckets_and_every_id_keeps_routing(tmp_path: Path) -> None:
    lay = IdLayout(bucket_bits=6, worker_bits=9)
    r = IdBucketRouter(["s0", "s1"], lay)
    gen = IdGenerator(lay, worker=1)
    for s in ("s0", "s1", "s2"):
        with sqlite3.connect(tmp_path / f"{s}.db") as c:
            c.execute("CREATE TABLE posts (id INTEGER PRIMARY KEY, body TEXT)")
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in ("s0", "s1", "s2")},
           "groups": {"posts": {"router": r.to_dict(), "key_type": "int",
                                "tables": [{"name": "posts", "key": "id"}]}}}
    cl = Cluster.from_dict(doc, base_dir=tmp_path)
    cl.init()
    ids = [gen.next_id() for _ in range(500)]
    for i in ids:
        with cl.transaction(i) as tx:
            tx.execute("INSERT INTO posts VALUES (?, ?)", (i, f"post {i}"))
    new = r.with_shards(["s0", "s1", "s2"])
    m = Migration.create(cl, "posts", new)
    assert m.run() == "retained"
    m.cleanup()
    for s in ("s0", "s1", "s2"):
        with sqlite3.connect(tmp_path / f"{s}.db") as c:
            here = [row[0] for row in c.execute("SELECT id FROM posts")]
        assert all(new.route(i) == s for i in here)
        assert len(here) > 0
    for i in ids[::25]:
        with cl.read(i) as tx:
            assert tx.execute("SELECT body FROM posts WHERE id = ?", (i,)).fetchone()[0] == f"post {i}"
    cl.close()
