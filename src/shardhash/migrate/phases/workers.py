"""A bounded pool of copy workers: one item (a source shard) per worker at
a time, at most ``n`` at once.  The first error stops the others at their
next chunk boundary (they watch ``stop``) and is raised with a note naming
the item it came from; each worker thread closes the connections it opened
(the backends' and the metadata store's are per thread) when it ends."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence


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


def default_workers(pairs: int, cpus: int | None) -> int:
    """The default ``parallel``: the number of workers' items, at most the cores."""
    return max(1, min(pairs, cpus or 1))


__all__ = ["Stopped", "default_workers", "run_pool"]
