"""Crash points in rollback and cleanup: the executor (a forked child) is
SIGKILLed at every named point of ``rollback``, of the reverse migration and
of ``cleanup``; after each kill the forward and reverse migrations' states
must be consistent, every key must read back exactly once with its value,
and ``status`` must say what to run next -- and running that must finish the
job.  Also: the bookkeeping fixes of a completed rollback (its cleanup, the
pause figure, the captures in ``status``) and the CLI's exit paths."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import Router, plan
from shardhash.migrate import Cluster, Migration, MigrationError

from ._harness import drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]
USERS = 240

#: Every metadata write of ``rollback`` after the cutover and of its reverse
#: migration (the reverse migration's run goes through the forward points).
ROLLBACK_POINTS = ["rollback-marked", "rollback-reverse-created", "prepare-shard",
                   "catch-up-batch", "after-freeze", "before-commit", "after-commit", "after-destination-owned",
                   "after-sources-moved", "after-reconcile", "after-retained"]
#: ... of ``cleanup`` (of a retained migration, and of a rolled-back one's reverse).
CLEANUP_POINTS = ["cleanup-marked", "cleanup-chunk", "cleanup-deleted", "cleanup-capture-dropped"]
#: ... of ``rollback`` before the cutover.
EARLY_POINTS = ["rollback-before-cutover-marked", "rollback-before-cutover-shard", "rollback-before-cutover-deleted"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _attempt(path: Path, action: str, mig: str, point: str | None = None, *,
             hook: Callable[[], None] | None = None) -> bool:
    """Run ``action`` of ``mig`` in a forked child, SIGKILLed at the named
    crash ``point`` (or wherever ``hook`` makes it kill itself); True when
    it was killed, False when it finished (it must not fail otherwise)."""
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            if point is not None:
                os.environ["SHARDHASH_MIGRATE_CRASH"] = point
                os.environ["SHARDHASH_MIGRATE_CRASH_SKIP"] = "0"
            if hook is not None:
                hook()
            cl = Cluster.load(path)
            m = Migration(cl, mig)
            if action == "rollback":
                m.rollback()
            elif action == "cleanup":
                m.cleanup()
            else:
                m.run()
        except BaseException:  # noqa: BLE001 - reported through the exit status
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"{action} {mig} failed (see the captured stderr)"
    return False


def _kill_after_reverse_reconcile() -> None:
    """(In the child) SIGKILL right after the reverse migration's ownership reconcile."""
    orig = Migration._reconcile

    def wrapped(self: Migration) -> None:
        orig(self)
        if self.info.get("reverse_of"):
            os.kill(os.getpid(), signal.SIGKILL)

    Migration._reconcile = wrapped  # type: ignore[method-assign]


def _states(cl: Cluster, fid: str) -> tuple[str, str | None]:
    f = cl.metadata.migration(fid)
    assert f is not None
    rid = f["info"].get("reverse")
    r = cl.metadata.migration(rid) if rid else None
    return str(f["state"]), None if r is None else str(r["state"])


def _check(path: Path, fid: str, expected: dict[int, int | None]) -> tuple[str, str | None, str]:
    """The invariants after any kill: consistent states, every key read
    through a client exactly once with its value, and a next step."""
    cl = Cluster.load(path)
    try:
        fs, rs = _states(cl, fid)
        after = ("retained", "cleaning", "cleaned")
        if fs == "rolled-back":  # (None: rolled back before the cutover)
            assert rs is None or rs in after, (fs, rs)
        if rs in after:
            assert fs == "rolled-back", (fs, rs)
        elif rs is not None:
            assert fs == "rolling-back", (fs, rs)
        # (between a metadata commit and its reconcile the new owner's units
        # are still ``importing``: clients wait for the resume, by design)
        readable = "cutover" not in (fs, rs)
        for k, v in expected.items() if readable else ():
            with cl.read(k) as tx:
                rows = tx.execute("SELECT n FROM users WHERE id = ?", (k,)).fetchall()
            assert [tuple(r) for r in rows] == ([] if v is None else [(v,)]), (k, rows, v, fs, rs)
        nxt = str(Migration(cl, fid).status()["next"])
        assert nxt.startswith("nothing") or re.search(r"`(\w+) ([\w-]+)`", nxt), nxt
        return fs, rs, nxt
    finally:
        cl.close()


