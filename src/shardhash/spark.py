"""Route, plan and analyze ids held in a Spark DataFrame (``pip install 'shardhash[spark]'``).

Both functions run the kernels of :mod:`shardhash.arrow` inside
``DataFrame.mapInArrow``, so the answers are the single-machine ones:
:func:`route` adds the shard ``route_many`` gives each id; :func:`diff`
builds one partial per partition on the executors and merges them on the
driver into the :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff`
gives.  Routers are broadcast as their document; each Python worker builds a
router once and reuses it (Spark reuses Python workers by default).

Spark hands ``mapInArrow`` batches of ``spark.sql.execution.arrow.maxRecordsPerBatch``
rows (10,000 by default); raising it (to 1,000,000, say) cuts per-batch cost.

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


def route(df: Any, column: str, router: Any, name: str = "shard", *, indices: bool = False) -> Any:
    """``df`` with a shard column (shard names as strings, or ``int`` indices
    with ``indices=True``); ``router`` may be a mapping ``{column name:
    router}``.  Lazy, like any ``mapInArrow``.  A null id fails
    the job with an error naming the file (``input_file_name()``) and row.
    """
    kind = _kind(df, column)
    cols = _arrow.shard_columns(router, name)
    _engines.refuse_taken(df.columns, cols)
    get = _share(df, cols)
    schema = T.StructType(list(df.schema.fields) +
                          [T.StructField(n, T.IntegerType() if indices else T.StringType(), False) for n in cols])

    def run(batches: Any) -> Any:
        yield from _arrow.route_batches(batches, column, get(), indices=indices, decode=not indices,
                                        source_column=_SOURCE, drop=[_SOURCE], kind=kind)

    return _with_source(df).mapInArrow(run, schema)


_PARTIAL = T.StructType([
    T.StructField("old_fp", T.StringType()), T.StructField("new_fp", T.StringType()),
    T.StructField("matrix", T.BinaryType()), T.StructField("weighted", T.BinaryType()),
    T.StructField("batches", T.LongType()), T.StructField("builds", T.StringType()),
    T.StructField("peak_rss", T.StringType()),
])


def diff(df: Any, column: str, old: Any, new: Any, *, weights: str | None = None,
         stats: dict[str, Any] | None = None) -> Any:
    """What moves from ``old`` to ``new`` over the ids in ``column``: the
    :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives.

    One partial per partition (``mapInArrow``), merged on the driver; only
    the id (and weight) column travels to Python.  A null id fails the job
    with an error naming the file and row (found from the input files'
    footers once the job has failed).  A dict
    given as ``stats`` receives ``partials``, ``builds`` (router builds per
    Python worker process) and ``peak_rss`` (peak resident bytes of each).
    """
    kind = _kind(df, column)
    _engines.check_weights(df.columns, weights)
    so, sn = _arrow.ship(old), _arrow.ship(new)
    get = _share(df, (so, sn))

    def run(batches: Any) -> Any:
        o, n = get()
        part = _arrow.diff_batches(batches, column, o, n, weights, kind=kind)
        yield _arrow.partial_batch(part)

    with _naming_null_files(df, column):
        rows = df.select(*_engines.input_columns(column, weights)).mapInArrow(run, _PARTIAL).collect()
    parts = [_arrow.DiffPartial.from_row(r.asDict(), so, sn) for r in rows]
    return _engines.diff_report(parts, so, sn, weighted=weights is not None, stats=stats)


def analyze(df: Any, column: str, router: Any = None, *, weights: str | None = None,
            capacity: int = 10_000) -> _arrow.AnalyzePartial:
    """Per-shard load (with ``router``) and hot keys: a merged
    :class:`shardhash.arrow.AnalyzePartial` (one partial per partition)."""
    kind = _kind(df, column)
    sr = None if router is None else _arrow.ship(router)
    get = _share(df, sr)

    def run(batches: Any) -> Any:
        import pyarrow as pa

        r = get()
        part = None
        for b in batches:
            p = _arrow.analyze_batch(b, column, r, weights, capacity=capacity, kind=kind)
            part = p if part is None else part.merge(p)
        if part is not None:
            yield pa.RecordBatch.from_pylist([{"partial": pickle.dumps(part)}],
                                             schema=pa.schema([("partial", pa.binary())]))

    cols = _engines.input_columns(column, weights)
    with _naming_null_files(df, column):
        rows = df.select(*cols).mapInArrow(run, T.StructType([T.StructField("partial", T.BinaryType())])).collect()
    parts = [pickle.loads(bytes(r["partial"])) for r in rows]
    return _engines.analyze_result(parts, "the DataFrame has no rows")
