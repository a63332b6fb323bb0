"""LookupIndex as a state machine: register / change / remove / retries / a process dying at every write,
against a dictionary model, on SQLite and (with a server, tests/_postgres.py) on PostgreSQL.

After every step: the owner rows are the model's; one owner per value; every owner row's value has a
lookup row pointing back at it, and ``lookup`` finds it; every other lookup row is an orphan that
``lookup`` never returns; a value is refused as taken by an orphan only while that orphan is a pending
row younger than ``grace``; ``cleanup`` past ``grace`` leaves only rows that point at their owners.

A crash is simulated by the stores: the n-th write transaction of a call dies (rolled back, or after its
commit), and every later store operation of that call fails too, so no error path of the dead call runs.
The owner row must then be as before the call or as after it, and repeating the call converges.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from shardhash import JumpRouter, RingRouter
from shardhash.lookups import DuplicateValue, FactoryStore, LookupIndex
from tests.lookups._backends import NAMES, Backend

GRACE = 100
OWNERS = st.integers(1, 4)
VALUES = st.sampled_from(["a@x", "b@x", "c@x", "d@x"])
ROW_NAMES = st.sampled_from([None, "n1", "n2"])  # None: no row argument


class Crash(Exception):
    """The process died here."""


class Faults:
    """Shared by the two stores of one index: the ``countdown``-th write transaction dies (``mode``
    "mid": before its commit, rolled back; "after": after its commit); the process is then dead."""

    def __init__(self) -> None:
        self.countdown: int | None = None
        self.mode = "mid"
        self.dead = False

    def arm(self, n: int, mode: str) -> None:
        self.countdown, self.mode, self.dead = n, mode, False

    def disarm(self) -> None:
        self.countdown, self.dead = None, False


class FaultyStore:
    def __init__(self, inner: FactoryStore, faults: Faults) -> None:
        self.inner = inner
        self.faults = faults
        self.placeholder = inner.placeholder
        self.dialect = inner.dialect

    def shard_of(self, key: Any) -> str:
        return self.inner.shard_of(key)

    def shards(self) -> list[str]:
        return self.inner.shards()

    @contextlib.contextmanager
    def _tx(self, open_tx: Callable[[], contextlib.AbstractContextManager[Any]], write: bool) -> Iterator[Any]:
        f = self.faults
        if f.dead:
            raise Crash("the process is dead")
        fire = False
        if write and f.countdown is not None:
            f.countdown -= 1
            fire = f.countdown == 0
        if not fire:
            with open_tx() as tx:
                yield tx
            return
        f.dead = True
        with open_tx() as tx:
            yield tx
            if f.mode == "mid":
                raise Crash("died before the commit")
        raise Crash("died after the commit")

    def write(self, key: Any) -> contextlib.AbstractContextManager[Any]:
        return self._tx(lambda: self.inner.write(key), True)

    def read(self, key: Any) -> contextlib.AbstractContextManager[Any]:
        return self._tx(lambda: self.inner.read(key), False)

    def write_shard(self, shard: str) -> contextlib.AbstractContextManager[Any]:
        return self._tx(lambda: self.inner.write_shard(shard), True)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


Model = dict[int, tuple[str, "str | None"]]  # owner id -> (value, name)


class LookupMachine(RuleBasedStateMachine):
    backend: Backend  # set by the test

    def __init__(self) -> None:
        super().__init__()
        b = self.backend
        for s in NAMES:
            b.execute(s, "DELETE FROM users")
        self.clock = Clock()
        self.faults = Faults()
        self.idx = LookupIndex(
            "email", owner_table="users", grace=GRACE, clock=self.clock,
            lookup=FaultyStore(FactoryStore(b.factories, RingRouter(NAMES, vnodes=16), placeholder=b.placeholder,
                                            dialect=b.dialect), self.faults),
            owner=FaultyStore(FactoryStore(b.factories, JumpRouter(NAMES), placeholder=b.placeholder,
                                           dialect=b.dialect), self.faults))
        self.model: Model = {}
        self.last: tuple[str, tuple[Any, ...]] | None = None

    @initialize()
    def create(self) -> None:
        self.idx.create_table()
        for s in NAMES:
            self.backend.execute(s, "DELETE FROM email_lookup")

    # -- the database as it is ------------------------------------------------------------

    def _owner_rows(self) -> Model:
        rows = [r for s in NAMES for r in self.backend.query(s, "SELECT id, email, name FROM users")]
        out = {int(i): (v, n) for i, v, n in rows}
        assert len(out) == len(rows)
        return out

    def _lookup_rows(self) -> dict[str, tuple[str, str, float, str]]:
        out = {}
        for s in NAMES:
            for v, o, state, created in self.backend.query(s, "SELECT value, owner_id, state, created FROM "
                                                              "email_lookup"):
                assert v not in out, f"{v!r} has lookup rows on two shards"
                out[v] = (o, state, float(created), s)
        return out

    def _holder(self, value: str) -> int | None:
        return next((o for o, (v, _) in self.model.items() if v == value), None)

    def _young_orphan(self, value: str) -> bool:
        """Is ``value`` blocked by an orphan that may be a registration in flight (pending, younger than grace)?"""
        row = self._lookup_rows().get(value)
        if row is None:
            return False
        o, state, created, _ = row
        holds = self._owner_rows().get(int(o), (None, None))[0] == value
        return not holds and state == "pending" and self.clock.now - created < GRACE

    # -- expectations ----------------------------------------------------------------------

    def _expect(self, op: str, args: tuple[Any, ...]) -> tuple[str, Any]:
        """("ok", model after) or (error kind, detail) for ``op(*args)`` on the model."""
        m = self.model
        if op == "register":
            o, v, name = args
            if o in m and m[o][0] == v:
                return ("ok", m) if name is None or m[o][1] == name else ("differs", None)
            p = self._holder(v)
            if p is not None:
                return "dup", p
            if o in m:
                return "integrity", None
            return "ok", {**m, o: (v, name)}
        if op == "change":
            o, old, new = args
            if old == new or m.get(o, (None,))[0] == new:
                return "ok", m
            p = self._holder(new)
            if p is not None:
                return "dup", p
            if m.get(o, (None,))[0] == old:
                return "ok", {**m, o: (new, m[o][1])}
            return "lookup", None
        o, v = args
        if o not in m:
            return "ok", m
        if m[o][0] == v:
            return "ok", {k: x for k, x in m.items() if k != o}
        return "lookup", None

    def _invoke(self, op: str, args: tuple[Any, ...]) -> None:
        if op == "register":
            o, v, name = args
            self.idx.register(o, v, None if name is None else {"name": name})
        elif op == "change":
            self.idx.change(*args)
        else:
            self.idx.remove(*args)

    def _value_of(self, op: str, args: tuple[Any, ...]) -> str:
        return str(args[1] if op != "change" else args[2])

    def _run(self, op: str, args: tuple[Any, ...]) -> None:
        """Run ``op`` with no fault and check its outcome against the model."""
        kind, detail = self._expect(op, args)
        young = self._young_orphan(self._value_of(op, args))
        self.last = (op, args)
        event(f"{op}: expected {kind}")
        try:
            self._invoke(op, args)
        except DuplicateValue as e:
            event(f"{op}: taken" + ("" if kind == "dup" else " by a young orphan"))
            if kind == "dup":
                assert e.owner == detail, (op, args, e)
            else:  # only an orphan that may still be in flight may block a value
                assert young and kind in ("ok", "integrity", "lookup"), (op, args, kind, e)
            return
        except ValueError as e:
            assert kind == "differs", (op, args, kind, e)
            return
        except LookupError as e:
            assert kind == "lookup", (op, args, kind, e)
            return
        except self.backend.integrity as e:
            assert kind == "integrity", (op, args, kind, e)
            return
        assert kind == "ok", (op, args, kind)
        self.model = detail

    # -- rules ---------------------------------------------------------------------------

    @rule(o=OWNERS, v=VALUES, name=ROW_NAMES)
    def register(self, o: int, v: str, name: str | None) -> None:
        self._run("register", (o, v, name))

    @rule(o=OWNERS, old=VALUES, new=VALUES, own=st.booleans())
    def change(self, o: int, old: str, new: str, own: bool) -> None:
        if own and o in self.model:
            old = self.model[o][0]
        self._run("change", (o, old, new))

    @rule(o=OWNERS, v=VALUES, own=st.booleans())
    def remove(self, o: int, v: str, own: bool) -> None:
        if own and o in self.model:
            v = self.model[o][0]
        self._run("remove", (o, v))

    @rule()
    def retry(self) -> None:
        """The last call again: a client retry or a double submit."""
        if self.last is not None:
            self._run(*self.last)

    @rule(o=OWNERS, v=VALUES, name=ROW_NAMES, n=st.integers(1, 4), mode=st.sampled_from(["mid", "after"]),
          retry=st.booleans())
    def crash_register(self, o: int, v: str, name: str | None, n: int, mode: str, retry: bool) -> None:
        self._crash("register", (o, v, name), n, mode, retry)

    @rule(o=OWNERS, old=VALUES, new=VALUES, n=st.integers(1, 4), mode=st.sampled_from(["mid", "after"]),
          retry=st.booleans())
    def crash_change(self, o: int, old: str, new: str, n: int, mode: str, retry: bool) -> None:
        self._crash("change", (o, self.model[o][0] if o in self.model else old, new), n, mode, retry)

    @rule(o=OWNERS, v=VALUES, n=st.integers(1, 2), mode=st.sampled_from(["mid", "after"]), retry=st.booleans())
    def crash_remove(self, o: int, v: str, n: int, mode: str, retry: bool) -> None:
        self._crash("remove", (o, self.model[o][0] if o in self.model else v), n, mode, retry)

    def _crash(self, op: str, args: tuple[Any, ...], n: int, mode: str, retry: bool) -> None:
        """The process dies at the n-th write of a call; then (maybe) the call is repeated."""
        kind, after = self._expect(op, args)
        before = self.model
        self.faults.arm(n, mode)
        try:
            self._invoke(op, args)
            crashed = False
        except Crash:
            crashed = True
        except Exception:  # the call failed by itself before its n-th write: a normal outcome
            crashed = False
        finally:
            self.faults.disarm()
        owners = self._owner_rows()
        event(f"crash in {op}: " + ("finished first" if not crashed else "died, as after" if owners != before
                                    else "died, as before"))
        if crashed:
            allowed = [before] + ([after] if kind == "ok" else [])
            assert owners in allowed, (op, args, n, mode, owners, allowed)
            self.model = owners
        else:
            assert owners in (before, after if kind == "ok" else before), (op, args, owners)
            self.model = owners
        self.last = (op, args)
        if retry:
            self._run(op, args)

    @rule(dt=st.integers(0, 2 * GRACE))
    def tick(self, dt: int) -> None:
        self.clock.now += dt

    @rule()
    def claim_orphans(self) -> None:
        """Past grace, every orphan's value can be registered by a new owner."""
        self.clock.now += GRACE + 1
        owners = self._owner_rows()
        for v, (o, _, _, _) in sorted(self._lookup_rows().items()):
            if owners.get(int(o), (None,))[0] != v:
                self.idx.register(100, v, {"name": "claim"})
                assert self.idx.lookup(v) == 100
                self.idx.remove(100, v)
                assert self.idx.lookup(v) is None

    @rule()
    def cleanup(self) -> None:
        self.clock.now += GRACE + 1
        owners = self._owner_rows()
        orphans = [v for v, (o, *_) in self._lookup_rows().items() if owners.get(int(o), (None,))[0] != v]
        assert self.idx.cleanup() == len(orphans)
        rows = self._lookup_rows()
        assert {v: (int(o), state) for v, (o, state, *_) in rows.items()} == {
            v: (o, "committed") for o, (v, _) in self.model.items()}

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def consistent(self) -> None:
        owners = self._owner_rows()
        assert owners == self.model
        values = [v for v, _ in owners.values()]
        assert len(values) == len(set(values)), "two owners hold one value"
        rows = self._lookup_rows()
        for o, (v, _) in owners.items():  # every held value is guarded by a lookup row pointing back
            assert v in rows and rows[v][0] == str(o), (o, v, rows.get(v))
        for v, (oid, _, _, shard) in rows.items():
            assert shard == self.idx.lookup_store.shard_of(v)
            if owners.get(int(oid), (None,))[0] != v:  # an orphan: never visible
                assert v not in values
        for v in rows:
            assert self.idx.lookup(v) == self._holder(v)


def test_lookups_state_machine(backend: Backend) -> None:
    # Example counts come from the loaded profile (tests/conftest.py): half of it on SQLite, a fifth on
    # PostgreSQL (a round trip per statement), a twentieth on MariaDB (DDL and a commit per step), 40 steps each.
    profile = settings()
    share = 2 if backend.placeholder == "?" else 20 if backend.dialect == "mysql" else 5
    machine = type("Machine", (LookupMachine,), {"backend": backend})
    run_state_machine_as_test(machine, settings=settings(profile, max_examples=max(5, profile.max_examples // share),
                                                         stateful_step_count=40))
