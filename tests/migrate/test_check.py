"""``Cluster.check`` and ``shardhash migrate check``: rows on a shard that
does not own them (stranded) are found per shard and table, the copies a
retained migration keeps are counted apart, and ``repair`` moves a stranded
row to its owner only when the owner has no row with its primary key (a
conflict is reported with both rows and left alone), resumably."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration
from shardhash.migrate.check import check

from ._harness import connect, drop_cluster, make_cluster, shard_rows

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _plant(root: Path, shard: str, sql: str, params: tuple[Any, ...]) -> None:
    """Write a row straight onto a shard, behind the client's back."""
    c = connect(root, shard)
    c.execute(sql, params)
    if hasattr(c, "commit"):
        c.commit()
    c.close()


def _not(owner: str) -> str:
    return next(s for s in FOUR if s != owner)


def _cluster(root: Path, backend: str) -> tuple[Cluster, dict[str, Any]]:
    """Four shards, 400 users with an event each; planted: two users and one
    event on shards that do not own them."""
    path = make_cluster(root, FOUR, users=400, events=True, backend=backend)
    cl = Cluster.load(path)
    r = cl.router()
    plants: dict[str, Any] = {}
    for k in (1001, 1002):  # users nobody has
        s = _not(r.route(k))
        _plant(root, s, "INSERT INTO users VALUES (?, ?, ?)", (k, f"stray{k}", 7))
        plants[f"user{k}"] = (s, r.route(k))
    s = _not(r.route(5))  # an event of user 5, on the wrong shard
    _plant(root, s, "INSERT INTO events VALUES (?, ?, ?)", (9_000_005, 5, "stray event"))
    plants["event"] = (s, r.route(5))
    return cl, plants


def test_planted_rows_are_found_per_shard_and_table(root: Path, backend: str) -> None:
    cl, plants = _cluster(root, backend)
    with cl.read(1001) as tx:  # (invisible to a routed read)
        assert tx.execute("SELECT * FROM users WHERE id = 1001").fetchone() is None
    res = cl.check()
    g = res["groups"]["users"]
    assert (res["stranded"], res["retained"]) == (3, 0)
    assert res["rows_scanned"] == 400 * 2 + 3
    found = {(t["shard"], t["table"]): t for t in g["tables"]}
    want: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for k in (1001, 1002):
        s, o = plants[f"user{k}"]
        want.setdefault((s, "users"), []).append({"pk": [k], "key": k, "owner": o})
    s, o = plants["event"]
    want.setdefault((s, "events"), []).append({"pk": [9_000_005], "key": 5, "owner": o})
    assert {k: v["first"] for k, v in found.items()} == want
    assert all(t["stranded"] == len(t["first"]) for t in g["tables"])
    assert res["repair"] is None
    assert shard_rows(root, plants["user1001"][0])[1001][1] == "stray1001"  # (a check changes nothing)
    cl.close()


def test_repair_moves_rows_and_leaves_conflicts(root: Path, backend: str) -> None:
    cl, plants = _cluster(root, backend)
    r = cl.router()
    k = 17  # a conflict: a different row with an existing user's key, on another shard
    stray = _not(r.route(k))
    _plant(root, stray, "INSERT INTO users VALUES (?, ?, ?)", (k, "other", 99))
    res = cl.check(repair=True)
    assert res["stranded"] == 4
    rep = res["repair"]
    assert (rep["moved"], rep["already_on_owner"]) == (3, 0)
    assert rep["conflicts"] == [{"table": "users", "shard": stray, "owner": r.route(k), "pk": [k],
                                 "row": [k, "other", 99], "owner_row": [k, f"u{k}", 0]}]
    for kk in (1001, 1002):
        with cl.read(kk) as tx:
            assert tx.execute("SELECT name, n FROM users WHERE id = ?", (kk,)).fetchone() == (f"stray{kk}", 7)
        assert kk not in shard_rows(root, plants[f"user{kk}"][0])
    with cl.read(5) as tx:
        assert tx.execute("SELECT payload FROM events WHERE eid = 9000005").fetchone() == ("stray event",)
    assert 9_000_005 not in shard_rows(root, plants["event"][0], "events")
    # the conflict is untouched on both sides, and the only row a second check reports
    assert shard_rows(root, stray)[k] == (k, "other", 99)
    assert shard_rows(root, r.route(k))[k] == (k, f"u{k}", 0)
    again = cl.check()
    assert again["stranded"] == 1
    assert [t["first"] for t in again["groups"]["users"]["tables"]] == [[{"pk": [k], "key": k,
                                                                          "owner": r.route(k)}]]
    cl.close()


