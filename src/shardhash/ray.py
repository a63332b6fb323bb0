"""Route, plan and analyze ids held in a Ray Dataset (``pip install 'shardhash[ray]'``).

The functions run the kernels of :mod:`shardhash.arrow` in
``Dataset.map_batches(batch_format="pyarrow")`` over whole blocks, as Ray
tasks (the default: Ray's pooled worker processes each build a router once
and keep it for every later task) or in an actor pool (``compute="actors"``:
each actor builds the router once, in its constructor).  :func:`route` adds
the shard ``route_many`` gives each id; :func:`diff` returns the
:class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives (one
partial per block, merged on the driver).  :func:`read_parquet` reads one
block per file, so the files spread over the workers.

Example::

    import ray
    import shardhash.ray as shr
    from shardhash import JumpRouter
    ray.init(num_cpus=2)
    ds = shr.read_parquet("ids/", "id")
    old, new = JumpRouter(["a", "b"]), JumpRouter(["a", "b", "c"])
    shr.route(ds, "id", new).write_parquet("routed/")
    print(shr.diff(ds, "id", old, new).summary())
"""

from __future__ import annotations

import functools
import pickle
import weakref
from collections.abc import Sequence
from typing import Any

from . import _engines
from . import arrow as _arrow

try:
    import ray
    import ray.data  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("shardhash.ray needs Ray Data: pip install 'shardhash[ray]'") from exc

__all__ = ["route", "diff", "analyze", "read_parquet"]


# The schemas :func:`read_parquet` read from the footers, by Dataset: asking a
# Dataset of ours for its schema would run a read task (a whole file) first.
_SCHEMAS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
# The files behind each Dataset :func:`read_parquet` made: :func:`diff` and
# :func:`analyze` over it hand the files' pieces to Ray tasks that read them
# and return only their partial (no block of ids through the object store).
_FILES = _engines.FileRegistry()


def _kind(ds: Any, column: str) -> str:
    schema = _SCHEMAS.get(ds)
    if schema is None:
        schema = ds.schema()
    names = list(schema.names)
    return _engines.id_column_kind(names, column, lambda: schema.types[names.index(column)])


_COMPUTE = ("tasks", "actors")


def _map(ds: Any, cls: type, args: tuple[Any, ...], concurrency: int | None, num_cpus: float | None,
         compute: str) -> Any:
    """``ds.map_batches`` of ``cls(*args)`` over whole blocks, as Ray tasks or in an actor pool.

    Tasks run in Ray's pooled worker processes, which live as long as the
    cluster: each process builds a router once (the cache of
    :mod:`shardhash.arrow`) and keeps it for every later task and call, and
    no actor has to start per call.  Actors build the router in their
    constructor; a pool starts for every call (seconds on a small machine).
    """
    if compute not in _COMPUTE:
        raise ValueError(f"compute must be one of {', '.join(map(repr, _COMPUTE))}, not {compute!r}")
    extra: dict[str, Any] = {} if num_cpus is None else {"num_cpus": num_cpus}
    if compute == "tasks":
        if concurrency is not None:
            extra["concurrency"] = _concurrency(concurrency)
        return ds.map_batches(_task, fn_args=(cls, args), batch_format="pyarrow", batch_size=None, **extra)
    n = _concurrency(concurrency)
    try:
        pool = ray.data.ActorPoolStrategy(size=n)
        return ds.map_batches(cls, fn_constructor_args=args, batch_format="pyarrow", batch_size=None,
                              compute=pool, **extra)
    except (TypeError, AttributeError):  # Ray before ``compute=`` took an ActorPoolStrategy
        return ds.map_batches(cls, fn_constructor_args=args, batch_format="pyarrow", batch_size=None,
                              concurrency=n, **extra)


def _task(batch: Any, cls: type, args: tuple[Any, ...]) -> Any:
    """One block in a Ray task: the routers come from this worker process's cache."""
    return cls(*args)(batch)


def _concurrency(concurrency: int | None) -> int:
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        return concurrency
    cpus = ray.available_resources().get("CPU", 1)  # type: ignore[no-untyped-call]  # ray: unannotated
    return max(1, int(cpus))


class _Route:
    """One per actor: the router is built here, once."""

    def __init__(self, cols: dict[str, _arrow.ShippedRouter], column: str, indices: bool, kind: str,
                 source_column: str | None) -> None:
        self.cols, self.column, self.indices = cols, column, indices
        self.kind, self.source_column = kind, source_column
        for sr in cols.values():
            sr.get()

    def __call__(self, batch: Any) -> Any:
        return next(iter(_arrow.route_batches([batch], self.column, self.cols, indices=self.indices,
                                               source_column=self.source_column, kind=self.kind)))


