"""``shardhash plan``: what moves from one topology to another (tables, ``--json``, ``--moves``, ``--plot``)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .common import (
    REPLICA_SAMPLE,
    UsageError,
    abort_on_error,
    add_ids_options,
    add_json,
    command_parser,
    echo,
    exc_text,
    file_error,
    fmt_bounds,
    fmt_pct,
    format_table,
    ids_path,
    ids_progress,
    open_ids_file,
    output_errors,
    plan_warnings,
    positive_int,
    read_router,
    refuse_overwrite,
    replica_lines,
    replica_report,
    resolve_key_type,
    share_arg,
    write_json,
)


def _balance(router: Any, load: dict[str, float]) -> dict[str, Any]:
    """Load against the router's target share (weights count): 1.0 is on target."""
    from ..plan import target_shares

    tgt = target_shares(router)
    tot = sum(load.values()) or 1.0
    per = {s: (load.get(s, 0.0) / tot) / tgt[s] if tgt[s] else None for s in router.shards}
    vals = [v for v in per.values() if v is not None]
    return {"load_over_target": per, "max_load_over_target": max(vals) if vals else None}


def cmd_plan(args: argparse.Namespace) -> int:
    from .. import plan

    old = read_router(args.old)
    new = read_router(args.new)
    if args.weights and not args.ids:
        raise UsageError("--weights needs --ids")
    if args.moves and not args.ids:
        raise UsageError("--moves needs --ids (per-key moves are written for the ids given)")
    for o in (args.moves, args.plot):
        refuse_overwrite(o, [(args.ids, "ids file"), (args.old, "old topology"), (args.new, "new topology")])
    if args.moves and args.plot:
        from ..io import same_file

        if same_file(args.moves, args.plot):
            raise UsageError("--moves and --plot name the same file")
    out: dict[str, Any] = {"old": args.old, "new": args.new, "old_version": old.version,
                           "new_version": new.version, "ids": args.ids, "rows": None, "distinct_keys": None,
                           "report": None,
                           "ideal_fraction": plan.ideal_fraction(old, new), "moved_share": None,
                           "moved_ranges": None, "balance": None, "steps": None, "steps_error": None,
                           "warnings": []}
    report = None
    ranges = None
    wrote: list[str] = []  # (what --moves and --plot wrote: on stderr, as `route` reports its output)
    if args.ids:
        kt = resolve_key_type(args, old, new)
        with contextlib.ExitStack() as stack:
            path = ids_path(args, args.ids, stack)
            reader = open_ids_file(args, path, id_type=kt, weights=args.weights)
            writer = None
            if args.moves:
                col = reader.column if isinstance(reader.column, str) else "id"
                with output_errors():
                    writer = plan.MovesWriter(args.moves, old, new, id_column=col or "id",
                                              weight_column=args.weights or "weight")
            distinct = _Distinct(writer)
            with abort_on_error(writer):
                try:
                    with ids_progress(reader, "planning", not args.quiet) as advance:
                        report = plan.diff(old, new, reader, chunk_size=args.chunk_size, threads=args.threads,
                                           on_chunk=distinct, progress=advance, replicas=args.replicas)
                except (ValueError, TypeError, OverflowError) as exc:
                    raise UsageError(file_error(args.ids, path, exc)) from None
            if writer is not None:
                writer.close()
                wrote.append(f"wrote {writer.rows:,} moved id(s) (id, source, destination) to {args.moves}")
        out["report"] = report.to_dict()
        out["rows"] = report.total
        out["distinct_keys"] = distinct.count()
        out["moved_share"] = report.moved_fraction
        load_b = dict(zip(report.old_shards, map(float, report.before)))
        load_a = dict(zip(report.new_shards, map(float, report.after)))
        out["balance"] = {"before": _balance(old, load_b), "after": _balance(new, load_a)}
    try:
        steps = plan.plan_steps(old, new, max_step_share=args.max_step_share,
                                total_keys=report.total if report else None,
                                total_bytes=(report.weighted_matrix.sum() if report is not None
                                             and report.weighted_matrix is not None else None))
    except plan.TooManySteps as exc:
        raise UsageError(f"--max-step-share: {exc_text(exc).removeprefix('max_step_share ')}") from None
    except ValueError as exc:
        steps = None
        out["steps_error"] = exc_text(exc)
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
            raise UsageError(f"{exc_text(exc)}; give --ids FILE to plan over real ids") from None
        out["moved_share"] = sum(m.share for m in ranges)
        out["moved_ranges"] = [m.to_dict() for m in ranges]
        out["balance"] = {"before": _balance(old, _space_shares(old)), "after": _balance(new, _space_shares(new))}
    out["warnings"] = plan_warnings(old, new, out["moved_share"])
    replica_rep = None
    if args.replicas is not None:
        replica_rep = report if report is not None else replica_report(old, new, args.replicas, args.threads)
        out["replicas"] = replica_rep.to_dict()["replicas"]
        if report is None:
            out["replicas"]["sampled_ids"] = replica_rep.total
    if steps is not None:
        out["steps"] = [s.to_dict() for s in steps]
    if args.plot:
        _plot_plan(args.plot, old, new, report, ranges, args.weights)
        wrote.append(f"wrote the plot (load before/after, move matrix) to {args.plot}")
    for line in wrote:
        print(line, file=sys.stderr)
    if args.json:
        write_json(out)
        return 0
    _print_plan(old, new, report, ranges, steps, args, out)
    if replica_rep is not None:
        echo("")
        for line in replica_lines(replica_rep, report is None):
            echo(line)
    return 0


