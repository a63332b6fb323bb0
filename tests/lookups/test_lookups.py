"""LookupIndex: uniqueness across shards, write order, crashes between the writes, value changes."""

from __future__ import annotations

import functools
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, RingRouter
from shardhash.lookups import DuplicateValue, FactoryStore, LookupIndex
from tests._support import child_env, present

NAMES = ["a", "b", "c", "d"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _setup(root: Path) -> dict[str, Any]:
    shards = {}
    for s in NAMES:
        p = root / f"{s}.db"
        c = sqlite3.connect(p)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
        c.commit()
        c.close()
        shards[s] = functools.partial(sqlite3.connect, str(p), timeout=60)
    return shards


def _index(shards: dict[str, Any], clock: Any = None, grace: float = 60.0) -> LookupIndex:
    # users by id (jump), the lookup table by the email's own hash (a ring): two placements
    users = FactoryStore(shards, JumpRouter(NAMES))
    emails = FactoryStore(shards, RingRouter(NAMES, vnodes=32))
    idx = LookupIndex("email", lookup=emails, owner=users, owner_table="users", grace=grace,
                      **({"clock": clock} if clock else {}))
    idx.create_table()
    return idx


def _all(shards: dict[str, Any], sql: str) -> list[tuple[Any, ...]]:
    out = []
    for f in shards.values():
        c = f()
        out += c.execute(sql).fetchall()
        c.close()
    return sorted(out)


@pytest.fixture
def shards(tmp_path: Path) -> dict[str, Any]:
    return _setup(tmp_path)


def test_register_lookup_get(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    for i in range(40):
        idx.register(i, f"user{i}@example.com", {"name": f"n{i}"})
    for i in range(40):
        assert idx.lookup(f"user{i}@example.com") == i
        assert idx.get(f"user{i}@example.com") == {"id": i, "email": f"user{i}@example.com", "name": f"n{i}"}
    assert idx.lookup("nobody@example.com") is None and idx.get("nobody@example.com") is None
    # each lookup row lives on the shard of the email's own hash, each user on its id's
    for s, f in shards.items():
        c = f()
        for (v,) in c.execute("SELECT value FROM email_lookup"):
            assert idx.lookup_store.shard_of(v) == s
        for (i,) in c.execute("SELECT id FROM users"):
            assert idx.owner_store.shard_of(i) == s
        c.close()
    assert len(_all(shards, "SELECT * FROM email_lookup WHERE state = 'committed'")) == 40
    with pytest.raises(DuplicateValue) as ei:
        idx.register(99, "user7@example.com")
    assert ei.value.owner == 7
    assert idx.owner_store.shard_of(99) and not [r for r in _all(shards, "SELECT id FROM users") if r[0] == 99]


def test_concurrent_registrations_exactly_one_wins(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    writers, emails = 12, 6
    results: dict[tuple[int, int], str] = {}
    barrier = threading.Barrier(writers)

    def writer(w: int) -> None:
        barrier.wait()
        for e in range(emails):
            oid = 1000 * (e + 1) + w  # every writer registers its own user for the same emails
            try:
                idx.register(oid, f"same{e}@example.com", {"name": f"w{w}"})
                results[(w, e)] = "won"
            except DuplicateValue:
                results[(w, e)] = "lost"

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == writers * emails
    for e in range(emails):
        winners = [w for w in range(writers) if results[(w, e)] == "won"]
        assert len(winners) == 1, (e, winners)
        assert idx.lookup(f"same{e}@example.com") == 1000 * (e + 1) + winners[0]
    users = _all(shards, "SELECT email, id FROM users")
    assert len(users) == emails and len({u[0] for u in users}) == emails


CRASH = """
import functools, os, sqlite3, sys
from shardhash import JumpRouter, RingRouter
from shardhash.lookups import FactoryStore, LookupIndex
root, mode = sys.argv[1], sys.argv[2]
names = ["a", "b", "c", "d"]
shards = {s: functools.partial(sqlite3.connect, os.path.join(root, s + ".db"), timeout=60) for s in names}
idx = LookupIndex("email", lookup=FactoryStore(shards, RingRouter(names, vnodes=32)),
                  owner=FactoryStore(shards, JumpRouter(names)), owner_table="users")
if mode == "register":
    idx._between = lambda: os._exit(3)       # killed after the lookup row, before the user row
    idx.register(5, "crash@example.com", {"name": "lost"})
elif mode == "change-before-update":
    idx._between = lambda: os._exit(3)
    idx.change(1, "old@example.com", "new@example.com")
elif mode == "change-before-release":
    orig = idx._release
    def release(owner_id, value):
        if value == "old@example.com":
            os._exit(3)                     # killed after the user row changed, before the old row went
        orig(owner_id, value)
    idx._release = release
    idx.change(1, "old@example.com", "new@example.com")
"""


def _crash(root: Path, mode: str) -> None:
    out = subprocess.run([sys.executable, "-c", CRASH, str(root), mode], capture_output=True, text=True,
                         env=child_env(), timeout=60)
    assert out.returncode == 3, out.stderr


def test_crash_between_the_two_writes(tmp_path: Path) -> None:
    shards = _setup(tmp_path)
    clock = Clock()
    idx = _index(shards, clock)
    _crash(tmp_path, "register")
    # the lookup row is there (pending), the user row is not: nothing visible
    assert _all(shards, "SELECT value, owner_id, state FROM email_lookup") == [("crash@example.com", "5", "pending")]
    assert _all(shards, "SELECT * FROM users") == []
    assert idx.lookup("crash@example.com") is None and idx.get("crash@example.com") is None
    # a young pending row may be a registration in flight: it blocks...
    clock.now = 2e9  # (the child wrote with the real clock; move ours far past it)
    idx.grace = 10**12
    with pytest.raises(DuplicateValue):
        idx.register(6, "crash@example.com")
    # ...an old one is an orphan: a new registration takes it over
    idx.grace = 60.0
    idx.register(6, "crash@example.com", {"name": "second"})
    assert idx.lookup("crash@example.com") == 6
    assert _all(shards, "SELECT id, email FROM users") == [(6, "crash@example.com")]
    assert idx.cleanup() == 0


def test_cleanup_removes_orphans(tmp_path: Path) -> None:
    shards = _setup(tmp_path)
    clock = Clock()
    idx = _index(shards, clock)
    idx.register(1, "keep@example.com")
    _crash(tmp_path, "register")
    clock.now = 2e9
    assert idx.cleanup(older_than=10**12) == 0  # nothing that old
    assert idx.cleanup() == 1
    assert _all(shards, "SELECT value, state FROM email_lookup") == [("keep@example.com", "committed")]


def test_email_change_and_crashes_during_it(tmp_path: Path) -> None:
    shards = _setup(tmp_path)
    clock = Clock()
    idx = _index(shards, clock)
    idx.register(1, "old@example.com", {"name": "u1"})
    idx.register(2, "other@example.com")
    with pytest.raises(DuplicateValue):
        idx.change(1, "old@example.com", "other@example.com")
    assert idx.lookup("old@example.com") == 1
    # crash after the new lookup row, before the user row changed
    _crash(tmp_path, "change-before-update")
    assert idx.lookup("old@example.com") == 1 and idx.lookup("new@example.com") is None
    clock.now = 2e9
    assert idx.cleanup() == 1
    # crash after the user row changed, before the old lookup row went
    _crash(tmp_path, "change-before-release")
    assert idx.lookup("new@example.com") == 1 and idx.lookup("old@example.com") is None
    assert present(idx.get("new@example.com"))["name"] == "u1"
    assert idx.cleanup() == 1
    assert _all(shards, "SELECT value, owner_id, state FROM email_lookup") == [
        ("new@example.com", "1", "committed"), ("other@example.com", "2", "committed")]
    # the freed value can be registered again; a normal change works end to end
    idx.register(3, "old@example.com")
    idx.change(3, "old@example.com", "third@example.com")
    assert idx.lookup("third@example.com") == 3 and idx.lookup("old@example.com") is None
    idx.remove(3, "third@example.com")
    assert idx.lookup("third@example.com") is None
    assert [r for r in _all(shards, "SELECT value FROM email_lookup") if r[0] == "third@example.com"] == []


def test_failed_owner_insert_frees_the_value(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "x@example.com")
    with pytest.raises(sqlite3.IntegrityError):
        idx.register(1, "y@example.com")  # user id 1 exists: the user row fails
    assert idx.lookup("y@example.com") is None
    idx.register(2, "y@example.com")
    assert idx.lookup("y@example.com") == 2


def test_lookup_is_one_extra_round_trip(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "ada@example.com")
    opened: list[str] = []

    def counting(s: str, f: Callable[[], Any]) -> Callable[[], Any]:
        def connect() -> Any:
            opened.append(s)
            return f()
        return connect

    counted = {s: counting(s, f) for s, f in shards.items()}
    idx.lookup_store = FactoryStore(counted, idx.lookup_store.router)
    idx.owner_store = FactoryStore(counted, idx.owner_store.router)
    assert idx.lookup("ada@example.com") == 1
    # the lookup shard, then the user's shard: two routed reads, no scatter
    assert opened == [idx.lookup_store.shard_of("ada@example.com"), idx.owner_store.shard_of(1)]


def test_bad_arguments(shards: dict[str, Any]) -> None:
    store = FactoryStore(shards, JumpRouter(NAMES))
    with pytest.raises(ValueError, match="identifier"):
        LookupIndex("email; drop", lookup=store, owner=store, owner_table="users")
    with pytest.raises(ValueError, match="no connection factory"):
        FactoryStore({"a": shards["a"]}, JumpRouter(NAMES))
    idx = LookupIndex("email", lookup=store, owner=store, owner_table="users")
    idx.create_table()
    with pytest.raises(TypeError, match="owner ids"):
        idx.register(1.5, "z@example.com")
