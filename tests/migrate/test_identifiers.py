"""Identifier fuzzing: table, column and group names drawn from a hostile
alphabet (quotes, braces, ``$$``, ``%``, ``?``, semicolons, NUL, unicode).

* In a cluster file each name either works exactly or is refused at load
  with a ValueError naming the field.
* Every SQL builder of the backends (capture and guard triggers, scan,
  fetch, upsert, insert, delete, count) quotes any name the database can
  hold exactly once: the capture logs every write, the guard records every
  row of another key, each row reads back as written, and a canary table
  survives.  A name no database can hold (NUL) is a ValueError.

SQLite always; PostgreSQL too where tests/_postgres.py finds or starts a server.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from shardhash import JumpRouter
from shardhash.migrate import Cluster
from shardhash.migrate.cluster import ShardKeyError, open_backend
from shardhash.migrate.sqlite import IDENTIFIER, SQLiteShard
from tests._postgres import need_postgres, server_dsn

HOSTILE = "\"'`{}$%?;\\\x00 -()*/=.,\n\té☃\u202e\U0001f600"
ALPHABET = st.sampled_from(list(HOSTILE) + list("abcxyzABC_019"))
NAMES = st.text(ALPHABET, min_size=1, max_size=12)


BACKENDS = ["sqlite", "postgres"]  # (postgres: tests/_postgres.py finds or starts a server, else skips)


@pytest.fixture(autouse=True)
def _server_for_postgres(request: pytest.FixtureRequest) -> None:
    """A ``kind='postgres'`` case finds (or starts) its server before Hypothesis runs, so a
    missing one is a plain skip."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("kind") == "postgres":
        need_postgres()


def _hostile(name: str) -> bool:
    return name.lower().startswith(("_shardhash", "sqlite_")) or name.lower() in ("canary",)


def _fresh(kind: str, d: Path) -> tuple[SQLiteShard, str | None]:
    if kind == "sqlite":
        return SQLiteShard(d / "s.db", synchronous="OFF"), None
    dsn = need_postgres()
    schema = "fz" + uuid.uuid4().hex[:12]
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute(f"CREATE SCHEMA {schema}")
    return open_backend(f"postgresql:{dsn} options='-csearch_path={schema}'"), schema


def _drop(schema: str | None) -> None:
    if schema is None:
        return
    import psycopg

    dsn = server_dsn()
    assert dsn is not None
    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute(f"DROP SCHEMA {schema} CASCADE")


def _check_backend(kind: str, table: str, key: str, col: str, group: str) -> None:
    assume(len({table.lower(), "canary"}) == 2 and key != col)
    assume(not any(_hostile(n) for n in (table, key, col)))
    from shardhash.migrate.sqlite import qi

    with tempfile.TemporaryDirectory() as d:
        b, schema = _fresh(kind, Path(d))
        try:
            c = b.conn()
            with b.writing(c):
                b.ensure_system(c)
                c.execute("CREATE TABLE canary (id INTEGER PRIMARY KEY, v TEXT)")
                c.execute("INSERT INTO canary VALUES (1, 'alive')")
            if "\x00" in table + key + col + group:
                # no database holds a NUL in a name: every builder refuses it
                with b.writing(c):
                    c.execute("CREATE TABLE t_ok (id BIGINT PRIMARY KEY, v TEXT)")
                for n in (table, key, col):
                    if "\x00" in n:
                        with pytest.raises(ValueError, match="NUL"):
                            b.count(c, n)
                        with pytest.raises(ValueError, match="NUL"):
                            b.scan(c, "t_ok", ["id", n], ["id"], None, 10)
                        with pytest.raises(ValueError, match="NUL"):
                            with b.writing(c):
                                b.install_triggers(c, "g", "t_ok", ["id"], n)
                if "\x00" in group:
                    with pytest.raises(ValueError, match="NUL"):
                        with b.writing(c):
                            b.install_triggers(c, group, "t_ok", ["id"], "id")
                assert c.execute("SELECT id, v FROM canary").fetchall() == [(1, "alive")]
                return
            with b.writing(c):
                c.execute(f"CREATE TABLE {qi(table)} ({qi(key)} BIGINT PRIMARY KEY, {qi(col)} TEXT)")
            with b.writing(c):
                cols, pk = b.table_info(c, table)
                assert (cols, pk) == ([key, col], [key])
                b.install_triggers(c, group, table, pk, key)
                b.install_triggers(c, group, table, pk, key)  # idempotent
                b.start_capture(c, "cap", group)
            cid = b.capture_id(c, "cap")
            assert cid is not None
            # client-like writes: each is logged by the capture, none is another key's
            for k, v in ((1, "a"), (2, "b'%?$$")):
                b.begin_client_write(c)
                b.begin_guard(c, group, k)
                c.execute(f"INSERT INTO {qi(table)} VALUES (?, ?)", (k, v))
                c.execute(f"UPDATE {qi(table)} SET {qi(col)} = ? || {qi(col)} WHERE {qi(key)} = ?", ("x", k))
                assert b.end_guard(c) == []
                b.commit(c)
            # a client transaction of key 1 writing key 3: recorded (group, table, key)
            b.begin_client_write(c, (group, 1))
            try:
                c.execute(f"INSERT INTO {qi(table)} VALUES (?, ?)", (3, "c"))
            except Exception as e:  # noqa: BLE001 - PostgreSQL refuses the statement itself
                assert b.guard_violation(e) == (group, table, 3)
            else:
                assert b.end_guard(c) == [(group, table, 3)]
            b.rollback(c)
            with b.writing(c):
                b.delete(c, table, pk, [(2,)])
            logged = sorted(json.loads(p)[0] for _t, p in b.pending_keys(c, cid))
            assert logged == [1, 2]
            assert {t for t, _p in b.pending_keys(c, cid)} == {table}
            # the executor's builders
            with b.writing(c):
                b.upsert(c, table, cols, [(5, "five"), (1, "one")])
                assert b.insert_new(c, table, cols, [(6, "six")]) == 1
            assert b.scan(c, table, cols, pk, None, 10) == [(1, "one"), (5, "five"), (6, "six")]
            assert b.fetch(c, table, cols, pk, [(6,), (1,)]) == [(1, "one"), (6, "six")] or \
                sorted(b.fetch(c, table, cols, pk, [(6,), (1,)])) == [(1, "one"), (6, "six")]
            assert b.count(c, table) == 3 and b.min_key(c, table, key) == 1
            assert c.execute("SELECT id, v FROM canary").fetchall() == [(1, "alive")]
        finally:
            b.close()
            _drop(schema)


