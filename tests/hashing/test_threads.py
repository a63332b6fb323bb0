"""Many threads hashing shared arrays give exactly the single-thread result.

Kernels release the GIL and may split work over the package's own thread
pool (``threads=``); callers may also run many hashing calls at once from
their own threads.  Both kinds of concurrency, together, must not change a
single value.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash import Hasher, KeyCodec, _parallel, hash_array
from tests._support import child_env

N_THREADS = 8


def run_together(n: int, work: Callable[[int], None]) -> list[BaseException]:
    """Start n threads released at once by a Barrier; return their exceptions."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def target(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            with lock:
                errors.append(exc)

    ts = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts), "a hashing thread hung"
    return errors


def shared_inputs(n_strings: int = 20_000) -> dict[str, Any]:
    rng = np.random.default_rng(8)
    n = 200_000  # large enough that threads=None splits the work
    ints = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    strs = [f"user-{x:x}-é" for x in ints[:n_strings]]
    inputs: dict[str, Any] = {
        "int64": ints,
        "int64-reversed": ints[::-1],
        "uint32-strided": ints.view(np.uint32)[::3],
        "int16": ints.astype(np.int16),
        "U": np.array(strs),
        "S": np.array([s.encode() for s in strs]),
        "object": np.array(strs, dtype=object),
        "list": strs[:3000],
    }
    try:
        import pyarrow as pa
    except ImportError:
        pass
    else:
        inputs["arrow-string"] = pa.array(strs)
        inputs["arrow-large-string"] = pa.array(strs, pa.large_string())
        inputs["arrow-int64-chunked"] = pa.chunked_array([ints[:70_000], ints[70_000:]])
    return inputs


@pytest.mark.parametrize("hasher, n_strings", [
    (Hasher(), 20_000), (Hasher("murmur3_128", 5), 20_000),
    # strings then go through Python objects with the GIL: fewer of them
    (Hasher("xxh32", 9, KeyCodec(int_encoding="decimal", casefold=True)), 3000),
], ids=lambda v: repr(v) if isinstance(v, Hasher) else str(v))
def test_threads_hashing_shared_arrays(hasher: Hasher, n_strings: int) -> None:
    inputs = shared_inputs(n_strings)
    reference = {name: hasher.hash_array(keys, threads=1) for name, keys in inputs.items()}
    names = list(inputs)

    def work(i: int) -> None:
        for r in range(2):
            for j, name in enumerate(names):
                threads = (1, 2, None)[(i + j + r) % 3]
                got = hasher.hash_array(inputs[name], threads=threads)
                if not np.array_equal(got, reference[name]):
                    raise AssertionError(f"thread {i}: {name} with threads={threads} differs")
            # a shared output array per thread, written again and again
            out = np.empty(len(inputs["int64"]), np.uint64)
            hasher.hash_array(inputs["int64"], out=out, threads=2)
            if not np.array_equal(out, reference["int64"]):
                raise AssertionError(f"thread {i}: out= differs")

    errors = run_together(N_THREADS, work)
    assert not errors, errors[:3]
    # and the inputs were not touched
    again = shared_inputs(n_strings)
    for name in names:
        if isinstance(again[name], np.ndarray):
            assert np.array_equal(again[name], inputs[name]), name


def test_regression_pool_growth_race() -> None:
    # Concurrent calls asking for ever more threads once raced while the
    # shared pool was being replaced by a larger one (work submitted to a
    # pool that another caller had just shut down).  Start from no pool each
    # round so every round grows it concurrently.
    keys = np.arange(4096, dtype=np.int64)
    reference = hash_array(keys, threads=1)

    def work(i: int) -> None:
        for t in range(24):
            threads = (t + i) % 9 + 1
            got = hash_array(keys, threads=threads)
            if not np.array_equal(got, reference):
                raise AssertionError(f"thread {i}: threads={threads} differs")

    saved = (_parallel._pool, _parallel._pool_size)
    try:
        for _ in range(40):
            # no hashing call is running here, so the reset needs no lock
            _parallel._pool, _parallel._pool_size = None, 0
            errors = run_together(N_THREADS, work)
            assert not errors, errors[:3]
    finally:
        pool = _parallel._pool
        _parallel._pool, _parallel._pool_size = saved
        if pool is not None and pool is not saved[0]:
            pool.shutdown(wait=True)


def test_error_in_a_worker_chunk_names_the_global_position() -> None:
    # The bad key lies in the last chunk, which a pool thread hashes.
    n = 100_000
    raw = np.full((n, 2), 0x61, dtype=np.uint32)
    raw[n - 10, 1] = 0x110000
    a = raw.reshape(-1).view("U2")
    for threads in (1, 2, 4, None):
        with pytest.raises(ValueError, match=rf"^key at position {n - 10}: .*0x110000"):
            hash_array(a, threads=threads)

    def work(i: int) -> None:
        with pytest.raises(ValueError, match=rf"^key at position {n - 10}: "):
            hash_array(a, threads=2 + i % 3)

    errors = run_together(N_THREADS, work)
    assert not errors, errors[:3]
    # the pool still works afterwards
    assert np.array_equal(hash_array(np.arange(n), threads=4), hash_array(np.arange(n), threads=1))


FORK_CHILD = r"""
import os, signal, sys
import numpy as np
import shardhash

keys = np.arange(20_000, dtype=np.int64)
reference = shardhash.hash_array(keys, threads=2)   # the parent now has a thread pool
pid = os.fork()
if pid == 0:
    signal.alarm(3)                                  # a hang becomes SIGALRM
    got = shardhash.hash_array(keys, threads=2)
    os._exit(0 if np.array_equal(got, reference) else 3)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    print("child killed by signal", os.WTERMSIG(status))
    sys.exit(1)
sys.exit(os.WEXITSTATUS(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_hashing_with_threads_in_a_forked_child() -> None:
    proc = subprocess.run([sys.executable, "-c", FORK_CHILD], capture_output=True, env=child_env(),
                          timeout=120, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode(errors="replace")


def test_default_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # threads=None: one thread (no pool at all) for small inputs, every core for large ones.
    sizes: list[int] = []
    real_get_pool = _parallel._get_pool

    def recording_get_pool(size: int) -> Any:
        sizes.append(size)
        return real_get_pool(size)

    monkeypatch.setattr(_parallel, "_get_pool", recording_get_pool)
    monkeypatch.setattr(_parallel, "cpu_count", lambda: 4)
    small = np.arange(1000, dtype=np.int64)
    big = np.arange(1 << 20, dtype=np.int64)
    assert np.array_equal(hash_array(small), hash_array(small, threads=1))
    assert sizes == []
    hash_array(small, threads=3)
    assert sizes == [2]  # the calling thread takes one chunk itself
    assert np.array_equal(hash_array(big), hash_array(big, threads=1))
    assert sizes[-1] == 3  # four cores: the caller plus three pool threads
    hash_array(big, threads=6)  # an explicit count is taken as given
    assert sizes[-1] == 5
