"""Verify: compare the sources' moving rows with the destinations' copies.

The full verify compares, per unit and table, the row count and an
order-independent checksum (the sum of the rows' canonical hashes), then
lists the differing primary keys of the units that differ; keys with a
change still in the queue are excused and checked again under the fence.
Before the fence :func:`settle` checks the rows changed since, live, so the
check under the fence (:func:`final_check`) covers only the last few.
:func:`verify_retained` compares the retained copies after the cutover.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _events
from ...hashing import hash_array
from ..coltypes import canonical_row
from ..errors import MigrationError, VerifyMismatch
from ..systables import decode_pk

if TYPE_CHECKING:
    from ..executor import Migration


def _row_hashes(rows: Sequence[Sequence[Any]]) -> np.ndarray:
    """Hashes of the rows' canonical values (equal on two backends exactly
    when the values are, see :func:`coltypes.canonical_row`)."""
    if not rows:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(hash_array([canonical_row(r) for r in rows]), dtype=np.uint64)


def unit_sums(m: Migration, shard: str, side: str, units: set[int], keys_of: set[int] | None = None
               ) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, int], dict[Any, int]]]:
    """Per (table, unit): [count, checksum]; with keys_of, per-key row hashes of those units."""
    with m._on(shard, side, "verifying (reading its rows)"):
        return unit_sums_of(m, shard, side, units, keys_of)


def unit_sums_of(m: Migration, shard: str, side: str, units: set[int], keys_of: set[int] | None
                  ) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, int], dict[Any, int]]]:
    b = m.cluster.backend(shard)
    c = b.connect()
    sums: dict[tuple[str, int], list[int]] = {}
    per_key: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
    try:
        b.begin_read(c)
        for t in m.group.tables:
            cols, pk, kx = m._table(shard, t.name)
            pkx = [cols.index(k) for k in pk]
            for rows in b.scan_chunks(c, t.name, cols, pk, 20000):
                ui = m.mem.assign([r[kx] for r in rows])
                sel = np.flatnonzero(ui >= 0)
                if sel.size == 0:
                    continue
                hs = _row_hashes([rows[i] for i in sel])
                for i, h in zip(sel.tolist(), hs.tolist()):
                    u = int(ui[i])
                    unit = m.units[u]
                    if u not in units or (unit.source if side == "source" else unit.destination) != shard:
                        continue
                    acc = sums.setdefault((t.name, u), [0, 0])
                    acc[0] += 1
                    acc[1] = (acc[1] + h) & 0xFFFFFFFFFFFFFFFF
                    if keys_of is not None and u in keys_of:
                        per_key[(t.name, u)][tuple(rows[i][j] for j in pkx)] = h
        b.rollback(c)
    finally:
        c.close()
    return sums, per_key


def _side(x: tuple[str, str]) -> str:
    return f"{x[1]} {x[0]!r}"


def verify(m: Migration) -> dict[str, Any]:
    """Compare per unit (and table) the row count and an order-independent
    checksum of the rows on the source and the destination.  Resumable
    (verified units are recorded).  Keys with changes still being caught
    up are excused here and checked again under the fence.  Raises
    :class:`VerifyMismatch` listing the first differing primary keys.

    On a ``retained`` migration (after the cutover, before the cleanup):
    :meth:`verify_retained`."""
    if m.state == "retained":
        return m.verify_retained()
    state = m.meta.get(m.id, "verify") or {"verified": []}
    if len(state["verified"]) >= len(m.units):
        state = {"verified": []}  # a finished verify is never resumed: start over
    if not state["verified"]:
        # A fresh verify: forget what was applied before it, so that the
        # changes applied from now on are the ones checked under the fence.
        for s in m.mem.sources:
            b = m.cluster.backend(s)
            with m._on(s, "source", "starting a verify"), b.writing() as c:
                b.forget_applied(c, m._cid(s))
    todo = {u.index for u in m.units} - set(state["verified"])
    t0 = time.perf_counter()
    src: dict[tuple[str, int], list[int]] = {}
    dst: dict[tuple[str, int], list[int]] = {}
    # (every shard's side at once on the run's workers, at most ``parallel``)
    sides = [(s, "source") for s in m.mem.sources] + [(d, "destination") for d in m.mem.destinations]
    for (_, side), sums in zip(sides, m._each(sides, lambda x: m._unit_sums(x[0], x[1], todo), "verify",
                                               _side)):
        (src if side == "source" else dst).update(sums[0])
    bad_units = {u for (t, u) in set(src) | set(dst) if src.get((t, u), [0, 0]) != dst.get((t, u), [0, 0])}
    diffs: list[dict[str, Any]] = []
    if bad_units:
        ps: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
        pd: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
        for (_, side), sums in zip(sides, m._each(sides, lambda x: m._unit_sums(x[0], x[1], bad_units, bad_units),
                                                   "verify", _side)):
            for k, v in sums[1].items():
                (ps if side == "source" else pd)[k].update(v)
        # (collected after the scans: any key changed before or during them is listed)
        excused = m._changed_keys()
        for key in sorted(set(ps) | set(pd), key=repr):
            a, b2 = ps.get(key, {}), pd.get(key, {})
            for pk in sorted(set(a) | set(b2), key=repr):
                if a.get(pk) != b2.get(pk) and (key[0], pk) not in excused:
                    diffs.append({"table": key[0], "unit": key[1], "pk": list(pk),
                                  "source": pk in a, "destination": pk in b2})
    rows = sum(v[0] for v in src.values())
    result = {"units": len(m.units), "checked": len(todo), "rows": rows,
              "mismatches": len(diffs), "first": diffs[:10], "seconds": time.perf_counter() - t0}
    m.meta.put(m.id, "verify_result", result)
    if diffs:
        m.meta.put(m.id, "verify", {"verified": []})
        m._set("verify-failed")
        _events.emit("verify_mismatch", migration_id=m.id, count=len(diffs))
        raise VerifyMismatch(m.id, diffs)
    m.meta.put(m.id, "verify", {"verified": sorted(set(state["verified"]) | todo)})
    m.log(f"verify: {len(todo)} unit(s), {rows} rows, 0 mismatches ({result['seconds']:.2f} s)")
    return result


def verify_retained(m: Migration) -> dict[str, Any]:
    """After the cutover, before the cleanup (state ``retained``): compare
    the retained copies on the old sources with the rows on their owners,
    row by row, for every moved unit.  The retained copy is the rows as
    they were at the cutover; the owners take writes since, and each of
    those is in the owner's reverse capture (started before the cutover
    committed).  So a row that differs (or exists on one side only) is
    ``changed_since_cutover`` when its key was written on the owner after
    the cutover, and a mismatch otherwise: equality is promised only for
    rows nobody wrote since.  Changes nothing but the recorded verify
    result (the migration stays ``retained``); raises
    :class:`VerifyMismatch` listing the first mismatches."""
    state = m.state
    if state != "retained":
        raise MigrationError(f"migration {m.id} is {state}: the retained copies are compared only while "
                             f"it is retained (after the cutover, before the cleanup)")
    t0 = time.perf_counter()
    every = {u.index for u in m.units}
    ps: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
    pd: dict[tuple[str, int], dict[Any, int]] = defaultdict(dict)
    for s in m.mem.sources:
        for k, v in m._unit_sums(s, "source", every, every)[1].items():
            ps[k].update(v)
    for d in m.mem.destinations:
        for k, v in m._unit_sums(d, "destination", every, every)[1].items():
            pd[k].update(v)
    # (listed after the scans: a write committed before a scan read its row is listed)
    written: set[tuple[str, tuple[Any, ...]]] = set()
    cap = m.id + ":reverse"
    for d in m.mem.destinations:
        b = m.cluster.backend(d)
        with m._on(d, "destination", "listing the keys written since the cutover"):
            cid = b.capture_id(b.conn(), cap)
            if cid is None:
                raise MigrationError(f"migration {m.id}: shard {d!r} has no capture {cap!r}, so the rows "
                                     f"written there since the cutover are unknown: nothing to compare")
            written.update((tbl, decode_pk(pk)) for tbl, pk in b.all_keys(b.conn(), cid))
    diffs: list[dict[str, Any]] = []
    changed = 0
    for key in sorted(set(ps) | set(pd), key=repr):
        a, b2 = ps.get(key, {}), pd.get(key, {})
        for pk in sorted(set(a) | set(b2), key=repr):
            if a.get(pk) == b2.get(pk):
                continue
            if (key[0], pk) in written:
                changed += 1
            else:
                diffs.append({"table": key[0], "unit": key[1], "pk": list(pk),
                              "source": pk in a, "destination": pk in b2})
    rows = sum(len(v) for v in ps.values())
    result = {"retained": True, "units": len(m.units), "checked": len(every), "rows": rows,
              "changed_since_cutover": changed, "mismatches": len(diffs), "first": diffs[:10],
              "seconds": time.perf_counter() - t0}
    m.meta.put(m.id, "verify_result", result)
    if diffs:
        _events.emit("verify_mismatch", migration_id=m.id, count=len(diffs))
        raise VerifyMismatch(m.id, diffs)
    m.log(f"verify (retained copies against their owners): {rows} rows in {len(every)} unit(s), "
             f"{changed} changed since the cutover, 0 mismatches ({result['seconds']:.2f} s)")
    return result


def changed_keys(m: Migration) -> set[tuple[str, tuple[Any, ...]]]:
    out = set()
    for s in m.mem.sources:
        b = m.cluster.backend(s)
        c = b.conn()
        with m._on(s, "source", "listing its changed keys"):
            for tbl, pk in b.all_keys(c, m._cid(s)):
                out.add((tbl, decode_pk(pk)))
    return out


def compare(m: Migration, s: str, keys: dict[str, list[tuple[Any, ...]]]) -> list[dict[str, Any]]:
    """Rows of source ``s`` (by table and primary key) that differ from
    their destination copy right now (or exist where they should not)."""
    cl = m.cluster
    sb = cl.backend(s)
    diffs: list[dict[str, Any]] = []
    for tbl, pks in keys.items():
        pks = sorted(set(pks), key=repr)
        cols, pk, kx = m._table(s, tbl)
        pkx = [cols.index(k) for k in pk]
        with m._on(s, "source", "reading changed rows to compare"):
            srows = sb.fetch(sb.conn(), tbl, cols, pk, pks)
        su = m.mem.assign([r[kx] for r in srows]).tolist()
        want = {tuple(r[j] for j in pkx): (m.units[u].destination, tuple(r))
                for r, u in zip(srows, su) if u >= 0 and m.units[u].source == s}
        # Rows the source holds outside the units need no look at the
        # destinations (the shard key is immutable); members and deleted
        # rows do.
        present = {tuple(r[j] for j in pkx) for r in srows}
        look = [k for k in pks if k in want or k not in present]
        if not look:
            continue
        for d in m.mem.destinations:
            db = cl.backend(d)
            with m._on(d, "destination", "reading changed rows to compare"):
                drows = db.fetch(db.conn(), tbl, cols, pk, look)
            du = m.mem.assign([r[kx] for r in drows]).tolist()
            have = {tuple(r[j] for j in pkx): tuple(r) for r, u in zip(drows, du)
                    if u >= 0 and m.units[u].source == s and m.units[u].destination == d}
            for k in set(have) | {k for k, (dd, _) in want.items() if dd == d}:
                w = want.get(k)
                if w is None or w[0] != d or have.get(k) != w[1]:
                    diffs.append({"table": tbl, "pk": list(k), "source": s, "destination": d})
    return diffs


def settle(m: Migration, small: int = 64, rounds: int = 10) -> None:
    """Before the fence: check, live, the rows changed since the full
    verify and forget them once equal, so that the check under the fence
    only covers the last few changes (the pause does not grow with the
    unit).  A difference is excused while the key has a pending change."""
    for _ in range(rounds):
        total = 0
        for s in m.mem.sources:
            b = m.cluster.backend(s)
            with m._on(s, "source", "checking the rows changed since the verify"):
                c = b.conn()
                cid = m._cid(s)
                while True:
                    rows = b.dirty_rows(c, cid, 5000)
                    if len(rows) < small:
                        break
                    total += len(rows)
                    keys: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
                    for _, tbl, pk in rows:
                        keys[tbl].append(decode_pk(pk))
                    diffs = m._compare(s, keys)
                    if diffs:
                        pend = {(t, decode_pk(p)) for t, p in b.pending_keys(c, cid)}
                        real = [d for d in diffs if (d["table"], tuple(d["pk"])) not in pend]
                        if real:
                            m.meta.put(m.id, "verify_result", {"mismatches": len(real), "first": real[:10]})
                            m.meta.put(m.id, "verify", {"verified": []})
                            m._set("verify-failed")
                            raise VerifyMismatch(m.id, real)
                    with b.writing(c):
                        b.forget(c, [r[0] for r in rows])
                    if len(rows) < 5000:
                        break
        m.catch_up(limit=5000)
        if total < small * max(1, len(m.mem.sources)):
            return


def final_check(m: Migration) -> list[dict[str, Any]]:
    """Under the fence, after the drain: every row changed since the full
    verify (and not settled since) must be identical on its destination
    (or absent on both)."""
    def one(s: str) -> list[dict[str, Any]]:
        sb = m.cluster.backend(s)
        keys: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        with m._on(s, "source", "listing the rows changed since the verify"):
            for tbl, pk in sb.dirty(sb.conn(), m._cid(s)):
                keys[tbl].append(decode_pk(pk))
        return m._compare(s, keys)

    # (the sources at once on the run's workers: the check is under the fence)
    return [d for part in m._each(list(m.mem.sources), one, "final check") for d in part]
