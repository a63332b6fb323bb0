"""A client transaction writes the rows of its one key only: a row of
another key (an INSERT, an UPDATE that changes the shard key or touches
another key's row, a DELETE of another key's row) or a row of another
group's table is refused before the COMMIT, and nothing is written.  The
executor's own writes (copy, catch-up, cleanup) are not guarded."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration
from shardhash.migrate.cluster import ShardKeyError

from ._harness import SCHEMA, drop_cluster, make_cluster, shard_rows


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path / "c"
    drop_cluster(tmp_path / "c", backend)


def _other_key_on_same_shard(cl: Cluster, key: int) -> int:
    r = cl.router()
    return next(k for k in range(key + 1, key + 10_000) if r.route(k) == r.route(key))


def _all_rows(root: Path, shards: list[str], table: str = "users") -> dict[Any, tuple[Any, ...]]:
    out: dict[Any, tuple[Any, ...]] = {}
    for s in shards:
        out.update(shard_rows(root, s, table))
    return out


STATEMENTS = [
    ("UPDATE users SET id = ? WHERE id = ?", "new", "key"),   # changes the row's shard key
    ("INSERT INTO users VALUES (?, 'x', 0)", "new", None),    # inserts another key's row
    ("UPDATE users SET n = n + 1 WHERE id = ?", "same", None),  # updates another key's row (same shard)
    ("DELETE FROM users WHERE id = ?", "same", None),          # deletes another key's row (same shard)
]


@pytest.mark.parametrize("stmt", range(len(STATEMENTS)))
def test_a_transaction_cannot_write_another_keys_row(root: Path, backend: str, stmt: int) -> None:
    shards = ["a", "b", "c"]
    path = make_cluster(root, shards, users=60, backend=backend)
    cl = Cluster.load(path)
    before = _all_rows(root, shards)
    key = 5
    other = _other_key_on_same_shard(cl, key) if STATEMENTS[stmt][1] == "same" else 101
    if STATEMENTS[stmt][1] == "new":
        other = next(k for k in range(1000, 2000) if cl.router().route(k) != cl.router().route(key))
    sql, _, extra = STATEMENTS[stmt]
    params = (other, key) if extra == "key" else (other,)
    with pytest.raises(ShardKeyError) as e:
        with cl.transaction(key) as tx:
            tx.execute("UPDATE users SET name = 'mine' WHERE id = ?", (key,))
            tx.execute(sql, params)
    msg = str(e.value)
    assert "users" in msg and repr(other) in msg and f"transaction({key!r})" in msg
    assert (e.value.table, e.value.key, e.value.tx_key) == ("users", other, key)
    assert _all_rows(root, shards) == before  # rolled back: the transaction's own row too
    # the guard is off again: a good transaction commits, and the executor's writes go through
    with cl.transaction(key) as tx:
        tx.execute("UPDATE users SET name = 'mine' WHERE id = ?", (key,))
    with cl.read(key) as tx:
        assert tx.execute("SELECT name FROM users WHERE id = ?", (key,)).fetchone()[0] == "mine"
    cl.close()


def test_a_caught_guard_error_still_rolls_the_transaction_back(root: Path, backend: str) -> None:
    path = make_cluster(root, ["a", "b"], users=10, backend=backend)
    cl = Cluster.load(path)
    before = _all_rows(root, ["a", "b"])
    with pytest.raises(ShardKeyError):
        with cl.transaction(3) as tx:
            tx.execute("UPDATE users SET name = 'mine' WHERE id = ?", (3,))
            try:
                tx.execute("INSERT INTO users VALUES (?, 'x', 0)", (5_000_003,))
            except ShardKeyError:  # (PostgreSQL refuses the statement; SQLite reports at the end)
                pass
    assert _all_rows(root, ["a", "b"]) == before
    cl.close()


def test_a_transaction_writes_other_tables_of_its_group_for_its_key_only(root: Path, backend: str) -> None:
    path = make_cluster(root, ["a", "b"], users=10, events=True, backend=backend)
    cl = Cluster.load(path)
    key = 3
    with cl.transaction(key) as tx:  # events is of group users, keyed by user_id
        tx.execute("INSERT INTO events VALUES (?, ?, 'p')", (999_999, key))
    with pytest.raises(ShardKeyError, match="events"):
        with cl.transaction(key) as tx:
            tx.execute("INSERT INTO events VALUES (?, ?, 'p')", (999_998, key + 1000))
    cl.close()


def test_a_transaction_cannot_write_another_groups_table(tmp_path: Path) -> None:
    import sqlite3

    from shardhash import JumpRouter

    for s in ("a", "b"):
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        c.execute("CREATE TABLE logs (lid INTEGER PRIMARY KEY, k INTEGER)")
        c.close()
    r = JumpRouter(["a", "b"])
    doc = {"metadata": "sqlite:meta.db", "shards": {s: f"sqlite:{s}.db" for s in ("a", "b")},
           "groups": {"users": {"router": r.to_dict(), "tables": [{"name": "users", "key": "id"}]},
                      "logs": {"router": r.to_dict(), "tables": [{"name": "logs", "key": "k"}]}}}
    cl = Cluster.from_dict(doc, base_dir=tmp_path)
    cl.init()
    with pytest.raises(ShardKeyError, match="table 'logs' of group 'logs'"):
        with cl.transaction(3, group="users") as tx:
            tx.execute("INSERT INTO logs VALUES (1, 3)")  # same key, but another group's table
    with cl.transaction(3, group="logs") as tx:
        tx.execute("INSERT INTO logs VALUES (1, 3)")
    cl.close()


def test_migration_with_guarded_writers_moves_every_row(root: Path, backend: str) -> None:
    """The guard applies to client transactions only: a migration copies,
    catches up and cleans up rows of every key, and clients keep writing."""
    path = make_cluster(root, ["a", "b"], users=200, extra_shards=["c"], backend=backend)
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "c")
    m = Migration.create(cl, "users", new)
    for k in range(1, 50):
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET n = n + 1 WHERE id = ?", (k,))
    assert m.run(chunk=50) == "retained"
    m.cleanup()
    cl.refresh()
    for k in range(1, 201):
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET n = n + 1 WHERE id = ?", (k,))
        with cl.read(k) as tx:
            row = tx.execute("SELECT n FROM users WHERE id = ?", (k,)).fetchone()
        assert row is not None and row[0] == (2 if k < 50 else 1), k
    assert sorted(_all_rows(root, ["a", "b", "c"])) == list(range(1, 201))
    with pytest.raises(ShardKeyError):
        with cl.transaction(7) as tx:
            tx.execute("UPDATE users SET id = ? WHERE id = ?", (7_000_001, 7))
    cl.close()


def test_sqlite_guard_is_invisible_to_other_writers(tmp_path: Path) -> None:
    """Writers that bypass the client (the executor, a maintenance script)
    are not guarded: the guard is TEMP triggers of the client's connection,
    none is in the file, and a guarded connection's guard is off between its
    transactions."""
    import sqlite3

    path = make_cluster(tmp_path / "c", ["a", "b"], users=10)
    cl = Cluster.load(path)
    b = cl.backend("a")
    k = next(k for k in range(1, 11) if cl.router().route(k) == "a")
    with cl.transaction(k) as tx:  # (the client's connection gets its guard)
        tx.execute("UPDATE users SET n = n + 1 WHERE id = ?", (k,))
    with b.writing() as c:  # (the same connection, outside a client transaction)
        c.execute("INSERT INTO users VALUES (?, 'raw', 0)", (10_001,))
        c.execute("UPDATE users SET id = ? WHERE id = ?", (10_002, 10_001))
    assert b.end_guard(b.conn()) == []
    raw = sqlite3.connect(tmp_path / "c" / "a.db")
    assert raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                       "AND name LIKE '_shardhash_g%'").fetchall() == []
    raw.execute("UPDATE users SET id = ? WHERE id = ?", (10_003, 10_002))
    raw.commit()
    raw.close()
    assert b.conn().execute("SELECT count(*) FROM _shardhash_guard").fetchone()[0] == 0
    cl.close()
    shutil.rmtree(tmp_path / "c")


#: The persistent guard triggers of the previous version (marker rows in
#: _shardhash_guard), as it installed them on the users table.
_OLD_GUARD = ("CREATE TRIGGER _shardhash_gu1_users AFTER UPDATE ON users "
              "WHEN EXISTS (SELECT 1 FROM _shardhash_guard WHERE id = 0) BEGIN "
              "INSERT INTO _shardhash_guard(grp, tbl, k) SELECT 'users', 'users', NEW.id "
              "WHERE (SELECT grp = 'users' AND k IS NEW.id FROM _shardhash_guard WHERE id = 0) = 0; END")


@pytest.mark.parametrize("layout", ["no guard", "marker triggers"])
def test_a_shard_set_up_by_an_older_version_is_guarded_before_init(tmp_path: Path, layout: str) -> None:
    """A file set up before the guard (no guard table, no triggers) or by the
    version whose guard was persistent triggers and a marker table: the
    client guards the cluster file's tables at once, the old triggers stay
    inert, and init drops them and records the guarded tables."""
    import sqlite3

    path = make_cluster(tmp_path / "c", ["a", "b"], users=10)
    for s in ("a", "b"):
        c = sqlite3.connect(tmp_path / "c" / f"{s}.db")
        c.execute("DROP TABLE _shardhash_guarded")
        if layout == "no guard":
            c.execute("DROP TABLE _shardhash_guard")
        else:
            c.execute(_OLD_GUARD)
        c.commit()
        c.close()
    cl = Cluster.load(path)
    k = 3
    other = _other_key_on_same_shard(cl, k)
    with cl.transaction(k) as tx:
        tx.execute("UPDATE users SET name = 'w' WHERE id = ?", (k,))
    with pytest.raises(ShardKeyError):
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET name = 'x' WHERE id = ?", (other,))
    with pytest.raises(ShardKeyError):
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET id = ? WHERE id = ?", (9_000_003, k))
    rows = _all_rows(tmp_path / "c", ["a", "b"])
    assert rows[k][1] == "w" and rows[other][1] != "x" and 9_000_003 not in rows
    cl.init()
    for s in ("a", "b"):
        c = sqlite3.connect(tmp_path / "c" / f"{s}.db")
        assert c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                         "AND name LIKE '_shardhash_g%'").fetchall() == []
        assert c.execute("SELECT tbl, grp, col FROM _shardhash_guarded").fetchall() == [("users", "users", "id")]
        c.close()
    with pytest.raises(ShardKeyError):
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET id = ? WHERE id = ?", (9_000_003, k))
    cl.close()


def test_the_sqlite_guard_follows_schema_changes_and_rollbacks(tmp_path: Path) -> None:
    """The guard's TEMP triggers are made inside the client's first guarded
    transaction on a connection: when that transaction rolls back they are
    gone; once a later transaction has found them (committed), only a
    change of the file's schema can take them: a guarded table dropped and
    made again, or renamed away and replaced by a new table of its name (a
    trigger follows its table's rename).  Each time the next transaction
    makes them again."""
    import sqlite3

    path = make_cluster(tmp_path / "c", ["a", "b"], users=10)
    cl = Cluster.load(path)
    k = 3
    shard = cl.router().route(k)
    other = _other_key_on_same_shard(cl, k)
    b = cl.backend(shard)

    def refused(sql: str, params: tuple[Any, ...]) -> None:
        with pytest.raises(ShardKeyError):
            with cl.transaction(k) as tx:
                tx.execute(sql, params)

    def mine(name: str) -> None:
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET name = ? WHERE id = ?", (name, k))

    with pytest.raises(RuntimeError):  # the first guarded transaction on the connection, rolled back
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET name = 'w' WHERE id = ?", (k,))
            raise RuntimeError("the application gives up")
    refused("UPDATE users SET name = 'x' WHERE id = ?", (other,))
    mine("v1")  # (makes them; committed)
    mine("v2")  # (finds them: verified)
    mine("v3")
    refused("UPDATE users SET name = 'x' WHERE id = ?", (other,))
    with b.writing() as c:  # the table made again (same connection)
        rows = c.execute("SELECT * FROM users").fetchall()
        c.execute("DROP TABLE users")
        c.execute(SCHEMA)
        c.executemany("INSERT INTO users VALUES (?, ?, ?)", rows)
    refused("DELETE FROM users WHERE id = ?", (other,))
    mine("v4")
    mine("v5")
    with b.writing() as c:  # renamed away and replaced, on the same connection (its triggers follow)
        c.execute("ALTER TABLE users RENAME TO users_old")
        c.execute(SCHEMA)
        c.execute("INSERT INTO users SELECT * FROM users_old")
    refused("UPDATE users SET name = 'x' WHERE id = ?", (other,))
    refused("INSERT INTO users VALUES (?, 'x', 0)", (other + 1_000_000,))
    mine("v6")
    mine("v7")
    raw = sqlite3.connect(tmp_path / "c" / f"{shard}.db")  # and again, by another connection
    raw.execute("ALTER TABLE users RENAME TO users_older")
    raw.execute(SCHEMA)
    raw.execute("INSERT INTO users SELECT * FROM users_older")
    raw.commit()
    raw.close()
    refused("UPDATE users SET name = 'x' WHERE id = ?", (other,))
    mine("y")
    with cl.transaction(k) as tx:  # (the old tables are no group tables: not guarded)
        tx.execute("UPDATE users_old SET name = 'z' WHERE id = ?", (other,))
        tx.execute("UPDATE users_older SET name = 'z' WHERE id = ?", (other,))
    rows_now = _all_rows(tmp_path / "c", [shard])
    assert rows_now[k][1] == "y" and rows_now[other][1] != "x" and other + 1_000_000 not in rows_now
    cl.close()


def test_string_keys_of_any_text_pass_their_own_guard(tmp_path: Path, backend: str) -> None:
    """The guard compares keys exactly (PostgreSQL: the key as JSON, as the
    server renders it): a transaction writing its own key's row is never
    refused, whatever the characters; another key's row is."""
    from hypothesis import given
    from hypothesis import strategies as st

    from shardhash import JumpRouter

    root = tmp_path / "c"
    root.mkdir()
    import json as _json

    from ._harness import shard_url

    urls = {s: shard_url(backend, root, s) for s in ("a", "b")}
    mysql = backend.startswith("mysql://")
    upsert = ("INSERT INTO kv VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)" if mysql
              else "INSERT INTO kv VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v")
    insert_new = ("INSERT INTO kv VALUES (?, 'w') ON DUPLICATE KEY UPDATE k = k" if mysql
                  else "INSERT INTO kv VALUES (?, 'w') ON CONFLICT (k) DO NOTHING")
    if backend != "sqlite":
        from ._harness import create_schemas

        create_schemas(backend, root, ["a", "b"])
    from shardhash.migrate.cluster import open_backend

    for s in ("a", "b"):
        c = open_backend(urls[s], root).connect()
        # (MySQL: a key of bounded length, compared byte by byte with no padding)
        c.execute("CREATE TABLE kv (k VARCHAR(64) COLLATE utf8mb4_nopad_bin PRIMARY KEY, v TEXT)" if mysql
                  else "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": u} for s, u in urls.items()},
           "groups": {"kv": {"router": JumpRouter(["a", "b"]).to_dict(), "key_type": "str",
                             "tables": [{"name": "kv", "key": "k"}]}}, "options": {"synchronous": "OFF"}}
    (root / "cluster.json").write_text(_json.dumps(doc))
    cl = Cluster.load(root / "cluster.json")
    cl.init()
    try:
        @given(st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12))
        def check(key: str) -> None:
            with cl.transaction(key) as tx:
                tx.execute(upsert, (key, "v"))
            with pytest.raises(ShardKeyError):
                with cl.transaction(key) as tx:
                    other = key + "x" * 13  # (longer than any own key: never there yet)
                    tx.execute(insert_new, (other,))

        check()
    finally:
        cl.close()
        drop_cluster(root, backend)


