"""A freeze carries a deadline: a writer that waits past it asks the metadata
store, which decides once -- the cutover committed (the write goes to the
destination) or the fence attempt is aborted (the write goes on at the
source, and the executor fences again) -- so a killed executor holds writers
for about ``fence_timeout``, not until it is resumed (docs/migrate.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, plan
from shardhash.migrate import Cluster, Migration, StaleRouteError
from shardhash.migrate.executor import FenceAborted
from tests._support import fork_child as _fork

from ._harness import drop_cluster, make_cluster, shard_rows

FENCE = 0.5  # the fence_timeout of these tests, in seconds
SHARDS = ["s0", "s1", "s2"]




def _killed_at(path: str, mig: str, point: str, fence_timeout: float = FENCE) -> None:
    """Run ``mig`` in a child SIGKILLed at crash point ``point``."""
    def body() -> None:
        Migration(Cluster.load(path), mig).run(chunk=50, fence_timeout=fence_timeout)

    _, status = os.waitpid(_fork(body, {"SHARDHASH_MIGRATE_CRASH": point}), 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"not killed at {point}: {status}"


def _setup(tmp_path: Path, backend: str) -> tuple[str, JumpRouter, Any, int]:
    initial = JumpRouter(SHARDS)
    path = str(make_cluster(tmp_path, SHARDS, initial, users=300, extra_shards=["s3"], backend=backend,
                            wait_timeout=30))
    cl = Cluster.load(path)
    new, _ = plan.add_shards(initial, "s3", max_step_share=0.2)
    Migration.create(cl, "users", new, mig_id="m0", max_step_share=0.2)
    cl.close()
    k = next(k for k in range(1, 301) if initial.route(k) != new.route(k))
    return path, initial, new, k


def _write(cl: Cluster, k: int, n: int) -> tuple[str, float]:
    t0 = time.perf_counter()
    with cl.transaction(k) as tx:
        tx.execute("UPDATE users SET n = ? WHERE id = ?", (n, k))
        shard = tx.shard
    return shard, time.perf_counter() - t0


def test_a_writer_past_the_deadline_aborts_an_uncommitted_fence(tmp_path: Path, backend: str) -> None:
    """Executor killed after the freeze: the write waits about fence_timeout
    (not wait_timeout, 30 s), aborts the attempt and lands on the source; the
    resumed executor fences anew and carries the write to the destination."""
    path, initial, new, k = _setup(tmp_path, backend)
    try:
        _killed_at(path, "m0", "after-freeze")
        cl = Cluster.load(path)
        shard, pause = _write(cl, k, 7)
        assert shard == initial.route(k)
        assert FENCE * 0.5 < pause < FENCE + 2.0, pause
        assert cl.metadata.get("m0", "fence_aborted:1") is not None
        assert Migration(cl, "m0").state == "freezing"
        # the next write does not wait: the units are unfrozen
        shard2, pause2 = _write(cl, k, 8)
        assert shard2 == initial.route(k) and pause2 < FENCE
        m = Migration(cl, "m0")
        assert m.run(fence_timeout=FENCE) == "retained"
        assert cl.metadata.get("m0", "fence_attempt") == 2
        assert shard_rows(tmp_path, new.route(k))[k] == (k, f"u{k}", 8)
        cl.refresh("users")
        assert _write(cl, k, 9)[0] == new.route(k)
        cl.close()
    finally:
        drop_cluster(tmp_path, backend)


def test_the_cutover_refuses_an_aborted_attempt_then_fences_again(tmp_path: Path, backend: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The abort first, the commit second: the attempt's commit is refused
    (nothing committed), the executor catches up and its next attempt commits."""
    path, _initial, new, k = _setup(tmp_path, backend)
    try:
        cl = Cluster.load(path)
        m = Migration(cl, "m0")
        orig = Migration._final_check
        broke: list[str] = []

        def final_check(self: Migration) -> list[dict[str, Any]]:
            if not broke:  # (a writer's abort between the freeze and the commit of attempt 1)
                broke.append(self.meta.break_fence(self.id, 1))
            return orig(self)

        monkeypatch.setattr(Migration, "_final_check", final_check)
        assert m.run(fence_timeout=FENCE) == "retained"
        assert broke == ["aborted"]
        assert cl.metadata.get("m0", "fence_attempt") == 2
        assert cl.metadata.get("m0", "fence_aborted:1") is not None
        assert cl.metadata.get("m0", "fence_aborted:2") is None
        assert any("fence attempt 1 was aborted" in msg for _t, msg in cl.metadata.events("m0", 200))
        # the commit first, the abort second: the store answers "committed", records nothing
        assert cl.metadata.break_fence("m0", 2) == "committed"
        assert cl.metadata.get("m0", "fence_aborted:2") is None
        assert cl.refresh("users").version == new.version
        assert shard_rows(tmp_path, new.route(k))[k][0] == k
        cl.close()
    finally:
        drop_cluster(tmp_path, backend)


