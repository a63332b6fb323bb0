"""``shardhash demo --migrate``: a live migration on SQLite shards.

Users spread over four SQLite shards by jump hash; a fifth shard joins while
eight writer threads insert, update and delete users throughout.  The demo
prints the copy rate, the catch-up lag, the write pause the writers saw, the
verify result and a count of acknowledged writes, lost and duplicated --
computed from the writers' own records against the shards' final contents.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_demo(n_users: int = 1_000_000, *, writers: int = 8, folder: str | None = None,
             quiet: bool = False, seed: int = 7) -> dict[str, Any]:
    """Run the demo; returns its figures (see the module docstring)."""
    from .. import JumpRouter, plan
    from .cluster import Cluster
    from .executor import Migration

    say = (lambda s: None) if quiet else _say
    tmp = tempfile.TemporaryDirectory(prefix="shardhash-demo-", ignore_cleanup_errors=True) if folder is None else None
    root = Path(folder or tmp.name)  # type: ignore[union-attr]
    try:
        four = [f"shard-{i}" for i in range(4)]
        old = JumpRouter(four)
        t0 = time.perf_counter()
        ids = np.arange(1, n_users + 1, dtype=np.int64)
        owner = old.route_many(ids)
        for i, s in enumerate(four + ["shard-4"]):
            c = sqlite3.connect(root / f"{s}.db")
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL)")
            if i < 4:
                mine = ids[owner == i].tolist()
                c.executemany("INSERT INTO users VALUES (?, ?, 0)", ((k, f"user{k}") for k in mine))
            c.commit()
            c.close()
        doc = {"metadata": "sqlite:meta.db",
               "shards": {s: {"primary": f"sqlite:{s}.db"} for s in four + ["shard-4"]},
               "groups": {"users": {"router": old.to_dict(), "tables": [{"name": "users", "key": "id"}]}},
               "options": {"synchronous": "NORMAL", "retries": 5, "wait_timeout": 60}}
        (root / "cluster.json").write_text(json.dumps(doc))
        cluster = Cluster.load(root / "cluster.json")
        cluster.init()
        say(f"{n_users:,} users on 4 SQLite shards ({time.perf_counter() - t0:.1f} s to load); "
            f"a fifth shard joins under {writers} writer threads")

        stop = threading.Event()
        acks: list[dict[int, int | None]] = [dict() for _ in range(writers)]
        counts = [0] * writers
        errors: list[str] = []

        def writer(w: int) -> None:
            rnd = random.Random(seed * 100 + w)
            seq = 0
            fresh = n_users + 1 + w
            try:
                while not stop.is_set():
                    seq += 1
                    r = rnd.random()
                    if r < 0.1:
                        k, fresh = fresh, fresh + writers
                    else:
                        k = rnd.randrange(1, n_users // writers) * writers + w
                    with cluster.transaction(k) as tx:
                        if 0.1 <= r < 0.2:
                            tx.execute("DELETE FROM users WHERE id = ?", (k,))
                            val = None
                        else:
                            tx.execute("INSERT OR REPLACE INTO users VALUES (?, ?, ?)", (k, f"w{w}", seq))
                            val = seq
                    acks[w][k] = val
                    counts[w] += 1
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"writer {w}: {type(e).__name__}: {e}")
            finally:
                cluster.close()

        threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(writers)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        new, _ = plan.add_shards(old, "shard-4")
        # The executor runs in its own process, as in production: `shardhash
        # migrate start` (its log lines show progress).
        t_mig = time.perf_counter()
        cmd = [sys.executable, "-m", "shardhash", "migrate", "start", "--config", str(root / "cluster.json"),
               "--add", "shard-4"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        mig_s = time.perf_counter() - t_mig
        for line in proc.stderr.splitlines():
            if any(w in line for w in ("prepared", "copy done", "verify:", "cutover", "reconciled")):
                say("  " + line)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        if proc.returncode != 0:
            raise RuntimeError(f"the migration failed: {proc.stderr.strip()[-2000:]}")
        m = Migration(cluster, cluster.metadata.migrations("users")[-1]["id"])
        st = m.status()
        cleaned = m.cleanup()
        # The shards' final contents against the writers' records.
        where: dict[int, list[tuple[str, int]]] = {}
        for s in four + ["shard-4"]:
            c = sqlite3.connect(root / f"{s}.db")
            for k, n in c.execute("SELECT id, n FROM users"):
                where.setdefault(k, []).append((s, n))
            c.close()
        duplicated = sum(1 for v in where.values() if len(v) > 1)
        misplaced = sum(1 for k, v in where.items() if any(s != new.route(k) for s, _ in v))
        lost = 0
        for a in acks:
            for k, val in a.items():
                got = where.get(k)
                if val is None:
                    lost += got is not None
                elif got is None or got[0][1] != val:
                    lost += 1
        pause = cluster.metrics.pause_quantiles()
        res = {
            "users": n_users, "rows_copied": st["rows_copied"],
            "copy_rows_scanned_per_s": st["copy_rows_scanned_per_s"],
            "copy_rows_copied_per_s": st["copy_rows_copied_per_s"],
            "catchup_changes_per_s": st["catchup_changes_per_s"], "lag_at_freeze": st["lag"],
            "write_pause": pause, "unit_pause_seconds": st["write_pause_seconds"], "verify": st["verify"],
            "acknowledged": sum(counts), "lost": lost, "duplicated": duplicated, "misplaced": misplaced,
            "writer_errors": errors, "migration_seconds": mig_s, "cleaned": cleaned,
            "stale_retries": cluster.metrics.stale_retries,
            "fence_timings": cluster.metadata.get(m.id, "fence_timings"),
        }
        cluster.close()
        return res
    finally:
        if tmp is not None:
            tmp.cleanup()


def main(args: argparse.Namespace) -> int:
    """Entry point of ``shardhash demo --migrate`` (``--keys`` sets the user count, default 1,000,000)."""
    n = args.keys if args.keys != 10_000_000 else 1_000_000
    if n < 1000:
        raise ValueError(f"--keys must be >= 1000 for the migration demo, got {n}")
    res = run_demo(n, quiet=args.json)
    if args.json:
        _say(json.dumps(res, indent=2, default=str))
    else:
        def ms(v: float | None) -> str:
            return "n/a" if v is None else f"{v * 1000:.1f} ms"

        p = res["write_pause"]
        v = res["verify"] or {}
        lag = res["lag_at_freeze"] or {}
        _say("")
        def rate(v: float | None, what: str) -> str:
            return f"not measured ({what})" if v is None else f"{v:,.0f} {what}"

        _say(f"rows copied: {res['rows_copied']:,} ({rate(res['copy_rows_scanned_per_s'], 'rows/s scanned')}, "
             f"{rate(res['copy_rows_copied_per_s'], 'rows/s copied')})")
        lag_s = lag.get("seconds")
        _say(f"catch-up: {rate(res['catchup_changes_per_s'], 'changes/s')}; lag when the units froze: "
             f"{lag.get('changes', 0)} changes"
             + (f" (~{lag_s * 1000:.0f} ms)" if lag_s is not None else ""))
        _say(f"write pause: p50 {ms(p['p50'])}, p99 {ms(p['p99'])} over {p['count']} waiting writes "
             f"(units frozen {ms(res['unit_pause_seconds'])})")
        ft = res.get("fence_timings") or {}
        if ft:
            _say("fence (ms since the freeze): " + ", ".join(f"{k} {v * 1000:.0f}" for k, v in ft.items()))
        _say(f"verify: {v.get('rows', 0):,} rows in {v.get('units', 0)} units, {v.get('mismatches', 0)} mismatches")
        _say(f"stale-route retries: {res['stale_retries']}; retained copies cleaned up: {res['cleaned']:,}")
        _say(f"acknowledged writes: {res['acknowledged']:,}, lost: {res['lost']}, duplicated: {res['duplicated']}")
        if res["writer_errors"]:
            _say("writer errors: " + "; ".join(res["writer_errors"][:5]))
    ok = res["lost"] == 0 and res["duplicated"] == 0 and res["misplaced"] == 0 and not res["writer_errors"]
    return 0 if ok else 1
