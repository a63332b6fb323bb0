"""``shardhash route|plan|analyze --engine dask|spark|ray``: the command line on a cluster.

Input is a folder, a glob or a file of Parquet files; every file's footer is
checked first (the id column exists everywhere, with one kind of ids).
Output is a partitioned Parquet dataset, written into a temporary folder
beside the target and moved into place only when complete:

* ``route TOPOLOGY IDS -o OUT``: every row plus its shard, one folder per
  shard (``OUT/shard=NAME/``);
* ``plan OLD NEW --ids IDS``: the move report of ``shardhash plan`` (text or
  ``--json``); ``--moves OUT`` also writes the moved rows, one folder per
  source -> destination pair (``OUT/source=A/destination=B/``);
* ``analyze IDS``: per-shard load (with ``--topology``) and hot keys.

Without ``--scheduler`` / ``--master`` / ``--address`` a local cluster of
``--workers`` processes is started for the command and stopped after it
(a Spark session or Ray already running in the calling process is reused).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from .. import _engines
from .. import arrow as _arrow
from .common import PROG, UsageError, add_command, add_json, json_default, positive_int, read_router

if TYPE_CHECKING:
    from ..plan import PlanReport

ENGINES = ("dask", "spark", "ray")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit status 2, like the main command line
        raise UsageError(message)


# --------------------------------------------------------------------- engines


class _Engine:
    """One engine session for one command."""

    name = ""
    mod: Any  # the adapter: shardhash.dask, shardhash.spark or shardhash.ray
    #: keyword arguments every adapter call gets (Ray: tasks at once, CPUs each)
    options: dict[str, Any] = {}
    #: the column naming each row's file, where the frame has one (Ray: ``path``)
    source_column: str | None = None

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def __enter__(self) -> _Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass

    def frame(self, files: list[str], column: str, weights: str | None = None, all_columns: bool = True) -> Any:
        """The engine's frame over ``files`` (only the id and weight columns unless ``all_columns``)."""
        raise NotImplementedError

    def route_to(self, files: list[str], column: str, routers: dict[str, Any], out: str, moved: bool) -> int:
        """Write the rows of ``files`` plus one shard column per router under ``out``,
        partitioned by those columns (only rows whose two shards differ when ``moved``)."""
        raise NotImplementedError

    def diff(self, files: list[str], column: str, old: Any, new: Any, weights: str | None) -> PlanReport:
        src = {} if self.source_column is None else {"source_column": self.source_column}
        report: PlanReport = self.mod.diff(self.frame(files, column, weights, all_columns=False), column, old, new,
                                           weights=weights, **src, **self.options)
        return report

    def analyze(self, files: list[str], column: str, router: Any, weights: str | None,
                capacity: int) -> _arrow.AnalyzePartial:
        part: _arrow.AnalyzePartial = self.mod.analyze(self.frame(files, column, weights, all_columns=False),
                                                       column, router, weights=weights, capacity=capacity,
                                                       **self.options)
        return part


def _missing(engine: str, what: str, exc: ImportError) -> UsageError:
    return UsageError(f"--engine {engine} needs {what}: pip install 'shardhash[{engine}]' ({exc})")


class _Dask(_Engine):
    name = "dask"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        try:
            from distributed import Client, LocalCluster

            from .. import dask as shd
        except ImportError as exc:
            raise _missing("dask", "Dask", exc) from None
        self.mod = shd
        self.cluster = None
        if args.scheduler:
            self.client = Client(args.scheduler)  # type: ignore[no-untyped-call]  # distributed: unannotated
        else:
            self.cluster = LocalCluster(  # type: ignore[no-untyped-call]  # distributed: unannotated
                n_workers=args.workers, threads_per_worker=1, processes=True,
                dashboard_address="127.0.0.1:0", host="127.0.0.1")
            self.client = Client(self.cluster)  # type: ignore[no-untyped-call]  # distributed: unannotated

    def close(self) -> None:
        self.client.close()  # type: ignore[no-untyped-call]  # distributed: unannotated
        if self.cluster is not None:
            self.cluster.close()

    def frame(self, files: list[str], column: str, weights: str | None = None, all_columns: bool = True) -> Any:
        cols = None if all_columns else _engines.input_columns(column, weights)
        return self.mod.read_parquet(files, column, columns=cols, weights=weights)

    def route_to(self, files: list[str], column: str, routers: dict[str, Any], out: str, moved: bool) -> int:
        ddf = self.mod.route(self.frame(files, column), column, routers)
        names = list(routers)
        if moved:
            ddf = ddf[ddf[names[0]].astype(str) != ddf[names[1]].astype(str)]
        ddf.to_parquet(out, partition_on=names, write_index=False)
        return _count_rows(out)