def _follow(path: Path, fid: str, expected: dict[int, int | None], until: Callable[[str, str | None], bool]
            ) -> tuple[str, str | None]:
    """Run what ``status`` says to run next (no crash) until ``until``."""
    for _ in range(4):
        fs, rs, nxt = _check(path, fid, expected)
        if until(fs, rs):
            return fs, rs
        m = re.search(r"`(\w+) ([\w-]+)`", nxt)
        assert m is not None, (fs, rs, nxt)
        assert not _attempt(path, m.group(1), m.group(2))
    raise AssertionError(f"the next steps did not get there: {_check(path, fid, expected)}")


def _migrated(root: Path, backend: str) -> tuple[Path, str, Router, dict[int, int | None]]:
    """A cluster of four shards migrated to five (retained), then written to
    through the new topology (updates, deletes, inserts of moved keys)."""
    path = make_cluster(root, FOUR, users=USERS, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    assert m.run(chunk=50) == "retained"
    expected: dict[int, int | None] = {k: 0 for k in range(1, USERS + 1)}
    moved = [k for k in range(1, USERS + 1) if old.route(k) != new.route(k)]
    assert len(moved) > 20
    for k in moved[:12]:
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET n = ? WHERE id = ?", (k + 1, k))
        expected[k] = k + 1
    for k in moved[12:15]:
        with cl.transaction(k) as tx:
            tx.execute("DELETE FROM users WHERE id = ?", (k,))
        expected[k] = None
    for k in range(USERS + 1, USERS + 30):
        with cl.transaction(k) as tx:
            tx.execute(upsert(tx), (k, "new", 7))
        expected[k] = 7
    cl.close()
    return path, m.id, old, expected


def _exactly_once(root: Path, router: Router, expected: dict[int, int | None]) -> None:
    """After the last cleanup: each key on exactly one shard, the router's."""
    seen: dict[int, list[str]] = {}
    for s in FOUR + ["s4"]:
        for k, row in shard_rows(root, s).items():
            seen.setdefault(int(k), []).append(s)
            assert expected.get(int(k)) == row[2], (k, row)
    for k, v in expected.items():
        assert seen.get(k, []) == ([] if v is None else [router.route(k)]), (k, seen.get(k))


@pytest.mark.parametrize("point", ROLLBACK_POINTS)
def test_crash_in_rollback_then_cleanup(root: Path, backend: str, point: str) -> None:
    path, fid, old, expected = _migrated(root, backend)
    assert _attempt(path, "rollback", fid, point), f"crash point {point} was not reached"
    fs, rs, _ = _check(path, fid, expected)
    assert fs in ("rolling-back", "rolled-back")
    _follow(path, fid, expected, lambda f, r: f == "rolled-back" and r == "retained")
    cl = Cluster.load(path)
    back = cl.refresh()
    assert back.version == 3 and back.shards == old.shards
    cl.close()
    # the cleanup of a rolled-back migration (its reverse's), killed too
    cpoint = CLEANUP_POINTS[ROLLBACK_POINTS.index(point) % len(CLEANUP_POINTS)]
    assert _attempt(path, "cleanup", fid, cpoint), f"crash point {cpoint} was not reached"
    _follow(path, fid, expected, lambda f, r: r == "cleaned")
    assert _check(path, fid, expected)[2].startswith("nothing")
    _exactly_once(root, back, expected)


@pytest.mark.parametrize("point", CLEANUP_POINTS)
def test_crash_in_cleanup(root: Path, backend: str, point: str) -> None:
    path, fid, _old, expected = _migrated(root, backend)
    assert _attempt(path, "cleanup", fid, point), f"crash point {point} was not reached"
    fs, _, nxt = _check(path, fid, expected)
    assert fs == "cleaning" and f"cleanup {fid}" in nxt
    _follow(path, fid, expected, lambda f, r: f == "cleaned")
    cl = Cluster.load(path)
    new = cl.refresh()
    cl.close()
    _exactly_once(root, new, expected)
    cl = Cluster.load(path)
    assert Migration(cl, fid).captures() == []  # (no capture left behind)
    cl.close()


@pytest.mark.parametrize("point", EARLY_POINTS)
def test_crash_in_rollback_before_cutover(root: Path, backend: str, point: str) -> None:
    path = make_cluster(root, FOUR, users=USERS, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    assert m.run(cutover=False, chunk=50) == "catching-up"
    fid = m.id
    cl.close()
    expected: dict[int, int | None] = {k: 0 for k in range(1, USERS + 1)}
    assert _attempt(path, "rollback", fid, point), f"crash point {point} was not reached"
    fs, rs, nxt = _check(path, fid, expected)
    assert fs == "rolling-back" and rs is None and f"rollback {fid}" in nxt
    _follow(path, fid, expected, lambda f, r: f == "rolled-back")
    cl = Cluster.load(path)
    assert cl.refresh().version == 1
    assert cl.metadata.migration(f"{fid}-rollback") is None  # (no reverse migration of an uncommitted one)
    cl.close()
    assert not shard_rows(root, "s4")
    _exactly_once(root, old, expected)


# ------------------------------------------------ the bookkeeping items


def test_rollback_killed_after_the_reverse_reconcile_stays_consistent(root: Path, backend: str) -> None:
    """The kill of the report: right after the reverse migration's ownership
    reconcile.  The forward migration is never ``rolled-back`` while the
    reverse one is unfinished; ``rollback`` finishes it; the pause figure
    comes from the recorded freeze and release, not from the resume."""
    path, fid, _old, expected = _migrated(root, backend)
    assert _attempt(path, "rollback", fid, hook=_kill_after_reverse_reconcile)
    cl = Cluster.load(path)
    fs, rs = _states(cl, fid)
    assert (fs, rs) == ("rolling-back", "cutover")
    rid = f"{fid}-rollback"
    first = Migration(cl, rid).status()["write_pause_seconds"]
    cl.close()
    time.sleep(1.2)  # (a resume that re-measured "now - freeze" would report more than this)
    assert not _attempt(path, "rollback", fid)
    cl = Cluster.load(path)
    assert _states(cl, fid) == ("rolled-back", "retained")
    st = Migration(cl, rid).status()
    assert st["write_pause_seconds"] == first and first is not None and first < 1.0
    assert st["released_at"] - st["frozen_at"] == pytest.approx(first)
    cl.close()
    _check(path, fid, expected)


def test_an_older_records_rolled_back_with_unfinished_reverse_is_finished(root: Path, backend: str) -> None:
    """Records left by an older executor (forward ``rolled-back``, reverse
    still ``cutover``): ``rollback`` resumes the reverse, and ``cleanup`` of
    the reverse (a migration in ``cutover``) reconciles first."""
    path, fid, old, expected = _migrated(root, backend)
    assert _attempt(path, "rollback", fid, hook=_kill_after_reverse_reconcile)
    cl = Cluster.load(path)
    cl.metadata.set_state(fid, "rolled-back")  # (what the older executor recorded)
    assert Migration(cl, fid).rollback() == "rolled-back"
    assert _states(cl, fid) == ("rolled-back", "retained")
    cl.close()
    # and cleanup of a reverse migration left in cutover reconciles, then cleans
    path2, fid2, _, expected2 = _migrated(root / "b", backend)
    assert _attempt(path2, "rollback", fid2, hook=_kill_after_reverse_reconcile)
    cl = Cluster.load(path2)
    assert Migration(cl, f"{fid2}-rollback").cleanup() > 0
    assert _states(cl, fid2) == ("rolled-back", "cleaned")
    _exactly_once(root / "b", cl.refresh(), expected2)
    cl.close()
    if backend != "sqlite":
        drop_cluster(root / "b", backend)
    _check(path, fid, expected)
    assert old.version == 1


def test_cleanup_of_a_rolled_back_migration_cleans_up_its_reverse(root: Path, backend: str) -> None:
    """After a completed rollback the old destination's copy and the old
    sources' reverse capture are visible in ``status`` and gone after
    ``cleanup`` of the forward migration."""
    path, fid, old, expected = _migrated(root, backend)
    cl = Cluster.load(path)
    m = Migration(cl, fid)
    assert m.rollback() == "rolled-back"
    rid = f"{fid}-rollback"
    assert f"cleanup {fid}" in m.status()["next"]
    back = cl.refresh()
    rev = Migration(cl, rid)

    def pending() -> int:
        caps = rev.status()["captures"]
        assert {c["capture"] for c in caps} == {f"{rid}:reverse"}, caps
        return sum(int(c["pending"]) for c in caps)

    before = pending()
    new, _ = plan.add_shards(old, "s4")
    k = next(k for k, v in expected.items() if v is not None and old.route(k) != new.route(k))
    with cl.transaction(k) as tx:  # a write to a moved key: the reverse capture logs it, nobody consumes it
        tx.execute("UPDATE users SET n = 5 WHERE id = ?", (k,))
    expected[k] = 5
    assert pending() == before + 1
    assert shard_rows(root, "s4")  # (the old destination still holds its copy)
    n = m.cleanup()
    assert n > 0
    assert _states(cl, fid) == ("rolled-back", "cleaned")
    assert Migration(cl, rid).captures() == []
    assert not shard_rows(root, "s4")
    assert m.cleanup() == 0  # (idempotent)
    assert m.status()["next"].startswith("nothing")
    cl.close()
    _exactly_once(root, back, expected)


def test_status_shows_pending_change_rows_of_a_capture(root: Path, backend: str) -> None:
    path, fid, old, _expected = _migrated(root, backend)
    cl = Cluster.load(path)
    st = Migration(cl, fid).status()
    caps = {(c["shard"], c["capture"]): c["pending"] for c in st["captures"]}
    # the reverse capture on the destination logged the writes made through the new topology
    assert caps.get(("s4", f"{fid}:reverse"), 0) >= 12, caps
    assert "cleanup" in st["next"] and "rollback" in st["next"]
    cl.close()


def test_cli_says_why_when_no_migration_is_recorded(root: Path, backend: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, FOUR, users=10, backend=backend)
    for action in ("status", "verify", "resume", "rollback", "cleanup"):
        assert main(["migrate", action, "--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert "has no migration recorded" in err and action in err, (action, err)
    assert main(["migrate", "status", "nope", "--config", str(path)]) == 2
    assert "no migration 'nope'" in capsys.readouterr().err
    assert main(["migrate", "start", "--config", str(path)]) == 2
    assert "--add" in capsys.readouterr().err
    missing = root / "missing.toml"
    assert main(["migrate", "status", "--config", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err


def test_cli_prints_the_next_step(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path, fid, _old, _expected = _migrated(root, backend)
    assert main(["migrate", "rollback", fid, "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"next: run `cleanup {fid}`" in out, out
    assert main(["migrate", "cleanup", fid, "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "cleaned" in out and "next: nothing" in out, out


def test_a_database_error_in_cleanup_names_the_shard_and_the_step(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path, fid, _old, _expected = _migrated(tmp_path, "sqlite")
    # a source shard that cannot be written (the executor's delete fails)
    cl = Cluster.load(path)
    m = Migration(cl, fid)
    src = m.mem.sources[0]
    cl.close()
    con = sqlite3.connect(tmp_path / f"{src}.db")
    con.execute("CREATE TRIGGER no_delete BEFORE DELETE ON users BEGIN SELECT RAISE(ABORT, 'disk is full'); END")
    con.commit()
    con.close()
    assert main(["migrate", "cleanup", fid, "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"source shard {src!r} failed while deleting the retained copy of 'users'" in err, err
    # (a trigger's RAISE is a constraint error, not SQLITE_FULL: faults are
    # classified by the driver's error code, never by words in the message,
    # so the database's own text is reported as it is)
    assert "IntegrityError: disk is full" in err and "internal error" not in err, err
    cl = Cluster.load(path)
    with pytest.raises(MigrationError, match=f"source shard {src!r}"):
        Migration(cl, fid).cleanup()
    cl.close()


def test_a_resumed_reconcile_keeps_the_recorded_pause(root: Path, backend: str) -> None:
    """A reconcile re-run long after the release (the records of a crash
    between the reconcile and ``retained``) keeps the pause it recorded."""
    path, fid, _old, expected = _migrated(root, backend)
    cl = Cluster.load(path)
    m = Migration(cl, fid)
    first = m.status()["write_pause_seconds"]
    assert first is not None and 0 <= first < 1.0
    cl.metadata.set_state(fid, "cutover")  # (killed after the reconcile, before 'retained')
    time.sleep(1.2)
    assert m.run() == "retained"
    assert m.status()["write_pause_seconds"] == first
    cl.close()
    _check(path, fid, expected)


def _fail(what: str) -> Callable[..., Any]:
    def boom(*_a: Any, **_k: Any) -> Any:
        raise sqlite3.OperationalError(what)
    return boom


def test_a_database_error_in_any_step_names_the_shard_and_the_step(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Catch-up, verify, freeze, cleanup, rollback and the metadata store:
    each database error becomes a MigrationError naming where it happened."""
    path = make_cluster(tmp_path, FOUR, users=USERS, extra_shards=["s4"])
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "s4")
    m = Migration.create(cl, "users", new)
    assert m.run(cutover=False, chunk=50) == "catching-up"
    src = m.mem.sources[0]
    cases: list[tuple[str, str, str, Callable[[], object]]] = [
        (src, "pending", f"source shard {src!r} failed while reading its captured changes", m.run),
        ("s4", "scan_chunks", "destination shard 's4' failed while verifying", m.verify),
        (src, "set_unit_state", f"source shard {src!r} failed while freezing its units", m.run),
    ]
    for shard, method, words, call in cases:
        with monkeypatch.context() as mp:
            mp.setattr(cl.backend(shard), method, _fail("disk I/O error"))
            with pytest.raises(MigrationError) as ei:
                call()
        assert words in str(ei.value) and "unreachable" in str(ei.value), (method, str(ei.value))
    assert m.run(chunk=50) == "retained"
    with monkeypatch.context() as mp:
        mp.setattr(cl.backend(src), "delete", _fail("database or disk is full"))
        with pytest.raises(MigrationError, match=f"source shard {src!r} failed while deleting the retained copy"):
            m.cleanup()
    with monkeypatch.context() as mp:
        mp.setattr(cl.metadata, "set_state", _fail("database or disk is full"))
        with pytest.raises(MigrationError, match="a database error while cleaning up: the disk is full"):
            m.cleanup()
    assert m.cleanup() > 0  # (resumes once the cause is gone)
    cl.close()
    # a rollback before the cutover
    path2 = make_cluster(tmp_path / "b", FOUR, users=USERS, extra_shards=["s4"])
    cl2 = Cluster.load(path2)
    m2 = Migration.create(cl2, "users", plan.add_shards(cl2.router(), "s4")[0])
    assert m2.run(cutover=False, chunk=50) == "catching-up"
    with monkeypatch.context() as mp:
        mp.setattr(cl2.backend("s4"), "drop_capture", _fail("disk I/O error"))
        with pytest.raises(MigrationError, match="destination shard 's4' failed while dropping its captures"):
            m2.rollback()
    assert m2.rollback() == "rolled-back"
    cl2.close()


def test_cleanup_of_a_migration_left_in_cutover_reconciles_first(root: Path, backend: str) -> None:
    """A forward migration killed between its metadata commit and its
    reconcile: ``status`` says what to run, and ``cleanup`` reconciles, then
    cleans up."""
    path = make_cluster(root, FOUR, users=USERS, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "s4")
    fid = Migration.create(cl, "users", new).id
    cl.close()
    assert _attempt(path, "run", fid, "after-commit")
    cl = Cluster.load(path)
    m = Migration(cl, fid)
    assert m.state == "cutover"
    hint = m.status().get("next")
    assert m.cleanup() > 0 and m.state == "cleaned"
    assert hint is not None and f"cleanup {fid}" in hint
    cl.close()
    _exactly_once(root, new, {k: 0 for k in range(1, USERS + 1)})
