"""A migration that changes DirectoryRouter overrides moves the overridden
keys' rows: a key whose override changes (or appears, or goes) is copied to
its new owner with its rows in every table, and ``migrate check`` finds
nothing stranded afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster, Migration
from shardhash.routing import DirectoryRouter

from ._harness import drop_cluster, make_cluster, shard_rows

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _other(shard: str) -> str:
    return FOUR[(FOUR.index(shard) + 1) % len(FOUR)]


def test_changed_override_moves_the_key_with_its_rows(root: Path, backend: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    base = JumpRouter(FOUR)
    # 7: override changed; 11: override added; 13: override removed
    o7, o13 = _other(base.route(7)), _other(base.route(13))
    old = DirectoryRouter(base, {7: o7, 13: o13})
    new = DirectoryRouter(base, {7: _other(o7), 11: _other(base.route(11))}, version=2)
    moved = {k for k in range(1, 201) if old.route(k) != new.route(k)}
    assert moved == {7, 11, 13}
    path = make_cluster(root, FOUR, old, users=200, events=True, backend=backend)
    cl = Cluster.load(path)
    m = Migration.create(cl, "users", new)
    assert m.run() == "retained"
    assert cl.refresh().version == 2
    m.cleanup()
    for s in FOUR:
        users = shard_rows(root, s)
        assert {k for k in users if new.route(k) != s} == set(), s
        assert {uid for _, uid, _ in shard_rows(root, s, "events").values() if new.route(uid) != s} == set(), s
    for k in moved:
        assert k in shard_rows(root, new.route(k)) and k not in shard_rows(root, old.route(k))
    assert sum(len(shard_rows(root, s)) for s in FOUR) == 200
    res = cl.check()
    assert (res["stranded"], res["retained"]) == (0, 0)
    cl.close()
    assert main(["migrate", "check", "--config", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stranded"] == 0