def _print_plan(old: Any, new: Any, report: Any, ranges: Any, steps: Any, args: argparse.Namespace,
                out: dict[str, Any]) -> None:
    echo(f"old: {type(old).__name__} v{old.version} ({len(old.shards)} shards)   "
         f"new: {type(new).__name__} v{new.version} ({len(new.shards)} shards)")
    for w in out["warnings"]:
        echo(f"warning: {w}")
    bal = out["balance"]

    def _lt(b: dict[str, Any], s: str) -> str:
        v = b["load_over_target"].get(s)
        return "" if v is None else f"{v:.3f}"


    def _balance_line() -> None:
        if bal is not None:
            mb, ma = bal["before"]["max_load_over_target"], bal["after"]["max_load_over_target"]
            echo(f"balance, max load / target share (1.0 is on target; shard weights count): "
                 f"before {mb:.4f}  after {ma:.4f}")

    if report is not None:
        dk = out.get("distinct_keys")
        echo(f"rows: {report.total:,} ({'distinct keys unknown' if dk is None else f'{dk:,} distinct keys'})   "
             f"moved: {report.moved:,} rows ({report.moved_fraction:.2%})   ideal: {report.ideal_fraction:.2%}")
        _balance_line()
        if report.weighted_matrix is not None:
            tot = float(report.weighted_matrix.sum())
            mw = report.moved_weight or 0.0
            echo(f"{args.weights}: {tot:,.0f} total, {mw:,.0f} moved ({(mw / tot if tot else 0):.2%})")
        echo("")
        echo("per shard (rows):")
        names = sorted(set(report.old_shards) | set(report.new_shards), key=lambda s: (s not in report.old_shards, s))
        before = dict(zip(report.old_shards, report.before.tolist()))
        after = dict(zip(report.new_shards, report.after.tolist()))
        echo(format_table(["shard", "before", "after", "load/target before", "load/target after"],
                    [(s, f"{before.get(s, 0):,}", f"{after.get(s, 0):,}",
                      _lt(bal["before"], s) if s in old.shards else "",
                      _lt(bal["after"], s) if s in new.shards else "") for s in names]))
        echo("")
        echo("move matrix (rows: old shard, columns: new shard):")
        mrows = [[s] + [f"{int(v):,}" for v in report.matrix[i]] for i, s in enumerate(report.old_shards)]
        echo(format_table(["old \\ new"] + list(report.new_shards), mrows))
    else:
        from .. import plan

        share = sum(m.share for m in ranges)
        echo(f"hash space moved: {fmt_pct(share)}   ideal: {fmt_pct(plan.ideal_fraction(old, new))}")
        _balance_line()
        by_pair: dict[tuple[str, str], list[Any]] = {}
        for m in ranges:
            by_pair.setdefault((m.source, m.destination), []).append(m)
        echo(format_table(["source", "destination", "pieces", "share"],
                    [(s, d, len(v), fmt_pct(sum(x.share for x in v))) for (s, d), v in sorted(by_pair.items())]))
        if ranges and len(ranges) <= 20:
            echo("")
            echo(format_table(["kind", "lo", "hi", "source", "destination", "share"],
                        [(m.kind if m.bucket is None else f"{m.kind} {m.bucket} mod {m.modulus}", m.lo, m.hi,
                          m.source, m.destination, fmt_pct(m.share)) for m in ranges]))
    if steps:
        echo("")
        echo(f"steps ({len(steps)}, at most {args.max_step_share:.2%} of the hash space each):")
        shown = steps[: args.max_steps_shown]
        rows: list[tuple[Any, ...]] = []
        for st in shown:
            if st.buckets is not None:
                what = f"{len(st.buckets)} buckets"
                if len(st.buckets) <= 3:
                    what = "bucket " + ",".join(map(str, st.buckets))
            elif st.ranges is not None:
                what = f"{len(st.ranges)} ranges in {fmt_bounds(st.lo, st.hi)}"
            else:
                what = fmt_bounds(st.lo, st.hi)
            rows.append((st.order, st.kind, st.source, st.destination, what, fmt_pct(st.share),
                         "" if st.est_keys is None else f"{st.est_keys:,.0f}"))
        echo(format_table(["#", "kind", "source", "destination", "what", "share",
                           "est. keys" if report is None else "est. rows"], rows))
        if len(steps) > len(shown):
            echo(f"... {len(steps) - len(shown)} more (use --json for all)")
    elif steps is not None:
        echo("")
        echo("nothing moves")


