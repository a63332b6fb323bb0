"""The driver side that :mod:`shardhash.dask`, :mod:`shardhash.spark` and :mod:`shardhash.ray` share.

Each adapter only says how its engine runs a function over the partitions
(``map_partitions``, ``mapInArrow``, ``map_batches``); the workers run the
kernels of :mod:`shardhash.arrow`.  What the driver does before and after is
the same for every engine and lives here: checking the input columns (errors
name the column and list the columns there are), and turning the partials the
workers send back into the single-machine answer (a merged
:class:`shardhash.arrow.DiffPartial`'s :class:`shardhash.plan.PlanReport`, or
a merged :class:`shardhash.arrow.AnalyzePartial`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from . import arrow as _arrow

if TYPE_CHECKING:
    from .plan import PlanReport


def id_column_kind(columns: Iterable[Any], column: str, type_of: Callable[[], Any],
                   kind_of: Callable[[Any], str] = _arrow.id_kind) -> str:
    """The kind of ids (``"int"``, ``"str"`` or ``"bytes"``) in ``column``.

    ``columns`` are the frame's column names; ``type_of()`` gives the
    column's type (called only once the column is known to exist) and
    ``kind_of`` maps it to a kind or raises :class:`TypeError`.
    """
    names = list(columns)
    if column not in names:
        raise ValueError(f"no column {column!r} (columns: {', '.join(map(str, names))})")
    try:
        return kind_of(type_of())
    except TypeError as exc:
        raise TypeError(f"column {column!r}: {exc}") from None


def refuse_taken(columns: Iterable[Any], names: Iterable[str]) -> None:
    """Refuse output column ``names`` the frame already has."""
    have = set(columns)
    for n in names:
        if n in have:
            raise ValueError(f"the DataFrame already has a column named {n!r}: choose another name")


def check_weights(columns: Iterable[Any], weights: str | None) -> None:
    """Refuse a weight column the frame does not have."""
    if weights is not None and weights not in list(columns):
        raise ValueError(f"no weight column {weights!r}")


input_columns = _arrow.input_columns


# ----------------------------------------------------------- tasks over Parquet runs
# The functions engines' workers run over runs of row groups live here, not in
# the adapters: a worker that unpickles them imports this module (and
# shardhash.arrow) only, not the adapter's engine modules (ray.data,
# dask.dataframe and pandas cost a fresh worker seconds to import).


def diff_run(run: str, routers: tuple[Any, Any], column: str, weights: str | None, kind: str) -> Any:
    """The :class:`shardhash.arrow.DiffPartial` of one run made by :func:`shardhash.arrow.plan_runs`."""
    return _arrow.diff_units(_arrow.decode_units(run), column, routers[0], routers[1], weights, kind)


def diff_run_row(run: str, routers: tuple[Any, Any], column: str, weights: str | None, kind: str) -> Any:
    """:func:`diff_run` as one row of plain values (:meth:`shardhash.arrow.DiffPartial.to_row`)."""
    return diff_run(run, routers, column, weights, kind).to_row()


def analyze_run(run: str, router: Any, column: str, weights: str | None, kind: str, capacity: int) -> Any:
    """The :class:`shardhash.arrow.AnalyzePartial` of one run (None when it has no rows)."""
    return _arrow.analyze_units(_arrow.decode_units(run), column, router, weights, kind, capacity)


def merge_some(a: Any, b: Any) -> Any:
    """``a.merge(b)``, where either may be None (a run without rows)."""
    return b if a is None else a if b is None else a.merge(b)


class FileRegistry:
    """The Parquet files behind frames an adapter's ``read_parquet`` made, by
    the frame's identity (frames may compare element-wise, so they are not
    dictionary keys); an entry goes when its frame does."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, list[str]]] = {}

    def add(self, frame: Any, files: list[str]) -> None:
        key = id(frame)
        try:
            ref = weakref.ref(frame, lambda _r: self._by_id.pop(key, None))
        except TypeError:  # not weakly referenceable: the frame's rows are read instead
            return
        self._by_id[key] = (ref, list(files))

    def get(self, frame: Any) -> list[str] | None:
        hit = self._by_id.get(id(frame))
        if hit is None or hit[0]() is not frame:
            return None
        return hit[1]


def diff_report(parts: Sequence[Any], old: _arrow.ShippedRouter, new: _arrow.ShippedRouter, *,
                weighted: bool, stats: dict[str, Any] | None, count_key: str = "partials",
                reduce: Callable[[Sequence[Any]], _arrow.DiffPartial] = _arrow.tree_reduce) -> PlanReport:
    """The report of the merged ``parts`` (an empty report when there are none).

    ``reduce`` merges the parts (default: :func:`shardhash.arrow.tree_reduce`
    on the driver; Dask merges its delayed parts in a tree of tasks).  A dict
    given as ``stats`` receives ``count_key`` (the number of parts),
    ``builds`` and ``peak_rss`` (per worker process).
    """
    if not parts:
        return _arrow.DiffPartial.empty(old, new, weighted=weighted).report()
    total = reduce(parts)
    if stats is not None:
        stats.update({count_key: len(parts), "builds": dict(total.builds), "peak_rss": dict(total.peak_rss)})
    return total.report()


def analyze_result(parts: Sequence[Any], empty: str,
                   reduce: Callable[[Sequence[Any]], _arrow.AnalyzePartial] = _arrow.tree_reduce,
                   ) -> _arrow.AnalyzePartial:
    """The merged ``parts``; ``empty`` is the error when there are none."""
    if not parts:
        raise ValueError(empty)
    return reduce(parts)
