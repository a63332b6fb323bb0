"""Route, plan and analyze ids held in a Spark DataFrame (``pip install 'shardhash[spark]'``).

Both functions run the kernels of :mod:`shardhash.arrow` inside
``DataFrame.mapInArrow``, so the answers are the single-machine ones:
:func:`route` adds the shard ``route_many`` gives each id; :func:`diff`
builds one partial per partition on the executors and merges them on the
driver into the :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff`
gives.  Routers are broadcast as their document; each Python worker builds a
router once and reuses it (Spark reuses Python workers by default).

When the DataFrame is a plain scan of Parquet files (``spark.read.parquet(...)``,
at most a selection of its columns), the ids do not travel from the JVM to
Python at all: the driver reads the files' footers, cuts the files into
pieces of whole row groups, and hands each Python worker a list of pieces
(a small DataFrame of work units, run with ``mapInArrow``); the worker reads
its pieces with pyarrow and sends back only its partial (:func:`diff`,
:func:`analyze`) or its routed rows (:func:`route`).  Any other DataFrame
(filtered, joined, computed, not Parquet, Spark Connect) goes through
``mapInArrow`` over its own rows; ``parquet=False`` forces that way.
Both ways give the same answers.

On that second way Spark hands ``mapInArrow`` batches of
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows (10,000 by default);
raising it (to 1,000,000, say) cuts per-batch cost.

Example (needs Java and a local Spark)::

    from pyspark.sql import SparkSession
    import shardhash.spark as shs
    from shardhash import JumpRouter
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    df = spark.read.parquet("ids/")
    old, new = JumpRouter(["a", "b"]), JumpRouter(["a", "b", "c"])
    shs.route(df, "id", new).write.partitionBy("shard").parquet("routed/")
    print(shs.diff(df, "id", old, new).summary())
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import _engines
from . import arrow as _arrow

try:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("shardhash.spark needs PySpark: pip install 'shardhash[spark]'") from exc

__all__ = ["route", "diff", "analyze"]

_SOURCE = "__shardhash_source"


def _kind(df: Any, column: str) -> str:
    return _engines.id_column_kind(df.columns, column, lambda: df.schema[column].dataType, _spark_kind)


def _spark_kind(t: Any) -> str:
    if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "int"
    if isinstance(t, T.StringType):
        return "str"
    if isinstance(t, T.BinaryType):
        return "bytes"
    raise TypeError(f"ids must be integers, strings or binary, not {t.simpleString()}")


def _share(df: Any, value: Any) -> Any:
    """A broadcast of ``value`` (pickled once, fetched once per executor), or the value itself
    where the session has no SparkContext (Spark Connect)."""
    try:
        bc = df.sparkSession.sparkContext.broadcast(value)
    except Exception:  # noqa: BLE001 - Spark Connect has no sparkContext
        return lambda: value
    return lambda: bc.value


def _with_source(df: Any) -> Any:
    return df.withColumn(_SOURCE, F.input_file_name())


@contextmanager
def _naming_null_files(df: Any, column: str) -> Iterator[None]:
    """A job that failed on a null id fails again naming the file and the row.

    ``diff`` and ``analyze`` send only the id (and weight) column to Python:
    a column naming each row's file (``input_file_name()``, a string per
    row) would cost more to move than the ids themselves.  So the workers
    report a null by its row in the batch, and the driver then reads the
    footers of the input files (null counts) to find the first null id.
    """
    try:
        yield
    except Exception as exc:
        if f"id column {column!r} is null" in str(exc):
            where = _first_null_in_files(df, column)
            if where is not None:
                raise ValueError(f"{where[0]}: row {where[1]}: id column {column!r} is null") from None
        raise


def _first_null_in_files(df: Any, column: str) -> tuple[str, int] | None:
    """The first file (of ``df.inputFiles()``, read with pyarrow) holding a null id, and its row."""
    try:
        import pyarrow.parquet as pq
        from pyarrow import fs

        files = sorted(df.inputFiles())
    except Exception:  # noqa: BLE001 - no file listing (not a file source, Spark Connect): no file to name
        return None
    for uri in files:
        try:
            filesystem, path = fs.FileSystem.from_uri(uri)
            with pq.ParquetFile(path, filesystem=filesystem) as f:
                meta = f.metadata
                i = meta.schema.to_arrow_schema().get_field_index(column)
                if i < 0:
                    continue
                stats = [meta.row_group(g).column(i).statistics for g in range(meta.num_row_groups)]
                if all(st is not None and st.has_null_count and not st.null_count for st in stats):
                    continue
                col = f.read(columns=[column]).column(column)
        except Exception:  # noqa: BLE001 - a file pyarrow cannot open here: look at the next
            continue
        if col.null_count:
            name = path if uri.startswith("file:") else uri
            return name, _arrow._first_null(col)
    return None


# ------------------------------------------------------- Parquet files read by the Python workers

_SIMPLE = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.BooleanType,
           T.StringType, T.BinaryType)
_UNIT_ROWS = 1 << 20  # rows per piece of work (whole row groups)


def _simple_name(obj: Any) -> str:
    return str(obj.getClass().getSimpleName())


def _parquet_scan(df: Any, need: list[str]) -> list[str] | None:
    """The Parquet files ``df`` reads when it is a plain scan of them (at most
    a selection of columns, no filter, no computed column) and the columns
    ``need`` are in the files themselves (not partition folders); else None.
    """
    try:
        node = df._jdf.queryExecution().optimizedPlan()
        while _simple_name(node) == "Project":
            cols = node.projectList()
            if any(_simple_name(cols.apply(i)) != "AttributeReference" for i in range(cols.size())):
                return None
            node = node.child()
        if _simple_name(node) != "LogicalRelation":
            return None
        rel = node.relation()
        if _simple_name(rel) != "HadoopFsRelation" or _simple_name(rel.fileFormat()) != "ParquetFileFormat":
            return None
        if set(need) & set(str(n) for n in rel.partitionSchema().fieldNames()):
            return None
        files = sorted(str(f) for f in df.inputFiles())
    except Exception:  # noqa: BLE001 - Spark Connect, another Spark: read the DataFrame's rows instead
        return None
    return files or None


class _Pieces:
    """The work of one Spark job over Parquet files: the files' pieces, in
    about equal runs, as a DataFrame of one row per run.

    The DataFrame is made from local rows (a local relation, built in the
    JVM), which Spark scans as one partition per core at most: one Python
    task per core, each taking consecutive runs.  Each Python task costs a
    round trip to a worker (about 0.1 s in local mode), and a DataFrame made
    from a parallelized Python RDD costs a Python job of its own to convert
    the rows: that way (one task per run) took twice as long per call
    (0.44-0.54 s against 0.21-0.25 s for an empty job over six runs) and its
    first call started the Python workers twice."""

    def __init__(self, df: Any, files: list[str], column: str, weights: str | None) -> None:
        self.kind, units = _arrow.parquet_units(files, column, weights, target_rows=_UNIT_ROWS)
        runs = _arrow.plan_runs(units, df.sparkSession.sparkContext.defaultParallelism)
        self.frame = df.sparkSession.createDataFrame(
            [(r,) for r in runs], T.StructType([T.StructField("units", T.StringType(), False)]))


def _runs_of(batches: Any) -> Iterator[list[_arrow.ParquetUnit]]:
    for b in batches:
        for text in b.column("units").to_pylist():
            yield _arrow.decode_units(text)


def _units_of(batches: Any) -> Iterator[_arrow.ParquetUnit]:
    for run in _runs_of(batches):
        yield from run


def _read_pieces(batches: Any, columns: list[str], column: str, kind: str) -> Iterator[tuple[Any, Any, int]]:
    """``(batch, file name, first row in the file)`` of every piece handed to this task."""
    for unit in _units_of(batches):
        name = _arrow.display_path(unit.path)
        for b, offset in _arrow.read_unit(unit, columns, column, kind):
            yield b, name, offset


def route(df: Any, column: str, router: Any, name: str = "shard", *, indices: bool = False,
          parquet: bool = True) -> Any:
    """``df`` with a shard column (shard names as strings, or ``int`` indices
    with ``indices=True``); ``router`` may be a mapping ``{column name:
    router}``.  Lazy, like any ``mapInArrow``.  A null id fails
    the job with an error naming the file and row.

    Over a plain scan of Parquet files whose columns are all of simple types
    (integers, floats, booleans, strings, binary), the Python workers read
    the files themselves (see the module doc); ``parquet=False`` reads the
    DataFrame's rows instead.
    """
    kind = _kind(df, column)
    cols = _arrow.shard_columns(router, name)
    _engines.refuse_taken(df.columns, cols)
    get = _share(df, cols)
    schema = T.StructType(list(df.schema.fields) +
                          [T.StructField(n, T.IntegerType() if indices else T.StringType(), False) for n in cols])
    files = None
    if parquet and all(isinstance(f.dataType, _SIMPLE) for f in df.schema.fields):
        files = _parquet_scan(df, list(df.columns))
    if files is not None:
        return _route_pieces(df, files, column, get, schema, indices)

    def run(batches: Any) -> Any:
        yield from _arrow.route_batches(batches, column, get(), indices=indices, decode=not indices,
                                        source_column=_SOURCE, drop=[_SOURCE], kind=kind)

    return _with_source(df).mapInArrow(run, schema)


def _route_pieces(df: Any, files: list[str], column: str, get: Any, schema: Any, indices: bool) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    pieces = _Pieces(df, files, column, None)
    kind, names = pieces.kind, list(df.columns)
    arrow_schema = to_arrow_schema(schema)

    def run(batches: Any) -> Any:
        import pyarrow as pa

        cols = get()
        shards = {n: pa.array(list(sr.shards), type=pa.string()) for n, sr in cols.items()}
        for b, source, offset in _read_pieces(batches, names, column, kind):
            out = [b.column(c) for c in names]  # in the DataFrame's order, whatever the file's
            for n, sr in cols.items():
                idx = pa.array(_arrow.shard_indices(b.column(column), sr, column=column, source=source,
                                                    offset=offset, kind=kind), pa.int32())
                out.append(idx if indices else shards[n].take(idx))
            yield pa.RecordBatch.from_arrays(out, names=[*names, *cols]).cast(arrow_schema)

    return pieces.frame.mapInArrow(run, schema)


_PARTIAL = T.StructType([
    T.StructField("old_fp", T.StringType()), T.StructField("new_fp", T.StringType()),
    T.StructField("matrix", T.BinaryType()), T.StructField("weighted", T.BinaryType()),
    T.StructField("batches", T.LongType()), T.StructField("builds", T.StringType()),
    T.StructField("peak_rss", T.StringType()),
])


def diff(df: Any, column: str, old: Any, new: Any, *, weights: str | None = None,
         stats: dict[str, Any] | None = None, parquet: bool = True) -> Any:
    """What moves from ``old`` to ``new`` over the ids in ``column``: the
    :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives.

    One partial per partition (``mapInArrow``), merged on the driver; only
    the id (and weight) column travels to Python.  A null id fails the job
    with an error naming the file and row (found from the input files'
    footers once the job has failed).  Over a plain scan of Parquet files
    the Python workers read the files themselves, and only the partials
    travel (see the module doc; ``parquet=False`` reads the DataFrame's rows
    instead).  A dict
    given as ``stats`` receives ``partials``, ``builds`` (router builds per
    Python worker process) and ``peak_rss`` (peak resident bytes of each).
    """
    kind = _kind(df, column)
    _engines.check_weights(df.columns, weights)
    so, sn = _arrow.ship(old), _arrow.ship(new)
    get = _share(df, (so, sn))
    cols = _engines.input_columns(column, weights)
    files = _parquet_scan(df, cols) if parquet else None
    if files is not None:
        pieces = _Pieces(df, files, column, weights)
        pkind = pieces.kind

        def run_pieces(batches: Any) -> Any:
            o, n = get()
            for units in _runs_of(batches):  # one partial per run
                yield _arrow.partial_batch(_arrow.diff_units(units, column, o, n, weights, pkind))

        rows = pieces.frame.mapInArrow(run_pieces, _PARTIAL).collect()
        parts = [_arrow.DiffPartial.from_row(r.asDict(), so, sn) for r in rows]
        return _engines.diff_report(parts, so, sn, weighted=weights is not None, stats=stats)

    def run(batches: Any) -> Any:
        o, n = get()
        part = _arrow.diff_batches(batches, column, o, n, weights, kind=kind)
        yield _arrow.partial_batch(part)

    with _naming_null_files(df, column):
        rows = df.select(*_engines.input_columns(column, weights)).mapInArrow(run, _PARTIAL).collect()
    parts = [_arrow.DiffPartial.from_row(r.asDict(), so, sn) for r in rows]
    return _engines.diff_report(parts, so, sn, weighted=weights is not None, stats=stats)


def analyze(df: Any, column: str, router: Any = None, *, weights: str | None = None,
            capacity: int = 10_000, parquet: bool = True) -> _arrow.AnalyzePartial:
    """Per-shard load (with ``router``) and hot keys: a merged
    :class:`shardhash.arrow.AnalyzePartial` (one partial per partition, or
    per task over Parquet files the workers read themselves)."""
    kind = _kind(df, column)
    _engines.check_weights(df.columns, weights)
    sr = None if router is None else _arrow.ship(router)
    get = _share(df, sr)
    cols = _engines.input_columns(column, weights)
    files = _parquet_scan(df, cols) if parquet else None
    pieces = None if files is None else _Pieces(df, files, column, weights)
    pkind = kind if pieces is None else pieces.kind
    direct = pieces is not None

    def run(batches: Any) -> Any:
        import pyarrow as pa

        r = get()
        part = None
        found = _read_pieces(batches, cols, column, pkind) if direct else ((b, None, 0) for b in batches)
        for b, source, offset in found:
            p = _arrow.analyze_batch(b, column, r, weights, capacity=capacity, kind=pkind, source=source,
                                     offset=offset)
            part = p if part is None else part.merge(p)
        if part is not None:
            yield pa.RecordBatch.from_pylist([{"partial": pickle.dumps(part)}],
                                             schema=pa.schema([("partial", pa.binary())]))

    out = T.StructType([T.StructField("partial", T.BinaryType())])
    if pieces is not None:
        rows = pieces.frame.mapInArrow(run, out).collect()
    else:
        with _naming_null_files(df, column):
            rows = df.select(*cols).mapInArrow(run, out).collect()
    parts = [pickle.loads(bytes(r["partial"])) for r in rows]
    return _engines.analyze_result(parts, "the DataFrame has no rows")
