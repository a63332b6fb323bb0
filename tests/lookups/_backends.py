"""The databases the lookups tests run on: SQLite files, PostgreSQL (one schema per shard) when
tests/_postgres.py finds or starts a server, and MariaDB (one database per shard) when tests/_mariadb.py
finds or starts one (without a server they skip; in CI a missing server fails)."""

from __future__ import annotations

import functools
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests._mariadb import drop_databases, need_mysql, with_database
from tests._postgres import need_postgres

NAMES = ["s0", "s1", "s2"]
USERS = "CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL, name TEXT)"


@dataclass
class Backend:
    factories: dict[str, Callable[[], Any]]
    placeholder: str
    integrity: tuple[type[BaseException], ...]
    closers: list[Callable[[], None]] = field(default_factory=list)
    dialect: str = "standard"

    def query(self, shard: str, sql: str) -> list[tuple[Any, ...]]:
        c = self.factories[shard]()
        try:
            cur = _cursor(c)
            res = cur.execute(sql)  # (sqlite3 and psycopg return a cursor, mysqlclient a row count)
            rows = (res if hasattr(res, "fetchall") else cur).fetchall()
            # (MySQL: the lookup table's value column is a VARBINARY, read here as the text it holds)
            return [tuple(v.decode() if isinstance(v, bytes) and self.dialect == "mysql" else v for v in r)
                    for r in rows]
        finally:
            c.rollback()
            c.close()

    def execute(self, shard: str, sql: str) -> None:
        c = self.factories[shard]()
        try:
            _cursor(c).execute(sql)
            c.commit()
        finally:
            c.close()


def _cursor(c: Any) -> Any:
    return c if isinstance(c, sqlite3.Connection) else c.cursor()


def sqlite_backend(root: Path) -> Backend:
    def connect(path: str) -> sqlite3.Connection:
        c = sqlite3.connect(path, timeout=30)
        c.execute("PRAGMA synchronous=OFF")  # a test: no fsync per commit
        return c

    return Backend({s: functools.partial(connect, str(root / f"{s}.db")) for s in NAMES}, "?",
                   (sqlite3.IntegrityError,))


class _Pooled:
    """A pooled psycopg connection: ``close`` rolls back and returns it to the pool."""

    def __init__(self, raw: Any, pool: list[Any]) -> None:
        self.raw, self.pool = raw, pool

    def cursor(self) -> Any:
        return self.raw.cursor()

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()

    def close(self) -> None:
        self.raw.rollback()
        self.pool.append(self.raw)


def postgres_backend() -> Backend:
    dsn = need_postgres()
    import psycopg

    tag = uuid.uuid4().hex[:10]
    schemas = {s: f"lsm{tag}_{s}" for s in NAMES}
    pools: dict[str, list[Any]] = {s: [] for s in NAMES}

    def connect(shard: str) -> _Pooled:
        pool = pools[shard]
        raw = pool.pop() if pool else psycopg.connect(dsn, options=f"-csearch_path={schemas[shard]}")
        return _Pooled(raw, pool)

    with psycopg.connect(dsn, autocommit=True) as c:
        for sch in schemas.values():
            c.execute(f'CREATE SCHEMA "{sch}"')

    def drop() -> None:
        for pool in pools.values():
            while pool:
                pool.pop().close()
        with psycopg.connect(dsn, autocommit=True) as c:
            for sch in schemas.values():
                c.execute(f'DROP SCHEMA IF EXISTS "{sch}" CASCADE')

    return Backend({s: functools.partial(connect, s) for s in NAMES}, "%s", (psycopg.IntegrityError,), [drop])


def mariadb_backend() -> Backend:
    url = need_mysql()
    import MySQLdb

    from shardhash.migrate.mysql import open_raw

    tag = f"lsm{uuid.uuid4().hex[:10]}_"
    urls = {s: with_database(url, tag + s) for s in NAMES}
    pools: dict[str, list[Any]] = {s: [] for s in NAMES}

    def connect(shard: str) -> _Pooled:
        pool = pools[shard]
        if pool:
            return _Pooled(pool.pop(), pool)
        raw = open_raw(urls[shard])  # (the database created when missing; ANSI_QUOTES, FOUND_ROWS)
        raw.autocommit(False)  # (a transaction per block, as DB-API has it)
        return _Pooled(raw, pool)

    def drop() -> None:
        for pool in pools.values():
            while pool:
                pool.pop().close()
        drop_databases(url, tag)

    return Backend({s: functools.partial(connect, s) for s in NAMES}, "%s", (MySQLdb.IntegrityError,), [drop],
                   dialect="mysql")
