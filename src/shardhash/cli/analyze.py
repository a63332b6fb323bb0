"""``shardhash analyze``: load, skew and hot keys of an ids file."""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .common import (
    UsageError,
    add_ids_options,
    add_json,
    command_parser,
    echo,
    file_error,
    format_table,
    fraction_arg,
    ids_path,
    ids_progress,
    open_ids_file,
    positive_float,
    positive_int,
    read_router,
    resolve_key_type,
    write_json,
)


def cmd_analyze(args: argparse.Namespace) -> int:

    if args.propose_hot_set and not args.topology:
        raise UsageError("analyze: --propose-hot-set needs --topology (the router whose shards the hot keys' "
                         "sub-keys are placed on)")
    router = read_router(args.topology) if args.topology else None
    kt = resolve_key_type(args, router)
    if kt is None and router is None:
        kt = "str"  # without a topology, ids are only counted: their exact text is the key
    measures = _analyze_measures(args)
    with contextlib.ExitStack() as stack:
        path = ids_path(args, args.ids, stack)
        # One reader per numeric column (a reader carries one), read in
        # lockstep: the same file and chunk size give the same chunks.
        readers = [open_ids_file(args, path, id_type=kt, weights=col) for _, col in measures] or \
            [open_ids_file(args, path, id_type=kt)]
        return _analyze(args, readers, router, measures)


