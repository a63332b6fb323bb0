"""``shardhash migrate init|start|status|resume|pause|set|verify|cutover|rollback|cleanup``.

Every command takes ``--config CLUSTER`` (a TOML or JSON cluster file, see
:mod:`shardhash.migrate.cluster`).  Log lines carry the migration id and the
topology versions; ``--json`` prints machine-readable results.  The parser is
:mod:`shardhash.cli.migrate`; failures raise the ``UsageError`` of every
``shardhash`` command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ..cli.common import UsageError


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _latest(cluster: Any, group: str | None, action: str) -> str:
    from .executor import MigrationError

    g = cluster.group(group)
    ms = cluster.metadata.migrations(g.name)
    if not ms:
        raise MigrationError(f"group {g.name!r} has no migration recorded (nothing to {action}); "
                             f"start one with `shardhash migrate start`")
    return str(ms[-1]["id"])


def _new_router(cluster: Any, args: argparse.Namespace) -> Any:
    from .. import plan
    from ..routing import load_router
    from .executor import pending_router

    # (planned on top of any migration of the group that has not cut over yet)
    cur = pending_router(cluster, args.group)
    if args.to:
        return load_router(args.to)
    if _ids(args.add):
        return plan.add_shards(cur, _ids(args.add))[0]
    if args.remove:
        return plan.remove_shards(cur, args.remove.split(","))[0]
    raise ValueError("start needs --to ROUTER, --add IDS or --remove IDS")


def _ids(add: list[str] | str | None) -> list[str]:
    """The shard ids of ``--add`` (repeated, each comma-separated)."""
    if not add:
        return []
    return [x for a in ([add] if isinstance(add, str) else add) for x in a.split(",")]


def _new_shards(args: argparse.Namespace) -> dict[str, tuple[str, list[str]]] | None:
    """``--add ID --primary URL [--replica URL ...]`` (``--add ID --primary URL``
    repeated for several new shards): the shards to register."""
    prim = list(args.primary or [])
    if not prim:
        if args.replica:
            raise ValueError("--replica needs --add ID --primary URL")
        return None
    ids = _ids(args.add)
    if len(ids) != len(prim):
        raise ValueError(f"--primary registers one new shard per --add ID: {len(ids)} shard id(s) "
                         f"({', '.join(ids) or 'none'}) and {len(prim)} --primary URL(s); give --add ID "
                         f"--primary URL for each new shard")
    if args.replica and len(ids) != 1:
        raise ValueError("--replica belongs to one new shard: add shards with replicas one at a time")
    if len(set(ids)) != len(ids):
        raise ValueError(f"--add names a shard twice: {', '.join(ids)}")
    return {sid: (url, list(args.replica) if len(ids) == 1 else []) for sid, url in zip(ids, prim)}


def _dry_run(cluster: Any, args: argparse.Namespace, new: Any) -> int:
    from . import preflight
    from .executor import check_start, pending_router
    from .units import Membership, units_for

    check_start(cluster, args.group, new, _new_shards(args))  # (the real start's checks, its messages)
    old = pending_router(cluster, args.group)
    g = cluster.group(args.group)
    units = units_for(old, new, max_step_share=args.max_step_share)
    mem = Membership(old, new, units)
    counts = [0] * len(units)
    for s in mem.sources:
        b = cluster.backend(s)
        c = b.conn()
        for t in g.tables:
            cols, pk = b.table_info(c, t.name)
            kx = cols.index(t.key)
            for rows in b.scan_chunks(c, t.name, cols, pk, 20000):
                for u in mem.assign([r[kx] for r in rows]).tolist():
                    if u >= 0:
                        counts[u] += 1
    steps = [dict(u.to_dict(), rows=n) for u, n in zip(units, counts)]
    known, new_ids = [], []
    for d in mem.destinations:
        try:
            cluster.backend(d)
            known.append(d)
        except KeyError:  # (a shard the start registers: --add ID --primary URL)
            new_ids.append(d)
    pre = preflight.estimate(cluster, g, mem, known, args.max_dest_bytes)
    if args.json:
        _out(json.dumps({"group": g.name, "from_version": old.version, "to_version": new.version,
                         "steps": steps, "rows": sum(counts), "preflight": pre}, indent=2))
        return 0
    _out(f"group {g.name}: version {old.version} -> {new.version}, {len(units)} step(s), "
         f"{sum(counts):,} row(s) to move (dry run: nothing written)")
    for st in steps:
        _out(f"  step {st['index'] + 1:>4}: {st['source']} -> {st['destination']}  {st['kind']:<7} "
             f"{st['rows']:>10,} rows")
    for line in preflight.describe(pre):
        _out("  preflight: " + line)
    for d in new_ids:
        _out(f"  preflight: destination {d}: a new shard, checked when the migration starts")
    return 0


def _import(cluster: Any, args: argparse.Namespace) -> int:
    from .importer import describe

    if not getattr(args, "source", None):
        raise ValueError("import needs --from URL (the unsharded database: sqlite:PATH or postgresql://..., "
                         "or files: csv:PATH or parquet:PATH)")
    quiet = args.json or getattr(args, "quiet", False)
    rep = cluster.import_from(args.source, args.group, chunk=args.chunk or 50_000,
                              on_chunk=None if quiet else lambda t, n: _err(f"import {t}: {n:,} rows"))
    _out(json.dumps(rep.to_dict(), indent=2) if args.json else describe(rep))
    return 0


class _Progress:
    """Log lines and a progress line (rows copied, rate, ETA; lag) on stderr."""

    def __init__(self, m: Any, quiet: bool) -> None:
        self.m, self.quiet, self.t0 = m, quiet, time.perf_counter()
        self.tty = sys.stderr.isatty()

    def __call__(self, line: str) -> None:
        if not self.quiet:
            if self.tty:
                sys.stderr.write("\r\033[K")
            _err(line)

    def progress(self, f: dict[str, Any]) -> None:
        if self.quiet:
            return
        if f.get("phase") == "copy":
            tot = f.get("rows_total") or 0
            pct = f" {100 * f['rows_scanned'] / tot:5.1f}%" if tot else ""
            eta = f"  ETA {f['eta_s']:.0f} s" if f.get("eta_s") is not None else ""
            text = (f"[{self.m.id}] copy{pct}: {f['rows_copied']:,} rows copied, {f['rows_scanned']:,} scanned, "
                    f"{f['rows_per_s']:,.0f} rows/s{eta}")
        else:
            text = (f"[{self.m.id}] catch-up: lag {f['lag_changes']:,} changes (~{f['lag_s']:.2f} s), "
                    f"{f['rows_per_s']:,.0f} changes/s")
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()
        else:
            _err(text)


def _check(cluster: Any, args: argparse.Namespace) -> int:
    """``check [--repair]``: stranded rows per shard and table (exit 1 when any is left)."""
    res = cluster.check(args.group, repair=args.repair)
    rep = res["repair"]
    left = res["stranded"] - (rep["moved"] + rep["already_on_owner"] if rep else 0)
    if args.json:
        _out(json.dumps(res, indent=2))
        return 1 if left else 0
    _out(f"scanned {res['rows_scanned']:,} rows in {res['seconds']:.2f} s: {res['stranded']:,} stranded, "
         f"{res['retained']:,} held by migrations")
    for g, gr in res["groups"].items():
        for t in gr["tables"]:
            held = "".join(f", {n:,} retained by migration {m}" for m, n in t["retained"].items())
            _out(f"  {g}: shard {t['shard']} table {t['table']}: {t['stranded']:,} stranded{held}")
            for f in t["first"]:
                _out(f"    pk {f['pk']} (key {f['key']!r}) belongs on {f['owner']}")
    if rep is not None:
        _out(f"repair: {rep['moved']:,} moved, {rep['already_on_owner']:,} already on their owner, "
             f"{len(rep['conflicts']):,} conflict(s) left in place")
        for cf in rep["conflicts"][:10]:
            _out(f"  conflict: {cf['table']} pk {cf['pk']} on {cf['shard']}: {cf['row']} / "
                 f"on {cf['owner']}: {cf['owner_row']}")
    if left:
        _out("next: " + ("resolve the conflicts by hand, then run `check` again" if rep is not None
                         else "run `shardhash migrate check --repair` to move them to their owners"))
    return 1 if left else 0


def _print_status(st: dict[str, Any], as_json: bool) -> None:
    """A migration's status document: as JSON, or as the text every action ends with."""
    if as_json:
        _out(json.dumps(st, indent=2, default=str))
    else:
        lag = st.get("lag") or {}
        _out(f"migration {st['id']} (group {st['group']}, version {st['from_version']} -> {st['to_version']}): "
             f"{st['state']}" + (" (paused)" if st.get("paused") else ""))
        if st.get("max_rows_per_s"):
            _out(f"  copy rate limit: {st['max_rows_per_s']:,.0f} rows/s")
        _out(f"  units {st['units']}, rows copied {st['rows_copied']:,}, lag {lag.get('changes', 0)} changes")
        for p in st.get("copy_pairs") or []:
            if p["done"] and st["state"] not in ("preparing", "copying"):
                continue  # (the copy's figures matter while it runs)
            tot = f" of {p['rows_total']:,}" if p.get("rows_total") is not None else ""
            rate = f", {p['rows_per_s']:,.0f} rows/s" if p.get("rows_per_s") else ""
            eta = " (done)" if p["done"] else (f", ETA {p['eta_s']:.0f} s" if p.get("eta_s") is not None else "")
            _out(f"  copy {p['source']} -> {', '.join(p['destinations'])}: {p['rows_scanned']:,}{tot} rows scanned, "
                 f"{p['rows_copied']:,} copied{rate}{eta}")
        for t in st.get("throttle") or []:
            sig = f", signal {t['signal']:g}" if t.get("signal") is not None else ""
            _out(f"  throttle {t['source']} -> {', '.join(t['destinations'])}: "
                 + ("backing off" if t.get("waiting") else "running")
                 + f" (above {t['above']:g}{sig}; {t['backoffs']} back-off(s), {t['seconds']:.1f} s in all)")
        if st.get("verify"):
            v = st["verify"]
            _out(f"  verify: {v.get('mismatches', 0)} mismatch(es)"
                 + (f", first {v['first']}" if v.get("first") else ""))
        pend = [f"{c['capture']} on {c['shard']}: {c.get('pending', '?')} pending" for c in st["captures"]]
        if pend:
            _out("  change captures: " + "; ".join(pend))
        if st.get("write_pause_seconds") is not None:
            _out(f"  write pause (freeze to release): {st['write_pause_seconds']:.3f} s")
        if st.get("error"):
            _out(f"  last error: {st['error']}")
        _out(f"  next: {st['next']}")


