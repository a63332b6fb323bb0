"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def enabled(benchmark: Any) -> bool:
    """True when pytest-benchmark times (``--benchmark-enable``), False when each
    benchmark runs once as a plain test (the default ``--benchmark-disable``)."""
    return not getattr(benchmark, "disabled", True)


def best(fn: Callable[[], Any], repeat: int = 3, timer: Callable[[], float] = time.perf_counter) -> float:
    """Best (lowest) time of ``repeat`` runs of ``fn``: a slow spell of a shared
    machine then distorts a ratio less than a mean would."""
    lowest = float("inf")
    for _ in range(repeat):
        t0 = timer()
        fn()
        lowest = min(lowest, timer() - t0)
    return lowest


def alternating_best(fns: dict[str, Callable[[], Any]], repeat: int = 5,
                     timer: Callable[[], float] = time.process_time) -> dict[str, float]:
    """Best time of each function over ``repeat`` rounds that run them in turn,
    so that all of them meet the same machine load (a busy shared machine
    otherwise distorts ratios of runs made minutes apart).  Single-threaded
    comparisons use CPU time (the default timer)."""
    lowest = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = timer()
            fn()
            lowest[name] = min(lowest[name], timer() - t0)
    return lowest
