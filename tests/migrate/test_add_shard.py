"""``shardhash migrate start --add ID --primary URL``: a shard that the
metadata store does not know yet is registered in the shard map in the
transaction that records the migration, its tables are created and the keys
it owns are moved there; the dry run runs the real start's checks."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster
from shardhash.migrate.executor import Migration
from tests.migrate._harness import create_schemas, drop_cluster, make_cluster, shard_url, upsert

THREE = ["s1", "s2", "s3"]
USERS = 400


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    r = tmp_path / "c"
    yield r
    drop_cluster(r, backend)


def _new_url(root: Path, backend: str, shard: str) -> str:
    """A URL for a shard that the cluster file does not list (its PostgreSQL schema created)."""
    if backend != "sqlite":
        create_schemas(backend, root, [shard])
    return shard_url(backend, root, shard)


def _rows(cl: Cluster, shard: str) -> dict[Any, tuple[Any, ...]]:
    b = cl.backend(shard)
    c = b.connect()
    try:
        if not b.has_table(c, "users"):
            return {}
        return {r[0]: tuple(r) for r in c.execute("SELECT id, name, n FROM users").fetchall()}
    finally:
        c.close()


def _start(path: Path, *extra: str) -> int:
    from shardhash.cli import main

    return main(["migrate", "start", "--config", str(path), *extra])


def test_add_registers_the_shard_and_moves_its_keys(root: Path, backend: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, THREE, users=USERS, backend=backend)
    assert "s4" not in json.loads(path.read_text())["shards"]
    url = _new_url(root, backend, "s4")
    assert _start(path, "--add", "s4", "--primary", url, "-q") == 0
    capsys.readouterr()
    assert main(["migrate", "status", "--config", str(path), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["state"] == "retained" and st["to_version"] == 2 and st["verify"]["mismatches"] == 0
    assert st["destinations"] == ["s4"] and st["sources"] == THREE
    cl = Cluster.load(path)
    try:
        assert cl.shard_map()["s4"] == (url, [])
        r = cl.router("users")
        assert "s4" in r.shards
        mine = {k for k in range(1, USERS + 1) if r.route(k) == "s4"}
        assert mine and st["rows_copied"] == len(mine)
        on_s4 = _rows(cl, "s4")
        assert set(on_s4) == mine
        for k in range(1, USERS + 1):  # every key read from its owner, the row as seeded
            with cl.read(k) as tx:
                assert tx.execute("SELECT id, name, n FROM users WHERE id = ?", (k,)).fetchone() == (k, f"u{k}", 0)
    finally:
        cl.close()
    # the same shard id with another primary is refused, and nothing changes
    other = "sqlite:other.db" if backend == "sqlite" else url.replace("_s4'", "_s5'").replace("_s4?", "_s5?")
    assert _start(path, "--add", "s4", "--primary", other, "-q") == 2
    err = capsys.readouterr().err
    assert "'s4' is already in the shard map with primary" in err and other in err
    cl = Cluster.load(path)
    try:
        assert cl.shard_map()["s4"] == (url, []) and len(cl.metadata.migrations("users")) == 1
    finally:
        cl.close()


def test_shard_missing_from_the_store_names_the_command(root: Path, backend: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = make_cluster(root, THREE, users=50, backend=backend)
    # not in the cluster file, not in the store
    assert _start(path, "--add", "s4", "-q") == 2
    err = capsys.readouterr().err
    assert (f"`shardhash migrate start --config {path} --add s4 --primary URL [--replica URL ...]`" in err), err
    # in the cluster file but not in the store (added to the file after init)
    url = _new_url(root, backend, "s4")
    doc = json.loads(path.read_text())
    doc["shards"]["s4"] = {"primary": url}
    path.write_text(json.dumps(doc))
    assert _start(path, "--add", "s4", "-q") == 2
    err = capsys.readouterr().err
    assert "in the cluster file but not in the metadata store's shard map" in err, err
    assert f"`shardhash migrate init --config {path}`" in err, err
    assert f"`shardhash migrate start --config {path} --add s4 --primary {url}`" in err, err
    # nothing was recorded; the command it names works
    assert _start(path, "--add", "s4", "--primary", url, "-q") == 0
    assert "retained" in capsys.readouterr().out


@pytest.mark.parametrize("dry", [True, False])
def test_unreachable_new_shard_fails_before_anything_is_recorded(root: Path, backend: str, dry: bool,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = make_cluster(root, THREE, users=50, backend=backend)
    if backend == "sqlite":
        bad = "sqlite:no-such-folder/s4.db"
    else:
        bad = f"postgresql:{backend} dbname=shardhash_no_such_database"
    assert _start(path, "--add", "s4", "--primary", bad, "--dry-run", "-q") == 2
    dry_err = capsys.readouterr().err
    assert "shard 's4' cannot be reached" in dry_err and "nothing was started" in dry_err, dry_err
    if not dry:
        assert _start(path, "--add", "s4", "--primary", bad, "-q") == 2
        assert capsys.readouterr().err == dry_err  # the dry run fails exactly as the real start
    cl = Cluster.load(path)
    try:
        assert "s4" not in cl.shard_map() and cl.metadata.migrations("users") == []
    finally:
        cl.close()
    assert not (root / "no-such-folder").exists()


def test_dry_run_checks_the_shard_map_like_the_real_start(root: Path, backend: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = make_cluster(root, THREE, users=50, backend=backend)
    assert _start(path, "--add", "s4", "--dry-run") == 2
    dry_err = capsys.readouterr().err
    assert _start(path, "--add", "s4", "-q") == 2
    assert capsys.readouterr().err == dry_err and "--add s4 --primary URL" in dry_err


def test_registration_is_atomic_with_the_migration_record(root: Path, backend: str) -> None:
    from shardhash import plan

    path = make_cluster(root, THREE, users=50, backend=backend)
    url = _new_url(root, backend, "s4")
    cl = Cluster.load(path)
    try:
        new = plan.add_shards(cl.router("users"), ["s4"])[0]
        first = Migration.create(cl, "users", plan.remove_shards(cl.router("users"), ["s3"])[0], mig_id="dup")
        # (another migration with that id: the record's insert fails in the
        # transaction, and the shard-map row goes with it)
        first.meta.set_state("dup", "rolled-back")
        with pytest.raises(Exception):  # noqa: B017 (the store's own integrity error)
            Migration.create(cl, "users", new, mig_id="dup", new_shards={"s4": (url, [])})
        assert "s4" not in cl.refresh("users").shards and "s4" not in cl.shard_map()
        m = Migration.create(cl, "users", new, mig_id="m2", new_shards={"s4": (url, [])})
        assert cl.shard_map()["s4"] == (url, [])
        # a retried registration with the same primary is a no-op; another primary is refused
        with cl.metadata.tx() as c:
            assert cl.metadata.add_shard(c, "s4", url, []) is False
        with pytest.raises(ValueError, match="already in the shard map"), cl.metadata.tx() as c:
            cl.metadata.add_shard(c, "s4", url + "x", [])
        assert cl.refresh("users") is not None and cl.shard_map()["s4"] == (url, [])
        # a "crash" right after the record: resume (a fresh process) finishes
        assert m.state == "preparing"
    finally:
        cl.close()
    cl2 = Cluster.load(path)
    try:
        assert Migration(cl2, "m2").run(chunk=20) == "retained"
        r = cl2.router("users")
        assert set(_rows(cl2, "s4")) == {k for k in range(1, 51) if r.route(k) == "s4"}
    finally:
        cl2.close()


def test_bad_shard_id_or_url_is_refused(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_cluster(root, THREE, users=10, backend=backend)
    assert _start(path, "--add", "s4", "--primary", "oracle://x", "-q") == 2
    assert "--primary: unsupported connection URL 'oracle://x'" in capsys.readouterr().err
    assert _start(path, "--add", "s4", "--primary", "sqlite:s4.db", "--replica", "ftp://r", "-q") == 2
    assert "--replica: unsupported connection URL" in capsys.readouterr().err
    assert _start(path, "--add", "s4,s5", "--primary", "sqlite:s4.db", "-q") == 2
    assert "--primary registers one new shard" in capsys.readouterr().err


def test_add_under_live_writes_loses_nothing(root: Path, backend: str) -> None:
    path = make_cluster(root, THREE, users=USERS, backend=backend)
    url = _new_url(root, backend, "s4")
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

    from shardhash import plan

    t = threading.Thread(target=writer)
    t.start()
    cl = Cluster.load(path)
    try:
        new = plan.add_shards(cl.router("users"), ["s4"])[0]
        m = Migration.create(cl, "users", new, new_shards={"s4": (url, [])})
        assert m.run(chunk=25) == "retained"
    finally:
        stop.set()
        t.join()
        cl.close()
    assert not errors, errors
    assert len(acked) > 0
    cl = Cluster.load(path)
    try:
        r = cl.router("users")
        owners = {s: _rows(cl, s) for s in r.shards}
        for k in range(1, USERS + 1):
            want = acked.get(k, 0)
            with cl.read(k) as tx:
                got = tx.execute("SELECT n FROM users WHERE id = ?", (k,)).fetchone()
            assert (None if got is None else got[0]) == want, k
            assert (k in owners[r.route(k)]) == (want is not None), k
    finally:
        cl.close()


def test_removed_shard_stays_mapped_and_can_come_back(root: Path, backend: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, THREE, users=120, backend=backend)
    url = _new_url(root, backend, "s4")
    assert _start(path, "--add", "s4", "--primary", url, "-q") == 0
    assert main(["migrate", "cleanup", "--config", str(path), "-q"]) == 0
    assert _start(path, "--remove", "s4", "-q") == 0
    assert main(["migrate", "cleanup", "--config", str(path), "-q"]) == 0
    capsys.readouterr()
    cl = Cluster.load(path)
    try:
        assert "s4" not in cl.router("users").shards and cl.shard_map()["s4"] == (url, [])
        assert _rows(cl, "s4") == {}
    finally:
        cl.close()
    # the same URL brings it back; another one is refused
    assert _start(path, "--add", "s4", "--primary", url + " ", "-q") == 2
    assert "already in the shard map" in capsys.readouterr().err
    assert _start(path, "--add", "s4", "--primary", url, "-q") == 0
    cl = Cluster.load(path)
    try:
        r = cl.router("users")
        assert set(_rows(cl, "s4")) == {k for k in range(1, 121) if r.route(k) == "s4"} != set()
    finally:
        cl.close()


def test_missing_table_on_an_owner_fails_the_dry_run_and_the_start_alike(root: Path, backend: str,
                                                                         capsys: pytest.CaptureFixture[str]
                                                                         ) -> None:
    from tests.migrate._harness import connect

    path = make_cluster(root, THREE, users=60, backend=backend)
    url = _new_url(root, backend, "s4")
    c = connect(root, "s3")
    try:
        c.execute("DROP TABLE users")
    finally:
        c.close()
    assert _start(path, "--add", "s4", "--primary", url, "--dry-run", "-q") == 2
    dry_err = capsys.readouterr().err
    assert "shard 's3' owns keys of group 'users' but has no table 'users'" in dry_err, dry_err
    assert _start(path, "--add", "s4", "--primary", url, "-q") == 2
    assert capsys.readouterr().err == dry_err
    cl = Cluster.load(path)
    try:  # nothing recorded: not the migration, not the shard
        assert "s4" not in cl.shard_map() and cl.metadata.migrations("users") == []
    finally:
        cl.close()