class _Distinct:
    """An ``on_chunk`` for :func:`shardhash.plan.diff` that counts the
    distinct keys (integer ids by value, others by a 64-bit hash of each key)
    and passes each chunk on to ``then`` (the ``--moves`` writer).  Keys are
    kept, 8 bytes each, up to ``LIMIT`` rows; past that the count is unknown."""

    LIMIT = 50_000_000

    def __init__(self, then: Any) -> None:
        self.then = then
        self.parts: list[np.ndarray] | None = []
        self.rows = 0

    def __call__(self, keys: Any, old_idx: np.ndarray, new_idx: np.ndarray, weights: np.ndarray | None) -> None:
        if self.parts is not None:
            self.rows += len(old_idx)
            part = None
            if self.rows <= self.LIMIT:
                if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu":
                    part = np.unique(keys)
                else:
                    try:
                        from .._hashing import Hasher

                        part = np.unique(Hasher("xxh64", seed=0x6469).hash_array(keys))
                    except (TypeError, ValueError):
                        part = None
            if part is None:
                self.parts = None
            else:
                self.parts.append(part)
        if self.then is not None:
            self.then(keys, old_idx, new_idx, weights)

    def count(self) -> int | None:
        if self.parts is None:
            return None
        if not self.parts:
            return 0
        kinds = {p.dtype.kind for p in self.parts}
        if len(kinds) > 1:  # (int chunks and hashed chunks: not comparable)
            return None
        return int(np.unique(np.concatenate(self.parts)).size)


def _space_shares(router: Any) -> dict[str, float]:
    """Share of the hash space each shard owns (exact for tables and ranges)."""
    from ..plan import target_shares

    t = router.bucket_table()
    if t is not None:
        c = np.bincount(t, minlength=len(router.shards)) / len(t)
        return {s: float(v) for s, v in zip(router.shards, c)}
    rng = router.hash_ranges()
    if rng is not None:
        out = {s: 0.0 for s in router.shards}
        for lo, hi, i in rng:
            out[router.shards[i]] += (hi - lo + 1) / 2**64
        return out
    return target_shares(router)


