"""Crash injection under asyncio writers: the migrations of test_chaos.py
(executors SIGKILLed at named crash points and at random, resumed, rolled
back, cleaned up) while the writer processes write through the asyncio
client (``cluster.atransaction``), several tasks at once on one event loop
per process.  The invariants are test_chaos.py's, checked by its own code:
no acknowledged write lost, duplicated or resurrected, every read equal to
the key's last acknowledged value, every acknowledged write served by the
owner of its moment, writes in every migration window, stale routers
refused.

Each writer process owns the keys ``k % WRITERS == wid`` (as in
test_chaos.py); its tasks split them (``k // WRITERS % TASKS``), so each key
has one task and the writer's log is each key's order.

``SHARDHASH_CHAOS_ASYNC_MIGRATIONS`` sets the number of migrations on
SQLite (default 10: one cluster, every forced kill of test_chaos.py; about
15 s), ``SHARDHASH_CHAOS_ASYNC_PG_MIGRATIONS`` on PostgreSQL (default 5:
each forced kill but the resumed one's, which can fall on any migration;
40-80 s);
``SHARDHASH_CHAOS_SEED`` the seed.  SQLite (aiosqlite) and PostgreSQL
(psycopg async); the asyncio client has no MariaDB backend.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster
from tests._support import oracle_required

from . import test_chaos as chaos

pytestmark = pytest.mark.chaos

TASKS = 3  # writer tasks per writer process


def _awriter(path: str, log: str, wid: int, stop: str, seed: int) -> None:
    """test_chaos._writer's records, written by TASKS asyncio tasks through
    ``cluster.atransaction``: read the row, then UPDATE or DELETE the row
    this writer left (one row must be affected) or INSERT the one it
    deleted; log ``read``, ``v`` (acknowledged), ``shard``, ``ver``, ``t0``,
    or ``err`` (not acknowledged), or ``anomaly``."""
    asyncio.run(_awriter_main(path, log, wid, stop, seed))


async def _awriter_main(path: str, log: str, wid: int, stop: str, seed: int) -> None:
    cl = Cluster.load(path, retries=8, wait_timeout=120.0)
    mine = [k for k in range(1, chaos.KEYS + 1) if k % chaos.WRITERS == wid]
    have: dict[int, list[Any] | None] = {k: [f"u{k}", 0] for k in mine}  # as seeded by make_cluster
    seq = [0]

    async def task(t: int, f: Any) -> None:
        rnd = random.Random(seed * TASKS + t)
        keys = [k for k in mine if (k // chaos.WRITERS) % TASKS == t]
        while not os.path.exists(stop):
            k = rnd.choice(keys)
            seq[0] += 1
            n_seq = seq[0]
            want = have[k]
            rec: dict[str, Any] = {"k": k}
            val: list[Any] | None = None
            try:
                async with cl.atransaction(k) as tx:
                    rows = await tx.fetchall("SELECT name, n FROM users WHERE id = ?", (k,))
                    read = [rows[0][0], rows[0][1]] if rows else None
                    rec.update(read=read, shard=tx.shard, ver=tx.version)
                    if read != want:
                        raise chaos._Anomaly(f"read {read}, but this writer's last acknowledged write left {want}")
                    if want is None:
                        await tx.execute("INSERT INTO users VALUES (?, ?, ?)", (k, f"w{wid}", n_seq))
                        val = [f"w{wid}", n_seq]
                    elif rnd.random() < 0.15:
                        n = (await tx.execute("DELETE FROM users WHERE id = ?", (k,))).rowcount
                        if n != 1:
                            raise chaos._Anomaly(f"DELETE of the row read as {read} affected {n} rows")
                    else:
                        n = (await tx.execute("UPDATE users SET name = ?, n = ? WHERE id = ?",
                                              (f"w{wid}", n_seq, k))).rowcount
                        if n != 1:
                            raise chaos._Anomaly(f"UPDATE of the row read as {read} affected {n} rows")
                        val = [f"w{wid}", n_seq]
                    # (the shard and version the write committed on: a refused first statement
                    # runs again on the owner, and tx says which)
                    rec.update(shard=tx.shard, ver=tx.version)
                rec.update(v=val, t0=time.time())
            except chaos._Anomaly as e:
                rec.update(anomaly=str(e), t0=time.time())
                have[k] = rec["read"]  # (go on from what is there: the test fails on the anomaly)
            except Exception as e:  # noqa: BLE001 - not acknowledged
                rec.update(err=type(e).__name__, msg=str(e))
            else:
                have[k] = val
            f.write(json.dumps(rec) + "\n")
            await asyncio.sleep(rnd.random() * 0.004)

    with open(log, "a", buffering=1) as f:
        try:
            await asyncio.gather(*(task(t, f) for t in range(TASKS)))
        finally:
            await cl.aclose()
            cl.close()


def test_crash_injection_under_async_writers(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    if backend.startswith("mysql://"):
        pytest.skip("the asyncio client has no MariaDB backend")
    if not oracle_required():
        pytest.importorskip("aiosqlite", reason="pip install 'shardhash[async]'")
        if backend != "sqlite":
            pytest.importorskip("psycopg_pool", reason="pip install 'shardhash[async]'")
    name = "sqlite" if backend == "sqlite" else "postgresql"
    total = int(os.environ.get("SHARDHASH_CHAOS_ASYNC_MIGRATIONS", "10") if backend == "sqlite"
                else os.environ.get("SHARDHASH_CHAOS_ASYNC_PG_MIGRATIONS", "5"))
    seed = int(os.environ.get("SHARDHASH_CHAOS_SEED", str(int(time.time()))))
    with capsys.disabled():
        print(f"\nchaos, asyncio writers ({name}): seed {seed}, {total} migrations (SHARDHASH_CHAOS_SEED={seed} "
              f"repeats the choices)", flush=True)
    monkeypatch.setattr(chaos, "_writer", _awriter)  # (the forked writers run the async variant)
    rnd = random.Random(seed)
    clusters: list[dict[str, Any]] = []
    t0 = time.time()
    try:
        while sum(c["migrations"] for c in clusters) < total:
            done = sum(c["migrations"] for c in clusters)
            cs = chaos._one_cluster(tmp_path / f"c{len(clusters)}", min(10, total - done), rnd, backend)
            clusters.append(cs)
            chaos._require(len(clusters) - 1, cs)
    finally:
        with capsys.disabled():
            print(f"chaos, asyncio writers ({name}) seed {seed}: {len(clusters)} clusters in "
                  f"{time.time() - t0:.0f} s: {json.dumps(clusters)}", flush=True)
    assert sum(c["migrations"] for c in clusters) == total
    assert all(c["acks"] > 0 for c in clusters)
