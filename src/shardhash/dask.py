"""Route, plan and analyze ids held in a Dask DataFrame (``pip install 'shardhash[dask]'``).

Every partition runs the kernels of :mod:`shardhash.arrow`, so the answers
are the single-machine ones: :func:`route` adds the shard that
``route_many`` gives each id, :func:`diff` returns the
:class:`shardhash.plan.PlanReport` that :func:`shardhash.plan.diff` returns
over the same ids (partials merged in a tree), :func:`analyze` the per-shard
load of :func:`shardhash.analysis.shard_load` plus mergeable hot keys.

Routers travel as their document (:class:`shardhash.arrow.ShippedRouter`);
each worker process builds a router once and reuses it for every task.

>>> import dask
>>> import dask.dataframe as dd, pandas as pd
>>> from shardhash import JumpRouter, plan
>>> import shardhash.dask as shd
>>> ddf = dd.from_pandas(pd.DataFrame({"id": range(10_000)}), npartitions=4)
>>> old, new = JumpRouter(["a", "b"]), JumpRouter(["a", "b", "c"])
>>> with dask.config.set(scheduler="synchronous"):
...     routed = shd.route(ddf, "id", old).compute()
...     rep = shd.diff(ddf, "id", old, new)
>>> routed["shard"].tolist() == [old.shards[i] for i in old.route_many(range(10_000))]
True
>>> rep.matrix.tolist() == plan.diff(old, new, range(10_000)).matrix.tolist()
True

Importing this module also registers a ``shardhash`` accessor on Dask
DataFrames, so the same calls read as methods of the frame:

>>> with dask.config.set(scheduler="synchronous"):
...     same = ddf.shardhash.diff("id", old, new)
>>> same.to_dict() == rep.to_dict()
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _engines
from . import arrow as _arrow

try:
    import dask.dataframe as dd
    import pandas as pd
    from dask.dataframe.extensions import register_dataframe_accessor
    from dask.delayed import delayed
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("shardhash.dask needs Dask: pip install 'shardhash[dask]'") from exc

__all__ = ["route", "diff", "analyze", "read_parquet", "ShardhashAccessor"]

# The files behind each frame :func:`read_parquet` made: :func:`diff` and
# :func:`analyze` over it give each task a run of the files' row groups to
# read itself (no pandas frame in between), returning only its partial.
_FILES = _engines.FileRegistry()


def _kind(ddf: Any, column: str) -> str:
    return _engines.id_column_kind(ddf.columns, column, lambda: ddf._meta[column].dtype)


def _where(partition_info: Any) -> str:
    return "partition ?" if not partition_info else f"partition {partition_info['number']}"


def _route_part(pdf: Any, column: str, cols: dict[str, _arrow.ShippedRouter], indices: bool,
                kind: str | None, partition_info: Any = None) -> Any:
    new = {}
    for name, sr in cols.items():
        idx = _arrow.shard_indices(pdf[column], sr, column=column, source=_where(partition_info), kind=kind)
        if indices:
            new[name] = pd.Series(idx, index=pdf.index, dtype=np.int32)
        else:
            cats = pd.Index(list(sr.shards), dtype=object)
            new[name] = pd.Series(pd.Categorical.from_codes(idx, categories=cats), index=pdf.index)
    return pdf.assign(**new)


def route(ddf: Any, column: str, router: Any, name: str = "shard", *, indices: bool = False) -> Any:
    """``ddf`` with a shard column: a categorical of shard names whose
    categories are the router's shards in index order (or ``int32`` indices
    with ``indices=True``).  ``router`` may be a mapping ``{column name:
    router}`` to add several shard columns in one pass.  Lazy, like any
    ``map_partitions``.
    """
    cols = _arrow.shard_columns(router, name)
    kind = _kind(ddf, column)
    _engines.refuse_taken(ddf.columns, cols)
    meta = _route_part(ddf._meta, column, cols, indices, None)
    return ddf.map_partitions(_route_part, column, cols, indices, kind, meta=meta)


def _diff_part(pdf: Any, column: str, so: Any, sn: Any, weights: str | None, kind: str, number: int) -> Any:
    return _arrow.diff_batch(pdf, column, so, sn, weights, source=f"partition {number}", kind=kind)


def _analyze_part(pdf: Any, column: str, sr: Any, weights: str | None, capacity: int, kind: str,
                  number: int) -> Any:
    return _arrow.analyze_batch(pdf, column, sr, weights, capacity=capacity, source=f"partition {number}",
                                kind=kind)


def _merge(a: Any, b: Any) -> Any:
    return a.merge(b)


def _tree(parts: Sequence[Any]) -> Any:
    """Merge delayed partials in a tree of tasks, computed with the active scheduler."""
    return _arrow.tree_reduce(parts, delayed(_merge, pure=True)).compute()


def _runs(ddf: Any, column: str, weights: str | None) -> tuple[str, list[str]] | None:
    """``(kind, runs)`` when ``ddf`` came from :func:`read_parquet`, else None."""
    files = _FILES.get(ddf)
    if files is None:
        return None
    kind, units = _arrow.parquet_units(files, column, weights)
    try:
        from distributed import get_client

        par = sum(get_client().nthreads().values())  # type: ignore[no-untyped-call]  # distributed: unannotated
    except (ImportError, ValueError):  # no distributed client: the local scheduler
        import os

        par = os.cpu_count() or 1
    return kind, _arrow.plan_runs(units, par)


def diff(ddf: Any, column: str, old: Any, new: Any, *, weights: str | None = None,
         stats: dict[str, Any] | None = None) -> Any:
    """What moves from ``old`` to ``new`` over the ids in ``column``: the
    :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives.

    ``weights`` names a numeric column for the weighted matrix.  Computes at
    once (with the active scheduler).  A dict given as ``stats`` receives
    ``partitions``, ``builds`` (router builds per worker process) and
    ``peak_rss`` (peak resident bytes per worker process).
    """
    so, sn = _arrow.ship(old), _arrow.ship(new)
    kind = _kind(ddf, column)
    _engines.check_weights(ddf.columns, weights)
    direct = _runs(ddf, column, weights)
    if direct is not None:  # a frame of read_parquet: each task reads its run of row groups itself
        task = delayed(_engines.diff_run, pure=True)
        partials = [task(r, (so, sn), column, weights, direct[0]) for r in direct[1]]
        return _engines.diff_report(partials, so, sn, weighted=weights is not None, stats=stats,
                                    count_key="partitions", reduce=_tree)
    parts = ddf[_engines.input_columns(column, weights)].to_delayed()
    task = delayed(_diff_part, pure=True)
    partials = [task(p, column, so, sn, weights, kind, i) for i, p in enumerate(parts)]
    return _engines.diff_report(partials, so, sn, weighted=weights is not None, stats=stats,
                                count_key="partitions", reduce=_tree)


def analyze(ddf: Any, column: str, router: Any = None, *, weights: str | None = None,
            capacity: int = 10_000) -> _arrow.AnalyzePartial:
    """Per-shard load (with ``router``) and hot keys of the ids in ``column``.

    Returns the merged :class:`shardhash.arrow.AnalyzePartial`: ``counts``
    and ``weighted`` per shard, ``load_report()``, ``hot.top(n)``.
    """
    sr = None if router is None else _arrow.ship(router)
    kind = _kind(ddf, column)
    _engines.check_weights(ddf.columns, weights)
    direct = _runs(ddf, column, weights)
    if direct is not None:
        task = delayed(_engines.analyze_run, pure=True)
        some = [task(r, sr, column, weights, direct[0], capacity) for r in direct[1]]
        got = _arrow.tree_reduce(some, delayed(_engines.merge_some, pure=True)).compute()
        return _engines.analyze_result([] if got is None else [got], "the DataFrame has no partitions")
    parts = ddf[_engines.input_columns(column, weights)].to_delayed()
    task = delayed(_analyze_part, pure=True)
    partials = [task(p, column, sr, weights, capacity, kind, i) for i, p in enumerate(parts)]
    return _engines.analyze_result(partials, "the DataFrame has no partitions", reduce=_tree)


# ------------------------------------------------------------------ Parquet input


def _read_file(path: str, column: str, columns: Sequence[str] | None, kind: str) -> Any:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=list(columns) if columns else None)
    col = table.column(column)
    if col.null_count:
        raise ValueError(f"{path}: row {_arrow._first_null(col)}: id column {column!r} is null")
    if _arrow.id_kind(col.type) != kind:
        raise TypeError(f"{path}: id column {column!r} holds {_arrow.id_kind(col.type)} ids where {kind} "
                        "ids were expected")
    return table.to_pandas(types_mapper=pd.ArrowDtype if kind != "int" else None)


def read_parquet(path: Any, column: str, *, columns: Sequence[str] | None = None,
                 weights: str | None = None) -> Any:
    """A Dask DataFrame over a folder, glob or list of Parquet files, one
    partition per file, after checking every file's footer: the id column
    exists everywhere with one kind of ids (errors name the file).  Reading
    a partition checks for null ids, naming the file and row.
    """
    files = _arrow.parquet_files(path)
    kind, _ = _arrow.scan_parquet(files, column, weights)
    if columns is not None:
        columns = list(dict.fromkeys([column, *columns, *([weights] if weights else [])]))
    meta = _read_file(files[0], column, columns, kind).iloc[:0]
    ddf = dd.from_map(  # type: ignore[no-untyped-call]  # dask.dataframe.from_map is unannotated
        _read_file, files, column=column, columns=columns, kind=kind, meta=meta,
        label="shardhash-read-parquet", enforce_metadata=False)
    _FILES.add(ddf, files)
    return ddf


# ------------------------------------------------------------------ the accessor


@register_dataframe_accessor("shardhash")  # type: ignore[no-untyped-call]  # dask: register_dataframe_accessor is unannotated
class ShardhashAccessor:
    """``ddf.shardhash``: :func:`route`, :func:`diff` and :func:`analyze` as methods of a Dask DataFrame.

    Registered when :mod:`shardhash.dask` is imported (``import shardhash``
    alone never imports Dask).  Each method is the module function with the
    frame as its first argument::

        import shardhash.dask  # noqa: F401  (registers the accessor)
        routed = ddf.shardhash.route("id", new)
        report = ddf.shardhash.diff("id", old, new, weights="bytes")
        load = ddf.shardhash.analyze("id", new)
    """

    def __init__(self, ddf: Any) -> None:
        self._ddf = ddf

    def route(self, column: str, router: Any, name: str = "shard", *, indices: bool = False) -> Any:
        """:func:`shardhash.dask.route` of this frame."""
        return route(self._ddf, column, router, name, indices=indices)

    def diff(self, column: str, old: Any, new: Any, *, weights: str | None = None,
             stats: dict[str, Any] | None = None) -> Any:
        """:func:`shardhash.dask.diff` of this frame."""
        return diff(self._ddf, column, old, new, weights=weights, stats=stats)

    def analyze(self, column: str, router: Any = None, *, weights: str | None = None,
                capacity: int = 10_000) -> _arrow.AnalyzePartial:
        """:func:`shardhash.dask.analyze` of this frame."""
        return analyze(self._ddf, column, router, weights=weights, capacity=capacity)