def _compact(v: float) -> str:
    """12, 1.2k, 3.4M; shares as percentages."""
    a = abs(v)
    if a == 0:
        return "0"
    if a < 1:
        return f"{v:.1%}" if a >= 0.001 else f"{v:.0e}"
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.3g}{suf}"
    return f"{v:.0f}"


def _thin_ticks(ax_set: Callable[..., Any], labels: Sequence[str], max_labels: int, **kw: Any) -> None:
    n = len(labels)
    step = max(1, math.ceil(n / max_labels))
    pos = list(range(0, n, step))
    ax_set(pos, [labels[i] for i in pos], **kw)


def _plot_plan(path: str, old: Any, new: Any, report: Any, ranges: Any, weights_column: str | None = None) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib; install it with: pip install 'shardhash[plot]'") from None
    from ..io import atomic_output
    from ..plan import target_shares

    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{path}: directory {parent!r} does not exist")
    so, sn = list(old.shards), list(new.shards)
    if report is not None:
        weighted = report.weighted_matrix is not None
        mat = (report.weighted_matrix if weighted else report.matrix).astype(float)
        before = {s: float(mat[i].sum()) for i, s in enumerate(so)}
        after = {s: float(mat[:, j].sum()) for j, s in enumerate(sn)}
        unit = weights_column if weighted and weights_column else "keys"
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
    # The move matrix shows what moves: a key that stays (same shard id) is
    # masked, so the colour scale is set by moved keys alone.
    moved = mat.copy()
    col_of = {s: j for j, s in enumerate(sn)}
    for i, s in enumerate(so):
        if s in col_of:
            moved[i, col_of[s]] = np.nan
    # Many shards: sum blocks of shards so each cell stays visible.
    max_cells = 60
    gr = max(1, math.ceil(len(so) / max_cells))
    gc = max(1, math.ceil(len(sn) / max_cells))
    rlabels, clabels = so, sn
    if gr > 1 or gc > 1:
        nr, nc = math.ceil(len(so) / gr), math.ceil(len(sn) / gc)
        blk = np.full((nr, nc), np.nan)
        for bi in range(nr):
            for bj in range(nc):
                cell = moved[bi * gr:(bi + 1) * gr, bj * gc:(bj + 1) * gc]
                if not np.all(np.isnan(cell)):
                    blk[bi, bj] = np.nansum(cell)
        moved = blk
        rlabels = [f"{so[bi * gr]}..{so[min(len(so), (bi + 1) * gr) - 1]}" if gr > 1 else so[bi] for bi in range(nr)]
        clabels = [f"{sn[bj * gc]}..{sn[min(len(sn), (bj + 1) * gc) - 1]}" if gc > 1 else sn[bj] for bj in range(nc)]
    names = list(dict.fromkeys(so + sn))
    n = len(names)
    x = np.arange(n)
    b = np.array([before.get(s, 0.0) for s in names])
    a = np.array([after.get(s, 0.0) for s in names])
    tgt_b, tgt_a = target_shares(old), target_shares(new)
    tb = np.array([tgt_b.get(s, 0.0) * float(b.sum()) for s in names])
    ta_ = np.array([tgt_a.get(s, 0.0) * float(a.sum()) for s in names])
    if n <= 60:
        width = max(12.0, 6 + 0.2 * n)
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(width, 6), gridspec_kw={"width_ratios": [1.4, 1]})
        ax1.bar(x - 0.2, b, 0.4, label="before")
        ax1.bar(x + 0.2, a, 0.4, label="after")
        ax1.scatter(x + 0.2, ta_, marker="_", s=max(60, 4000 / n), color="black", zorder=3,
                    label="target after (shard weights)")
        ax1.set_ylim(0, max(float(a.max(initial=0)), float(b.max(initial=0)), float(ta_.max(initial=0))) * 1.25 or 1)
        ax1.set_ylabel(unit)
        ax1.set_title(f"load per shard ({len(so)} -> {len(sn)} shards)")
        ax1.legend(fontsize="small", loc="upper center", ncol=3)
        ax1.set_xlim(-0.7, n - 0.3)
    else:
        # Too many shards for bars: each shard's load over its target share
        # (shard weights count), 1.0 on target.
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(14, 12), gridspec_kw={"height_ratios": [1, 1.6]})
        with np.errstate(divide="ignore", invalid="ignore"):
            rb = np.where(tb > 0, b / tb, np.nan)
            ra = np.where(ta_ > 0, a / ta_, np.nan)
        ax1.scatter(x, rb, s=6, label="before", alpha=0.7)
        ax1.scatter(x, ra, s=6, label="after", alpha=0.7)
        ax1.axhline(1.0, color="black", lw=0.8, ls="--", label="on target")
        ax1.set_ylabel(f"{unit} / target share")
        ax1.set_title(f"load over target per shard ({len(so)} -> {len(sn)} shards; shard weights count)")
        ax1.legend(fontsize="small", loc="upper right", ncol=3)
        ax1.set_xlim(-0.5, n - 0.5)
    _thin_ticks(ax1.set_xticks, names, 40, rotation=45 if n > 8 else 0, ha="right" if n > 8 else "center")
    cmap = matplotlib.colormaps["viridis"].copy()
    cmap.set_bad("#eeeeee")
    finite = moved[np.isfinite(moved)]
    vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    im = ax2.imshow(np.ma.masked_invalid(moved), cmap=cmap, vmin=0, vmax=vmax, aspect="auto",
                    interpolation="nearest")
    nr, nc = moved.shape
    _thin_ticks(ax2.set_xticks, clabels, 30, rotation=45 if nc > 6 else 0, ha="right" if nc > 6 else "center")
    _thin_ticks(ax2.set_yticks, rlabels, 30)
    if nr * nc <= 400:
        fs = 9 if nr * nc <= 64 else 7
        for i in range(nr):
            for j in range(nc):
                v = moved[i, j]
                if np.isfinite(v) and v > 0:
                    ax2.text(j, i, _compact(v), ha="center", va="center", fontsize=fs,
                             color="white" if v < 0.6 * vmax else "black")
    ax2.set_xlabel("new shard" + (f" (blocks of {gc})" if gc > 1 else ""))
    ax2.set_ylabel("old shard" + (f" (blocks of {gr})" if gr > 1 else ""))
    ax2.set_title("moved " + unit + " (grey: stays on its shard)")
    fig.colorbar(im, ax=ax2, label="moved " + unit)
    fig.tight_layout()
    try:
        with atomic_output(path) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot write the plot ({exc_text(exc)})") from None
    finally:
        plt.close(fig)


