"""A lookup index compares values exactly, as keys are compared (the integer
7 and the string "7" are two keys): a value that the owner column stores as
something else (SQLite's and MySQL's text columns store 7 as "7") is refused
when it is registered, with nothing left behind; before, the registration
succeeded and the value could never be found again, and 7 and "7" could
both be registered to two owners of the same stored email."""

from __future__ import annotations

import pytest

from shardhash import JumpRouter, RingRouter
from shardhash.lookups import FactoryStore, LookupIndex, _same
from tests.lookups._backends import NAMES, Backend


def _index(backend: Backend) -> LookupIndex:
    def store(router: object) -> FactoryStore:
        return FactoryStore(backend.factories, router, placeholder=backend.placeholder, dialect=backend.dialect)

    idx = LookupIndex("email", owner_table="users", lookup=store(RingRouter(NAMES, vnodes=16)),
                      owner=store(JumpRouter(NAMES)))
    idx.create_table()
    return idx


def _refusal(backend: Backend) -> type[BaseException]:
    """What refuses an integer for the text column: PostgreSQL itself (a
    driver error, nothing written), else the index's own check."""
    if backend.placeholder == "%s" and backend.dialect == "standard":
        import psycopg

        return psycopg.Error
    return TypeError


def _rows(backend: Backend, table: str) -> int:
    return sum(len(backend.query(s, f"SELECT * FROM {table}")) for s in NAMES)


def test_a_value_the_column_would_change_is_refused_and_nothing_stays(backend: Backend) -> None:
    idx = _index(backend)
    pg = backend.placeholder == "%s" and backend.dialect == "standard"
    if pg:
        # (PostgreSQL refuses an integer for a text column itself: a driver error, nothing written)
        with pytest.raises(_refusal(backend)):
            idx.register(1, 7)
    else:
        with pytest.raises(TypeError, match=r"email 7 \(int\) comes back from users.email as '7' \(str\)"):
            idx.register(1, 7)
    assert _rows(backend, "users") == 0
    assert _rows(backend, "email_lookup") == 0  # (its lookup row undone too)
    if not pg:
        assert idx.lookup(7) is None
    # the text "7" is what the column holds: it registers, and is found
    idx.register(2, "7")
    assert idx.lookup("7") == 2
    if not pg:
        assert idx.lookup(7) is None


def test_a_change_to_a_value_the_column_would_change_is_refused(backend: Backend) -> None:
    idx = _index(backend)
    idx.register(1, "ada@example.com")
    with pytest.raises(_refusal(backend)):
        idx.change(1, "ada@example.com", 12345)
    assert idx.lookup("ada@example.com") == 1
    if not (backend.placeholder == "%s" and backend.dialect == "standard"):
        assert idx.lookup(12345) is None
    assert _rows(backend, "email_lookup") == 1


def test_same() -> None:
    assert _same("7", "7") and not _same("7", 7) and not _same(7, "7")
    assert _same(memoryview(b"ab"), b"ab") and _same(b"ab", b"ab") and not _same("ab", b"ab")
    from decimal import Decimal

    assert _same(Decimal(7), 7) and _same(7, 7) and not _same(True, 1) and not _same(Decimal("7.5"), 7)