#: States in which an executor is at work on a migration: ``status --watch`` refreshes through these.
RUNNING = ("preparing", "copying", "catching-up", "freezing", "cutover", "rolling-back", "cleaning")


def _rows_to_move(cluster: Any, m: Any) -> int | None:
    """An estimate of the rows the migration copies: the rows on the old
    router's shards times the share of keys that change owner (None when the
    routers give no share, e.g. a change of hasher)."""
    from ..cli.common import moved_share_estimate

    share = moved_share_estimate(m.old, m.new)
    if share is None:
        return None
    total = 0
    for sid in m.old.shards:
        b = cluster.backend(sid)
        c = b.conn()
        total += sum(b.count(c, t.name) if b.has_table(c, t.name) else 0 for t in m.group.tables)
    return round(total * share)


def watch_line(st: dict[str, Any], rate: float | None, estimate: int | None) -> str:
    """One refresh of ``status --watch``: the state and the figures of its phase.
    ``rate``: rows copied per second measured between two refreshes (None: not
    measured yet); ``estimate``: the rows the copy is expected to copy."""
    from ..cli.common import fmt_eta

    state, copied = st["state"], int(st.get("rows_copied") or 0)
    parts = [f"{st['id']} {state}"]
    if state in ("preparing", "copying") or copied:
        of = ""
        if estimate:
            of = f" of ~{estimate:,} ({min(100.0, 100 * copied / estimate):.0f}%)"
        parts.append(f"rows copied {copied:,}{of}")
    if state == "copying":
        parts.append("rate: measuring" if rate is None else f"{rate:,.0f} rows/s")
        if rate and estimate and estimate > copied:
            parts.append(f"ETA {fmt_eta((estimate - copied) / rate)}")
    lag = st.get("lag")
    if lag and state in ("catching-up", "freezing"):
        secs = lag.get("seconds")
        parts.append(f"lag {int(lag.get('changes') or 0):,} changes"
                     + (f" (~{secs:.2f} s)" if secs is not None else " (seconds: no apply rate yet)"))
        if st.get("catchup_changes_per_s") is not None:
            parts.append(f"catch-up {st['catchup_changes_per_s']:,.0f} changes/s")
    if st.get("write_pause_seconds") is not None:
        parts.append(f"write pause {st['write_pause_seconds']:.3f} s")
    if st.get("error"):
        parts.append(f"last error: {st['error']}")
    return ", ".join(parts)


