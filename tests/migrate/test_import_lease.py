"""One import of a group at a time: ``Cluster.import_from`` holds a lease on
the group in the metadata store, renewed with every recorded chunk; a second
import is refused while the lease is live, takes a lapsed one over, and the
first then stops at its next chunk instead of racing it."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shardhash.migrate import Cluster, MigrationError, importer

from ._harness import drop_cluster, make_cluster, shard_rows

SHARDS = ["s0", "s1", "s2"]
N = 3_000


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path / "c"
    drop_cluster(tmp_path / "c", backend)


def _source(path: Path) -> str:
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL)")
    c.executemany("INSERT INTO users VALUES (?, ?, ?)", [(i, f"u{i}", i) for i in range(1, N + 1)])
    c.commit()
    c.close()
    return f"sqlite:{path}"


def _rows(root: Path) -> int:
    return sum(len(shard_rows(root, s, "users")) for s in SHARDS)


def test_a_second_import_is_refused_while_the_first_runs(root: Path, backend: str, tmp_path: Path) -> None:
    cfg = make_cluster(root, SHARDS, backend=backend)
    url = _source(tmp_path / "src.db")
    cl, other = Cluster.load(cfg), Cluster.load(cfg)
    refused: list[str] = []

    def second(table: str, done: int) -> None:
        if not refused:
            with pytest.raises(MigrationError, match="another import is running") as e:
                other.import_from(url, chunk=500)
            refused.append(str(e.value))

    try:
        rep = cl.import_from(url, chunk=500, on_chunk=second)
        assert refused and "pid" in refused[0]
        assert rep.rows_read == N and rep.verified
        # the lease is given back at the end: a later import runs (and finds everything there)
        again = other.import_from(url, chunk=500)
        assert again.rows_read == 0 and again.verified
    finally:
        cl.close()
        other.close()
    assert _rows(root) == N


def test_a_lapsed_lease_is_taken_over_and_its_holder_stops(root: Path, backend: str, tmp_path: Path) -> None:
    cfg = make_cluster(root, SHARDS, backend=backend)
    url = _source(tmp_path / "src.db")
    cl = Cluster.load(cfg)
    try:
        group = cl.group(None).name
        # a lease left by an import that died long ago does not block
        with cl.metadata.tx() as c:
            cl.metadata.put(importer._LEASE, group, {"token": "dead", "pid": 1, "host": "h",
                                                     "at": time.time() - importer.LEASE_S - 1}, c)
        seen: list[int] = []

        def taken_over(table: str, done: int) -> None:
            seen.append(done)
            if len(seen) == 2:  # another import takes the lease over (as after a lapse)
                with cl.metadata.tx() as c:
                    cl.metadata.put(importer._LEASE, group, {"token": "other", "pid": 2, "host": "h",
                                                             "at": time.time()}, c)

        with pytest.raises(MigrationError, match="another import took the group over"):
            cl.import_from(url, chunk=500, on_chunk=taken_over)
        assert len(seen) == 2  # it stopped at the next chunk
        # the lease it lost is not its to give back
        assert cl.metadata.get(importer._LEASE, group)["token"] == "other"
        with cl.metadata.tx() as c:
            cl.metadata.put(importer._LEASE, group, None, c)
        rep = cl.import_from(url, chunk=500)  # resumes from the recorded cursor
        assert rep.verified and 0 < rep.rows_read < N
    finally:
        cl.close()
    assert _rows(root) == N