def test_the_sqlite_guard_compares_keys_as_sqlite_is_does() -> None:
    """The guard's function compares a row's key with the transaction's as
    SQLite's ``IS`` compares them (5 and 5.0 one key; 5, '5' and b'5' three;
    NULL only itself): differential against SQLite itself, on values as
    sqlite3 hands them to a function."""
    import sqlite3

    from hypothesis import example, given
    from hypothesis import strategies as st

    from shardhash.migrate.sqlite import _same

    c = sqlite3.connect(":memory:")
    c.create_function("same", 2, lambda a, b: int(_same(a, b)))
    ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
    values = st.one_of(st.none(), ints, st.floats(allow_nan=False), st.text(max_size=8),
                       st.binary(max_size=8), st.sampled_from([0, 1, 5, 5.0, "5", b"5", 2**53, 2.0**53, 2**53 + 1]))

    # pairs of one value in two kinds, and near misses (an int and a float that
    # differ past float precision)
    near = st.integers(min_value=-(2**62), max_value=2**62).flatmap(
        lambda i: st.sampled_from([(i, float(i)), (float(i), i), (i + 1, float(i)), (str(i), i), (str(i).encode(), i)]))

    @given(st.one_of(st.tuples(values, values), near))
    @example((5, 5.0))
    @example((2**53 + 1, 2.0**53))
    @example(("5", b"5"))
    @example((None, 0))
    def check(pair: tuple[Any, Any]) -> None:
        a, b = pair
        got, want = c.execute("SELECT same(?, ?), ? IS ?", (a, b, a, b)).fetchone()
        assert got == want, (a, b)

    check()
    c.close()
