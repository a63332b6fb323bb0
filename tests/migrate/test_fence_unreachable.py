"""A writer past a freeze's deadline asks the metadata store to decide the
fence; when the store cannot be reached, the write is not done, the writer
waits on and asks again, and only after ``wait_timeout`` gives up with a
FenceTimeout that names the cause -- never the driver's error in the middle
of a wait, never a write on an undecided fence."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster, Migration
from shardhash.migrate.cluster import FenceTimeout

from ._harness import drop_cluster, shard_rows
from .test_fence_deadline import FENCE, _killed_at, _setup, _write


def _failing(cl: Cluster, times: int, exc: BaseException) -> list[int]:
    """Make the metadata store's fence decision fail ``times`` times (-1: always)."""
    real = cl.metadata.break_fence
    calls = [0]

    def flaky(mig: str, attempt: int) -> Any:
        calls[0] += 1
        if times < 0 or calls[0] <= times:
            raise exc
        return real(mig, attempt)

    cl.metadata.break_fence = flaky
    return calls


@pytest.fixture
def frozen(tmp_path: Path, backend: str) -> Iterator[tuple[Cluster, int, str]]:
    """A migration whose executor was SIGKILLed right after its freeze (its
    deadline, FENCE, passes while nobody resumes it): the cluster, a key of
    the frozen units and the key's source shard."""
    path, initial, _new, k = _setup(tmp_path, backend)
    try:
        _killed_at(path, "m0", "after-freeze")
        cl = Cluster.load(path)
        yield cl, k, initial.route(k)
        cl.close()
    finally:
        drop_cluster(tmp_path, backend)


def test_a_store_that_comes_back_decides_and_the_write_goes_on(frozen: tuple[Cluster, int, str],
                                                               tmp_path: Path) -> None:
    cl, k, src = frozen
    calls = _failing(cl, 3, sqlite3.OperationalError("unable to open database file"))
    shard, pause = _write(cl, k, 7)
    assert calls[0] == 4  # three failures, then the decision
    assert shard == src
    assert FENCE * 0.5 < pause < FENCE + 2.0, pause
    assert cl.metadata.get("m0", "fence_aborted:1") is not None
    assert shard_rows(tmp_path, src)[k] == (k, f"u{k}", 7)
    assert Migration(cl, "m0").run(fence_timeout=FENCE) == "retained"


def test_a_store_that_stays_away_ends_in_a_fence_timeout(frozen: tuple[Cluster, int, str], tmp_path: Path) -> None:
    cl, k, src = frozen
    cl.wait_timeout = FENCE + 1.0
    err = ConnectionRefusedError(111, "Connection refused")
    calls = _failing(cl, -1, err)
    t0 = time.perf_counter()
    with pytest.raises(FenceTimeout, match="could not be reached") as e:
        _write(cl, k, 7)
    assert e.value.__cause__ is err
    assert time.perf_counter() - t0 < cl.wait_timeout + 2.0
    assert calls[0] > 2  # asked again while waiting
    assert shard_rows(tmp_path, src)[k] == (k, f"u{k}", 0)  # nothing written
    assert cl.metadata.get("m0", "fence_aborted:1") is None


def test_an_error_that_is_not_the_store_being_away_is_not_retried(frozen: tuple[Cluster, int, str]) -> None:
    cl, k, _src = frozen
    calls = _failing(cl, -1, RuntimeError("a bug"))
    with pytest.raises(RuntimeError, match="a bug"):
        _write(cl, k, 7)
    assert calls[0] == 1