def _analyze_measures(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``[(label, column)]`` of the numeric columns to add up: ``--weights``
    (labelled by its column), ``--bytes``, ``--requests``."""
    out: list[tuple[str, str]] = []
    for label, col in ((args.weights, args.weights), ("bytes", args.bytes), ("requests", args.requests)):
        if col is None:
            continue
        if label in [lab for lab, _ in out] or col in [c for _, c in out]:
            raise UsageError(f"analyze: column {col!r} given twice (--weights, --bytes, --requests "
                             "must name different columns)")
        out.append((label, col))
    return out


def _lockstep(readers: list[Any], path: str) -> Iterator[tuple[np.ndarray, list[np.ndarray | None]]]:
    """``(ids, [weights of each reader])`` per chunk of the first reader."""
    its = [iter(r) for r in readers]
    for first in its[0]:
        ws = [first.weights]
        for it in its[1:]:
            other = next(it, None)
            if other is None or len(other.ids) != len(first.ids):
                raise ValueError(f"{path}: the file changed while it was read")
            ws.append(other.weights)
        yield first.ids, ws


def _analyze(args: argparse.Namespace, readers: list[Any], router: Any, measures: list[tuple[str, str]]) -> int:
    from ..analysis import HeavyHitters, imbalance

    labels = [lab for lab, _ in measures]
    # Hot keys by the first measure given (by count without one), and by
    # each other measure.
    hhs = [HeavyHitters(args.capacity) for _ in range(max(1, len(measures)))]
    total = 0
    sums = [0.0] * len(measures)
    n_sh = 0 if router is None else len(router.shards)
    counts = None if router is None else np.zeros(n_sh, dtype=np.int64)
    loads = [np.zeros(n_sh) for _ in measures] if router is not None else []
    reader = readers[0]
    t0 = time.perf_counter()
    try:
        with ids_progress(reader, "analyzing", not args.quiet) as advance:
            for ids, ws in _lockstep(readers, reader.path):
                for j, hh in enumerate(hhs):
                    hh.update(ids, ws[j] if measures else None)
                total += len(ids)
                for j, w in enumerate(ws if measures else []):
                    if w is not None:
                        sums[j] += float(w.sum())
                if router is not None:
                    idx = router.route_many(ids, threads=args.threads)
                    assert counts is not None
                    counts += np.bincount(idx, minlength=n_sh)
                    for j, w in enumerate(ws if measures else []):
                        loads[j] += np.bincount(idx, weights=w, minlength=n_sh)
                advance(len(ids))
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(file_error(args.ids, reader.path, exc)) from None
    elapsed = time.perf_counter() - t0
    out: dict[str, Any] = {"ids": args.ids, "rows": total, "seconds": elapsed}
    if args.weights:
        out["weight_total"] = sums[0]
    for lab, v in zip(labels, sums):
        if lab in ("bytes", "requests"):
            out[f"{lab}_total"] = v
    # Request rate: requests (or rows, one request each) per second of --duration.
    req_j = labels.index("requests") if "requests" in labels else None
    if args.duration is not None:
        out["duration"] = args.duration
        out["requests_per_second"] = (sums[req_j] if req_j is not None else total) / args.duration

    # Hot keys: only those whose guaranteed count exceeds the error bound
    # (below it, a key may be no more frequent than any other).
    def hot(hh: HeavyHitters, weighted: bool) -> tuple[list[tuple[Any, float, float]], list[dict[str, Any]]]:
        num: Callable[[float], Any] = (lambda v: float(v)) if weighted else (lambda v: int(round(v)))
        top = [(k, lo, hi) for k, lo, hi in hh.top(args.top) if lo > hh.error]
        return top, [{"key": k, "count_at_least": num(lo), "count_at_most": num(hi)} for k, lo, hi in top]

    tops = [hot(hh, bool(measures)) for hh in hhs]
    out["hot_keys"] = tops[0][1]
    out["hot_key_error_bound"] = float(hhs[0].error) if measures else int(round(hhs[0].error))
    if len(measures) > 1:
        out["hot_keys_by"] = {lab: {"hot_keys": t[1], "error_bound": float(hh.error)}
                              for lab, t, hh in zip(labels, tops, hhs)}
    proposed: dict[Any, int] | None = None
    if args.propose_hot_set:
        from ..hotkeys import propose_hot_set

        assert router is not None  # checked by cmd_analyze
        proposed = propose_hot_set(hhs[0], router, headroom=args.headroom, capacity=args.capacity)
        out["proposed_hot_set"] = [[k, n] for k, n in proposed.items()]
    if router is not None:
        assert counts is not None
        shards_out: dict[str, dict[str, Any]] = {}
        for i, s in enumerate(router.shards):
            row: dict[str, Any] = {"keys": int(counts[i])}
            for lab, load in zip(labels, loads):
                row[lab] = float(load[i])
            if args.duration is not None:
                row["requests_per_second"] = float(loads[req_j][i] if req_j is not None else counts[i]) \
                    / args.duration
            shards_out[s] = row
        out["shards"] = shards_out
        out["imbalance"] = imbalance(counts)
        if args.weights:
            out["weighted_imbalance"] = imbalance(loads[0])
        for lab, load in zip(labels, loads):
            if lab in ("bytes", "requests"):
                out[f"{lab}_imbalance"] = imbalance(load)
    if args.json:
        write_json(out)
        return 0
    head = f"{args.ids}: {total:,} ids"
    for lab, v in zip(labels, sums):
        head += f", {lab} total {v:,.0f}"
    if args.duration is not None:
        head += f", {out['requests_per_second']:,.1f} requests/s over {args.duration:g} s"
    echo(head)
    if router is not None:
        assert counts is not None
        rows = []
        for i, s in enumerate(router.shards):
            row_t = [s, f"{int(counts[i]):,}", f"{counts[i] / max(total, 1):.2%}"]
            for j, load in enumerate(loads):
                row_t.append(f"{load[i]:,.0f}")
                row_t.append(f"{load[i] / sums[j]:.2%}" if sums[j] else "-")
            if args.duration is not None:
                row_t.append(f"{out['shards'][s]['requests_per_second']:,.1f}")
            rows.append(row_t)
        echo("")
        cols = ["shard", "keys", "share"]
        for lab in labels:
            cols += [lab, "share"]
        if args.duration is not None:
            cols.append("requests/s")
        echo(format_table(cols, rows))
        imb = out["imbalance"]
        line = f"max/mean {imb['max_mean']:.4f}   cv {imb['cv']:.4f}"
        for lab, load in zip(labels, loads):
            li = imbalance(load)
            line += f"   {lab}: max/mean {li['max_mean']:.4f} cv {li['cv']:.4f}"
        echo(line)
    for j, (top, _) in enumerate(tops):
        echo("")
        what = labels[j] if measures else "count"
        err = hhs[j].error
        echo(f"hot keys by {what} (Misra-Gries, {args.capacity} counters; true value in [low, high], "
             f"error <= {err:,.0f}):")
        if top:
            echo(format_table(["key", "low", "high"], [(k, f"{lo:,.0f}", f"{hi:,.0f}") for k, lo, hi in top]))
        else:
            echo("(no key stands out: every count is within the error bound)")
    if proposed is not None:
        echo("")
        by = labels[0] if measures else "count"
        echo(f"proposed hot set (by {by}; one key at most {args.headroom:g} x the mean shard load on a shard):")
        if proposed:
            echo(format_table(["key", "fan-out"], [(k, str(n)) for k, n in proposed.items()]))
        else:
            echo("(none: no key puts that much on one shard)")
    return 0


@command_parser("analyze", cmd_analyze, help="load, skew and hot keys of an ids file",
                description="Count ids, find hot keys (Misra-Gries heavy hitters) and, with --topology, "
                "the load per shard: by count, and by bytes, requests and request rate when those "
                "columns (and --duration) are given.")
def _build_analyze(a: argparse.ArgumentParser) -> None:
    a.add_argument("ids", help="ids file, or - for stdin")
    a.add_argument("--topology", help="also count ids per shard of this topology (default: no per-shard load)")
    a.add_argument("--weights", metavar="COLUMN", help="numeric column to weigh keys by: load per shard and hot "
                   "keys by it (default: counts)")
    a.add_argument("--bytes", metavar="COLUMN", help="column of each row's size in bytes: load by bytes per shard "
                   "and hot keys by bytes (default: none)")
    a.add_argument("--requests", metavar="COLUMN", help="column of each row's request count: load by requests per "
                   "shard and hot keys by requests (default: none)")
    a.add_argument("--duration", metavar="SECONDS", type=positive_float,
                   help="time the rows cover: reports requests per second, per shard and in all (the "
                   "--requests column, or one request per row without it) (default: no rates)")
    a.add_argument("--propose-hot-set", action="store_true",
                   help="with --topology: propose a hot set {key: fan-out} for a HotKeyRouter from the hot keys "
                   "(by the first of --weights/--bytes/--requests, else by count)")
    a.add_argument("--headroom", type=fraction_arg, default=0.5,
                   help="with --propose-hot-set: the share of the mean per-shard load one key may put on a "
                   "shard (default: 0.5)")
    a.add_argument("--top", type=positive_int, default=10, help="hot keys to show at most")
    a.add_argument("--capacity", type=positive_int, default=10_000, help="heavy-hitter counters")
    add_json(a)
    add_ids_options(a, required_type=False)

