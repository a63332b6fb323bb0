"""LookupIndex: repeated and failing calls never weaken the index; `row` cannot replace the key or the value;
names are quoted and values bound."""

from __future__ import annotations

import functools
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, RingRouter
from shardhash.lookups import DuplicateValue, FactoryStore, LookupIndex
from tests.lookups._backends import NAMES as NAMES_B
from tests.lookups._backends import Backend

NAMES = ["a", "b", "c"]


def _shards(root: Path, ddl: str = "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT)"
            ) -> dict[str, Any]:
    shards = {}
    for s in NAMES:
        p = root / f"{s}.db"
        c = sqlite3.connect(p)
        c.execute(ddl)
        c.commit()
        c.close()
        shards[s] = functools.partial(sqlite3.connect, str(p), timeout=60)
    return shards


def _index(shards: dict[str, Any], **kw: Any) -> LookupIndex:
    kw.setdefault("owner_table", "users")
    idx = LookupIndex(kw.pop("name", "email"), lookup=FactoryStore(shards, RingRouter(NAMES, vnodes=16)),
                      owner=FactoryStore(shards, JumpRouter(NAMES)), **kw)
    idx.create_table()
    return idx


def _rows(shards: dict[str, Any], sql: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for f in shards.values():
        c = f()
        out += c.execute(sql).fetchall()
        c.close()
    return sorted(out)


def _state(shards: dict[str, Any]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return (_rows(shards, "SELECT value, owner_id, state, created FROM email_lookup"),
            _rows(shards, "SELECT id, email, name FROM users"))


@pytest.fixture
def shards(tmp_path: Path) -> dict[str, Any]:
    return _shards(tmp_path)


def test_repeated_register_is_idempotent(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "ada@example.com", {"name": "Ada"})
    before = _state(shards)
    idx.register(1, "ada@example.com", {"name": "Ada"})  # a client retry / double submit: success, nothing changes
    idx.register(1, "ada@example.com")
    assert _state(shards) == before
    assert idx.lookup("ada@example.com") == 1
    with pytest.raises(DuplicateValue) as ei:  # the value is still held
        idx.register(2, "ada@example.com")
    assert ei.value.owner == 1
    assert _state(shards) == before


def test_repeat_with_other_columns_is_refused_and_keeps_the_row(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "ada@example.com", {"name": "Ada"})
    before = _state(shards)
    with pytest.raises(ValueError, match=r"already holds email 'ada@example.com'.*\['name'\]"):
        idx.register(1, "ada@example.com", {"name": "Eve"})
    assert _state(shards) == before
    # a repeat that fails for another reason (no such column) undoes nothing it did not write
    with pytest.raises(sqlite3.OperationalError):
        idx.register(1, "ada@example.com", {"nosuch": 1})
    assert _state(shards) == before
    with pytest.raises(DuplicateValue):
        idx.register(2, "ada@example.com")


def test_register_of_an_owner_holding_another_value_keeps_both_rows(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "x@example.com")
    before = _state(shards)
    with pytest.raises(sqlite3.IntegrityError):
        idx.register(1, "y@example.com")  # the owner row exists: the primary key refuses it
    assert _state(shards) == before  # y's lookup row (this call's own) is gone, x's is kept
    with pytest.raises(DuplicateValue):
        idx.register(2, "x@example.com")


def test_repeated_change_is_idempotent(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "a@example.com", {"name": "u1"})
    idx.change(1, "a@example.com", "b@example.com")
    before = _state(shards)
    idx.change(1, "a@example.com", "b@example.com")  # a retry: success, nothing changes
    assert _state(shards) == before
    assert idx.lookup("b@example.com") == 1 and idx.lookup("a@example.com") is None
    with pytest.raises(DuplicateValue) as ei:
        idx.register(2, "b@example.com")
    assert ei.value.owner == 1
    idx.register(2, "a@example.com")  # the old value is free
    assert _state(shards)[1] == [(1, "b@example.com", "u1"), (2, "a@example.com", None)]


def test_change_of_a_value_the_owner_does_not_hold_keeps_the_index(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "a@example.com")
    idx.register(2, "b@example.com")
    before = _state(shards)
    with pytest.raises(LookupError, match="does not hold"):
        idx.change(1, "zzz@example.com", "c@example.com")
    with pytest.raises(DuplicateValue):
        idx.change(1, "zzz@example.com", "b@example.com")
    with pytest.raises(DuplicateValue):  # b is 2's: 1 cannot take it even "as a repeat"
        idx.change(1, "a@example.com", "b@example.com")
    assert _state(shards) == before


def test_change_that_loses_its_new_value_restores_the_owner_row(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "a@example.com", {"name": "u1"})
    commit = idx._commit

    def taken_first(owner_id: Any, value: Any) -> bool:
        # another registration took the new value's row over (this call outlived `grace`)
        with idx.lookup_store.write(value) as tx:
            tx.execute("UPDATE email_lookup SET owner_id = '9' WHERE value = ?", (value,))
        return commit(owner_id, value)

    idx._commit = taken_first  # type: ignore[method-assign]
    with pytest.raises(DuplicateValue):
        idx.change(1, "a@example.com", "b@example.com")
    assert _rows(shards, "SELECT id, email FROM users") == [(1, "a@example.com")]
    assert [r[:2] for r in _rows(shards, "SELECT value, owner_id FROM email_lookup")] == [
        ("a@example.com", "1"), ("b@example.com", "9")]


@pytest.mark.parametrize("column", ["email", "EMAIL", "id", "Id"])
def test_row_naming_the_value_or_key_column_is_refused(shards: dict[str, Any], column: str) -> None:
    idx = _index(shards)
    idx.register(1, "taken@x")
    before = _state(shards)
    with pytest.raises(ValueError, match=f"row.*{column!r}"):
        idx.register(2, "new@x", row={column: "taken@x" if column.lower() == "email" else 7, "name": "n"})
    assert _state(shards) == before  # nothing written, not even a pending lookup row
    assert idx.lookup("new@x") is None and idx.lookup("taken@x") == 1


def test_bad_row_column_writes_nothing(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    with pytest.raises(ValueError, match="identifier"):
        idx.register(1, "a@example.com", {"name; DROP TABLE users": 1})
    with pytest.raises(TypeError, match="owner ids"):
        idx.register(1.5, "a@example.com")
    assert _state(shards) == ([], [])


def test_remove_with_another_value_is_refused(shards: dict[str, Any]) -> None:
    idx = _index(shards)
    idx.register(1, "a@example.com")
    before = _state(shards)
    with pytest.raises(LookupError, match="does not hold"):
        idx.remove(1, "b@example.com")
    assert _state(shards) == before
    idx.remove(1, "a@example.com")
    idx.remove(1, "a@example.com")  # a repeat: nothing left to remove
    assert _state(shards) == ([], [])


def test_names_are_quoted_identifiers(tmp_path: Path) -> None:
    # SQL keywords as table and column names: they work only if every name is quoted
    shards = _shards(tmp_path, 'CREATE TABLE "order" ("select" INTEGER PRIMARY KEY, "group" TEXT, "from" TEXT)')
    idx = _index(shards, name="where", owner_table="order", owner_key="select", owner_value="group",
                 table="table")
    idx.register(1, "v1", {"from": "x"})
    idx.register(2, "v2")
    idx.change(2, "v2", "v3")
    assert idx.get("v1") == {"select": 1, "group": "v1", "from": "x"}
    assert idx.lookup("v3") == 2 and idx.lookup("v2") is None
    idx.remove(1, "v1")
    assert idx.lookup("v1") is None and idx.cleanup() == 0


def test_placeholder_is_checked(shards: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="placeholder"):
        FactoryStore(shards, JumpRouter(NAMES), placeholder="$1")


def test_unknown_column_names_are_errors_not_strings(shards: dict[str, Any]) -> None:
    # SQLite reads an unknown bare "name" as a string literal; every column in an expression is
    # qualified by its table, so a wrong name is an error, never a silent comparison with a string
    idx = _index(shards, owner_key="uid")
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        idx.remove(1, "a@example.com")
    idx = _index(shards, owner_value="mail")
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        idx.change(1, "a@example.com", "b@example.com")
    assert _state(shards)[1] == []


def test_concurrent_double_submits_all_succeed(backend: Backend) -> None:
    # eight clients send the same registration at once: every one succeeds, one row of each kind remains
    idx = LookupIndex("email", owner_table="users",
                      lookup=FactoryStore(backend.factories, RingRouter(NAMES_B, vnodes=16),
                                          placeholder=backend.placeholder, dialect=backend.dialect),
                      owner=FactoryStore(backend.factories, JumpRouter(NAMES_B), placeholder=backend.placeholder,
                                         dialect=backend.dialect))
    idx.create_table()
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def submit() -> None:
        barrier.wait()
        try:
            idx.register(7, "same@example.com", {"name": "n"})
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    lookups = [r for s in NAMES_B for r in backend.query(s, "SELECT value, owner_id, state FROM email_lookup")]
    users = [r for s in NAMES_B for r in backend.query(s, "SELECT id, email, name FROM users")]
    assert lookups == [("same@example.com", "7", "committed")]
    assert users == [(7, "same@example.com", "n")]


def test_repeats_through_a_cluster(tmp_path: Path) -> None:
    from shardhash.migrate import Cluster

    for s in NAMES:
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
        c.commit()
        c.close()
    cl = Cluster.from_dict({
        "metadata": "sqlite:meta.db",
        "shards": {s: {"primary": f"sqlite:{s}.db"} for s in NAMES},
        "groups": {
            "users": {"router": JumpRouter(NAMES).to_dict(), "tables": [{"name": "users", "key": "id"}]},
            "email_lookup": {"router": RingRouter(NAMES, vnodes=16).to_dict(),
                             "tables": [{"name": "email_lookup", "key": "value"}]},
        },
    }, base_dir=tmp_path)
    try:
        idx = cl.add_lookup("email", group="email_lookup", owner_group="users", owner_table="users")
        cl.init()
        idx.register(1, "a@example.com", {"name": "u1"})
        idx.register(1, "a@example.com", {"name": "u1"})  # a repeat through the Cluster's transactions
        idx.change(1, "a@example.com", "b@example.com")
        idx.change(1, "a@example.com", "b@example.com")
        with pytest.raises(sqlite3.IntegrityError):
            idx.register(1, "c@example.com")
        with pytest.raises(ValueError, match="'email'"):
            idx.register(2, "d@example.com", {"email": "b@example.com"})
        assert cl.lookup("email", "b@example.com") == 1
        assert cl.lookup("email", "a@example.com") is None and cl.lookup("email", "c@example.com") is None
        with pytest.raises(DuplicateValue):
            idx.register(2, "b@example.com")
        assert cl.lookup_row("email", "b@example.com") == {"id": 1, "email": "b@example.com", "name": "u1"}
    finally:
        cl.close()