def _watch(cluster: Any, m: Any, args: argparse.Namespace) -> int:
    """``status --watch``: a line per refresh (``--interval`` seconds apart; on a
    terminal, one line redrawn in place, with a bar when rich is installed)
    until the migration stops running, ``--count`` refreshes or Ctrl-C;
    then the full status."""
    interval, count = float(args.interval), args.count
    tty = sys.stdout.isatty() and not args.json
    bar = _watch_bar() if tty and not getattr(args, "quiet", False) else None
    estimate: int | None = None
    estimated = False
    prev: tuple[float, int] | None = None
    n = 0
    st: dict[str, Any] = {}
    try:
        while True:
            st = m.status()
            now, copied = time.monotonic(), int(st.get("rows_copied") or 0)
            rate = None
            if prev is not None and st["state"] == "copying" and now > prev[0]:
                rate = max(0, copied - prev[1]) / (now - prev[0])
            prev = (now, copied)
            if not estimated and st["state"] in ("preparing", "copying"):
                estimate, estimated = _rows_to_move(cluster, m), True
            n += 1
            if args.json:
                _out(json.dumps(dict(st, watch={"rows_per_s": rate, "rows_estimate": estimate}), default=str))
            elif bar is not None:
                bar(watch_line(st, rate, estimate), copied, estimate)
            elif tty:
                sys.stdout.write("\r\033[K" + watch_line(st, rate, estimate))
                sys.stdout.flush()
            else:
                _out(watch_line(st, rate, estimate))
            if st["state"] not in RUNNING or (count is not None and n >= count):
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    finally:
        if bar is not None:
            bar(None, 0, None)
        elif tty:
            sys.stdout.write("\n")
    if not args.json:
        _print_status(st or m.status(), False)
    return 0