def test_a_repair_killed_between_its_two_steps_resumes(root: Path, backend: str) -> None:
    cl, plants = _cluster(root, backend)
    calls: list[tuple[str, tuple[Any, ...]]] = []

    def die(table: str, pk: tuple[Any, ...]) -> None:
        calls.append((table, pk))
        if len(calls) == 2:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        check(cl, repair=True, chunk=20, _fault=die)
    # the second row is on its owner and still on the stray shard, identical
    t, pk = calls[1]
    both = [s for s in FOUR if pk[0] in shard_rows(root, s, t)]
    assert len(both) == 2
    cursors = {k: v for k, v in cl.metadata.progress("check-repair:users").items() if v is not None}
    assert cursors  # (committed chunk by chunk)
    res = cl.check(repair=True)
    rep = res["repair"]
    assert res["stranded"] == 2 and (rep["moved"], rep["already_on_owner"], rep["conflicts"]) == (1, 1, [])
    assert res["rows_scanned"] < 803  # (resumed after the committed cursors, not from the start)
    assert any("resumed_after" in tb for tb in res["groups"]["users"]["tables"])
    assert all(v is None for v in cl.metadata.progress("check-repair:users").values())  # (a full pass)
    for kk in (1001, 1002):
        assert [s for s in FOUR if kk in shard_rows(root, s)] == [plants[f"user{kk}"][1]]
    assert [s for s in FOUR if 9_000_005 in shard_rows(root, s, "events")] == [plants["event"][1]]
    assert sum(len(shard_rows(root, s)) for s in FOUR) == 402
    assert cl.check()["stranded"] == 0
    cl.close()


def test_a_stray_row_changed_after_its_copy_is_not_deleted(root: Path, backend: str) -> None:
    cl, plants = _cluster(root, backend)
    s = plants["user1001"][0]

    def change(table: str, pk: tuple[Any, ...]) -> None:
        if pk == (1001,):
            _plant(root, s, "UPDATE users SET n = 8 WHERE id = 1001", ())

    rep = check(cl, repair=True, _fault=change)["repair"]
    assert [c["pk"] for c in rep["conflicts"]] == [[1001]]
    assert shard_rows(root, s)[1001] == (1001, "stray1001", 8)
    cl.close()


def test_rows_a_retained_migration_keeps_are_not_stranded(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=2000, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    assert m.run() == "retained"
    moved = [k for k in range(1, 2001) if old.route(k) != new.route(k)]
    assert len(moved) > 20
    k = next(k for k in range(3000, 4000) if new.route(k) != "s4" and old.route(k) == new.route(k))
    _plant(root, "s4", "INSERT INTO users VALUES (?, ?, ?)", (k, "stray", 0))
    res = cl.check()
    g = res["groups"]["users"]
    assert g["topology_version"] == new.version
    assert (res["stranded"], res["retained"]) == (1, len(moved))
    held: dict[str, int] = {}
    for t in g["tables"]:
        for mid, n in t["retained"].items():
            held[mid] = held.get(mid, 0) + n
    assert held == {m.id: len(moved)}
    assert [t["first"] for t in g["tables"] if t["stranded"]] == [[{"pk": [k], "key": k,
                                                                   "owner": new.route(k)}]]
    # after the cleanup the retained copies are gone, and the planted row is still found
    m.cleanup()
    res = cl.check()
    assert (res["stranded"], res["retained"]) == (1, 0)
    cl.close()


def test_the_cli(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    cl, plants = _cluster(root, backend)
    cl.close()
    path = str(root / "cluster.json")
    assert main(["migrate", "check", "--config", path, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"groups", "rows_scanned", "stranded", "retained", "seconds", "rows_per_s", "repair"}
    assert doc["stranded"] == 3 and doc["repair"] is None
    assert set(doc["groups"]["users"]["tables"][0]) == {"shard", "table", "rows_scanned", "stranded",
                                                       "retained", "first"}
    assert main(["migrate", "check", "--config", path]) == 1
    out = capsys.readouterr().out
    assert "3 stranded" in out and "pk [1001]" in out and "--repair" in out
    assert main(["migrate", "check", "--config", path, "--group", "users", "--repair"]) == 0
    assert "repair: 3 moved" in capsys.readouterr().out
    assert main(["migrate", "check", "--config", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stranded"] == 0


def test_bad_arguments(root: Path, backend: str) -> None:
    cl, _ = _cluster(root, backend)
    with pytest.raises(ValueError, match="chunk"):
        check(cl, chunk=0)
    with pytest.raises(KeyError, match="nope"):
        cl.check("nope")
    cl.close()