def test_an_aborted_attempt_is_never_committed(tmp_path: Path, backend: str) -> None:
    """The executor's one fence attempt, aborted before its commit, raises
    FenceAborted and leaves the topology and the ownership records as they
    were (the source still owns)."""
    path, initial, _new, k = _setup(tmp_path, backend)
    try:
        cl = Cluster.load(path)
        m = Migration(cl, "m0")
        m.run(cutover=False)
        m._set("freezing")
        m.fence_timeout = FENCE
        orig = m._final_check

        def final_check() -> list[dict[str, Any]]:
            assert cl.metadata.break_fence("m0", 1) == "aborted"
            return orig()

        m._final_check = final_check  # type: ignore[method-assign]
        with pytest.raises(FenceAborted, match="attempt 1 was aborted"):
            m._freeze_and_commit()
        assert cl.refresh("users").version == initial.version
        assert cl.metadata.get("m0", "committed_at") is None
        cl2 = Cluster.load(path)
        # the writer that aborted would unfreeze; here the units are still
        # frozen until their deadline, then a write aborts (again) and goes on
        assert _write(cl2, k, 5)[0] == initial.route(k)
        cl2.close()
        cl.close()
    finally:
        drop_cluster(tmp_path, backend)


def test_a_writer_past_the_deadline_after_the_commit_goes_to_the_destination(tmp_path: Path, backend: str) -> None:
    """Executor killed after the commit, before the reconcile: a writer with
    the old router waits about fence_timeout, learns from the store that the
    cutover committed and gets StaleRouteError naming the destination; with
    retries, the write lands there at once."""
    path, initial, new, k = _setup(tmp_path, backend)
    try:
        _killed_at(path, "m0", "after-commit")
        stale = Cluster.load(path, retries=0)
        stale._routers["users"] = initial  # (a client that has not refreshed)
        t0 = time.perf_counter()
        with pytest.raises(StaleRouteError) as ei:
            with stale.transaction(k) as tx:
                tx.execute("UPDATE users SET n = 3 WHERE id = ?", (k,))
        pause = time.perf_counter() - t0
        assert ei.value.owner == new.route(k)
        assert pause < FENCE + 2.0, pause
        assert stale.metadata.get("m0", "fence_aborted:1") is None
        stale.close()
        cl = Cluster.load(path)
        cl._routers["users"] = initial
        shard, pause2 = _write(cl, k, 4)
        assert shard == new.route(k) and pause2 < FENCE
        assert Migration(cl, "m0").run() == "retained"
        assert shard_rows(tmp_path, new.route(k))[k] == (k, f"u{k}", 4)
        cl.close()
    finally:
        drop_cluster(tmp_path, backend)


def test_fence_timeout_is_checked(tmp_path: Path) -> None:
    path, _i, _n, _k = _setup(tmp_path, "sqlite")
    m = Migration(Cluster.load(path), "m0")
    with pytest.raises(ValueError, match="fence_timeout"):
        m.run(fence_timeout=0)
    with pytest.raises(TypeError, match="fence_timeout"):
        m.run(fence_timeout="2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fence_attempts"):
        m.run(fence_attempts=0)
    assert m.state == "preparing"  # (nothing ran)


# ------------------------------------------------------------------ chaos

