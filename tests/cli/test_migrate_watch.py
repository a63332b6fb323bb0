"""``shardhash migrate status --watch [--interval S] [--count N]``: refreshes the
status until the migration stops running (a finished one returns at once),
``--count`` refreshes, or Ctrl-C; each refresh names the state and the
figures of its phase."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from shardhash import JumpRouter
from shardhash.cli import main
from shardhash.migrate.cli import watch_line
from tests.migrate._harness import make_cluster

FOUR = ["s0", "s1", "s2", "s3"]


def _cluster(tmp_path: Path) -> str:
    return str(make_cluster(tmp_path, FOUR, users=2000, extra_shards=["s4"]))


def test_watch_returns_at_once_on_a_finished_migration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _cluster(tmp_path)
    assert main(["migrate", "start", "--config", cfg, "--add", "s4", "-q"]) == 0
    capsys.readouterr()
    t0 = time.monotonic()
    assert main(["migrate", "status", "--config", cfg, "--watch", "--interval", "60"]) == 0
    assert time.monotonic() - t0 < 30  # (not one 60 s interval)
    out = capsys.readouterr().out.splitlines()
    assert " retained, rows copied " in out[0] and ", write pause " in out[0], out[0]
    assert out[1].startswith("migration ") and out[1].endswith(": retained")
    assert out[-1].startswith("  next: run `cleanup ")


def test_watch_refreshes_a_running_migration_count_times(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _cluster(tmp_path)
    # (--no-cutover: the migration stays catching-up, a state an executor works in)
    assert main(["migrate", "start", "--config", cfg, "--add", "s4", "--no-cutover", "-q"]) == 0
    capsys.readouterr()
    assert main(["migrate", "status", "--config", cfg, "--watch", "--interval", "0.01", "--count", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [ln for ln in out if " catching-up, " in ln]
    assert len(lines) == 3, out
    assert all("rows copied " in ln and "lag 0 changes" in ln for ln in lines), lines
    assert out[3].endswith(": catching-up")
    # --json: one status document per refresh, on one line each
    assert main(["migrate", "status", "--config", cfg, "--watch", "--interval", "0.01", "--count", "2",
                 "--json"]) == 0
    docs = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [d["state"] for d in docs] == ["catching-up", "catching-up"]
    assert all(set(d["watch"]) == {"rows_per_s", "rows_estimate"} for d in docs)


def test_watch_goes_with_status_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _cluster(tmp_path)
    assert main(["migrate", "cleanup", "--config", cfg, "--watch"]) == 2
    assert "--watch goes with `status`" in capsys.readouterr().err
    assert main(["migrate", "status", "--config", cfg, "--watch", "--interval", "0"]) == 2
    assert "--interval" in capsys.readouterr().err


def test_the_watch_line_of_each_phase() -> None:
    base = {"id": "m1", "rows_copied": 250, "lag": None, "catchup_changes_per_s": None,
            "write_pause_seconds": None, "error": None}
    line = watch_line(dict(base, state="copying"), 50.0, 1000)
    assert line == "m1 copying, rows copied 250 of ~1,000 (25%), 50 rows/s, ETA 0:15"
    assert watch_line(dict(base, state="copying"), None, None) == "m1 copying, rows copied 250, rate: measuring"
    st = dict(base, state="catching-up", lag={"changes": 1200, "seconds": 0.5}, catchup_changes_per_s=2400.0)
    assert watch_line(st, None, 1000) == ("m1 catching-up, rows copied 250 of ~1,000 (25%), lag 1,200 changes "
                                          "(~0.50 s), catch-up 2,400 changes/s")
    st = dict(base, state="catching-up", lag={"changes": 3, "seconds": None})
    assert "lag 3 changes (seconds: no apply rate yet)" in watch_line(st, None, None)
    st = dict(base, state="retained", write_pause_seconds=0.0123, error="boom")
    assert watch_line(st, None, None) == "m1 retained, rows copied 250, write pause 0.012 s, last error: boom"


def test_the_estimate_is_the_rows_times_the_moved_share(tmp_path: Path) -> None:
    from shardhash import plan
    from shardhash.migrate import Cluster, Migration
    from shardhash.migrate.cli import _rows_to_move

    path = make_cluster(tmp_path, ["s0"], JumpRouter(["s0"]), users=3000, extra_shards=["s1"])
    cl = Cluster.load(path)
    try:
        new = plan.add_shards(cl.router("users"), "s1")[0]
        m = Migration.create(cl, "users", new)
        assert _rows_to_move(cl, m) == 1500  # jump 1 -> 2: half of the keys move
        m.run()
        assert abs(m.status()["rows_copied"] - 1500) < 150
    finally:
        cl.close()


def test_on_a_terminal_the_line_is_redrawn_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from shardhash.migrate import cli as mcli

    cfg = _cluster(tmp_path)
    assert main(["migrate", "start", "--config", cfg, "--add", "s4", "--no-cutover", "-q"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(mcli, "_watch_bar", lambda: None)  # (as without rich)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["migrate", "status", "--config", cfg, "--watch", "--interval", "0.01", "--count", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("\r\033[K") == 2 and out.count(" catching-up, rows copied ") == 2, repr(out)
    assert out.split("\n", 1)[1].startswith("migration ")  # (the status after the redrawn line)
