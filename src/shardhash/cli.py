"""The ``shardhash`` command.

    shardhash demo [--keys N]                 compare strategies when a 5th shard joins 4
    shardhash topology new STRATEGY --shards a,b,c [--output FILE]
    shardhash topology show|validate FILE
    shardhash topology add|remove FILE --shards d [--output FILE]
    shardhash route TOPOLOGY IDS --output FILE
    shardhash plan OLD NEW [--ids FILE] [--weights COLUMN] [--json] [--moves FILE] [--plot FILE.png]
    shardhash analyze IDS [--topology FILE] [--weights COLUMN] [--top K]

Bad input (a missing file, a wrong column, a corrupt or mismatched topology)
gives one line on stderr and exit status 2; internal failures exit with 1.
Progress bars (rich) appear only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

__all__ = ["main"]

PROG = "shardhash"


class UsageError(Exception):
    """Bad input from the user: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        raise UsageError(f"{self.prog}: {message} (see --help)")


# ------------------------------------------------------------------ helpers


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


@contextlib.contextmanager
def _progress(total: int | None, label: str, enabled: bool) -> Iterator[Callable[[int], None]]:
    """A progress callback: a rich bar on a terminal, nothing otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield lambda n: None
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        yield lambda n: None
        return
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*cols, console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task(label, total=total)
        yield lambda n: prog.advance(task, n)


def _load_router(path: str) -> Any:
    from .routing import load_router

    if not os.path.exists(path):
        raise UsageError(f"{path}: no such topology file")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a topology file")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a topology document (not UTF-8 text)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    try:
        return load_router(doc)
    except (ValueError, TypeError, KeyError) as exc:
        raise UsageError(f"{path}: invalid topology: {_msg(exc)}") from None


def _msg(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, KeyError) and text:
        return f"missing field {text[0]}"
    return text[0] if text else type(exc).__name__


def _open_ids(args: argparse.Namespace, path: str, weights: str | None = None) -> Any:
    from .io import open_ids

    try:
        return open_ids(path, column=args.column, weights=weights, chunk_size=args.chunk_size,
                        format=args.format, id_type=args.id_type)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such ids file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not an ids file") from None
    except (ValueError, TypeError, ImportError) as exc:
        raise UsageError(_msg(exc)) from None


def _write_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=_json_default)
    sys.stdout.write("\n")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, bytes):
        return o.hex()
    return str(o)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for k, r in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if k and i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _pct(x: float) -> str:
    """A share as a percentage that stays readable for tiny shares."""
    if x == 0:
        return "0%"
    if abs(x) >= 1e-4:
        return f"{x:.4%}"
    return f"{x * 100:.3g}%"


def _bounds(lo: int, hi: int) -> str:
    if hi < 10**6:
        return f"[{lo}, {hi}]"
    return f"[{lo:#018x}, {hi:#018x}]"


def _split_ids(text: str, what: str) -> list[str]:
    ids = [s.strip() for s in text.split(",") if s.strip()]
    if not ids:
        raise UsageError(f"{what}: give at least one shard id (comma separated)")
    return ids


def _parse_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, val = part.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--shard-weights: expected id=weight pairs, got {part!r}")
        try:
            w = float(val)
        except ValueError:
            raise UsageError(f"--shard-weights: weight {val!r} for {name.strip()!r} is not a number") from None
        if not math.isfinite(w) or w <= 0:
            raise UsageError(f"--shard-weights: weight for {name.strip()!r} must be finite and > 0, got {val}")
        out[name.strip()] = w
    return out


def _write_text(path: str | None, text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{path}: directory {parent!r} does not exist")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")


# -------------------------------------------------------------- topology


def _make_router(args: argparse.Namespace) -> Any:
    from . import routing
    from .hashing import Hasher

    shards = _split_ids(args.shards, "--shards")
    weights = _parse_weights(args.shard_weights)
    hasher = Hasher(args.algorithm, seed=args.seed)
    s = args.strategy
    kw: dict[str, Any] = {"hasher": hasher}
    r: Any
    if s == "modulo":
        r = routing.ModuloRouter(shards, **kw)
    elif s == "jump":
        r = routing.JumpRouter(shards, **kw)
    elif s == "ring":
        r = routing.RingRouter(shards, vnodes=args.vnodes, weights=weights, **kw)
    elif s == "rendezvous":
        r = routing.RendezvousRouter(shards, weights=weights, **kw)
    elif s == "maglev":
        r = routing.MaglevRouter(shards, table_size=args.table_size, weights=weights, **kw)
    elif s == "buckets":
        from .plan import _balanced_placement

        if args.buckets < len(shards):
            raise UsageError(f"--buckets {args.buckets} is fewer than the {len(shards)} shards")
        placement = _balanced_placement([shards[0]] * args.buckets, shards, weights)
        # Contiguous blocks read better in a placement table than round-robin.
        placement = [p for s_ in shards for p in [s_] * placement.count(s_)]
        r = routing.BucketRouter(shards, placement, **kw)
    elif s == "hashrange":
        n = len(shards)
        splits = [(1 << 64) * i // n for i in range(1, n)]
        r = routing.HashRangeRouter(splits, shards, **kw)
    else:  # pragma: no cover - argparse restricts the choices
        raise UsageError(f"unknown strategy {s!r}")
    return r


def cmd_topology(args: argparse.Namespace) -> int:
    if args.action == "new":
        try:
            r = _make_router(args)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"topology new: {_msg(exc)}") from None
        _write_text(args.output, r.to_json())
        return 0
    r = _load_router(args.file)
    if args.action == "validate":
        _out(f"{args.file}: valid {type(r).__name__} topology, {len(r.shards)} shards, "
             f"version {r.version}, fingerprint {r.fingerprint}")
        return 0
    if args.action == "show":
        if args.json:
            _write_json(r.to_dict())
            return 0
        _out(f"strategy:    {type(r).__name__}")
        _out(f"version:     {r.version}")
        _out(f"fingerprint: {r.fingerprint}")
        _out(f"hasher:      {r.hasher!r}")
        _out(f"shards:      {', '.join(r.shards)}")
        from .plan import target_shares

        shares = target_shares(r)
        _out(_table(["shard", "target share"], [(s, f"{shares[s]:.4f}") for s in r.shards]))
        return 0
    # add / remove: planners
    from . import plan

    ids = _split_ids(args.shards, "--shards")
    try:
        if args.action == "add":
            new, steps = plan.add_shards(r, ids, weights=_parse_weights(args.shard_weights))
        else:
            new, steps = plan.remove_shards(r, ids)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"topology {args.action}: {_msg(exc)}") from None
    _write_text(args.output, new.to_json())
    print(f"{len(steps)} migration steps; run `shardhash plan` on the two topologies for details", file=sys.stderr)
    return 0


# ------------------------------------------------------------------ route


def cmd_route(args: argparse.Namespace) -> int:
    from .io import ChunkWriter

    router = _load_router(args.topology)
    reader = _open_ids(args, args.ids)
    try:
        writer = ChunkWriter(args.output)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        raise UsageError(_msg(exc)) from None
    col = reader.column or "id"
    shards = list(router.shards)
    with writer, _progress(reader.total_rows, "routing", not args.quiet) as advance:
        chunks = iter(reader)
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(_msg(exc)) from None
            try:
                idx = router.route_many(chunk.ids, threads=args.threads)
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(f"{args.ids}: cannot route these ids: {_msg(exc)}") from None
            writer.write({col: chunk.ids, args.shard_column: (idx, shards)})
            advance(len(idx))
    print(f"routed {writer.rows:,} ids to {args.output}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------- plan


def cmd_plan(args: argparse.Namespace) -> int:
    from . import plan

    old = _load_router(args.old)
    new = _load_router(args.new)
    if args.weights and not args.ids:
        raise UsageError("--weights needs --ids")
    if args.moves and not args.ids:
        raise UsageError("--moves needs --ids (per-key moves are written for the ids given)")
    out: dict[str, Any] = {"old": args.old, "new": args.new, "old_version": old.version,
                           "new_version": new.version}
    report = None
    ranges = None
    if args.ids:
        reader = _open_ids(args, args.ids, weights=args.weights)
        writer = None
        if args.moves:
            try:
                writer = plan.MovesWriter(args.moves, old, new, id_column=reader.column or "id",
                                          weight_column=args.weights or "weight")
            except (ValueError, FileNotFoundError, ImportError) as exc:
                raise UsageError(_msg(exc)) from None

        try:
            with _progress(reader.total_rows, "planning", not args.quiet) as advance:
                report = plan.diff(old, new, reader, chunk_size=args.chunk_size, threads=args.threads,
                                   on_chunk=writer, progress=advance)
        except (ValueError, TypeError, OverflowError) as exc:
            raise UsageError(f"{args.ids}: {_msg(exc)}") from None
        finally:
            if writer is not None:
                writer.close()
        out["report"] = report.to_dict()
    try:
        steps = plan.plan_steps(old, new, max_step_share=args.max_step_share,
                                total_keys=report.total if report else None,
                                total_bytes=report.weighted_matrix.sum() if report is not None and report.weighted_matrix is not None else None)
    except ValueError as exc:
        steps = None
        out["steps_error"] = _msg(exc)
    if steps is not None and report is not None:
        # Share each pair's exact key counts out over its steps.
        pair = {(m["source"], m["destination"]): m for m in report.moves()}
        tot: dict[tuple[str, str], float] = {}
        for st in steps:
            tot[(st.source, st.destination)] = tot.get((st.source, st.destination), 0.0) + st.share
        for st in steps:
            p = (st.source, st.destination)
            m = pair.get(p)
            frac = st.share / tot[p] if tot[p] else 0.0
            st.est_keys = (m["keys"] if m else 0) * frac
            if m is not None and "weight" in m:
                st.est_bytes = m["weight"] * frac
    if report is None:
        try:
            ranges = plan.moved_ranges(old, new)
        except ValueError as exc:
            raise UsageError(f"{_msg(exc)}; give --ids FILE to plan over real ids") from None
        out["ideal_fraction"] = plan.ideal_fraction(old, new)
        out["moved_share"] = sum(m.share for m in ranges)
        out["moved_ranges"] = [m.to_dict() for m in ranges]
    if steps is not None:
        out["steps"] = [s.to_dict() for s in steps]
    if args.plot:
        _plot_plan(args.plot, old, new, report, ranges)
    if args.json:
        _write_json(out)
        return 0
    _print_plan(old, new, report, ranges, steps, args)
    return 0


def _print_plan(old: Any, new: Any, report: Any, ranges: Any, steps: Any, args: argparse.Namespace) -> None:
    _out(f"old: {type(old).__name__} v{old.version} ({len(old.shards)} shards)   "
         f"new: {type(new).__name__} v{new.version} ({len(new.shards)} shards)")
    if report is not None:
        _out(report.summary())
        if report.weighted_matrix is not None:
            tot = float(report.weighted_matrix.sum())
            mw = report.moved_weight or 0.0
            _out(f"{args.weights}: {tot:,.0f} total, {mw:,.0f} moved ({(mw / tot if tot else 0):.2%})")
        _out("")
        _out("per shard (keys):")
        names = sorted(set(report.old_shards) | set(report.new_shards), key=lambda s: (s not in report.old_shards, s))
        before = dict(zip(report.old_shards, report.before.tolist()))
        after = dict(zip(report.new_shards, report.after.tolist()))
        _out(_table(["shard", "before", "after"], [(s, f"{before.get(s, 0):,}", f"{after.get(s, 0):,}") for s in names]))
        _out("")
        _out("move matrix (rows: old shard, columns: new shard):")
        mrows = [[s] + [f"{int(v):,}" for v in report.matrix[i]] for i, s in enumerate(report.old_shards)]
        _out(_table(["old \\ new"] + list(report.new_shards), mrows))
    else:
        from . import plan

        share = sum(m.share for m in ranges)
        _out(f"hash space moved: {_pct(share)}   ideal: {_pct(plan.ideal_fraction(old, new))}")
        by_pair: dict[tuple[str, str], list[Any]] = {}
        for m in ranges:
            by_pair.setdefault((m.source, m.destination), []).append(m)
        _out(_table(["source", "destination", "pieces", "share"],
                    [(s, d, len(v), _pct(sum(x.share for x in v))) for (s, d), v in sorted(by_pair.items())]))
        if ranges and len(ranges) <= 20:
            _out("")
            _out(_table(["kind", "lo", "hi", "source", "destination", "share"],
                        [(m.kind if m.bucket is None else f"{m.kind} {m.bucket} mod {m.modulus}", m.lo, m.hi,
                          m.source, m.destination, _pct(m.share)) for m in ranges]))
    if steps:
        _out("")
        _out(f"steps ({len(steps)}, at most {args.max_step_share:.2%} of the hash space each):")
        shown = steps[: args.max_steps_shown]
        rows: list[tuple[Any, ...]] = []
        for st in shown:
            if st.buckets is not None:
                what = f"{len(st.buckets)} buckets"
                if len(st.buckets) <= 3:
                    what = "bucket " + ",".join(map(str, st.buckets))
            else:
                what = _bounds(st.lo, st.hi)
            rows.append((st.order, st.kind, st.source, st.destination, what, _pct(st.share),
                         "" if st.est_keys is None else f"{st.est_keys:,.0f}"))
        _out(_table(["#", "kind", "source", "destination", "what", "share", "est. keys"], rows))
        if len(steps) > len(shown):
            _out(f"... {len(steps) - len(shown)} more (use --json for all)")
    elif steps is not None:
        _out("")
        _out("nothing moves")


def _space_shares(router: Any) -> dict[str, float]:
    """Share of the hash space each shard owns (exact for tables and ranges)."""
    from .plan import _ranges_of, _table_of, target_shares

    t = _table_of(router)
    if t is not None:
        c = np.bincount(t, minlength=len(router.shards)) / len(t)
        return {s: float(v) for s, v in zip(router.shards, c)}
    rng = _ranges_of(router)
    if rng is not None:
        out = {s: 0.0 for s in router.shards}
        for lo, hi, i in rng:
            out[router.shards[i]] += (hi - lo + 1) / 2**64
        return out
    return target_shares(router)


def _plot_plan(path: str, old: Any, new: Any, report: Any, ranges: Any) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib; install it with: pip install 'shardhash[plot]'") from None
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{path}: directory {parent!r} does not exist")
    so, sn = list(old.shards), list(new.shards)
    if report is not None:
        mat = report.matrix.astype(float)
        before = dict(zip(so, report.before.tolist()))
        after = dict(zip(sn, report.after.tolist()))
        unit = "keys"
    else:
        mat = np.zeros((len(so), len(sn)))
        ta = _space_shares(old)
        for i, s in enumerate(so):
            if s in sn:
                mat[i, sn.index(s)] = ta[s]
        for m in ranges:
            i, j = so.index(m.source), sn.index(m.destination)
            mat[i, j] += m.share
            if m.source in sn:
                mat[i, sn.index(m.source)] -= m.share
        before = {s: float(mat[i].sum()) for i, s in enumerate(so)}
        after = {s: float(mat[:, j].sum()) for j, s in enumerate(sn)}
        unit = "share of hash space"
    names = list(dict.fromkeys(so + sn))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    x = np.arange(len(names))
    ax1.bar(x - 0.2, [before.get(s, 0) for s in names], 0.4, label="before")
    ax1.bar(x + 0.2, [after.get(s, 0) for s in names], 0.4, label="after")
    ax1.set_xticks(x, names, rotation=45, ha="right")
    ax1.set_ylabel(unit)
    ax1.set_title("load per shard")
    ax1.legend()
    im = ax2.imshow(mat, cmap="viridis")
    ax2.set_xticks(range(len(sn)), sn, rotation=45, ha="right")
    ax2.set_yticks(range(len(so)), so)
    ax2.set_xlabel("new shard")
    ax2.set_ylabel("old shard")
    ax2.set_title("move matrix")
    fig.colorbar(im, ax=ax2, label=unit)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot write the plot ({_msg(exc)})") from None
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- analyze


def cmd_analyze(args: argparse.Namespace) -> int:
    from .analysis import HeavyHitters, imbalance

    reader = _open_ids(args, args.ids, weights=args.weights)
    router = _load_router(args.topology) if args.topology else None
    hh = HeavyHitters(args.capacity)
    total = 0
    wsum = 0.0
    counts = None if router is None else np.zeros(len(router.shards), dtype=np.int64)
    wcounts = None if router is None or not args.weights else np.zeros(len(router.shards))
    t0 = time.perf_counter()
    try:
        with _progress(reader.total_rows, "analyzing", not args.quiet) as advance:
            for chunk in reader:
                hh.update(chunk.ids, chunk.weights)
                total += len(chunk.ids)
                if chunk.weights is not None:
                    wsum += float(chunk.weights.sum())
                if router is not None:
                    idx = router.route_many(chunk.ids, threads=args.threads)
                    counts += np.bincount(idx, minlength=len(router.shards))  # type: ignore[operator]
                    if wcounts is not None:
                        wcounts += np.bincount(idx, weights=chunk.weights, minlength=len(router.shards))
                advance(len(chunk.ids))
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(f"{args.ids}: {_msg(exc)}") from None
    elapsed = time.perf_counter() - t0
    out: dict[str, Any] = {"ids": args.ids, "rows": total, "seconds": elapsed}
    if args.weights:
        out["weight_total"] = wsum
    top = hh.top(args.top)
    out["hot_keys"] = [{"key": k, "count_at_least": lo, "count_at_most": hi} for k, lo, hi in top]
    out["hot_key_error_bound"] = hh.error
    if router is not None:
        assert counts is not None
        out["shards"] = {
            s: {"keys": int(counts[i]), **({args.weights: float(wcounts[i])} if wcounts is not None else {})}
            for i, s in enumerate(router.shards)
        }
        out["imbalance"] = imbalance(counts)
        if wcounts is not None:
            out["weighted_imbalance"] = imbalance(wcounts)
    if args.json:
        _write_json(out)
        return 0
    _out(f"{args.ids}: {total:,} ids" + (f", {args.weights} total {wsum:,.0f}" if args.weights else ""))
    if router is not None:
        assert counts is not None
        rows = []
        for i, s in enumerate(router.shards):
            row = [s, f"{int(counts[i]):,}", f"{counts[i] / max(total, 1):.2%}"]
            if wcounts is not None:
                row.append(f"{wcounts[i]:,.0f}")
            rows.append(row)
        _out("")
        _out(_table(["shard", "keys", "share"] + ([args.weights] if wcounts is not None else []), rows))
        imb = out["imbalance"]
        _out(f"max/mean {imb['max_mean']:.4f}   cv {imb['cv']:.4f}")
    _out("")
    what = args.weights or "count"
    _out(f"hot keys by {what} (Misra-Gries, {args.capacity} counters; true value in [low, high], "
         f"error <= {hh.error:,.0f}):")
    if top:
        _out(_table(["key", "low", "high"], [(k, f"{lo:,.0f}", f"{hi:,.0f}") for k, lo, hi in top]))
    else:
        _out("(no key stands out: every count is within the error bound)")
    return 0


# ------------------------------------------------------------------- demo


def run_demo(n_keys: int, *, threads: int | None = None, seed: int = 2024,
             progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Route ``n_keys`` synthetic user ids over 4 shards then 5, per strategy."""
    from . import plan, routing

    rng = np.random.default_rng(seed)
    keys = rng.integers(1, 1 << 62, size=n_keys, dtype=np.int64)
    four = [f"shard-{i}" for i in range(4)]
    fifth = "shard-4"
    starts: list[tuple[str, Any]] = [
        ("modulo", routing.ModuloRouter(four)),
        ("jump", routing.JumpRouter(four)),
        ("ring", routing.RingRouter(four)),
        ("buckets", routing.BucketRouter(four, [four[b * 4 // 4096] for b in range(4096)])),
        ("rendezvous", routing.RendezvousRouter(four)),
        # Maglev keeps its table size across changes (65537, the paper's size).
        ("maglev", routing.MaglevRouter(four, table_size=65537)),
    ]
    rows = []
    for name, old in starts:
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
    if args.keys < 1:
        raise UsageError(f"--keys must be >= 1, got {args.keys}")
    t0 = time.perf_counter()
    with _progress(6, f"demo over {args.keys:,} ids", not args.quiet) as advance:
        res = run_demo(args.keys, threads=args.threads, progress=advance)
    res["seconds"] = time.perf_counter() - t0
    if args.json:
        _write_json(res)
        return 0
    _out(f"{args.keys:,} synthetic user ids; 4 shards -> 5 shards (one joins); "
         f"ideal: the new shard takes its fair share, {res['strategies'][0]['ideal_fraction']:.0%} of keys")
    _out("")
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
    _out(_table(["strategy", "moved", "vs ideal", "max/mean (5)", "cv (5)", "Mkeys/s"], rows))
    _out("")
    _out("moved: share of ids whose shard changes; max/mean: the fullest shard over the average "
         "(1.0 is perfect);")
    _out("Mkeys/s: route_many on the 5-shard router (hash + placement), this machine.")
    _out(f"total {res['seconds']:.1f} s")
    return 0


# ----------------------------------------------------------------- parser


def _common_ids(p: argparse.ArgumentParser) -> None:
    p.add_argument("--column", help="id column (default: the first column)")
    p.add_argument("--format", choices=["csv", "parquet", "arrow", "npy", "text"],
                   help="file format (default: from the file name)")
    p.add_argument("--id-type", choices=["auto", "int", "str"], default="auto",
                   help="read ids as integers or text (default: integers when they all look like integers)")
    p.add_argument("--chunk-size", type=_positive_int, default=1 << 20, help="ids per chunk (default 1048576)")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return v


def _share(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (0 < v <= 1):
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return v


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(prog=PROG, description="Which shard owns this key? Routing, migration plans and analysis.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    common = _Parser(add_help=False)
    common.add_argument("--threads", type=_positive_int, default=None, help="threads (default: all cores for big inputs)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    d = sub.add_parser("demo", parents=[common], help="compare strategies when a fifth shard joins four")
    d.add_argument("--keys", type=int, default=10_000_000, help="number of synthetic ids (default 10,000,000)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(func=cmd_demo)

    t = sub.add_parser("topology", help="write, print or check topology documents")
    tsub = t.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    tsub.required = True
    tn = tsub.add_parser("new", help="write a new topology document")
    tn.add_argument("strategy", choices=["modulo", "jump", "ring", "rendezvous", "maglev", "buckets", "hashrange"])
    tn.add_argument("--shards", required=True, help="comma-separated logical shard ids")
    tn.add_argument("--shard-weights", help="id=weight,... (ring, rendezvous, maglev, buckets)")
    tn.add_argument("--vnodes", type=_positive_int, default=256, help="ring tokens per unit weight")
    tn.add_argument("--buckets", type=_positive_int, default=4096, help="bucket count (buckets)")
    tn.add_argument("--table-size", type=_positive_int, default=None, help="Maglev table size (a prime)")
    tn.add_argument("--algorithm", default="xxh3_64", help="hash algorithm (default xxh3_64)")
    tn.add_argument("--seed", type=int, default=0, help="hash seed")
    tn.add_argument("-o", "--output", help="file to write (default: stdout)")
    for name, helptext in (("show", "print a topology"), ("validate", "check a topology document")):
        x = tsub.add_parser(name, help=helptext)
        x.add_argument("file")
        x.add_argument("--json", action="store_true", help="print the canonical document")
    for name, helptext in (("add", "plan adding shards: write the new topology"),
                           ("remove", "plan removing shards: write the new topology")):
        x = tsub.add_parser(name, help=helptext)
        x.add_argument("file")
        x.add_argument("--shards", required=True, help="comma-separated shard ids")
        if name == "add":
            x.add_argument("--shard-weights", help="id=weight,... for the new shards")
        x.add_argument("-o", "--output", help="file to write (default: stdout)")
    t.set_defaults(func=cmd_topology)

    r = sub.add_parser("route", parents=[common], help="add a shard column to an ids file")
    r.add_argument("topology")
    r.add_argument("ids")
    r.add_argument("-o", "--output", required=True, help="output file (.parquet or .csv)")
    r.add_argument("--shard-column", default="shard", help="name of the added column (default: shard)")
    _common_ids(r)
    r.set_defaults(func=cmd_route)

    pl = sub.add_parser("plan", parents=[common], help="what moves from one topology to another")
    pl.add_argument("old")
    pl.add_argument("new")
    pl.add_argument("--ids", help="ids file to count moves over (without it: the hash-space view)")
    pl.add_argument("--weights", metavar="COLUMN", help="numeric column to weigh moves by (bytes, requests)")
    pl.add_argument("--json", action="store_true", help="machine-readable output")
    pl.add_argument("--moves", metavar="FILE", help="write moved ids (id, source, destination) to .parquet/.csv")
    pl.add_argument("--plot", metavar="FILE.png", help="draw load before/after and the move matrix")
    pl.add_argument("--max-step-share", type=_share, default=0.02, help="cap per step, share of the hash space")
    pl.add_argument("--max-steps-shown", type=_positive_int, default=30, help="steps printed in the table")
    _common_ids(pl)
    pl.set_defaults(func=cmd_plan)

    a = sub.add_parser("analyze", parents=[common], help="load, skew and hot keys of an ids file")
    a.add_argument("ids")
    a.add_argument("--topology", help="also count ids per shard of this topology")
    a.add_argument("--weights", metavar="COLUMN", help="numeric column (bytes, requests)")
    a.add_argument("--top", type=_positive_int, default=10, help="hot keys to show")
    a.add_argument("--capacity", type=_positive_int, default=10_000, help="heavy-hitter counters")
    a.add_argument("--json", action="store_true", help="machine-readable output")
    _common_ids(a)
    a.set_defaults(func=cmd_analyze)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    from .engines_cli import main as engines_main, wants_engine  # --engine dask|spark|ray
    if wants_engine(argv):
        return engines_main(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, MemoryError) as exc:
        print(f"{PROG}: error: {_msg(exc)}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"{PROG}: error: {_msg(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - never a traceback
        print(f"{PROG}: internal error: {type(exc).__name__}: {_msg(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