class _Diff:
    def __init__(self, so: _arrow.ShippedRouter, sn: _arrow.ShippedRouter, column: str,
                 weights: str | None, kind: str, source_column: str | None) -> None:
        self.so, self.sn, self.column, self.weights = so, sn, column, weights
        self.kind, self.source_column = kind, source_column
        so.get()
        sn.get()

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        part = _arrow.diff_batches([batch], self.column, self.so, self.sn, self.weights,
                                   source_column=self.source_column, kind=self.kind)
        return pa.Table.from_batches([_arrow.partial_batch(part)])


class _Analyze:
    def __init__(self, sr: _arrow.ShippedRouter | None, column: str, weights: str | None, capacity: int,
                 kind: str) -> None:
        self.sr, self.column, self.weights, self.capacity, self.kind = sr, column, weights, capacity, kind
        if sr is not None:
            sr.get()

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        p = _arrow.analyze_batch(batch, self.column, self.sr, self.weights, capacity=self.capacity,
                                 kind=self.kind)
        return pa.table({"partial": pa.array([pickle.dumps(p)], type=pa.binary())})


def route(ds: Any, column: str, router: Any, name: str = "shard", *, indices: bool = False,
          source_column: str | None = None, concurrency: int | None = None, num_cpus: float | None = None,
          compute: str = "tasks") -> Any:
    """``ds`` with a shard column (dictionary-encoded shard names, or
    ``int32`` indices); ``router`` may be a mapping ``{column name:
    router}``.  Lazy.  ``source_column`` names a column holding each
    row's file (``read_parquet(..., include_paths=True)`` gives ``path``), for
    errors that name the file.  ``compute``: ``"tasks"`` (Ray's pooled
    worker processes, each building a router once and keeping it across
    calls) or ``"actors"`` (an actor pool started for this call, each actor
    building the router in its constructor).  ``concurrency``: tasks at once
    (default: Ray's choice) or actors (default: the cluster's CPUs);
    ``num_cpus``: CPUs each task or actor reserves (Ray's default is 1; a
    fraction leaves room for Ray Data's own small tasks on a small cluster).
    """
    kind = _kind(ds, column)
    cols = _arrow.shard_columns(router, name)
    return _map(ds, _Route, (cols, column, indices, kind, source_column), concurrency, num_cpus, compute)


def _pieces(ds: Any, column: str, weights: str | None, compute: str) -> tuple[str, list[str]] | None:
    """``(kind, runs)`` when ``ds`` came from :func:`read_parquet` (and tasks run it), else None."""
    files = _FILES.get(ds)
    if files is None or compute != "tasks":
        return None
    units = _arrow.parquet_units(files, column, weights)
    cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]  # ray: unannotated
    return units[0], _arrow.plan_runs(units[1], int(cpus))


_REMOTE: dict[tuple[Any, float | None], Any] = {}


def _run_tasks(fn: Any, runs: list[str], shared: Any, args: tuple[Any, ...], num_cpus: float | None,
               concurrency: int | None) -> list[Any]:
    """``fn(units, *shared, *args)`` for every run as a Ray task, at most
    ``concurrency`` at once; ``shared`` (the routers) goes to the object
    store once, not once per task."""
    key = (fn, num_cpus)
    task = _REMOTE.get(key)
    if task is None:  # one remote function per (function, CPUs), exported to the cluster once
        task = _REMOTE[key] = ray.remote(fn) if num_cpus is None else ray.remote(num_cpus=num_cpus)(fn)
    ref = ray.put(shared)
    limit = len(runs) if concurrency is None else _concurrency(concurrency)
    pending: list[Any] = []
    done: list[Any] = []
    for r in runs:
        if len(pending) >= limit:
            ready, pending = ray.wait(pending, num_returns=1)
            done.extend(ready)
        pending.append(task.remote(r, ref, *args))
    got: list[Any] = ray.get(done + pending)
    return got


def diff(ds: Any, column: str, old: Any, new: Any, *, weights: str | None = None,
         source_column: str | None = None, concurrency: int | None = None, num_cpus: float | None = None,
         compute: str = "tasks", stats: dict[str, Any] | None = None) -> Any:
    """What moves from ``old`` to ``new`` over the ids in ``column``: the
    :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives.
    One partial per block (:func:`read_parquet` makes one block per file),
    merged on the driver; ``compute``, ``concurrency``, ``num_cpus`` as for
    :func:`route`.  A dict given as ``stats`` receives ``partials``,
    ``builds`` (router builds per worker process that made a partial) and
    ``peak_rss`` (peak resident bytes of each).

    Over a Dataset :func:`read_parquet` made, Ray tasks read the files'
    pieces themselves and return only their partial (a few tasks per CPU,
    runs of whole row groups): no block of ids goes through the object
    store.  Errors still name the file and the row."""
    kind = _kind(ds, column)
    so, sn = _arrow.ship(old), _arrow.ship(new)
    direct = _pieces(ds, column, weights, compute)
    if direct is not None:
        rows = _run_tasks(_engines.diff_run_row, direct[1], (so, sn), (column, weights, direct[0]), num_cpus,
                          concurrency)
        parts = [_arrow.DiffPartial.from_row(r, so, sn) for r in rows]
        return _engines.diff_report(parts, so, sn, weighted=weights is not None, stats=stats)
    out = _map(ds, _Diff, (so, sn, column, weights, kind, source_column), concurrency, num_cpus, compute)
    parts = [_arrow.DiffPartial.from_row(r, so, sn) for r in out.take_all()]
    return _engines.diff_report(parts, so, sn, weighted=weights is not None, stats=stats)