class _Spark(_Engine):
    name = "spark"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        # Python workers run this interpreter, so they import this shardhash.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        try:
            from pyspark.sql import SparkSession

            from .. import spark as shs
        except ImportError as exc:
            raise _missing("spark", "PySpark", exc) from None
        self.mod = shs
        self.owned = SparkSession.getActiveSession() is None  # an active session is reused, and left running
        master = args.master or f"local[{args.workers}]"
        builder = (SparkSession.builder.master(master).appName("shardhash")
                   .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 20))
                   .config("spark.ui.showConsoleProgress", "false"))
        if master.startswith("local"):
            builder = (builder.config("spark.ui.enabled", "false")
                       .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
        self.session = builder.getOrCreate()
        self.session.sparkContext.setLogLevel("ERROR")

    def close(self) -> None:
        if self.owned:
            self.session.stop()

    def frame(self, files: list[str], column: str, weights: str | None = None, all_columns: bool = True) -> Any:
        # The schema from the first footer (the files were checked to agree on the id column): Spark
        # then runs no job of its own to infer it (seconds on a cold session).
        reader = self.session.read
        try:
            import pyarrow.parquet as pq
            from pyspark.sql.pandas.types import from_arrow_schema

            reader = reader.schema(from_arrow_schema(pq.read_schema(files[0])))
        except Exception:  # noqa: BLE001 - a type Spark's converter does not take: let Spark infer
            reader = self.session.read
        df = reader.parquet(*files)
        return df if all_columns else df.select(*_engines.input_columns(column, weights))

    def route_to(self, files: list[str], column: str, routers: dict[str, Any], out: str, moved: bool) -> int:
        from pyspark.sql import functions as F

        df = self.mod.route(self.frame(files, column), column, routers)
        names = list(routers)
        if moved:
            df = df.filter(F.col(names[0]) != F.col(names[1]))
        df.write.partitionBy(*names).parquet(out)
        return _count_rows(out)


class _Ray(_Engine):
    name = "ray"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        if not args.address:
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # a local Ray on loopback
        try:
            import ray
            import ray.data

            from .. import ray as shr
        except ImportError as exc:
            raise _missing("ray", "Ray Data", exc) from None
        self.ray, self.mod = ray, shr
        self.options = {}
        self.owned = not ray.is_initialized()  # a running Ray in this process is reused, and left running
        if not self.owned:
            self.options = {"concurrency": args.workers, "num_cpus": 0.5} if not args.address else {}
        elif args.address:
            ray.init(address=args.address, log_to_driver=False)
        else:
            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
            # Half a CPU each: room for Ray Data's own small tasks on a local cluster.
            self.options = {"concurrency": args.workers, "num_cpus": 0.5}
        ray.data.DataContext.get_current().enable_progress_bars = False

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()

    def frame(self, files: list[str], column: str, weights: str | None = None, all_columns: bool = True) -> Any:
        # One block per file (the files spread over the workers); reading checks nulls, naming file and row.
        cols = None if all_columns else _engines.input_columns(column, weights)
        return self.mod.read_parquet(files, column, columns=cols, weights=weights)

    def route_to(self, files: list[str], column: str, routers: dict[str, Any], out: str, moved: bool) -> int:
        ds = self.mod.route(self.frame(files, column), column, routers, source_column=self.source_column,
                            **self.options)
        names = list(routers)

        def finish(t: Any) -> Any:
            import pyarrow.compute as pc

            for n in names:  # plain strings: folder names come from the values
                t = t.set_column(t.schema.get_field_index(n), n, pc.cast(t.column(n), "string"))
            if moved:
                t = t.filter(pc.not_equal(t.column(names[0]), t.column(names[1])))
            return t

        ds.map_batches(finish, batch_format="pyarrow", batch_size=None).write_parquet(out, partition_cols=names)
        return _count_rows(out)


def _engine(args: argparse.Namespace) -> _Engine:
    cls = {"dask": _Dask, "spark": _Spark, "ray": _Ray}[args.engine]
    given = [o for o, v, e in (("--scheduler", args.scheduler, "dask"), ("--master", args.master, "spark"),
                               ("--address", args.address, "ray")) if v and e != args.engine]
    if given:
        raise UsageError(f"{given[0]} does not apply to --engine {args.engine}")
    return cls(args)


def _count_rows(folder: str) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_rows for f in _parquet_under(folder))


