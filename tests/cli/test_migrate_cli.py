"""`shardhash migrate` reports failures as every other command does: the one
error type (`UsageError`), one line on stderr, exit status 2, and 3 for a
verify mismatch (docs/migrate.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from shardhash import JumpRouter, plan
from shardhash.cli import UsageError, build_parser, main
from tests.migrate._harness import connect, make_cluster

FOUR = ["s0", "s1", "s2", "s3"]


def test_a_refused_action_raises_the_common_error_type(tmp_path: Path) -> None:
    from shardhash.migrate.cli import run

    args = build_parser().parse_args(["migrate", "status", "--config", str(tmp_path / "missing.toml")])
    assert isinstance(args, argparse.Namespace)
    with pytest.raises(UsageError) as ei:
        run(args)
    assert ei.value.status == 2 and ei.value.command == "migrate"
    assert ei.value.line().startswith("shardhash migrate: error: ") and str(tmp_path) in ei.value.line()


def test_a_verify_mismatch_exits_3_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_cluster(tmp_path, FOUR, users=400, extra_shards=["s4"])
    assert main(["migrate", "init", "--config", str(path)]) == 0
    assert main(["migrate", "start", "--config", str(path), "--add", "s4", "--no-cutover", "-q"]) == 0
    capsys.readouterr()
    old = JumpRouter(FOUR)
    new = plan.add_shards(old, "s4")[0]
    moved = [k for k in range(1, 401) if old.route(k) != new.route(k)]
    c = connect(tmp_path, "s4")
    c.execute("DELETE FROM users WHERE id = ?", (moved[0],))  # behind the executor's back
    c.close()
    assert main(["migrate", "verify", "--config", str(path), "-q"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("shardhash migrate: verify failed: ") and err.count("\n") == 1, err


def test_add_and_primary_pair_up_one_to_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_cluster(tmp_path, ["s0"], JumpRouter(["s0"]), users=50)
    base = ["migrate", "start", "--config", str(path), "--dry-run", "-q"]
    assert main([*base, "--add", "s1", "--add", "s2", "--primary", "sqlite:s1.db"]) == 2
    assert "2 shard id(s) (s1, s2) and 1 --primary URL(s)" in capsys.readouterr().err
    assert main([*base, "--add", "s1", "--primary", "sqlite:s1.db", "--add", "s1", "--primary", "sqlite:x.db"]) == 2
    assert "names a shard twice" in capsys.readouterr().err
    assert main([*base, "--add", "s1", "--primary", "sqlite:s1.db", "--add", "s2", "--primary", "sqlite:s2.db",
                 "--replica", "sqlite:r.db"]) == 2
    assert "--replica belongs to one new shard" in capsys.readouterr().err
    assert main([*base, "--add", "s1", "--primary", "sqlite:s1.db", "--add", "s2", "--primary", "sqlite:s2.db"]) == 0
    out = capsys.readouterr().out
    assert "version 1 -> 2" in out and "s0 -> s1" in out and "s0 -> s2" in out
