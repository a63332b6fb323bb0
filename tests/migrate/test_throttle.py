"""The load throttle: while a destination's load signal (a user-given SQL
probe or callable per (source, destination) pair) is above its threshold,
the copy's and the catch-up's workers back off (bounded, recorded in the
events and in ``status``); and the command line's ``--throttle-sql`` /
``--throttle-above`` and ``--fence-timeout`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate import Cluster, Migration, MigrationError, Throttle

from ._harness import add_shard_migration, connect, drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _start(root: Path, backend: str, users: int) -> tuple[Cluster, Migration, set[int]]:
    _, cl, m, moved = add_shard_migration(root, backend, users)
    return cl, m, moved


class _Load:
    """A probe that reports a high load for its first ``n`` calls per pair,
    then a low one; ``high[source]`` says what the last call for a source said."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: dict[tuple[str, str], int] = {}
        self.high: dict[str, bool] = {}
        self.lock = threading.Lock()

    def __call__(self, pair: tuple[str, str]) -> float:
        with self.lock:
            k = self.calls[pair] = self.calls.get(pair, 0) + 1
            self.high[pair[0]] = k <= self.n
            return 100.0 if k <= self.n else 1.0

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.high.clear()


@pytest.mark.parametrize("parallel", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_workers_back_off_while_the_load_is_high(root: Path, backend: str, parallel: int) -> None:
    cl, m, moved = _start(root, backend, 300)
    load = _Load(3)
    bad: list[str] = []

    def write_copy(s: str, d: str, dc: Any, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        if load.high.get(s, True):  # (a chunk may go only after a probe of its source said "low")
            bad.append(f"copy {s}")
        Migration._write_copy(m, s, d, dc, table, cols, rows)

    def sync(s: str, batch: Any) -> None:
        if load.high.get(s, True):
            bad.append(f"catch-up {s}")
        Migration._sync(m, s, batch)

    m._write_copy = write_copy  # type: ignore[method-assign]
    m._sync = sync  # type: ignore[method-assign]
    throttle = Throttle(load, 10, max_backoff=0.1, first_backoff=0.04)
    t0 = time.perf_counter()
    assert m.run(chunk=100, cutover=False, parallel=parallel, throttle=throttle) == "catching-up"
    assert bad == []
    # three high probes per source: 0.04 + 0.08 + 0.1 s of back-off each (the last capped)
    assert time.perf_counter() - t0 >= 0.2
    st = m.status()
    th = {t["source"]: t for t in st["throttle"]}
    assert sorted(th) == FOUR
    for t in th.values():
        assert t["destinations"] == ["s4"] and t["above"] == 10 and t["waiting"] is False
        assert t["backoffs"] == 1 and t["seconds"] == pytest.approx(0.22, abs=0.01) and t["signal"] == 100.0
    events = [msg for _, msg in m.meta.events(m.id, 500)]
    assert any("throttle: pair s0 -> s4: load 100 > 10; backing off" in e for e in events)
    assert any(e.startswith("throttle: source s0: backed off 0.22 s") for e in events)
    # the catch-up backs off too: changes made now wait for a low probe
    for k in sorted(moved)[:8]:
        with cl.transaction(k) as tx:
            tx.execute(upsert(tx), (k, "late", 3))
    load.reset()
    assert Migration(cl, m.id).run(parallel=parallel, throttle=throttle) == "retained"
    assert bad == []
    assert sum(1 for v in shard_rows(root, "s4").values() if v[1] == "late") == 8
    assert set(shard_rows(root, "s4")) == moved
    cl.close()


def test_the_probe_is_checked(root: Path, backend: str) -> None:
    cl, m, _ = _start(root, backend, 100)
    with pytest.raises(ValueError, match="empty"):
        Throttle("  ", 1)
    with pytest.raises(TypeError, match="throttle probe"):
        Throttle(5, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="throttle above"):
        Throttle("SELECT 1", float("nan"))
    with pytest.raises(ValueError, match="max_backoff"):
        Throttle("SELECT 1", 1, max_backoff=0)
    with pytest.raises(TypeError, match="throttle must be"):
        m.run(throttle="SELECT 1")  # type: ignore[arg-type]
    with pytest.raises(MigrationError, match=r"gave no number for pair 's\d' -> 's4' \(got 'busy'\)"):
        m.run(throttle=Throttle(lambda p: "busy", 1))  # type: ignore[arg-type,return-value]
    with pytest.raises(MigrationError, match=r"throttle probe failed for pair 's\d' -> 's4': ZeroDivisionError"):
        Migration(cl, m.id).run(throttle=Throttle(lambda p: 1 / 0, 1))
    cl.close()


def test_cli_throttle_sql_and_fence_timeout(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, FOUR, users=300, extra_shards=["s4"], backend=backend)
    c = connect(root, "s4")  # (the destination's load signal: a table the probe reads)
    c.execute("CREATE TABLE load_signal (v BIGINT)")
    c.execute("INSERT INTO load_signal VALUES (50)")
    c.close()

    def lower() -> None:  # (once a worker is seen backing off)
        watch = Cluster.load(path)
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                migs = watch.metadata.migrations()
                prog = watch.metadata.progress(migs[0]["id"]) if migs else {}
                if any(k.startswith("throttle:") and v.get("waiting") for k, v in prog.items()):
                    break
                time.sleep(0.02)
        finally:
            watch.close()
        c2 = connect(root, "s4")
        c2.execute("UPDATE load_signal SET v = 0")
        c2.close()

    cfg = ["--config", str(path)]
    assert main(["migrate", "init", *cfg]) == 0
    capsys.readouterr()
    t = threading.Thread(target=lower)
    t.start()
    try:
        assert main(["migrate", "start", *cfg, "--add", "s4", "-q", "--json", "--throttle-sql",
                     "SELECT v FROM load_signal", "--throttle-above", "5", "--throttle-max-backoff", "0.1",
                     "--fence-timeout", "0.7"]) == 0
    finally:
        t.join()
    st = json.loads(capsys.readouterr().out)
    assert st["state"] == "retained"
    # the workers backed off until the probe went low (a source whose worker
    # started later may have found it low at once)
    assert st["throttle"] and {x["source"] for x in st["throttle"]} <= set(FOUR)
    assert all(x["backoffs"] == 1 and x["seconds"] > 0 and x["signal"] == 50 and not x["waiting"]
               for x in st["throttle"])
    # the fence's deadline was --fence-timeout after the freeze, recorded on each source
    cl = Cluster.load(path)
    mid = st["id"]
    frozen = cl.metadata.get(mid, "frozen_at")
    for s in FOUR:
        b = cl.backend(s)
        fence = b.fence_of(b.conn(), mid)
        assert fence is not None and fence[1] - frozen == pytest.approx(0.7)
    cl.close()
    # refused: a threshold without a probe, a probe without a threshold, a bad timeout
    for bad, msg in ((["--throttle-above", "3"], "go with --throttle-sql"),
                     (["--throttle-sql", "SELECT 1"], "needs --throttle-above"),
                     (["--fence-timeout", "0"], "--fence-timeout")):
        assert main(["migrate", "resume", *cfg, *bad]) == 2
        assert msg in capsys.readouterr().err
