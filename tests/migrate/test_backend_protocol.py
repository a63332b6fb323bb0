"""The shard backends implement :class:`shardhash.migrate.backend.ShardBackend`
(checked statically by mypy through the annotated assignments below, and at
run time), and each owns its placeholder style: PostgreSQL's statements reach
psycopg as written, never through the ``?`` translation the application's
connection does."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import mysql
from shardhash.migrate.backend import ShardBackend
from shardhash.migrate.metadata import Metadata
from shardhash.migrate.mysql import MySQLShard
from shardhash.migrate.postgres import PGConnection, PostgresShard
from shardhash.migrate.sqlite import SQLiteShard
from tests._mariadb import drop_databases, need_mysql, new_database_url
from tests._postgres import need_postgres


def _exercise(b: ShardBackend) -> None:
    """The ownership records, the change queue and row access, through the protocol only."""
    c = b.connect()
    try:
        with b.writing(c):
            b.ensure_schema(c)
            b.ensure_system(c)
            b.execute(c, "CREATE TABLE " + b.quote_ident("t%s?") + " (id BIGINT PRIMARY KEY, "
                      + b.quote_ident("v%") + " TEXT)")
            b.install_triggers(c, "g", "t%s?", ["id"], "id")
            b.start_capture(c, "cap", "g")
            b.put_routers(c, "m", "{}", "{}")
            b.put_unit(c, "g", "m", 0, "source", "copying", 2, "{}")
            b.set_unit_state(c, "m", "source", ("copying",), "frozen")
            b.set_fence(c, "m", 1, 12.5)
            b.bump_epoch(c)
        assert b.epoch(c) == 1
        assert [r[4] for r in b.unit_rows(c, "g")] == ["frozen"]
        assert b.fence_of(c, "m") == (1, 12.5)
        assert b.routers_of(c, "m") == ("{}", "{}")
        with b.writing(c):
            b.upsert(c, "t%s?", ["id", "v%"], [(1, "a%s"), (2, "b?")])
        cid = b.capture_id(c, "cap")
        assert cid is not None and b.pending_count(c, cid) == 2
        assert b.scan(c, "t%s?", ["id", "v%"], ["id"], [1], 10) == [(2, "b?")]
        where = b.quote_ident("v%") + " = " + b.placeholder
        assert b.scan(c, "t%s?", ["id", "v%"], ["id"], None, 10, where, ["a%s"]) == [(1, "a%s")]
        assert sorted(b.fetch(c, "t%s?", ["id", "v%"], ["id"], [(1,), (2,)])) == [(1, "a%s"), (2, "b?")]
        assert b.count(c, "t%s?") == 2 and b.min_key(c, "t%s?", "id") == 1
        with b.writing(c):
            b.mark_applied(c, [r[0] for r in b.pending(c, cid, 10)])
        assert sorted(b.dirty(c, cid)) == [("t%s?", "[1]"), ("t%s?", "[2]")]
    finally:
        c.close()


def test_sqlite_implements_the_protocol(tmp_path: Path) -> None:
    b: ShardBackend = SQLiteShard(tmp_path / "s.db")
    assert isinstance(b, ShardBackend)
    assert b.placeholder == "?"
    _exercise(b)


def test_postgres_implements_the_protocol_and_sends_its_statements_as_written(
        monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = need_postgres()
    schema = "bp" + uuid.uuid4().hex[:12]
    b: ShardBackend = PostgresShard(f"postgresql:{dsn} options='-csearch_path={schema}'")
    assert isinstance(b, ShardBackend)
    assert not isinstance(b, SQLiteShard)
    assert b.placeholder == "%s"

    def no_translation(sql: str) -> str:
        raise AssertionError(f"a backend statement went through the ? translation: {sql}")

    monkeypatch.setattr(PGConnection, "_sql", staticmethod(no_translation))
    try:
        _exercise(b)
    finally:
        monkeypatch.undo()
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as pg:
            pg.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_mysql_implements_the_protocol_and_sends_its_statements_as_written(
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = need_mysql()
    prefix = "bp" + uuid.uuid4().hex[:8]
    b: ShardBackend = MySQLShard(new_database_url(url, prefix))
    assert isinstance(b, ShardBackend)
    assert not isinstance(b, SQLiteShard)
    assert b.placeholder == "%s" and b.quote_ident("a`b") == "`a``b`"

    def no_translation(sql: str) -> str:
        raise AssertionError(f"a backend statement went through the ? translation: {sql}")

    monkeypatch.setattr(mysql, "to_driver", no_translation)
    try:
        _exercise(b)  # (names with % and ?: escaped for the driver, never read as placeholders)
        c = b.connect()
        try:  # the deadline table exists once the system tables do; a missing one reads as no deadline
            assert b.fence_of(c, "other") is None
            b.execute(c, "DROP TABLE _shardhash_fence")
            assert b.fence_of(c, "m") is None
            with b.writing(c):
                b.ensure_system(c)
                b.set_fence(c, "m", 2, 99.25)
            assert b.fence_of(c, "m") == (2, 99.25)
        finally:
            c.close()
    finally:
        monkeypatch.undo()
        b.close()
        drop_databases(url, prefix)


def test_the_mysql_application_connection_takes_question_marks_and_a_literal_percent() -> None:
    url = need_mysql()
    prefix = "bq" + uuid.uuid4().hex[:8]
    b = MySQLShard(new_database_url(url, prefix))
    c = b.connect()
    try:
        c.execute("CREATE TABLE `p%s?` (id BIGINT PRIMARY KEY, v TEXT)")
        c.execute("INSERT INTO `p%s?` VALUES (?, CONCAT('%', ?))", (1, "x"))
        assert list(c.execute("SELECT v, '?%s' FROM `p%s?` WHERE id = ?", (1,)).fetchall()) == [("%x", "?%s")]
    finally:
        c.close()
        drop_databases(url, prefix)


def test_the_application_connection_still_takes_question_marks() -> None:
    dsn = need_postgres()
    b = PostgresShard(f"postgresql:{dsn}")
    c: Any = b.connect()
    try:
        assert c.execute("SELECT ?::text || '%'", ("a",)).fetchone()[0] == "a%"
    finally:
        c.close()


def test_the_metadata_store_picks_its_dialect_by_kind(tmp_path: Path) -> None:
    class Other(SQLiteShard):
        kind = "other"

    with pytest.raises(ValueError, match="cannot hold the metadata store"):
        Metadata(Other(tmp_path / "x.db"))
    m = Metadata(SQLiteShard(tmp_path / "m.db", synchronous="OFF"))
    assert m.db.kind == "sqlite" and getattr(m.db, "synchronous", None) == "FULL"