def _watch_bar() -> Any:
    """A rich progress bar on stdout (the status text as its description, the
    rows copied against the estimate); None without rich.  Called with
    (text, rows, estimate), and (None, 0, None) to stop."""
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn
    except ImportError:
        return None
    prog = Progress(TextColumn("{task.description}"), BarColumn(), console=Console(), transient=True)
    prog.start()
    task = prog.add_task("", total=None)

    def draw(text: str | None, rows: int, estimate: int | None) -> None:
        if text is None:
            prog.stop()
            return
        prog.update(task, description=text, completed=rows, total=estimate or None)

    return draw


def _throttle(args: argparse.Namespace) -> Any:
    """The run's :class:`~shardhash.migrate.control.Throttle` from
    ``--throttle-sql`` / ``--throttle-above`` / ``--throttle-max-backoff`` (None without them)."""
    from .control import THROTTLE_MAX_BACKOFF, Throttle

    sql = getattr(args, "throttle_sql", None)
    above = getattr(args, "throttle_above", None)
    backoff = getattr(args, "throttle_max_backoff", None)
    if sql is None:
        if above is not None or backoff is not None:
            raise ValueError("--throttle-above and --throttle-max-backoff go with --throttle-sql SQL")
        return None
    if above is None:
        raise ValueError("--throttle-sql needs --throttle-above X (back off while the probe gives more than X)")
    return Throttle(sql, above, max_backoff=THROTTLE_MAX_BACKOFF if backoff is None else backoff)


