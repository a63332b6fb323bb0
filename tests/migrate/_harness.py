"""Builds small clusters for the migration tests, on SQLite files, on
PostgreSQL schemas (one schema per shard in the test server's database) or on
MariaDB databases (one per shard; ``backend`` is then the server's URL)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shardhash import JumpRouter
from shardhash.migrate import Cluster
from shardhash.migrate.cluster import open_backend

SCHEMA = "CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL)"
SCHEMA2 = ("CREATE TABLE events (eid BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, payload TEXT)",
           "CREATE INDEX events_user ON events(user_id)")
UPSERT = ("INSERT INTO users VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
          "n = excluded.n")


#: The same upsert on MariaDB / MySQL (no ON CONFLICT there).
UPSERT_MYSQL = "INSERT INTO users VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), n = VALUES(n)"


def upsert(tx: Any) -> str:
    """:data:`UPSERT` in the dialect of the transaction's shard."""
    return UPSERT_MYSQL if tx.backend.kind == "mysql" else UPSERT


def is_mysql(backend: str) -> bool:
    return backend.startswith(("mysql://", "mariadb://"))


def shard_url(backend: str, root: Path, shard: str) -> str:
    if backend == "sqlite":
        return f"sqlite:{shard}.db"
    if is_mysql(backend):
        from tests._mariadb import with_database

        return with_database(backend, f"t{_tag(root)}_{shard}")
    return f"postgresql:{backend} options='-csearch_path=t{_tag(root)}_{shard}'"


def create_schemas(dsn: str, root: Path, names: Sequence[str]) -> None:
    """Create the PostgreSQL schema ``t<tag>_<name>`` of each name (the one
    ``shard_url`` names), the identifier quoted by psycopg."""
    if is_mysql(dsn):
        return  # (the MySQL backend creates the database a URL names)
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as pg:
        for name in names:
            pg.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(f"t{_tag(root)}_{name}")))


def _tag(root: Path) -> str:
    f = root / ".tag"
    if not f.exists():
        root.mkdir(parents=True, exist_ok=True)
        f.write_text(uuid.uuid4().hex[:10])
    return f.read_text()


def connect(root: Path, shard: str) -> Any:
    """A connection (sqlite3, or the PostgreSQL adapter) to a shard of the cluster in ``root``."""
    doc = json.loads((root / "cluster.json").read_text())
    return open_backend(doc["shards"][shard]["primary"], root).connect()


def make_cluster(root: Path, shards: list[str], router: Any = None, *, users: int = 0,
                 events: bool = False, extra_shards: Sequence[str] = (), backend: str = "sqlite",
                 metadata: str = "sqlite", **opts: Any) -> Path:
    """Create the shards, seed ``users`` rows routed by ``router`` and write
    cluster.json; returns its path (the cluster is initialised).  ``metadata``:
    'sqlite' (meta.db), or a PostgreSQL DSN (the store in a schema of its own)."""
    root.mkdir(parents=True, exist_ok=True)
    router = router or JumpRouter(shards)
    every = list(shards) + list(extra_shards)
    urls = {s: shard_url(backend, root, s) for s in every}
    if backend != "sqlite":
        create_schemas(backend, root, every)
    conns = {s: open_backend(urls[s], root).connect() for s in every}
    ids = list(range(1, users + 1))
    owners = router.route_many(ids).tolist() if users else []
    for s in shards:
        c = conns[s]
        c.execute("BEGIN")
        c.execute(SCHEMA)
        if events:
            for q in SCHEMA2:
                c.execute(q)
        rows = [(i, f"u{i}", 0) for i, o in zip(ids, owners) if router.shards[o] == s]
        if rows:
            c.executemany("INSERT INTO users VALUES (?, ?, ?)", rows)
            if events:
                c.executemany("INSERT INTO events VALUES (?, ?, ?)", [(i * 100_000, i, f"e{i}") for i, _, _ in rows])
        c.execute("COMMIT")
    for c in conns.values():
        c.close()
    tables = [{"name": "users", "key": "id"}]
    if events:
        tables.append({"name": "events", "key": "user_id"})
    meta_url = "sqlite:meta.db"
    if metadata != "sqlite":
        create_schemas(metadata, root, ["meta"])
        meta_url = shard_url(metadata, root, "meta") if is_mysql(metadata) else \
            f"postgresql:{metadata} options='-csearch_path=t{_tag(root)}_meta'"
    doc = {
        "metadata": meta_url,
        "shards": {s: {"primary": urls[s]} for s in every},
        "groups": {"users": {"router": router.to_dict(), "tables": tables}},
        "options": {"synchronous": "NORMAL", **opts},
    }
    path = root / "cluster.json"
    path.write_text(json.dumps(doc))
    cl = Cluster.load(path)
    cl.init()
    cl.close()
    return path


def drop_cluster(root: Path, backend: str) -> None:
    """Drop a PostgreSQL cluster's schemas (SQLite files go with the folder)."""
    if backend == "sqlite" or not (root / ".tag").exists():
        return
    if is_mysql(backend):
        from tests._mariadb import drop_databases

        drop_databases(backend, f"t{_tag(root)}_")
        return
    import psycopg

    with psycopg.connect(backend, autocommit=True) as c:
        for (name,) in c.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                 (f"t{_tag(root)}_%",)).fetchall():
            c.execute(f'DROP SCHEMA "{name}" CASCADE')


def shard_rows(root: Path, shard: str, table: str = "users") -> dict[Any, tuple[Any, ...]]:
    """Every row of ``table`` on ``shard``, by its first column; ``{}`` only
    when the table does not exist there (a spare shard no migration has
    prepared).  Any other read error is raised: read as "no rows", it could
    hide a duplicate or a row on the wrong shard."""
    doc = json.loads((root / "cluster.json").read_text())
    b = open_backend(doc["shards"][shard]["primary"], root)
    c = b.connect()
    try:
        if not b.has_table(c, table):
            return {}
        rows = c.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        c.close()
    return {r[0]: tuple(r) for r in rows}


def add_shard_migration(root: Path, backend: str, users: int) -> tuple[Path, Cluster, Any, set[int]]:
    """A cluster of four shards s0..s3 holding ``users`` rows (and s4, empty)
    and a migration that adds s4 in steps of at most 5 % of the hash space:
    (cluster.json's path, the cluster, the migration, the keys it moves)."""
    from shardhash import plan
    from shardhash.migrate import Migration

    path = make_cluster(root, ["s0", "s1", "s2", "s3"], users=users, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    moved = {k for k in range(1, users + 1) if old.route(k) != new.route(k)}
    return path, cl, Migration.create(cl, "users", new, max_step_share=0.05), moved


def frozen_key(root: Path, backend: str, wait_timeout: float) -> tuple[Path, Cluster, Any, Any, Any, int, str]:
    """A cluster of four shards s0..s3 holding 300 users (and s4, empty) whose
    migration adding s4 is copied but not cut over, with the source unit of a
    key k that moves to s4 frozen on its source shard: (cluster.json's path,
    the cluster (``wait_timeout`` given), the migration, the old router, the
    new router, k, k's source shard)."""
    from shardhash import plan
    from shardhash.migrate import Migration

    path = make_cluster(root, ["s0", "s1", "s2", "s3"], users=300, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path, wait_timeout=wait_timeout)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    m.run(cutover=False)
    k = next(k for k in range(1, 301) if new.route(k) == "s4")
    src = old.route(k)
    m._set_units(src, "source", ("copying",), "frozen")
    return path, cl, m, old, new, k, src
