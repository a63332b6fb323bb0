"""Route, plan and analyze ids held in a Ray Dataset (``pip install 'shardhash[ray]'``).

Both functions run the kernels of :mod:`shardhash.arrow` in
``Dataset.map_batches(batch_format="pyarrow")`` with a callable class: each
actor gets the router's document once and builds the router once (in its
constructor), then serves every batch it is given.  :func:`route` adds the
shard ``route_many`` gives each id; :func:`diff` returns the
:class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives (one
partial per batch, merged on the driver).

Example::

    import ray
    import shardhash.ray as shr
    from shardhash import JumpRouter
    ray.init(num_cpus=2)
    ds = ray.data.read_parquet("ids/", include_paths=True)
    old, new = JumpRouter(["a", "b"]), JumpRouter(["a", "b", "c"])
    shr.route(ds, "id", new).write_parquet("routed/")
    print(shr.diff(ds, "id", old, new, source_column="path").summary())
"""

from __future__ import annotations

import pickle
from typing import Any

from . import _engines
from . import arrow as _arrow

try:
    import ray
    import ray.data  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("shardhash.ray needs Ray Data: pip install 'shardhash[ray]'") from exc

__all__ = ["route", "diff", "analyze"]


def _kind(ds: Any, column: str) -> str:
    schema = ds.schema()
    names = list(schema.names)
    return _engines.id_column_kind(names, column, lambda: schema.types[names.index(column)])


def _map(ds: Any, cls: type, args: tuple[Any, ...], concurrency: int | None, num_cpus: float | None) -> Any:
    extra: dict[str, Any] = {} if num_cpus is None else {"num_cpus": num_cpus}
    n = _concurrency(concurrency)
    try:
        compute = ray.data.ActorPoolStrategy(size=n)
        return ds.map_batches(cls, fn_constructor_args=args, batch_format="pyarrow", batch_size=None,
                              compute=compute, **extra)
    except (TypeError, AttributeError):  # Ray before ``compute=`` took an ActorPoolStrategy
        return ds.map_batches(cls, fn_constructor_args=args, batch_format="pyarrow", batch_size=None,
                              concurrency=n, **extra)


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
          source_column: str | None = None, concurrency: int | None = None, num_cpus: float | None = None) -> Any:
    """``ds`` with a shard column (dictionary-encoded shard names, or
    ``int32`` indices); ``router`` may be a mapping ``{column name:
    router}``.  Lazy.  ``source_column`` names a column holding each
    row's file (``read_parquet(..., include_paths=True)`` gives ``path``), for
    errors that name the file.  ``concurrency``: actors (default: the
    cluster's CPUs); ``num_cpus``: CPUs each actor reserves (Ray's default
    is 1; a fraction leaves room for Ray Data's own small tasks on a small
    cluster).
    """
    kind = _kind(ds, column)
    cols = _arrow.shard_columns(router, name)
    return _map(ds, _Route, (cols, column, indices, kind, source_column), concurrency, num_cpus)


def diff(ds: Any, column: str, old: Any, new: Any, *, weights: str | None = None,
         source_column: str | None = None, concurrency: int | None = None, num_cpus: float | None = None,
         stats: dict[str, Any] | None = None) -> Any:
    """What moves from ``old`` to ``new`` over the ids in ``column``: the
    :class:`shardhash.plan.PlanReport` :func:`shardhash.plan.diff` gives.
    A dict given as ``stats`` receives ``partials``, ``builds`` (router
    builds per actor process) and ``peak_rss`` (peak resident bytes of each)."""
    kind = _kind(ds, column)
    so, sn = _arrow.ship(old), _arrow.ship(new)
    out = _map(ds, _Diff, (so, sn, column, weights, kind, source_column), concurrency, num_cpus)
    parts = [_arrow.DiffPartial.from_row(r, so, sn) for r in out.take_all()]
    return _engines.diff_report(parts, so, sn, weighted=weights is not None, stats=stats)


def analyze(ds: Any, column: str, router: Any = None, *, weights: str | None = None,
            capacity: int = 10_000, concurrency: int | None = None,
            num_cpus: float | None = None) -> _arrow.AnalyzePartial:
    """Per-shard load (with ``router``) and hot keys: a merged
    :class:`shardhash.arrow.AnalyzePartial`."""
    kind = _kind(ds, column)
    sr = None if router is None else _arrow.ship(router)
    out = _map(ds, _Analyze, (sr, column, weights, capacity, kind), concurrency, num_cpus)
    parts = [pickle.loads(r["partial"]) for r in out.take_all()]
    return _engines.analyze_result(parts, "the Dataset has no rows")
