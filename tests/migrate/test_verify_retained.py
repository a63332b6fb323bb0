"""``verify`` of a ``retained`` migration (after the cutover, before the
cleanup): the retained copies on the old sources against the rows on their
owners, with the rows written on the owners since the cutover counted apart
(``changed_since_cutover``) and every other difference a mismatch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration, MigrationError, VerifyMismatch

from ._harness import connect, drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def _retained(root: Path, backend: str) -> tuple[Cluster, Migration, list[int]]:
    """A migration of 2,000 users from four shards to five, retained; the moved keys."""
    path = make_cluster(root, FOUR, users=2000, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    assert m.run() == "retained"
    moved = sorted(k for k in range(1, 2001) if old.route(k) != new.route(k))
    assert len(moved) > 20
    return cl, m, moved


def test_retained_copies_equal_their_owners(root: Path, backend: str) -> None:
    cl, m, moved = _retained(root, backend)
    res = m.verify()
    assert res["retained"] is True
    assert (res["rows"], res["mismatches"], res["changed_since_cutover"]) == (len(moved), 0, 0)
    assert m.state == "retained" and m.status()["verify"]["rows"] == len(moved)
    assert m.cleanup() == len(moved)  # (the verify left the retained copy alone)
    cl.close()


def test_writes_after_the_cutover_are_counted_apart(root: Path, backend: str) -> None:
    cl, m, moved = _retained(root, backend)
    for k in moved[:5]:  # updated on the owner
        with cl.transaction(k) as tx:
            tx.execute(upsert(tx), (k, "after", 99))
    with cl.transaction(moved[5]) as tx:  # deleted on the owner
        tx.execute("DELETE FROM users WHERE id = ?", (moved[5],))
    with cl.transaction(moved[6]) as tx:  # written with the same values: equal, not counted
        tx.execute(upsert(tx), (moved[6], f"u{moved[6]}", 0))
    res = m.verify()
    assert (res["rows"], res["changed_since_cutover"], res["mismatches"]) == (len(moved), 6, 0)
    assert m.state == "retained"
    cl.close()


def test_a_retained_copy_that_differs_unwritten_is_a_mismatch(root: Path, backend: str) -> None:
    cl, m, moved = _retained(root, backend)
    old_src = [s for s in FOUR if moved[0] in shard_rows(root, s)]  # (the retained copy's shard)
    assert len(old_src) == 1
    c = connect(root, old_src[0])  # behind the executor's back, on the retained copy
    c.execute("UPDATE users SET name = 'corrupt' WHERE id = ?", (moved[0],))
    if hasattr(c, "commit"):
        c.commit()
    c.close()
    with cl.transaction(moved[1]) as tx:  # and one write on the owner, counted apart
        tx.execute(upsert(tx), (moved[1], "after", 1))
    with pytest.raises(VerifyMismatch) as ei:
        m.verify()
    assert [d["pk"] for d in ei.value.diffs] == [[moved[0]]]
    st = m.status()
    assert st["state"] == "retained"
    assert (st["verify"]["mismatches"], st["verify"]["changed_since_cutover"]) == (1, 1)
    cl.close()


def test_verify_retained_refuses_other_states(root: Path, backend: str) -> None:
    cl, m, moved = _retained(root, backend)
    m.cleanup()
    with pytest.raises(MigrationError, match="retained"):
        m.verify_retained()
    cl.close()


def test_the_cli_verify_of_a_retained_migration_compares_the_retained_copies(
        root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`shardhash migrate verify` right after `start` (the migration is
    retained) runs the comparison; a planted difference exits 3."""
    from shardhash.cli import main

    cl, m, moved = _retained(root, backend)
    path = str(root / "cluster.json")
    assert main(["migrate", "verify", m.id, "--config", path]) == 0
    assert f"migration {m.id}" in capsys.readouterr().out
    old_src = [s for s in FOUR if moved[0] in shard_rows(root, s)]
    c = connect(root, old_src[0])  # the retained copy changed behind the executor's back
    c.execute("UPDATE users SET name = 'corrupt' WHERE id = ?", (moved[0],))
    if hasattr(c, "commit"):
        c.commit()
    c.close()
    assert main(["migrate", "verify", m.id, "--config", path]) == 3
    assert "verify failed" in capsys.readouterr().err
    cl.close()