@pytest.mark.parametrize("kind", BACKENDS)
@given(table=NAMES, key=NAMES, col=NAMES, group=NAMES)
@example(table="t{extra}", key="id", col="v", group="g")
@example(table="users", key="id", col="v", group="u{pk}")
@example(table="users", key="id", col="v", group="users{v2}")
@example(table="t", key="id", col="v", group="a$$b")
@example(table='t"; DROP TABLE canary; --', key="k'", col="c?%s", group="g'); DELETE FROM canary; --")
@example(table="t", key="k\x00", col="v", group="g")
def test_backend_builders_quote_any_name_once(kind: str, table: str, key: str, col: str, group: str) -> None:
    _check_backend(kind, table, key, col, group)


# ------------------------------------------------------------------ the cluster file

def _cluster_doc(kind: str, d: Path, schemas: dict[str, str], group: str, table: str, key: str) -> dict[str, Any]:
    if kind == "sqlite":
        urls = {s: f"sqlite:{s}.db" for s in ("a", "b")}
    else:
        urls = {s: f"postgresql:{server_dsn()} options='-csearch_path={schemas[s]}'" for s in ("a", "b")}
    return {"metadata": "sqlite:meta.db", "shards": {s: {"primary": u} for s, u in urls.items()},
            "groups": {group: {"router": JumpRouter(["a", "b"]).to_dict(),
                               "tables": [{"name": table, "key": key}]}},
            "options": {"synchronous": "OFF"}}


@pytest.mark.parametrize("kind", BACKENDS)
@given(group=NAMES, table=NAMES, key=NAMES)
@example(group="g", table="t{extra}", key="id")
@example(group="u{pk}", table="users", key="id")
@example(group="Grp_9", table="Tab_1", key="K_2")
def test_cluster_file_names_work_exactly_or_are_refused(kind: str, group: str, table: str, key: str) -> None:
    assume(table.lower() != "canary")
    ok = all(IDENTIFIER.fullmatch(n) and not n.lower().startswith("_shardhash") for n in (group, table, key))
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        schemas: dict[str, str] = {}
        if kind != "sqlite":
            for s in ("a", "b"):
                schemas[s] = _fresh(kind, d)[1] or ""
        try:
            doc = _cluster_doc(kind, d, schemas, group, table, key)
            if not ok:
                with pytest.raises(ValueError, match="not a valid name|reserved"):
                    Cluster.from_dict(doc, base_dir=d)
                return
            for s in ("a", "b"):
                conn = open_backend(doc["shards"][s]["primary"], d).connect()
                conn.execute(f'CREATE TABLE "{table}" ("{key}" BIGINT PRIMARY KEY, v TEXT)')
                conn.execute("CREATE TABLE canary (id INTEGER PRIMARY KEY, v TEXT)")
                conn.execute("INSERT INTO canary VALUES (1, 'alive')")
                conn.close()
            cl = Cluster.from_dict(doc, base_dir=d)
            try:
                cl.init()
                for k in range(4):
                    with cl.transaction(k) as tx:
                        tx.execute(f'INSERT INTO "{table}" VALUES (?, ?)', (k, f"v{k}"))
                with pytest.raises(ShardKeyError):
                    with cl.transaction(0) as tx:
                        tx.execute(f'UPDATE "{table}" SET "{key}" = ? WHERE "{key}" = ?', (99, 0))
                for k in range(4):
                    with cl.read(k) as tx:
                        assert tx.execute(f'SELECT v FROM "{table}" WHERE "{key}" = ?',
                                          (k,)).fetchone() == (f"v{k}",)
                for s in ("a", "b"):
                    rows = cl.backend(s).conn().execute("SELECT id, v FROM canary").fetchall()
                    assert [tuple(r) for r in rows] == [(1, "alive")]
            finally:
                cl.close()
        finally:
            for sch in schemas.values():
                _drop(sch)


