"""Run a GIL-releasing kernel over an index range on several threads.

Kernels in the compiled modules release the GIL, so plain threads give real
parallelism without OpenMP (which is not portable to every compiler the
wheels are built with).  Work is split into contiguous chunks; each thread
writes only its own slice of the output, so no locking is needed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["resolve_threads", "chunk_bounds", "run_chunks", "parallel_for", "MIN_PARALLEL", "kernel_array"]

# Below this many items a second thread costs more than it saves.
MIN_PARALLEL = 1 << 16

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _reset_after_fork() -> None:
    # A forked child inherits the pool object but none of its threads: start afresh.
    global _pool, _pool_size, _pool_lock
    _pool = None
    _pool_size = 0
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_threads(threads: int | None, n: int) -> int:
    """Validate ``threads`` and pick the number of threads for ``n`` items.

    ``None`` means: one thread for small inputs, every core for large ones.
    """
    if threads is None:
        if n < MIN_PARALLEL * 2:
            return 1
        return max(1, min(cpu_count(), n // MIN_PARALLEL))
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int or None, not {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    return max(1, min(threads, n)) if n else 1


def _get_pool(size: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    if _pool is None or _pool_size < size:
        old = _pool
        _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="shardhash")
        _pool_size = size
        if old is not None:
            old.shutdown(wait=False)
    return _pool


def chunk_bounds(n: int, threads: int | None) -> list[tuple[int, int]]:
    """The contiguous ``(start, stop)`` chunks covering ``range(n)`` for ``threads``.

    One chunk per thread, all of the same size but the last.
    """
    t = resolve_threads(threads, n)
    if t <= 1 or n == 0:
        return [(0, n)]
    step = -(-n // t)
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def run_chunks(bounds: list[tuple[int, int]], body: Callable[[int, int], object]) -> None:
    """Call ``body(start, stop)`` for every chunk, the first on the calling thread.

    ``body`` must release the GIL for the threads to run in parallel and must
    only write its own part of any shared output.  Exceptions propagate.
    """
    if len(bounds) <= 1:
        for s, e in bounds:
            body(s, e)
        return
    # The lock covers growing the pool and submitting to it, so no thread can
    # submit to a pool another thread has just retired.  Retired pools still
    # finish the work already submitted to them.
    with _pool_lock:
        pool = _get_pool(len(bounds) - 1)
        futures = [pool.submit(body, s, e) for s, e in bounds[1:]]
    # The calling thread takes the first chunk itself.
    try:
        body(*bounds[0])
    finally:
        errors = []
        for f in futures:
            try:
                f.result()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)
    if errors:
        raise errors[0]


def parallel_for(n: int, threads: int | None, body: Callable[[int, int], object]) -> None:
    """Call ``body(start, stop)`` over contiguous chunks covering ``range(n)``.

    The compiled modules run their kernels through ``shardhash._common.run``,
    which uses :func:`chunk_bounds` and :func:`run_chunks`; this is the same
    for Python callables.
    """
    run_chunks(chunk_bounds(n, threads), body)


def kernel_array(a: Any, dtype: Any = None) -> np.ndarray:
    """``a`` as the compiled kernels read it: a C-contiguous, aligned array
    (of ``dtype`` when given).  ``np.ascontiguousarray`` keeps an array whose
    items start off their alignment (``np.frombuffer`` at an odd offset
    makes one), and a kernel's typed loads from it are undefined behaviour
    in C, so such an array is copied."""
    import numpy

    arr: np.ndarray = numpy.ascontiguousarray(a, dtype=dtype)
    return arr if arr.flags.aligned else arr.copy()
