"""``Migration.status()`` reports measured figures only: rows scanned per
second and rows copied per second separately, and null for a rate nothing was
measured for (no change applied: no catch-up rate, and no invented rate in the
progress lines)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration

from ._harness import connect, drop_cluster, make_cluster

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _migration(root: Path, backend: str) -> tuple[Cluster, Migration, list[dict[str, Any]]]:
    path = make_cluster(root, FOUR, users=3000, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "s4")
    m = Migration.create(cl, "users", new)
    ticks: list[dict[str, Any]] = []
    m.progress_fn = ticks.append
    m.progress_every = 0.0
    return cl, m, ticks


def test_no_change_applied_reports_no_catchup_rate(root: Path, backend: str) -> None:
    cl, m, ticks = _migration(root, backend)
    assert m.run(cutover=False) == "catching-up"
    st = m.status()
    # nothing was written during the migration: no change was applied, so no rate
    assert st["catchup_changes_per_s"] is None
    assert st["lag"] == {"changes": 0, "seconds": 0.0}
    assert not [t for t in ticks if t["phase"] == "catch-up"]  # (no line naming an assumed rate)
    # the copy scanned all 3,000 rows and copied the moving ones: two rates, in that ratio
    scanned, copied = st["copy_rows_scanned_per_s"], st["copy_rows_copied_per_s"]
    assert scanned > 0 and 0 < copied < scanned
    assert copied / scanned == pytest.approx(st["rows_copied"] / 3000)
    assert "copy_rows_per_s" not in st and "catchup_rows_per_s" not in st
    cl.close()


def test_applied_changes_give_a_measured_catchup_rate(root: Path, backend: str) -> None:
    cl, m, ticks = _migration(root, backend)
    m._prepare()
    m._set("copying")
    m._copy()
    m._set("catching-up")
    for s in FOUR:  # writes after the snapshot: changes for the catch-up to apply
        c = connect(root, s)
        c.execute("UPDATE users SET n = n + 1")
        if hasattr(c, "commit"):
            c.commit()
        c.close()
    assert m.run(cutover=False) == "catching-up"
    st = m.status()
    rate = st["catchup_changes_per_s"]
    assert isinstance(rate, float) and rate > 0
    cu = [t for t in ticks if t["phase"] == "catch-up"]
    assert cu and all(t["rows_per_s"] > 0 and t["lag_s"] is not None for t in cu)
    # a resume that has nothing left to copy keeps the measured copy rates
    assert st["copy_rows_scanned_per_s"] is not None and st["copy_rows_copied_per_s"] is not None
    cl.close()
