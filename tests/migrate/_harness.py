"""Builds small SQLite clusters for the migration tests (also run as a
writer/executor child process by the crash tests)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from shardhash import JumpRouter, load_router
from shardhash.migrate import Cluster

SCHEMA = "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL)"
SCHEMA2 = ("CREATE TABLE events (eid INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, payload TEXT)",
           "CREATE INDEX events_user ON events(user_id)")


def make_cluster(root: Path, shards: list[str], router: Any = None, *, users: int = 0,
                 events: bool = False, extra_shards: list[str] = (), **opts: Any) -> Path:
    """Write shard files, seed ``users`` rows routed by ``router`` and a
    cluster.json; returns the cluster file's path."""
    root.mkdir(parents=True, exist_ok=True)
    router = router or JumpRouter(shards)
    for s in list(shards) + list(extra_shards):
        c = sqlite3.connect(root / f"{s}.db")
        if s in shards:
            c.execute(SCHEMA)
            if events:
                for q in SCHEMA2:
                    c.execute(q)
        c.commit()
        c.close()
    if users:
        ids = list(range(1, users + 1))
        owners = router.route_many(ids)
        conns = {s: sqlite3.connect(root / f"{s}.db") for s in shards}
        for i, o in zip(ids, owners.tolist()):
            conns[router.shards[o]].execute("INSERT INTO users VALUES (?, ?, ?)", (i, f"u{i}", 0))
            if events:
                conns[router.shards[o]].execute("INSERT INTO events VALUES (?, ?, ?)",
                                                (i * 100_000, i, f"e{i}"))
        for c in conns.values():
            c.commit()
            c.close()
    tables = [{"name": "users", "key": "id"}]
    if events:
        tables.append({"name": "events", "key": "user_id"})
    doc = {
        "metadata": "sqlite:meta.db",
        "shards": {s: {"primary": f"sqlite:{s}.db"} for s in list(shards) + list(extra_shards)},
        "groups": {"users": {"router": router.to_dict(), "tables": tables}},
        "options": {"synchronous": "NORMAL", **opts},
    }
    path = root / "cluster.json"
    path.write_text(json.dumps(doc))
    cl = Cluster.load(path)
    cl.init()
    cl.close()
    return path


def shard_rows(root: Path, shard: str, table: str = "users") -> dict[Any, tuple[Any, ...]]:
    c = sqlite3.connect(root / f"{shard}.db")
    try:
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is None:
            return {}
        rows = c.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        c.close()
    return {r[0]: r for r in rows}


def writer_main(cluster_path: str, log_path: str, wid: int, nkeys: int, seconds: float, seed: int) -> None:
    """A writer process: updates/inserts/deletes its own keys (id % 100 == wid
    among 1..nkeys*100) and logs each acknowledged write as a JSON line,
    flushed before the next one."""
    import random

    rnd = random.Random(seed)
    cl = Cluster.load(cluster_path, retries=5, wait_timeout=120.0)
    mine = [k for k in range(1, nkeys + 1) if k % 8 == wid]
    seq = 0
    end = time.time() + seconds
    with open(log_path, "a", buffering=1) as log:
        while time.time() < end:
            k = rnd.choice(mine)
            seq += 1
            op = rnd.random()
            try:
                with cl.transaction(k) as tx:
                    if op < 0.1:
                        tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        val = None
                    else:
                        tx.execute("INSERT OR REPLACE INTO users VALUES (?, ?, ?)", (k, f"w{wid}", seq))
                        val = seq
                    shard, version = tx.shard, tx.version
                    t_ack0 = time.time()
                log.write(json.dumps({"k": k, "v": val, "shard": shard, "ver": version, "t0": t_ack0,
                                      "t": time.time()}) + "\n")
            except Exception as e:  # noqa: BLE001 - logged, never acknowledged
                log.write(json.dumps({"k": k, "err": type(e).__name__, "msg": str(e)}) + "\n")
            time.sleep(0.001)
    cl.close()


def executor_main(cluster_path: str, action: str, arg: str) -> None:
    cl = Cluster.load(cluster_path)
    from shardhash.migrate import Migration

    if action == "create":
        new = load_router(json.loads(Path(arg).read_text()))
        m = Migration.create(cl, "users", new, mig_id="mig1", max_step_share=0.05)
        print(m.id, flush=True)
    elif action == "run":
        Migration(cl, arg).run(chunk=200)
    elif action == "rollback":
        Migration(cl, arg).rollback()
    elif action == "cleanup":
        Migration(cl, arg).cleanup()
    cl.close()


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        writer_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]))
    else:
        executor_main(sys.argv[2], sys.argv[3], sys.argv[4])