@command_parser("plan", cmd_plan, help="what moves from one topology to another",
                description="Compare two topologies: the share of the hash space (or of the given ids) "
                "that changes owner, the balance after, and ordered migration steps.")
def _build_plan(pl: argparse.ArgumentParser) -> None:
    pl.add_argument("old", help="the current topology document (.json)")
    pl.add_argument("new", help="the proposed topology document (.json), e.g. from `shardhash topology add`")
    pl.add_argument("--ids", help="ids file to count moves over (default: the hash-space view, no ids)")
    pl.add_argument("--weights", metavar="COLUMN", help="numeric column to weigh moves by (bytes, requests) "
                    "(default: every id counts 1)")
    add_json(pl)
    pl.add_argument("--moves", metavar="FILE", help="write moved ids (id, source, destination) to .parquet/.csv "
                    "(default: not written)")
    pl.add_argument("--plot", metavar="FILE.png", help="draw load before/after and the move matrix "
                    "(default: no plot)")
    pl.add_argument("--max-step-share", type=share_arg, default=0.02, help="cap per step, share of the hash space")
    pl.add_argument("--max-steps-shown", type=positive_int, default=30, help="steps printed in the table")
    pl.add_argument("--replicas", type=positive_int, default=None, metavar="N",
                    help="also count the (key, replica) placements of N-replica lists that move, per shard in "
                    f"and out (over --ids, else {REPLICA_SAMPLE:,} synthetic ids) (default: not counted)")
    add_ids_options(pl)

