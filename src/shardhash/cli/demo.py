"""``shardhash demo``: compare strategies when a fifth shard joins four (``--migrate``: a live migration;
``--saga``: transfers as sagas across shards)."""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .common import (
    UsageError,
    add_json,
    command_parser,
    echo,
    format_table,
    positive_float,
    positive_int,
    progress_bar,
    write_json,
)


def run_demo(n_keys: int, *, threads: int | None = None, seed: int = 2024,
             progress: Callable[..., None] | None = None) -> dict[str, Any]:
    """Route ``n_keys`` synthetic user ids over 4 shards then 5, per strategy."""
    from .. import plan, routing

    rng = np.random.default_rng(seed)
    keys = rng.integers(1, 1 << 62, size=n_keys, dtype=np.int64)
    four = [f"shard-{i}" for i in range(4)]
    fifth = "shard-4"
    starts: list[tuple[str, Any]] = [
        ("modulo", routing.ModuloRouter(four)),
        ("jump", routing.JumpRouter(four)),
        ("ring", routing.RingRouter(four)),
        ("buckets", routing.BucketRouter(four, buckets=4096)),
        ("rendezvous", routing.RendezvousRouter(four)),
        # Maglev keeps its table size across changes (65537, the paper's size).
        ("maglev", routing.MaglevRouter(four, table_size=65537)),
    ]
    rows = []
    for k, (name, old) in enumerate(starts, 1):
        if progress is not None:
            progress(0, f"{name} ({k}/{len(starts)})")
        new, steps = plan.add_shards(old, fifth)
        t_route = math.inf
        for _ in range(2):  # best of two: the first run also warms caches up
            t0 = time.perf_counter()
            new.route_many(keys, threads=threads)
            t_route = min(t_route, time.perf_counter() - t0)
        t0 = time.perf_counter()
        rep = plan.diff(old, new, keys, threads=threads)
        t_diff = time.perf_counter() - t0
        rows.append({
            "strategy": name,
            "router": type(new).__name__,
            "moved_fraction": rep.moved_fraction,
            "ideal_fraction": rep.ideal_fraction,
            "moved_over_ideal": rep.moved_fraction / rep.ideal_fraction if rep.ideal_fraction else None,
            "max_mean_before": rep.imbalance_before["max_mean"],
            "max_mean_after": rep.imbalance_after["max_mean"],
            "cv_after": rep.imbalance_after["cv"],
            "route_mkeys_per_s": n_keys / t_route / 1e6 if t_route else None,
            "diff_seconds": t_diff,
            "steps": len(steps),
        })
        if progress is not None:
            progress(1)
    return {"keys": n_keys, "old_shards": four, "new_shards": four + [fifth], "strategies": rows}


def cmd_demo(args: argparse.Namespace) -> int:
    if args.migrate and args.saga:
        raise UsageError("--migrate and --saga are two demos: pick one")
    if args.migrate:
        from ..migrate.demo import main as migrate_demo

        return migrate_demo(args)
    if args.saga:
        from ..saga.demo import main as saga_demo

        return saga_demo(args)
    if args.keys < 1:
        raise UsageError(f"--keys must be >= 1, got {args.keys}")
    t0 = time.perf_counter()
    with progress_bar(6, f"demo over {args.keys:,} ids", not args.quiet, unit="strategies") as advance:
        res = run_demo(args.keys, threads=args.threads, progress=advance)
    res["seconds"] = time.perf_counter() - t0
    if args.json:
        write_json(res)
        return 0
    echo(f"{args.keys:,} synthetic user ids; 4 shards -> 5 shards (one joins); "
         f"ideal: the new shard takes its fair share, {res['strategies'][0]['ideal_fraction']:.0%} of keys")
    echo("")
    rows = []
    for r in res["strategies"]:
        rows.append((
            r["strategy"],
            f"{r['moved_fraction']:.2%}",
            f"{r['moved_over_ideal']:.2f}x",
            f"{r['max_mean_after']:.4f}",
            f"{r['cv_after']:.4f}",
            f"{r['route_mkeys_per_s']:.0f}",
        ))
    echo(format_table(["strategy", "moved", "vs ideal", "max/mean (5)", "cv (5)", "Mkeys/s"], rows))
    echo("")
    echo("moved: share of ids whose shard changes; max/mean: the fullest shard over the average "
         "(1.0 is perfect);")
    echo("Mkeys/s: route_many on the 5-shard router (hash + placement), this machine.")
    echo(f"total {res['seconds']:.1f} s")
    return 0



@command_parser("demo", cmd_demo, help="compare strategies when a fifth shard joins four",
                description="Route synthetic user ids over 4 shards, add a fifth, and compare how many "
                "keys each strategy moves, how even the load stays and how fast it routes.")
def _build_demo(d: argparse.ArgumentParser) -> None:
    d.add_argument("--keys", type=positive_int, default=10_000_000, help="number of synthetic ids")
    add_json(d, "a table")
    d.add_argument("--migrate", action="store_true",
                   help="instead: a live migration on SQLite shards under eight writers (docs/migrate.md)")
    d.add_argument("--saga", action="store_true",
                   help="instead: transfers as sagas between accounts on SQLite shards, a shard joining and a "
                        "worker killed midway (docs/saga.md)")
    d.add_argument("--accounts", type=positive_int, default=100_000, help="--saga: number of accounts")
    d.add_argument("--workers", type=positive_int, default=8, help="--saga: worker processes")
    d.add_argument("--seconds", type=positive_float, default=20.0, help="--saga: how long the workers run")