def analyze(ds: Any, column: str, router: Any = None, *, weights: str | None = None,
            capacity: int = 10_000, concurrency: int | None = None,
            num_cpus: float | None = None, compute: str = "tasks") -> _arrow.AnalyzePartial:
    """Per-shard load (with ``router``) and hot keys: a merged
    :class:`shardhash.arrow.AnalyzePartial` (over a Dataset
    :func:`read_parquet` made, tasks read the files themselves, as for :func:`diff`)."""
    kind = _kind(ds, column)
    sr = None if router is None else _arrow.ship(router)
    direct = _pieces(ds, column, weights, compute)
    if direct is not None:
        got = _run_tasks(_engines.analyze_run, direct[1], sr, (column, weights, direct[0], capacity), num_cpus,
                         concurrency)
        return _engines.analyze_result([p for p in got if p is not None], "the Dataset has no rows")
    out = _map(ds, _Analyze, (sr, column, weights, capacity, kind), concurrency, num_cpus, compute)
    parts = [pickle.loads(r["partial"]) for r in out.take_all()]
    return _engines.analyze_result(parts, "the Dataset has no rows")


# ------------------------------------------------------------------ Parquet input


def _read_files(batch: Any, column: str, columns: list[str] | None, kind: str, path_column: str | None) -> Any:
    """A read task: the files named in one block of paths, as one Arrow table.

    Checks each file as :func:`shardhash.dask.read_parquet` does: null ids and
    ids of another kind are errors naming the file and the row in that file.
    """
    import pyarrow as pa

    tables = [_read_file(str(p), column, columns, kind, path_column) for p in batch.column("path").to_pylist()]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _read_file(path: str, column: str, columns: list[str] | None, kind: str, path_column: str | None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    col = table.column(column)
    if col.null_count:
        raise ValueError(f"{path}: row {_arrow._first_null(col)}: id column {column!r} is null")
    got = _arrow.id_kind(col.type)
    if got != kind:
        raise TypeError(f"{path}: id column {column!r} holds {got} ids where {kind} ids were expected")
    if path_column is not None:
        table = table.append_column(path_column, pa.array([path] * table.num_rows, pa.string()))
    return table


def read_parquet(path: Any, column: str, *, columns: Sequence[str] | None = None, weights: str | None = None,
                 include_paths: bool = False, num_cpus: float | None = None) -> Any:
    """A Ray Dataset over a folder, glob or list of Parquet files with **one
    block per file** (so the files spread over the actors: Ray Data's own
    ``read_parquet`` may pack small files into one block, and then one actor
    does all the work), after checking every file's footer: the id column
    exists everywhere with one kind of ids (errors name the file).  Reading a
    file checks for null ids, naming the file and the row.

    ``columns`` limits the columns read (the id and weight columns are always
    read); ``include_paths=True`` adds a ``path`` column naming each row's
    file, as Ray's ``read_parquet(include_paths=True)`` does; ``num_cpus``:
    what each read task reserves.
    """
    files = _arrow.parquet_files(path)
    kind, _ = _arrow.scan_parquet(files, column, weights)
    cols = None if columns is None else list(dict.fromkeys([column, *columns, *([weights] if weights else [])]))
    extra: dict[str, Any] = {} if num_cpus is None else {"num_cpus": num_cpus}
    paths = ray.data.from_items([{"path": f} for f in files], override_num_blocks=len(files))
    read = functools.partial(_read_files, column=column, columns=cols, kind=kind,
                             path_column="path" if include_paths else None)
    ds = paths.map_batches(read, batch_format="pyarrow", batch_size=None, **extra)
    _FILES.add(ds, files)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pq.read_schema(files[0])
        if cols is not None:
            schema = pa.schema([schema.field(c) for c in cols])
        if include_paths:
            schema = schema.append(pa.field("path", pa.string()))
        _SCHEMAS[ds] = schema
    except (TypeError, KeyError):  # a Dataset that is not weakly referenceable: ask it when needed
        pass
    return ds