def run(args: argparse.Namespace) -> int:
    """Run one ``shardhash migrate`` action; returns the exit status.

    A refused command or a failed step raises :class:`~shardhash.cli.common.UsageError`
    (exit status 2, 3 for a verify mismatch), as every ``shardhash`` command does."""
    from .cluster import Cluster
    from .executor import Migration, MigrationError, MigrationPaused, VerifyMismatch, _is_db_error, describe_fault

    try:
        cluster = Cluster.load(args.config)
    except (ValueError, TypeError, OSError) as e:
        raise UsageError(f"{args.config}: {e}", command="migrate") from None
    try:
        if getattr(args, "watch", False) and args.action != "status":
            raise ValueError(f"--watch goes with `status`, not `{args.action}`")
        if args.action == "init":
            cluster.init()
            res = {g: cluster.router(g).version for g in cluster.groups}
            _out(json.dumps({"initialized": res}) if args.json else
                 "initialized: " + ", ".join(f"{g} at version {v}" for g, v in res.items()))
            return 0
        if args.action == "import":
            return _import(cluster, args)
        if args.action == "check":
            return _check(cluster, args)
        st: dict[str, Any]
        if args.action == "start":
            from .executor import check_new_shards

            check_new_shards(cluster, _new_shards(args))  # (a clash with the shard map before any plan)
            new = _new_router(cluster, args)
            if args.dry_run:
                return _dry_run(cluster, args, new)
            m = Migration.create(cluster, args.group, new, max_step_share=args.max_step_share,
                                 from_version=args.from_version, mig_id=args.migration,
                                 new_shards=_new_shards(args))
        else:
            mid = args.migration or _latest(cluster, args.group, args.action)
            if cluster.metadata.migration(mid) is None:
                raise MigrationError(f"no migration {mid!r} is recorded (see `shardhash migrate status`)")
            m = Migration(cluster, mid)
            if args.action == "status" and args.watch:
                return _watch(cluster, m, args)
        prog = _Progress(m, args.json or getattr(args, "quiet", False))
        m.log_fn = prog
        m.progress_fn = prog.progress
        throttle = _throttle(args)
        fence_timeout = getattr(args, "fence_timeout", None)
        if args.action not in ("start", "resume", "cutover") and (throttle is not None or fence_timeout is not None):
            raise ValueError(f"--throttle-sql and --fence-timeout go with start, resume and cutover, "
                             f"not `{args.action}`")
        if args.action in ("start", "resume"):
            if args.action == "resume":
                m.unpause()
            try:
                m.run(fence_threshold=args.fence_threshold, chunk=args.chunk, cutover=not args.no_cutover,
                      max_rows_per_s=args.max_rows_per_s, skip_preflight=args.skip_preflight,
                      max_dest_bytes=args.max_dest_bytes, parallel=args.parallel, throttle=throttle,
                      fence_timeout=fence_timeout)
            except MigrationPaused as e:
                prog(str(e))  # (a pause is the operator's: not a failure)
        elif args.action == "pause":
            m.pause()
        elif args.action == "set":
            if args.max_rows_per_s is None:
                raise ValueError("set needs a setting to change: --max-rows-per-s N (0: no limit)")
            m.set_max_rows_per_s(args.max_rows_per_s)
        elif args.action == "verify":
            state = m.state
            if state not in ("catching-up", "verify-failed", "retained"):
                raise MigrationError(f"migration {m.id} is {state}: verify runs while catching up, "
                                     "or on a retained migration (its retained copies against the owners)")
            if state == "verify-failed":
                m.meta.put(m.id, "verify", None)
                m.meta.set_state(m.id, "catching-up")
            m.verify()
        elif args.action == "cutover":
            m.run(fence_threshold=args.fence_threshold, chunk=args.chunk, cutover=True, throttle=throttle,
                  fence_timeout=fence_timeout)
        elif args.action == "rollback":
            m.rollback()
        elif args.action == "cleanup":
            m.cleanup()
        st = m.status()
        from . import metrics

        st["client_metrics"] = cluster.metrics.snapshot()
        metrics.publish(st)
        _print_status(st, args.json)
        return 0
    except VerifyMismatch as e:
        raise UsageError(str(e), command="migrate", label="verify failed", status=3) from None
    except (MigrationError, ValueError, TypeError, ConnectionError, OSError) as e:
        raise UsageError(str(e), command="migrate") from None
    except KeyError as e:
        raise UsageError(str(e.args[0] if e.args else e), command="migrate") from None
    except Exception as e:
        if not _is_db_error(e):
            raise
        # (a database error outside a migration step: the metadata store, say)
        raise UsageError(f"{args.action}: {describe_fault(e)}", command="migrate") from None
    finally:
        cluster.close()
