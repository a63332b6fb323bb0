"""The MariaDB / MySQL backend's own parts: its URL, its quoting and
placeholders, and on a real server its lock order with writers and its
retries of InnoDB deadlocks and lock wait timeouts."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash.migrate.cluster import open_backend
from shardhash.migrate.mysql import MySQLShard, connect_args, driver_text, qi, ql, row_literals, statements, to_driver
from tests._mariadb import drop_databases, need_mysql, raw_connect, with_database


def test_urls_name_the_server_user_and_database() -> None:
    kw = connect_args("mysql://app:p%40ss@db.example:3307/shard_7?connect_timeout=5")
    assert kw["host"] == "db.example" and kw["port"] == 3307 and kw["user"] == "app"
    assert kw["password"] == "p@ss" and kw["database"] == "shard_7" and kw["connect_timeout"] == 5
    kw = connect_args("mariadb://root@localhost/s1?unix_socket=%2Frun%2Fmysqld%2Fmysqld.sock")
    assert kw["unix_socket"] == "/run/mysqld/mysqld.sock" and kw["database"] == "s1"
    assert "database" not in connect_args("mysql://root@localhost/s1", database=False)
    with pytest.raises(ValueError, match="unknown parameter 'sslmode'"):
        connect_args("mysql://h/db?sslmode=require")
    with pytest.raises(ValueError, match="not a MySQL URL"):
        connect_args("postgresql://h/db")
    with pytest.raises(TypeError, match="must be a string"):
        connect_args(b"mysql://h/db")  # type: ignore[arg-type]


def test_open_backend_dispatches_mysql_and_mariadb_urls() -> None:
    pytest.importorskip("MySQLdb")
    for url in ("mysql://h/db", "mariadb://h/db"):
        b = open_backend(url)
        assert isinstance(b, MySQLShard) and b.kind == "mysql"


def test_identifiers_and_literals_are_quoted_once() -> None:
    assert qi("users") == "`users`"
    assert qi("a`b") == "`a``b`"
    assert ql("it's \\ fine") == "'it''s \\\\ fine'"
    for bad in ("", "x\x00y", "x" * 65):
        with pytest.raises(ValueError):
            qi(bad)
    with pytest.raises(TypeError):
        qi(3)  # type: ignore[arg-type]


def test_placeholders_outside_names_and_literals_become_the_drivers() -> None:
    assert to_driver("SELECT ? FROM t WHERE a = ?") == "SELECT %s FROM t WHERE a = %s"
    # a ? inside a quoted name or a string literal is text; every % is escaped, quoted ones too
    # (mysqlclient formats the whole text when values are bound)
    assert to_driver("SELECT '?%', `a?%s`, \"b?\" WHERE x LIKE 'y%' AND z = ? AND w % 2 = 1") == \
        "SELECT '?%%', `a?%%s`, \"b?\" WHERE x LIKE 'y%%' AND z = %s AND w %% 2 = 1"
    # the backend's own %s statements: only a %s outside quotes stays a placeholder
    assert driver_text("SELECT `a%s`, 'b%s', \"%\" FROM t WHERE a = %s AND b % 2 = 1") == \
        "SELECT `a%%s`, 'b%%s', \"%%\" FROM t WHERE a = %s AND b %% 2 = 1"
    # MySQL's backslash escape inside a literal does not end it
    assert to_driver("SELECT 'it\\'s ?' , ?") == "SELECT 'it\\'s ?' , %s"


def test_statements_hold_at_most_the_byte_budget_of_values_and_a_longer_row_alone() -> None:
    vals = [b"x" * n for n in (5, 5, 5, 30, 5, 1)]
    # (a value costs its length and 3 bytes: "(", ")" and ",")
    assert list(statements(b"H ", vals, b" T", 16)) == [
        b"H (xxxxx),(xxxxx) T", b"H (xxxxx) T", b"H (" + b"x" * 30 + b") T", b"H (xxxxx),(x) T"]
    assert list(statements(b"H ", vals, b"", 1 << 20)) == [b"H (" + b"),(".join(vals) + b")"]
    assert list(statements(b"H ", [], b"", 16)) == []


@given(st.lists(st.text("xyz'\\", min_size=1, max_size=40).map(str.encode), max_size=60),
       st.integers(1, 200))
def test_statements_are_greedy_and_keep_every_row_in_order(vals: list[bytes], budget: int) -> None:
    out = list(statements(b"H", vals, b"T", budget))
    parts = [s[2:-2].split(b"),(") for s in out]
    assert [v for p in parts for v in p] == vals
    for n, p in enumerate(parts):
        size = sum(len(v) + 3 for v in p)
        assert size <= budget or len(p) == 1
        if n + 1 < len(parts):  # (the next row would not have fitted)
            assert size + len(parts[n + 1][0]) + 3 > budget


# ----------------------------------------------------------------- on a server

@pytest.fixture
def shard() -> Iterator[tuple[MySQLShard, str]]:
    url = need_mysql()
    tag = f"tmy{uuid.uuid4().hex[:10]}_"
    b = MySQLShard(with_database(url, tag + "s"))
    with b.writing() as c:
        b.lock_schema(c)
        b.ensure_system(c)
        c.run("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
        c.run("CREATE TABLE ballast (id BIGINT PRIMARY KEY)")
        b.install_triggers(c, "users", "users", ["id"], "id")
    try:
        yield b, with_database(url, tag + "s")
    finally:
        b.close()
        drop_databases(url, tag)


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:  # noqa: BLE001 - returned to the test
            out.append(e)

    t = threading.Thread(target=run)
    t.start()
    return t, out


@pytest.mark.oracle
def test_a_capture_start_does_not_deadlock_with_a_writer_holding_the_epoch(shard: tuple[MySQLShard, str]) -> None:
    # A client write holds the epoch row (shared); the executor's transaction
    # inserts a capture and bumps the epoch.  Were the capture row locked
    # before the epoch row, the writer's trigger (which reads the captures)
    # would wait for it while the bump waits for the writer: a deadlock.
    b, _url = shard
    w = b.connect()
    b.begin_client_write(w, ("users", 1))

    def executor() -> bool:
        e = b.connect()
        try:
            with b.writing(e):
                b.start_capture(e, "m1", "users")
                b.bump_epoch(e)
            return True
        finally:
            e.close()

    t, out = _in_thread(executor)
    time.sleep(0.4)  # (the executor is waiting for the writer now)
    w.execute("INSERT INTO users VALUES (?, ?)", (1, "a"))
    b.end_guard(w)
    b.commit(w)
    t.join(30)
    assert out == [True]
    # the write committed before the capture did: not logged, and copied by the snapshot instead
    c = b.connect()
    try:
        assert c.run("SELECT COUNT(*) FROM _shardhash_changes").fetchone()[0] == 0
        assert c.run("SELECT name FROM users WHERE id = 1").fetchone()[0] == "a"
        # a write after the capture started is logged
        b.begin_client_write(c, ("users", 2))
        c.execute("INSERT INTO users VALUES (?, ?)", (2, "b"))
        b.end_guard(c)
        b.commit(c)
        assert c.run("SELECT pk FROM _shardhash_changes").fetchall() == (("[2]",),)
    finally:
        c.close()
        w.close()


@pytest.mark.oracle
def test_a_copy_chunk_is_retried_after_a_lock_wait_timeout(shard: tuple[MySQLShard, str],
                                                           caplog: pytest.LogCaptureFixture) -> None:
    b, url = shard
    other = raw_connect(url)
    other.cursor().execute("START TRANSACTION")
    other.cursor().execute("INSERT INTO users VALUES (2, 'held')")  # (uncommitted: holds key 2)
    c = b.connect()
    c.run("SET SESSION innodb_lock_wait_timeout = 1")
    timer = threading.Timer(1.6, other.rollback)
    timer.start()
    try:
        with caplog.at_level(logging.INFO, logger="shardhash.migrate"):
            assert b.copy_new(c, "users", ["id", "name"], [(1, "a"), (2, "b"), (3, "c")]) is True
    finally:
        timer.join()
        other.close()
    assert "lock wait timeout (error 1205), retrying" in caplog.text
    assert c.run("SELECT id, name FROM users ORDER BY id").fetchall() == ((1, "a"), (2, "b"), (3, "c"))
    c.close()


@pytest.mark.oracle
def test_a_copy_chunk_chosen_as_a_deadlock_victim_is_retried(shard: tuple[MySQLShard, str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    b, url = shard
    other = raw_connect(url)
    cur = other.cursor()
    cur.execute("START TRANSACTION")
    # (more undo than the chunk's: InnoDB rolls the lighter transaction back, the chunk)
    cur.execute("INSERT INTO ballast VALUES " + ", ".join(f"({i})" for i in range(2000)))
    cur.execute("INSERT INTO users VALUES (2, 'held')")
    c = b.connect()
    with caplog.at_level(logging.INFO, logger="shardhash.migrate"):
        t, out = _in_thread(lambda: b.copy_new(c, "users", ["id", "name"], [(1, "a"), (2, "b")]))
        time.sleep(0.5)  # (the chunk holds key 1 and waits for key 2)
        cur.execute("INSERT INTO users VALUES (1, 'other')")  # waits for key 1: a cycle, the chunk is the victim
        time.sleep(0.3)
        other.rollback()
        t.join(30)
    other.close()
    assert out == [True]
    assert "deadlock (error 1213), retrying" in caplog.text
    assert c.run("SELECT id, name FROM users ORDER BY id").fetchall() == ((1, "a"), (2, "b"))
    c.close()


@pytest.mark.oracle
def test_a_guard_refusal_names_the_row_and_writes_nothing(shard: tuple[MySQLShard, str]) -> None:
    b, _url = shard
    c = b.connect()
    b.begin_client_write(c, ("users", 5))
    c.execute("INSERT INTO users VALUES (?, ?)", (5, "own"))
    with pytest.raises(Exception) as ei:
        c.execute("INSERT INTO users VALUES (?, ?)", (6, "other"))
    assert b.guard_violation(ei.value) == ("users", "users", 6)
    b.rollback(c)
    # the session variables are gone with the rollback: a plain write is not guarded
    c.execute("INSERT INTO users VALUES (?, ?)", (7, "plain"))
    assert c.run("SELECT id FROM users ORDER BY id").fetchall() == ((7,),)
    c.close()


@pytest.mark.oracle
def test_a_copy_chunk_is_captured_exactly_when_the_shard_has_a_capture(shard: tuple[MySQLShard, str]) -> None:
    # (the chunk skips the triggers' capture query only when it found no capture under the epoch lock)
    b, _url = shard
    c = b.connect()
    assert b.copy_new(c, "users", ["id", "name"], [(1, "a"), (2, "b")])
    assert c.run("SELECT COUNT(*) FROM _shardhash_changes").fetchone()[0] == 0
    with b.writing(c):
        b.start_capture(c, "m1", "users")
    assert b.copy_new(c, "users", ["id", "name"], [(3, "c"), (4, "d")])
    c.execute("INSERT INTO users VALUES (?, ?)", (5, "e"))  # (the skip ended with the chunk)
    assert [r[0] for r in c.run("SELECT pk FROM _shardhash_changes ORDER BY id").fetchall()] == \
        ["[3]", "[4]", "[5]"]
    with b.writing(c):
        b.drop_capture(c, "m1")
    assert b.copy_new(c, "users", ["id", "name"], [(6, "f")])
    c.execute("INSERT INTO users VALUES (?, ?)", (7, "g"))
    with b.writing(c):
        b.start_capture(c, "m2", "users")
    c.execute("INSERT INTO users VALUES (?, ?)", (8, "h"))
    assert [r[0] for r in c.run("SELECT pk FROM _shardhash_changes ORDER BY id").fetchall()] == ["[8]"]
    c.close()


@pytest.mark.oracle
def test_a_table_like_an_sqlite_one_is_created_once_with_its_indexes(shard: tuple[MySQLShard, str],
                                                                     tmp_path: Path) -> None:
    from shardhash.migrate.coltypes import pair_kinds, translate_ddl
    from shardhash.migrate.sqlite import SQLiteShard

    src = SQLiteShard(tmp_path / "src.db")
    sc = src.conn()
    sc.execute("CREATE TABLE ev (eid INTEGER PRIMARY KEY, who TEXT NOT NULL, at REAL, body BLOB)")
    sc.execute("CREATE INDEX ev_who ON ev(who)")
    sc.execute("CREATE UNIQUE INDEX ev_at ON ev(at, eid)")
    b, _url = shard
    c = b.connect()
    ddl = translate_ddl(src, sc, "ev", "mysql")
    for _ in range(2):  # (a resumed prepare runs it again: nothing fails, nothing doubles)
        b.create_from(c, ddl)
    idx = b.indexes(c, "ev")
    assert sorted(idx) == [("ev_at", True, ["at", "eid"]), ("ev_who", False, ["who"])]
    types = {n: t for n, t, _nn in b.column_types(c, "ev")}
    assert types["who"].startswith("varchar(255)") and types["body"] == "longblob" and types["at"] == "double"
    assert {k: v.kind for k, v in pair_kinds(src, sc, b, c, "ev").items()} == \
        {"eid": "int", "who": "text", "at": "float", "body": "bytes"}
    c.close()
    src.close()


_AWKWARD = [
    (1, "it's", b"\x00'\\\"", 0.1, True, -2 ** 63),
    (2, "back\\slash %s ? `x` \"q\"", b"", -1e300, False, 2 ** 63 - 1),
    (3, "", None, 1 / 3, None, 0),
    (4, "\u00e9\U0001f600\n\t\r\x1a", bytes(range(256)), None, True, None),
    (5, None, b"%", 5e-324, False, 7),
]


@pytest.mark.oracle
def test_copied_values_are_the_drivers_literals_and_read_back_unchanged(shard: tuple[MySQLShard, str]) -> None:
    # (text, bytes, floats, booleans, NULLs and the integer bounds, in columns of one type and of several)
    b, _url = shard
    c = b.connect()
    c.run("CREATE TABLE vals (id BIGINT PRIMARY KEY, t LONGTEXT, bl LONGBLOB, f DOUBLE, flag TINYINT(1), n BIGINT)")
    cols = ["id", "t", "bl", "f", "flag", "n"]
    for rows in (_AWKWARD, _AWKWARD[:4]):  # (the text column of plain str values, and with a NULL)
        assert row_literals(c.raw, rows, 6) == [c.raw.literal(r)[1:-1] for r in rows]
    assert b.copy_new(c, "vals", cols, _AWKWARD[:3])
    b.upsert(c, "vals", cols, _AWKWARD[2:])  # (the catch-up's path, over a row already there)
    got = c.run("SELECT id, t, bl, f, flag, n FROM vals ORDER BY id").fetchall()
    assert [tuple(r) for r in got] == [tuple(None if v is None else int(v) if isinstance(v, bool) else v
                                             for v in r) for r in _AWKWARD]
    with pytest.raises(ValueError, match="row 1 has 2 values for 6 columns"):
        b.copy_new(c, "vals", cols, [_AWKWARD[0], (9, "short")])
    c.close()


@pytest.mark.oracle
def test_a_chunk_of_many_statements_is_one_transaction(shard: tuple[MySQLShard, str]) -> None:
    # (a duplicate key in the chunk's last statement undoes its first ones: the caller's checked path then)
    b, _url = shard
    c = b.connect()
    c.statement_bytes = 40  # (a few rows per statement)
    c.run("INSERT INTO users VALUES (45, 'there')")
    rows = [(i, f"u{i}") for i in range(1, 51)]
    assert b.copy_new(c, "users", ["id", "name"], rows) is False
    assert c.run("SELECT id FROM users").fetchall() == ((45,),)
    assert b.copy_new(c, "users", ["id", "name"], [r for r in rows if r[0] != 45]) is True
    assert c.run("SELECT COUNT(*), MIN(id), MAX(id) FROM users").fetchone() == (50, 1, 50)
    c.close()


@pytest.mark.oracle
def test_version_1_triggers_give_way_to_version_2_and_a_write_is_logged_once(shard: tuple[MySQLShard, str]) -> None:
    b, _url = shard
    c = b.connect()
    # (a shard set up by the first version: its insert trigger logged every row)
    c.run("CREATE TRIGGER `_shardhash_i1_users` AFTER INSERT ON `users` FOR EACH ROW "
          "INSERT INTO _shardhash_changes(capture, tbl, pk) SELECT id, 'users', JSON_ARRAY(NEW.`id`) "
          "FROM _shardhash_captures WHERE grp = 'users'")
    with b.writing(c):
        b.lock_schema(c)
        b.install_triggers(c, "users", "users", ["id"], "id")
        b.start_capture(c, "m1", "users")
    names = sorted(str(r[0]) for r in c.run("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE "
                                              "EVENT_OBJECT_SCHEMA = DATABASE()").fetchall())
    assert names == ["_shardhash_d2_users", "_shardhash_i2_users", "_shardhash_u2_users"]
    b.begin_client_write(c, ("users", 1))
    c.execute("INSERT INTO users VALUES (?, ?)", (1, "a"))
    b.end_guard(c)
    b.commit(c)
    assert c.run("SELECT pk FROM _shardhash_changes").fetchall() == (("[1]",),)
    c.close()