def _writers_while_dead(root: Path, backend: str, point: str, fence: float) -> None:
    path, _initial, new, _k = _setup(root, backend)
    try:
        keys = list(range(1, 301))
        acked: dict[int, int] = {}
        pauses: list[float] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def writer(wid: int) -> None:
            cl = Cluster.load(path)
            n = 0
            try:
                while not stop.is_set():
                    for k in keys[wid::4]:
                        n += 1
                        t0 = time.perf_counter()
                        with cl.transaction(k) as tx:
                            tx.execute("UPDATE users SET n = ? WHERE id = ?", (n, k))
                        pauses.append(time.perf_counter() - t0)
                        acked[k] = n
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
            finally:
                cl.close()

        _killed_at(path, "m0", point, fence_timeout=fence)
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(10.0)  # (the executor stays dead)
        # (a process of its own: no fork while the writers' threads run)
        done = subprocess.run([sys.executable, "-c", "import sys; from shardhash.migrate import Cluster, "
                               "Migration; Migration(Cluster.load(sys.argv[1]), 'm0').run(fence_timeout="
                               f"{fence})", path], capture_output=True, text=True, timeout=300)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        assert not errors, errors
        assert done.returncode == 0, done.stderr
        worst = max(pauses)
        print(f"\n{point}: {len(pauses)} writes, longest {worst * 1000:.0f} ms "
              f"(fence_timeout {fence * 1000:.0f} ms)")
        assert worst <= fence + 1.0, worst
        final = {s: shard_rows(root, s) for s in [*SHARDS, "s3"]}
        for k, n in acked.items():
            assert final[new.route(k)][k] == (k, f"u{k}", n), (k, n, new.route(k))
        cl = Cluster.load(path)
        assert Migration(cl, "m0").state == "retained"
        cl.close()
    finally:
        drop_cluster(root, backend)


@pytest.mark.chaos
@pytest.mark.parametrize("point", ["after-freeze", "before-commit"])
def test_a_killed_executor_not_resumed_for_ten_seconds(tmp_path: Path, backend: str, point: str) -> None:
    """Writers on every key while the executor is SIGKILLed between the freeze
    and the commit (after the freeze, or before the commit) and left dead
    for 10 s: no write waits longer than fence_timeout plus one metadata
    round trip and a catch-up's worth (asserted with 1 s of slack on a
    loaded machine), no acknowledged write is lost, none is acknowledged by
    a shard that no longer owns its key (every final row is on the final
    owner with the last acknowledged value)."""
    _writers_while_dead(tmp_path, backend, point, 1.0)


def test_a_writer_breaking_an_old_attempt_leaves_a_newer_freeze_be(tmp_path: Path, backend: str) -> None:
    """A writer breaks attempt 1 while the executor's freeze of attempt 2 is in
    flight on the same source: whichever order the two transactions take, the
    units stay frozen by attempt 2 (the writer must not read attempt 1, then
    unfreeze the units attempt 2 froze once that freeze commits)."""
    path, initial, new, k = _setup(tmp_path, backend)
    try:
        _killed_at(path, "m0", "after-freeze")
        src = initial.route(k)
        executor, writer = Cluster.load(path), Cluster.load(path)
        b2 = executor.backend(src)
        errors: list[BaseException] = []
        with b2.writing() as c2:  # attempt 2's freeze, held open
            b2.set_fence(c2, "m0", 2, time.time() + 60)
            b2.set_unit_state(c2, "m0", "source", ("copying", "frozen"), "frozen")
            b2.bump_epoch(c2)

            def brk() -> None:
                try:
                    writer._break_fence("users", src, writer.backend(src), "m0", 1)
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)

            t = threading.Thread(target=brk)
            t.start()
            time.sleep(0.5 if backend != "sqlite" else 0.05)
        t.join(30)
        assert not t.is_alive() and not errors, errors
        b = writer.backend(src)
        states = {str(r[4]) for r in b.unit_rows(b.conn(), "users") if r[1] == "m0" and r[3] == "source"}
        assert states == {"frozen"}, states
        f = b.fence_of(b.conn(), "m0")
        assert f is not None and f[0] == 2, f
        executor.close()
        writer.close()
    finally:
        drop_cluster(tmp_path, backend)
