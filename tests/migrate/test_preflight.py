"""The preflight before a copy: an estimate of the bytes each destination
receives against the room its backend can tell; a refusal names the
destination and both figures (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration
from shardhash.migrate import preflight as pf
from shardhash.migrate.preflight import PreflightError

from ._harness import drop_cluster, make_cluster, shard_rows

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _start(root: Path, backend: str, users: int = 2000) -> tuple[Cluster, Migration, set[int]]:
    path = make_cluster(root, FOUR, users=users, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    moved = {k for k in range(1, users + 1) if old.route(k) != new.route(k)}
    return cl, Migration.create(cl, "users", new, max_step_share=0.05), moved


def test_estimate_follows_the_moved_share_of_the_sources_sizes(root: Path, backend: str) -> None:
    cl, m, moved = _start(root, backend, 3000)
    rows = pf.estimate(cl, m.group, m.mem, m.mem.destinations)
    assert [r["destination"] for r in rows] == ["s4"]
    src = sum(pf.table_bytes(cl.backend(s), cl.backend(s).conn(), "users") or 0 for s in FOUR)
    assert src > 0
    est = rows[0]["estimate_bytes"]
    # the sampled share against the real moved rows (about a fifth): within a factor 2
    want = src * len(moved) / 3000
    assert want / 2 <= est <= want * 2, (est, want)
    assert set(rows[0]["from"]) == set(FOUR)
    cl.close()


def test_a_limit_below_the_estimate_refuses_before_any_copy(root: Path, backend: str) -> None:
    cl, m, moved = _start(root, backend)
    with pytest.raises(PreflightError):  # (prepared, then refused: the sizes below are the prepared ones)
        m.run(max_dest_bytes=1)
    est = pf.estimate(cl, m.group, m.mem, m.mem.destinations)[0]["estimate_bytes"]
    b4 = cl.backend("s4")
    if backend == "sqlite":
        import os
        size = os.path.getsize(b4.path)
    elif b4.kind == "mysql":
        size = int(b4.execute(b4.conn(), "SELECT COALESCE(SUM(data_length + index_length), 0) "
                              "FROM information_schema.tables WHERE table_schema = DATABASE()").fetchone()[0])
    else:
        size = int(b4.execute(b4.conn(), "SELECT pg_database_size(current_database())").fetchone()[0])
    limit = size + est // 2
    with pytest.raises(PreflightError) as ei:
        m.run(max_dest_bytes=limit)
    msg = str(ei.value)
    assert "destination s4" in msg and f"~{est:,} bytes" in msg
    if backend == "sqlite":  # (a PostgreSQL database's size may move by a page meanwhile)
        assert f"room {limit - size:,} bytes" in msg
    else:
        assert "room " in msg and "pg_database_size" not in msg and "the database's" in msg
    assert "--skip-preflight" in msg
    assert not shard_rows(root, "s4")  # nothing copied
    st = m.status()
    assert st["state"] == "copying" and st["rows_copied"] == 0 and "preflight" in st["error"]
    # a limit with room: the copy runs
    assert Migration(cl, m.id).run(max_dest_bytes=size + 4 * est + (1 << 20)) == "retained"
    assert set(shard_rows(root, "s4")) == moved
    cl.close()


def test_skip_preflight_copies_anyway(root: Path, backend: str) -> None:
    cl, m, moved = _start(root, backend)
    with pytest.raises(PreflightError):
        m.run(max_dest_bytes=1)
    assert Migration(cl, m.id).run(max_dest_bytes=1, skip_preflight=True) == "retained"
    assert set(shard_rows(root, "s4")) == moved
    cl.close()


def test_sqlite_free_space_of_the_file_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cl, m, _ = _start(tmp_path, "sqlite")
    real = shutil.disk_usage

    def tiny(p: Any) -> Any:
        u = real(p)
        return type(u)(u.total, u.total - 1000, 1000)

    monkeypatch.setattr(shutil, "disk_usage", tiny)
    with pytest.raises(PreflightError, match=r"destination s4: .* room 1,000 bytes \(free space of the file system"):
        m.run()
    assert not shard_rows(tmp_path, "s4")
    monkeypatch.undo()
    assert Migration(cl, m.id).run() == "retained"
    cl.close()


def test_postgres_without_a_limit_has_unknown_room(root: Path, backend: str) -> None:
    if backend == "sqlite":
        pytest.skip("PostgreSQL only: SQLite's room is the file system's free space")
    cl, m, _ = _start(root, backend, 300)
    rows = pf.estimate(cl, m.group, m.mem, m.mem.destinations)
    assert rows[0]["room_bytes"] is None and rows[0]["fits"] and "max-dest-bytes" in rows[0]["room"]
    assert m.run() == "retained"
    cl.close()


def test_bad_limit_is_refused(tmp_path: Path) -> None:
    cl, m, _ = _start(tmp_path, "sqlite", 50)
    with pytest.raises(ValueError, match="max_dest_bytes"):
        m.run(max_dest_bytes=0)
    with pytest.raises(TypeError, match="max_dest_bytes"):
        m.run(max_dest_bytes=1.5)  # type: ignore[arg-type]
    assert m.state == "preparing"
    cl.close()


def test_dry_run_shows_the_preflight(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, FOUR, users=500, extra_shards=["s4"], backend=backend)
    cfg = ["--config", str(path)]
    assert main(["migrate", "init", *cfg]) == 0
    capsys.readouterr()
    assert main(["migrate", "start", *cfg, "--add", "s4", "--dry-run", "--max-dest-bytes", "1"]) == 0
    out = capsys.readouterr().out
    assert "preflight: destination s4: ~" in out and "DOES NOT FIT" in out
    assert main(["migrate", "start", *cfg, "--add", "s4", "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["preflight"][0]["destination"] == "s4" and dry["preflight"][0]["estimate_bytes"] > 0
    assert main(["migrate", "start", *cfg, "--add", "s4", "-q", "--max-dest-bytes", "1"]) == 2
    assert "preflight refused the copy" in capsys.readouterr().err
    assert main(["migrate", "resume", *cfg, "-q", "--max-dest-bytes", "1", "--skip-preflight"]) == 0
    assert "retained" in capsys.readouterr().out


def test_a_source_whose_size_is_unknown_refuses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend that cannot tell a table's size (table_bytes -> None) leaves
    the room unknown rather than refusing on a partial estimate."""
    cl, m, _ = _start(tmp_path, "sqlite", 400)
    real = pf.table_bytes

    def some_unknown(b: Any, c: Any, table: str) -> int | None:
        return None if b is cl.backend("s0") else real(b, c, table)

    monkeypatch.setattr(pf, "table_bytes", some_unknown)
    rows = pf.estimate(cl, m.group, m.mem, m.mem.destinations, max_dest_bytes=1)
    assert rows[0]["room_bytes"] is None and rows[0]["fits"]
    assert "leaves out source(s) s0" in rows[0]["room"] and "s0" not in rows[0]["from"]
    assert m.run(max_dest_bytes=1) == "retained"
    cl.close()


def test_dry_run_with_a_new_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A destination the start registers (--add ID --primary URL) is not in
    the shard map yet: the dry run says so instead of failing."""
    from shardhash.cli import main

    path = make_cluster(tmp_path, FOUR, users=300, backend="sqlite")
    assert main(["migrate", "start", "--config", str(path), "--add", "s5", "--primary", "sqlite:s5.db",
                 "--dry-run"]) == 0
    assert "preflight: destination s5: a new shard, checked when the migration starts" in capsys.readouterr().out