def test_capture_during_a_migration_logs_every_write_with_unusual_valid_names(tmp_path: Path) -> None:
    """A real migration of a group and table with mixed-case names: every
    write made during it reaches the new owner."""
    from shardhash import plan
    from shardhash.migrate import Migration

    for s in ("a", "b", "c"):
        sqlite3.connect(tmp_path / f"{s}.db").execute(
            'CREATE TABLE "Tab_1" ("K_2" INTEGER PRIMARY KEY, v TEXT)').connection.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: f"sqlite:{s}.db" for s in ("a", "b", "c")},
           "groups": {"Grp_9": {"router": JumpRouter(["a", "b"]).to_dict(),
                                "tables": [{"name": "Tab_1", "key": "K_2"}]}}}
    cl = Cluster.from_dict(doc, base_dir=tmp_path)
    cl.init()
    for k in range(150):
        with cl.transaction(k) as tx:
            tx.execute('INSERT INTO "Tab_1" VALUES (?, ?)', (k, "old"))
    new, _ = plan.add_shards(cl.router(), "c")
    m = Migration.create(cl, "Grp_9", new)
    done = {"n": 0}

    def write_during_copy(fig: dict[str, Any]) -> None:
        # writes of every key while the copy runs: the capture must log each
        for k in range(done["n"], min(150, done["n"] + 60)):
            with cl.transaction(k) as tx:
                tx.execute('UPDATE "Tab_1" SET v = ? WHERE "K_2" = ?', ("new", k))
        done["n"] = min(150, done["n"] + 60)

    m.progress_fn = write_during_copy
    m.progress_every = 0.0
    assert m.run(chunk=20) == "retained"
    assert done["n"] > 0  # (some writes happened while the migration ran)
    for k in range(done["n"], 150):
        with cl.transaction(k) as tx:
            tx.execute('UPDATE "Tab_1" SET v = ? WHERE "K_2" = ?', ("new", k))
    cl.refresh()
    for k in range(150):
        with cl.read(k) as tx:
            assert tx.execute('SELECT v FROM "Tab_1" WHERE "K_2" = ?', (k,)).fetchone() == ("new",), k
    cl.close()


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("table, group", [("t{extra}", "g"), ("users", "u{pk}"), ("users", "users{v2}"),
                                          ("t", "a$$b"), ("t{pk}", "g{extra}")])
def test_capture_triggers_log_every_write_whatever_the_names(kind: str, table: str, group: str) -> None:
    """The capture triggers alone (no guard): braces or ``$$`` in a name
    once spliced names back into the trigger text or ended its body."""
    from shardhash.migrate.sqlite import qi

    with tempfile.TemporaryDirectory() as d:
        b, schema = _fresh(kind, Path(d))
        try:
            c = b.conn()
            with b.writing(c):
                b.ensure_system(c)
                c.execute("CREATE TABLE canary (id INTEGER PRIMARY KEY, v TEXT)")
                c.execute(f"CREATE TABLE {qi(table)} (id BIGINT PRIMARY KEY, v TEXT)")
                b.install_triggers(c, group, table, ["id"])
                b.start_capture(c, "cap", group)
            cid = b.capture_id(c, "cap")
            assert cid is not None
            with b.writing(c):
                c.execute(f"INSERT INTO {qi(table)} VALUES (1, 'a'), (2, 'b')")
                c.execute("INSERT INTO canary VALUES (1, 'alive')")
            with b.writing(c):
                c.execute(f"UPDATE {qi(table)} SET id = 3 WHERE id = 2")
            assert sorted(json.loads(p)[0] for _t, p in b.pending_keys(c, cid)) == [1, 2, 3]
            assert c.execute("SELECT id, v FROM canary").fetchall() == [(1, "alive")]
        finally:
            b.close()
            _drop(schema)
