"""The headline path of docs/migrate.md, under live writers: an unsharded
database becomes shard ``s0`` of a one-shard topology, ``shardhash migrate
start --add s1 --primary URL --add s2 ... --add s3 ...`` spreads it over four
shards while writer threads insert, update and delete through
``cluster.transaction``, and ``start --remove s1,s2,s3`` brings it back.  After
each move every acknowledged write is on its owner exactly once, with its last
acknowledged value, and nothing else is anywhere."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.cli import main
from shardhash.migrate import Cluster
from shardhash.migrate.cluster import open_backend

from ._harness import drop_cluster, make_cluster, shard_url, upsert

N = 6_000
WRITERS = 4
NEW = ["s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path / "c"
    drop_cluster(tmp_path / "c", backend)


class Writers:
    """Threads that write through the client until stopped; ``acks[k]`` is
    the last acknowledged value of key ``k`` (None: deleted)."""

    def __init__(self, cluster: Cluster, n: int, acks: dict[int, int | None] | None = None) -> None:
        self.cluster, self.n = cluster, n
        self.acks: dict[int, int | None] = dict(acks or {})  # (set before any thread starts)
        self.lock = threading.Lock()
        self.count = 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(w,), daemon=True) for w in range(WRITERS)]

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def _run(self, w: int) -> None:
        rnd = random.Random(1000 + w + 10 * len(self.acks))
        base = 10**7 if self.acks else 0  # (a later round's values differ from every earlier one's)
        fresh = 10 * self.n + w  # new keys: w, w + WRITERS, ... beyond the loaded ones
        seq = base
        try:
            while not self.stop.is_set():
                seq += 1
                r = rnd.random()
                if r < 0.2:
                    k, fresh = fresh, fresh + WRITERS
                else:
                    k = rnd.randrange(self.n // WRITERS) * WRITERS + w + 1
                val: int | None
                with self.cluster.transaction(k) as tx:
                    if r > 0.9:
                        tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        val = None
                    else:
                        tx.execute(upsert(tx), (k, f"w{w}", seq))  # (MySQL has its own spelling)
                        val = seq
                with self.lock:  # acknowledged: the transaction committed
                    self.acks[k] = val
                    self.count += 1
        except Exception as e:  # noqa: BLE001 - the test reports it
            self.errors.append(f"writer {w}: {type(e).__name__}: {e}")
        finally:
            self.cluster.close()


def _contents(root: Path, urls: dict[str, str]) -> dict[int, list[tuple[str, int]]]:
    where: dict[int, list[tuple[str, int]]] = {}
    for sid, url in urls.items():
        b = open_backend(url, root)
        c = b.connect()
        try:
            if not b.has_table(c, "users"):
                continue
            for k, n in c.execute("SELECT id, n FROM users").fetchall():
                where.setdefault(int(k), []).append((sid, int(n)))
        finally:
            c.close()
    return where


def _check(root: Path, urls: dict[str, str], router: Any, acks: dict[int, int | None]) -> None:
    where = _contents(root, urls)
    dup = {k: v for k, v in where.items() if len(v) > 1}
    assert not dup, f"{len(dup)} key(s) on more than one shard, e.g. {list(dup.items())[:3]}"
    misplaced = {k: v for k, v in where.items() if v[0][0] != router.route(k)}
    assert not misplaced, f"{len(misplaced)} key(s) off their owner, e.g. {list(misplaced.items())[:3]}"
    lost = [k for k, val in acks.items() if (val is None) != (k not in where)
            or (val is not None and where[k][0][1] != val)]
    assert not lost, f"{len(lost)} acknowledged write(s) lost, e.g. {[(k, acks[k], where.get(k)) for k in lost[:3]]}"
    untouched = [k for k in range(1, N + 1) if k not in acks and k not in where]
    assert not untouched, f"{len(untouched)} loaded row(s) nobody wrote are gone, e.g. {untouched[:3]}"


def _move(cfg: Path, writers: Writers, *args: str) -> None:
    """Run ``migrate start ARGS`` then ``cleanup`` while the writers write; the
    writers must have been acknowledged during the move."""
    time.sleep(0.2)
    before = writers.count
    assert main(["migrate", "start", "--config", str(cfg), *args, "-q"]) == 0
    during = writers.count - before
    time.sleep(0.2)
    assert main(["migrate", "cleanup", "--config", str(cfg), "-q"]) == 0
    assert during > 0, "no write was acknowledged while the migration ran"
    assert not writers.errors, writers.errors


def test_one_database_to_four_shards_and_back_under_writers(root: Path, backend: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    one = JumpRouter(["s0"])
    cfg = make_cluster(root, ["s0"], one, users=N, backend=backend, retries=5, wait_timeout=60)
    urls = {"s0": shard_url(backend, root, "s0"), **{s: shard_url(backend, root, s) for s in NEW}}
    adds = [a for s in NEW for a in ("--add", s, "--primary", urls[s])]
    app = Cluster.load(cfg)
    with Writers(app, N) as w:
        _move(cfg, w, *adds)
        four = Cluster.load(cfg)
        router = four.router("users")
        assert list(router.shards) == ["s0", *NEW] and sorted(four.shard_ids()) == ["s0", *NEW]
        four.close()
        time.sleep(0.2)
    _check(root, urls, router, w.acks)
    assert main(["migrate", "check", "--config", str(cfg)]) == 0  # nothing stranded
    assert "0 stranded" in capsys.readouterr().out

    app = Cluster.load(cfg)
    with Writers(app, N, w.acks) as w2:  # (the same keys: the record goes on)
        _move(cfg, w2, "--remove", ",".join(NEW))
    back = Cluster.load(cfg)
    router = back.router("users")
    back.close()
    assert [router.route(k) for k in range(1, 200)] == ["s0"] * 199
    _check(root, urls, router, w2.acks)
