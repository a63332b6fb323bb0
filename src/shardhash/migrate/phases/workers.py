"""A bounded pool of copy workers: one item (a source shard) per worker at
a time, at most ``n`` at once.  The first error stops the others at their
next chunk boundary (they watch ``stop``) and is raised with a note naming
the item it came from; each worker thread closes the connections it opened
(the backends' and the metadata store's are per thread) when it ends."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from ..errors import MigrationError

T = TypeVar("T")
R = TypeVar("R")


class Stopped(Exception):
    """Raised in a worker at a chunk boundary after another worker failed."""


def run_pool(items: Sequence[str], fn: Callable[[str], None], n: int, stop: threading.Event,
             describe: Callable[[str], str], close: Callable[[], None]) -> None:
    """``fn(item)`` for every item on ``n`` threads; the first error (in
    the order they happened) is raised once every worker has stopped."""
    q: queue.Queue[str] = queue.Queue()
    for it in items:
        q.put(it)
    errors: list[tuple[str, BaseException]] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            while not stop.is_set():
                try:
                    it = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    fn(it)
                except Stopped:
                    return
                except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                    with lock:
                        errors.append((it, e))
                    stop.set()
                    return
        finally:
            close()

    threads = [threading.Thread(target=work, name=f"shardhash-copy-worker-{i}", daemon=True)
               for i in range(max(1, min(n, len(items))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        it, e = errors[0]
        note = getattr(e, "add_note", None)  # (Python >= 3.11; the log names it in any case)
        if note is not None:
            note(f"(in the copy worker for {describe(it)}"
                 + (f"; {len(errors) - 1} other worker(s) failed too)" if len(errors) > 1 else ")"))
        raise e


class Pool:
    """Worker threads kept for one :meth:`Migration.run` (the catch-up, the
    verify and the check under the fence run one item -- a source with its
    destinations, or a shard's side -- per worker, batch after batch, so the
    threads and their connections are opened once, not per batch).  ``close``
    runs on each worker thread when the pool closes (it closes the thread's
    own connections)."""

    def __init__(self, n: int, close: Callable[[], None], name: str = "shardhash-pair-worker") -> None:
        if n < 1:
            raise ValueError(f"a pool needs at least one worker, not {n}")
        self.n = n
        self._close = close
        self._name = name
        self._q: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._threads: list[threading.Thread] = []

    def _run(self) -> None:
        try:
            while True:
                job = self._q.get()
                if job is None:
                    return
                job()
        finally:
            self._close()

    def map(self, items: Sequence[T], fn: Callable[[T], R], describe: Callable[[T], str], what: str) -> list[R]:
        """``[fn(item) for item in items]``, at most ``n`` at once.  The first
        error stops the others cleanly: an item not started yet is not
        started, one under way finishes; then the error is raised (a plain
        :class:`MigrationError` with ``(in the <what> worker for <item>)``
        appended, any other with that note)."""
        while len(self._threads) < min(self.n, len(items)):
            t = threading.Thread(target=self._run, name=f"{self._name}-{len(self._threads)}", daemon=True)
            t.start()
            self._threads.append(t)
        results: list[Any] = [None] * len(items)
        errors: list[tuple[T, BaseException]] = []
        lock = threading.Lock()
        stop = threading.Event()
        left = [len(items)]
        done = threading.Event()
        if not items:
            return []

        def job(i: int, it: T) -> None:
            try:
                if not stop.is_set():
                    results[i] = fn(it)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                with lock:
                    errors.append((it, e))
                stop.set()
            finally:
                with lock:
                    left[0] -= 1
                    if left[0] == 0:
                        done.set()

        for i, it in enumerate(items):
            self._q.put(partial(job, i, it))
        done.wait()
        if errors:
            it, e = errors[0]
            where = f"in the {what} worker for {describe(it)}"
            more = f"; {len(errors) - 1} other worker(s) failed too" if len(errors) > 1 else ""
            if type(e) is MigrationError:
                raise MigrationError(f"{e} ({where}{more})") from e
            note = getattr(e, "add_note", None)
            if note is not None:
                note(f"({where}{more})")
            raise e
        return results

    def close(self) -> None:
        """Stop the workers (each closes its connections first)."""
        for _ in self._threads:
            self._q.put(None)
        for t in self._threads:
            t.join()
        self._threads = []


def default_workers(pairs: int, cpus: int | None) -> int:
    """The default ``parallel``: the number of workers' items, at most the cores."""
    return max(1, min(pairs, cpus or 1))


__all__ = ["Pool", "Stopped", "default_workers", "run_pool"]