def _parquet_under(folder: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs
                  if f.endswith(".parquet") and not f.startswith((".", "_")))


@contextmanager
def _atomic_dir(target: str) -> Iterator[str]:
    """A fresh folder beside ``target`` that becomes ``target`` only on success."""
    if os.path.exists(target):
        raise UsageError(f"{target} already exists: choose a new output folder")
    parent = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(parent):
        raise UsageError(f"{parent}: no such folder")
    tmp = tempfile.mkdtemp(prefix=".shardhash-", dir=parent)
    out = os.path.join(tmp, "out")
    try:
        yield out
        os.replace(out, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _inputs(spec: str, column: str, weights: str | None = None) -> list[str]:
    try:
        files = _arrow.parquet_files(spec)
        _arrow.scan_parquet(files, column, weights)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    return files


# -------------------------------------------------------------------- commands


def cmd_route(args: argparse.Namespace) -> int:
    router = read_router(args.topology)
    files = _inputs(args.ids, args.column)
    t0 = time.perf_counter()
    with _atomic_dir(args.output) as out, _engine(args) as eng:
        rows = eng.route_to(files, args.column, {args.shard_column: router}, out, moved=False)
    print(f"routed {rows:,} rows from {len(files)} files to {args.output} ({args.engine}, "
          f"{time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    old, new = read_router(args.old), read_router(args.new)
    if not args.ids:
        raise UsageError("--engine needs --ids (a folder, glob or file of Parquet files)")
    files = _inputs(args.ids, args.column, args.weights)
    t0 = time.perf_counter()
    moved_rows = None
    with _engine(args) as eng:
        report = eng.diff(files, args.column, old, new, args.weights)
        if args.moves:
            with _atomic_dir(args.moves) as out:
                moved_rows = eng.route_to(files, args.column, {"source": old, "destination": new}, out, moved=True)
    elapsed = time.perf_counter() - t0
    if moved_rows is not None and moved_rows != report.moved:
        raise UsageError(f"moved rows written ({moved_rows}) differ from the report ({report.moved})")
    if args.json:
        out_d = {"old": args.old, "new": args.new, "engine": args.engine, "files": len(files),
                 "seconds": elapsed, "report": report.to_dict()}
        if args.moves:
            out_d["moves"] = args.moves
        print(json.dumps(out_d, indent=2, default=json_default))
        return 0
    print(f"{len(files)} files, {args.engine}, {elapsed:.1f} s")
    print(report.summary())
    moves = report.moves()
    if moves:
        print("")
        print(f"{'source':<16} {'destination':<16} {'keys':>14}" + ("  weight" if args.weights else ""))
        for m in moves[:args.max_rows]:
            extra = f"  {m['weight']:,.0f}" if "weight" in m else ""
            print(f"{m['source']:<16} {m['destination']:<16} {m['keys']:>14,}{extra}")
        if len(moves) > args.max_rows:
            print(f"... {len(moves) - args.max_rows} more pairs (--json for all)")
    if args.moves:
        print(f"moved rows written to {args.moves} (one folder per source/destination pair)")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from ..analysis import imbalance

    router = read_router(args.topology) if args.topology else None
    files = _inputs(args.ids, args.column, args.weights)
    t0 = time.perf_counter()
    with _engine(args) as eng:
        part = eng.analyze(files, args.column, router, args.weights, args.capacity)
    out: dict[str, Any] = {"ids": args.ids, "engine": args.engine, "rows": part.total,
                           "seconds": time.perf_counter() - t0}
    if args.weights:
        out["weight_total"] = part.weight_total
    top = part.hot.top(args.top)
    out["hot_keys"] = [{"key": k, "count_at_least": lo, "count_at_most": hi} for k, lo, hi in top]
    out["hot_key_error_bound"] = part.hot.error
    if router is not None:
        assert part.counts is not None  # an AnalyzePartial made with a router has per-shard counts
        out["shards"] = {s: {"keys": int(part.counts[i]),
                             **({args.weights: float(part.weighted[i])} if part.weighted is not None else {})}
                         for i, s in enumerate(router.shards)}
        out["imbalance"] = imbalance(part.counts)
    if args.json:
        print(json.dumps(out, indent=2, default=json_default))
        return 0
    print(f"{args.ids}: {part.total:,} ids ({args.engine})")
    if router is not None:
        for s, v in out["shards"].items():
            print(f"{s:<20} {v['keys']:>14,}  {v['keys'] / max(part.total, 1):.2%}")
        print(f"max/mean {out['imbalance']['max_mean']:.4f}   cv {out['imbalance']['cv']:.4f}")
    print(f"hot keys (Misra-Gries, {args.capacity} counters, error <= {part.hot.error:,.0f}):")
    for k, lo, hi in top:
        print(f"  {k!s:<30} {lo:>12,.0f} .. {hi:,.0f}")
    if not top:
        print("  (no key stands out)")
    return 0


# ----------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Route, plan and analyze Parquet ids on Dask, Spark or Ray.")
    common = _Parser(add_help=False)
    common.add_argument("--engine", choices=ENGINES, required=True, help="the engine to run on")
    common.add_argument("--scheduler", metavar="ADDR", help="Dask: address of a running scheduler")
    common.add_argument("--master", metavar="URL", help="Spark: master URL (default local[WORKERS])")
    common.add_argument("--address", metavar="ADDR", help="Ray: address of a running cluster")
    common.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1,
                        help="worker processes of the local cluster (default: the CPU count)")
    common.add_argument("--column", default="id", help="id column (default: id)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    r = add_command(sub, common, "route", help="add a shard column; one output folder per shard")
    r.add_argument("topology", help="topology document (.json)")
    r.add_argument("ids", help="folder, glob or file of Parquet files")
    r.add_argument("-o", "--output", required=True, help="output folder (a partitioned Parquet dataset)")
    r.add_argument("--shard-column", default="shard", help="name of the added column (default: shard)")
    r.set_defaults(func=cmd_route)
    pl = add_command(sub, common, "plan", help="what moves from one topology to another")
    pl.add_argument("old", help="the current topology document (.json)")
    pl.add_argument("new", help="the proposed topology document (.json)")
    pl.add_argument("--ids", help="folder, glob or file of Parquet files")
    pl.add_argument("--weights", metavar="COLUMN", help="numeric column to weigh moves by")
    pl.add_argument("--moves", metavar="FOLDER", help="write moved rows, one folder per source/destination")
    add_json(pl, None)
    pl.add_argument("--max-rows", type=positive_int, default=30, help="move pairs printed")
    pl.set_defaults(func=cmd_plan)
    a = add_command(sub, common, "analyze", help="load, skew and hot keys")
    a.add_argument("ids", help="folder, glob or file of Parquet files")
    a.add_argument("--topology", help="also count ids per shard of this topology")
    a.add_argument("--weights", metavar="COLUMN", help="numeric column (bytes, requests)")
    a.add_argument("--top", type=positive_int, default=10, help="hot keys to show")
    a.add_argument("--capacity", type=positive_int, default=10_000, help="heavy-hitter counters")
    add_json(a, None)
    a.set_defaults(func=cmd_analyze)
    return p


def main(argv: Sequence[str]) -> int:
    """Run ``shardhash route|plan|analyze --engine ...``; returns the exit status."""
    try:
        args = build_parser().parse_args(list(argv))
        return int(args.func(args))
    except UsageError as exc:
        print(exc.line(), file=sys.stderr)
        return exc.status
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - engines wrap worker errors in their own types
        msg = str(exc).strip().splitlines()
        detail = next((ln for ln in reversed(msg) if "Error:" in ln), msg[-1] if msg else "")
        print(f"{PROG}: error ({args.engine if 'args' in locals() else 'engine'}): "
              f"{type(exc).__name__}: {detail}", file=sys.stderr)
        return 1
