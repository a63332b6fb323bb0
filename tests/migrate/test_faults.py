"""Real faults during a migration: a destination that dies mid-copy and a
full disk.  Each gives a clear error naming the shard, leaves the migration
in its recorded state, and ``resume`` finishes it once the cause is gone,
with every acknowledged write (made throughout) on its owner exactly once.

Faults, not mocks:

* destination gone -- SQLite: the destination's folder disappears (renamed
  away, as an unmounted volume) after its connection closed; PostgreSQL: the
  executor's backend is killed with ``pg_terminate_backend`` and the shard's
  schema renamed away (every new connection finds no tables);
* full disk -- a size-limited tmpfs under the destination (needs the right
  to mount: skipped otherwise), and SQLite's ``PRAGMA max_page_count`` on the
  executor's connection, which makes SQLite itself return SQLITE_FULL
  ("database or disk is full") at the same write, everywhere.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration, MigrationError

from ._harness import _tag, drop_cluster, make_cluster, upsert

FOUR = ["s0", "s1", "s2", "s3"]
ALL = FOUR + ["s4"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


class Writers:
    """One writer thread: upserts and deletes through the client, recording
    every acknowledged write."""

    def __init__(self, path: Path, users: int) -> None:
        self.path, self.users = path, users
        self.acked: dict[int, int | None] = {}
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run)

    def _run(self) -> None:
        w = Cluster.load(self.path, retries=8)
        seq = 0
        try:
            while not self.stop.is_set():
                seq += 1
                k = 1 + seq * 17 % self.users
                with w.transaction(k) as tx:
                    if seq % 11 == 0:
                        tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        val: int | None = None
                    else:
                        tx.execute(upsert(tx), (k, "w", seq))
                        val = seq
                self.acked[k] = val
        except BaseException as e:  # noqa: BLE001
            self.errors.append(e)
        finally:
            w.close()

    def __enter__(self) -> Writers:
        self.t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.t.join()


def _check(root: Path, cl: Cluster, m: Migration, new: Any, writers: Writers) -> None:
    assert not writers.errors, writers.errors
    assert writers.acked
    assert m.cleanup() >= 0
    seen: dict[Any, list[str]] = {}
    rows: dict[str, dict[Any, tuple[Any, ...]]] = {s: _rows(cl, s) for s in ALL}
    for s, rs in rows.items():
        for k in rs:
            seen.setdefault(k, []).append(s)
    for k, places in seen.items():
        assert places == [new.route(k)], (k, places)  # no duplicate, on its owner
    for k, v in writers.acked.items():
        row = rows[new.route(k)].get(k)
        assert (row[2] if row is not None else None) == v, (k, row, v)  # nothing acknowledged lost


def _rows(cl: Cluster, shard: str) -> dict[Any, tuple[Any, ...]]:
    """The users rows of a shard, where the shard map says it lives now."""
    c = cl.backend(shard).connect()
    try:
        return {r[0]: tuple(r) for r in c.execute("SELECT * FROM users").fetchall()}
    finally:
        c.close()


def _after_chunks(n: int, fn: Callable[[], None]) -> Callable[[dict[str, Any]], None]:
    """A progress callback that runs ``fn`` once, after ``n`` copied chunks."""
    seen = [0]

    def tick(fig: dict[str, Any]) -> None:
        if fig.get("phase") == "copy":
            seen[0] += 1
            if seen[0] == n:
                fn()

    return tick


def test_destination_dies_mid_copy_then_resume(root: Path, backend: str) -> None:
    if backend.startswith("mysql://"):
        pytest.skip("needs a shard made unreachable and back: a MySQL database cannot be renamed")
    users = 4000
    path = make_cluster(root, FOUR, users=users, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    if backend == "sqlite":
        (root / "dst").mkdir()
        cl.failover("s4", "sqlite:dst/s4.db")  # the destination on a volume of its own
    new, _ = plan.add_shards(cl.router("users"), "s4")
    m = Migration.create(cl, "users", new)
    schema = f"t{_tag(root)}_s4"

    def kill() -> None:
        b = cl.backend("s4")
        if backend == "sqlite":
            b.close()  # the volume goes away under an open database: its handle dies with it
            os.rename(root / "dst", root / "dst.down")
            return
        import psycopg

        conn: Any = b.conn()
        pid = conn.raw.info.backend_pid
        with psycopg.connect(backend, autocommit=True) as pg:
            pg.execute(f'ALTER SCHEMA "{schema}" RENAME TO "{schema}_down"')
            r = pg.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
            assert r is not None and r[0]

    def revive() -> None:
        if backend == "sqlite":
            os.rename(root / "dst.down", root / "dst")
            return
        import psycopg

        with psycopg.connect(backend, autocommit=True) as pg:
            pg.execute(f'ALTER SCHEMA "{schema}_down" RENAME TO "{schema}"')

    with Writers(path, users) as writers:
        m.progress_fn = _after_chunks(3, kill)
        m.progress_every = 0.0
        with pytest.raises(MigrationError, match=r"destination shard 's4' failed while copying 'users' "
                                                 r"from 's\d'.*unreachable.*then resume"):
            m.run(chunk=150)
        m.progress_fn = None
        assert m.state == "copying"
        st = m.status()
        assert "s4" in st["error"] and st["rows_copied"] > 0
        copied_before = st["rows_copied"]
        # Still down: resume fails the same clear way and changes nothing.
        with pytest.raises(MigrationError, match="destination shard 's4'.*unreachable"):
            m.run(chunk=150)
        assert m.state == "copying"
        revive()
        assert m.run(chunk=150) == "retained"
        assert m.status()["error"] is None
        assert m.status()["rows_copied"] > copied_before
    _check(root, cl, m, new, writers)
    cl.close()


def _tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True, check=False)
    return r.returncode == 0


@pytest.mark.parametrize("how", ["tmpfs", "max_page_count"])
def test_full_disk_on_the_destination_then_resume(tmp_path: Path, how: str) -> None:
    users = 20000
    path = make_cluster(tmp_path, FOUR, users=users, extra_shards=["s4"])
    cl = Cluster.load(path)
    mnt = tmp_path / "dst"
    mounted = False
    try:
        if how == "tmpfs":
            mounted = _tmpfs(mnt, "160k")
            if not mounted:
                pytest.skip("cannot mount a size-limited tmpfs here (needs root or CAP_SYS_ADMIN); "
                            "the max_page_count case covers SQLITE_FULL")
        else:
            mnt.mkdir()
        cl.failover("s4", "sqlite:dst/s4.db")
        new, _ = plan.add_shards(cl.router("users"), "s4")
        m = Migration.create(cl, "users", new)
        b = cl.backend("s4")
        if how == "max_page_count":
            cl.prepare_shard("s4", create_from="s0")
            c = b.conn()  # the executor's connection (same thread)
            pages = int(c.execute("PRAGMA page_count").fetchone()[0])
            c.execute(f"PRAGMA max_page_count = {pages + 8}")
        with Writers(path, users) as writers:
            with pytest.raises(MigrationError, match=r"destination shard 's4' failed while copying.*"
                                                     r"the disk is full.*free space, then resume"):
                # (past the preflight, which would refuse the 160 kB tmpfs before any row; the
                # page limit is one connection's: the copy on this thread, no workers)
                m.run(chunk=500, skip_preflight=True, parallel=1 if how == "max_page_count" else None)
            assert m.state == "copying"
            assert "full" in m.status()["error"]
            if how == "max_page_count":
                b.conn().execute("PRAGMA max_page_count = 1073741823")
            else:
                subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
            assert m.run(chunk=500) == "retained"
        _check(tmp_path, cl, m, new, writers)
        cl.close()
    finally:
        if mounted:
            cl.close()
            subprocess.run(["umount", "-l", str(mnt)], check=False)
