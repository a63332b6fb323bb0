"""The metadata store: topology versions, the shard map and migration records.

One SQLite file (WAL, ``synchronous=FULL``).  Its commit of a migration's
cutover (:meth:`Metadata.commit_cutover`) is the single decision point of a
migration: before it the source owns the moving keys, after it the
destination does, whatever the shards' own records say at that moment.

Tables:

``topology(grp, version, router)``
    the current router document of each table group.
``shard_map(shard, url, replicas)``
    logical shard id -> connection URL of its primary and its replicas.  Kept
    apart from the topology: a failover rewrites this row only.
``migrations(id, grp, state, ...)``
    one row per migration, with its routers, units and state.
``progress(mig, key, value)``
    resumable progress (copy cursors, verified units, timings).
``events(id, ts, mig, msg)``
    the log lines of every migration.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .sqlite import SQLiteShard

DDL = """
CREATE TABLE IF NOT EXISTS topology(grp TEXT PRIMARY KEY, version INTEGER NOT NULL, router TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shard_map(shard TEXT PRIMARY KEY, url TEXT NOT NULL, replicas TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS migrations(
    id TEXT PRIMARY KEY, grp TEXT NOT NULL, state TEXT NOT NULL, kind TEXT NOT NULL,
    from_version INTEGER NOT NULL, to_version INTEGER NOT NULL,
    old_router TEXT NOT NULL, new_router TEXT NOT NULL, units TEXT NOT NULL,
    info TEXT NOT NULL, error TEXT, created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS progress(mig TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (mig, key));
CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, mig TEXT,
    msg TEXT NOT NULL);
"""

#: Migration states in which a migration holds its table group.
ACTIVE = ("preparing", "copying", "catching-up", "freezing", "cutover", "failed", "verify-failed",
          "rolling-back")
#: States after the metadata commit (the destination owns the units).
COMMITTED = ("cutover", "retained", "cleaning", "cleaned")


class Metadata:
    """The metadata store (SQLite)."""

    def __init__(self, path: str) -> None:
        self.db = SQLiteShard(path, synchronous="FULL")

    def setup(self) -> None:
        self.db.conn().executescript(DDL)

    @contextmanager
    def tx(self) -> Iterator[Any]:
        c = self.db.conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ topology

    def topology(self, group: str) -> tuple[int, str] | None:
        r = self.db.conn().execute("SELECT version, router FROM topology WHERE grp = ?", (group,)).fetchone()
        return None if r is None else (int(r[0]), r[1])

    def set_topology(self, c: Any, group: str, version: int, router_json: str) -> None:
        c.execute("INSERT OR REPLACE INTO topology VALUES (?, ?, ?)", (group, version, router_json))

    def shard_map(self) -> dict[str, tuple[str, list[str]]]:
        rows = self.db.conn().execute("SELECT shard, url, replicas FROM shard_map").fetchall()
        return {r[0]: (r[1], json.loads(r[2])) for r in rows}

    def set_shard(self, c: Any, shard: str, url: str, replicas: list[str]) -> None:
        c.execute("INSERT OR REPLACE INTO shard_map VALUES (?, ?, ?)", (shard, url, json.dumps(replicas)))

    # ---------------------------------------------------------- migrations

    def migration(self, mig: str) -> dict[str, Any] | None:
        c = self.db.conn()
        r = c.execute("SELECT id, grp, state, kind, from_version, to_version, old_router, new_router, units, "
                      "info, error, created, updated FROM migrations WHERE id = ?", (mig,)).fetchone()
        if r is None:
            return None
        keys = ("id", "group", "state", "kind", "from_version", "to_version", "old_router", "new_router",
                "units", "info", "error", "created", "updated")
        d = dict(zip(keys, r))
        d["units"] = json.loads(d["units"])
        d["info"] = json.loads(d["info"])
        return d

    def migrations(self, group: str | None = None) -> list[dict[str, Any]]:
        c = self.db.conn()
        if group is None:
            ids = [r[0] for r in c.execute("SELECT id FROM migrations ORDER BY created").fetchall()]
        else:
            ids = [r[0] for r in c.execute("SELECT id FROM migrations WHERE grp = ? ORDER BY created",
                                           (group,)).fetchall()]
        return [m for m in (self.migration(i) for i in ids) if m is not None]

    def set_state(self, mig: str, state: str, *, error: str | None = None, c: Any = None) -> None:
        if c is None:
            with self.tx() as c2:
                self.set_state(mig, state, error=error, c=c2)
            return
        c.execute("UPDATE migrations SET state = ?, error = ?, updated = ? WHERE id = ?",
                  (state, error, time.time(), mig))

    def set_info(self, mig: str, **kw: Any) -> None:
        with self.tx() as c:
            r = c.execute("SELECT info FROM migrations WHERE id = ?", (mig,)).fetchone()
            info = json.loads(r[0])
            info.update(kw)
            c.execute("UPDATE migrations SET info = ?, updated = ? WHERE id = ?", (json.dumps(info), time.time(), mig))

    def get(self, mig: str, key: str, default: Any = None) -> Any:
        r = self.db.conn().execute("SELECT value FROM progress WHERE mig = ? AND key = ?", (mig, key)).fetchone()
        return default if r is None else json.loads(r[0])

    def put(self, mig: str, key: str, value: Any, c: Any = None) -> None:
        conn = c if c is not None else self.db.conn()
        conn.execute("INSERT OR REPLACE INTO progress VALUES (?, ?, ?)", (mig, key, json.dumps(value)))

    def progress(self, mig: str) -> dict[str, Any]:
        rows = self.db.conn().execute("SELECT key, value FROM progress WHERE mig = ?", (mig,)).fetchall()
        return {k: json.loads(v) for k, v in rows}

    def log(self, mig: str | None, msg: str) -> None:
        self.db.conn().execute("INSERT INTO events(ts, mig, msg) VALUES (?, ?, ?)", (time.time(), mig, msg))

    def events(self, mig: str, limit: int = 50) -> list[tuple[float, str]]:
        return self.db.conn().execute("SELECT ts, msg FROM events WHERE mig = ? ORDER BY id DESC LIMIT ?",
                                      (mig, limit)).fetchall()[::-1]
