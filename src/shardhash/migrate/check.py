"""Find (and repair) stranded rows: rows on a shard that does not own them.

A row written straight onto the wrong shard (a hand-written load, an old
script, a restore) is invisible to :meth:`Cluster.read`, which asks the
owner only.  :func:`check` scans every shard of a group in primary-key
order, a chunk at a time, routes each chunk's shard keys in one
``route_many`` call under the group's current router and reports the rows
whose owner is another shard, per shard and table, with the first keys.

Rows that a migration's ownership records on that shard account for are not
stranded: the retained copy of a moved unit (after the cutover, before the
cleanup) and the copy a migration in flight is making are counted apart,
by migration id.

With ``repair=True`` each stranded row is moved to its owner, one row at a
time, in two transactions:

1. on the owner, through :meth:`Cluster.transaction` (so a cutover's fence
   and stale-route checks apply): insert the row when the owner has no row
   with its primary key; an identical row there counts as already moved;
   a different one is a *conflict*, reported with both rows and left alone;
2. on the stray shard: delete the row only if it is still exactly the row
   that was copied (``DELETE … RETURNING``; any change since, and the delete
   is rolled back and reported as a conflict).

A repair scans each table chunk by chunk (no long snapshot) and commits a
cursor per shard and table to the metadata store (``progress`` under
``check-repair:GROUP``) after each chunk's rows are repaired; a run that
scanned the whole group clears them.  A repair killed mid-way resumes after
the last committed cursor; one killed between a row's two steps leaves it on
both shards, identical, in a chunk past the cursor: the next run finds the
identical row on the owner and finishes with step 2, without loss or
duplicate.  Step 2 also runs as a client write (it waits for a cutover's
fence) and leaves a row alone whose key a migration took since the scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .sqlite import qi
from .systables import keyset_chunks

__all__ = ["check"]

#: rows read per chunk of the scan
CHUNK = 50_000
#: first keys listed per shard and table
FIRST = 10


def _jsonable(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, (int, float, str)) or v is None:
        return v
    return str(v)


def _held(cluster: Any, shard: str, b: Any, c: Any, group: str, keys: list[Any]) -> list[str | None]:
    """For each key: the id of the migration whose ownership records on
    ``shard`` hold it (a retained copy, or a copy in flight), else None."""
    out: list[str | None] = [None] * len(keys)
    if not keys:
        return out
    su = cluster._shard_units(shard, b, c)
    for grp, _v, mem, _units, mig in su.migs:  # (newest first)
        if grp != group:
            continue
        todo = [i for i, m in enumerate(out) if m is None]
        if not todo:
            break
        assigned = np.asarray(mem.assign([keys[i] for i in todo]))
        for i, u in zip(todo, assigned.tolist()):
            if u >= 0:
                out[i] = mig
    return out


def _rows_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return tuple(a) == tuple(b)


def _repair_row(cluster: Any, group: str, shard: str, owner: str, table: str, cols: list[str],
                pk: list[str], key: Any, row: tuple[Any, ...], res: dict[str, Any],
                fault: Callable[[str, tuple[Any, ...]], None] | None) -> None:
    pkx = [cols.index(k) for k in pk]
    pkv = [row[j] for j in pkx]
    sel = ", ".join(qi(x) for x in cols)
    where = " AND ".join(f"{qi(k)} = ?" for k in pk)
    # 1. the owner, through the client's transaction (fencing and stale-route checks apply)
    with cluster.transaction(key, group=group) as tx:
        if tx.shard != owner:
            res["skipped"] += 1  # (the topology changed under the check: the next check sees it)
            return
        have = tx.execute(f"SELECT {sel} FROM {qi(table)} WHERE {where}", pkv).fetchone()
        if have is None:
            tx.execute(f"INSERT INTO {qi(table)} ({sel}) VALUES ({', '.join('?' for _ in cols)})", row)
            res["moved"] += 1
        elif _rows_equal(tuple(have), row):
            res["already_on_owner"] += 1
        else:
            res["conflicts"].append({"table": table, "shard": shard, "owner": owner,
                                     "pk": [_jsonable(v) for v in pkv],
                                     "row": [_jsonable(v) for v in row],
                                     "owner_row": [_jsonable(v) for v in have]})
            return
    if fault is not None:
        fault(table, tuple(pkv))
    # 2. the stray shard: delete the row only if it is still the one copied
    b = cluster.backend(shard)
    c = b.conn()
    b.begin_client_write(c)  # (excludes a fence's change of the ownership records, as a client write does)
    try:
        if _held(cluster, shard, b, c, group, [key])[0] is not None:
            b.rollback(c)  # (a migration took the key's unit since the scan: its records decide now)
            res["skipped"] += 1
            return
        if group in cluster._shard_units(shard, b, c).captures:
            b.skip_capture(c, group)  # (the key is in no moving unit: nothing of it moves)
        gone = c.execute(f"DELETE FROM {qi(table)} WHERE {where} RETURNING {sel}", pkv).fetchall()
        b.end_skip(c, group)
        if len(gone) == 1 and _rows_equal(tuple(gone[0]), row):
            b.commit(c)
            return
        b.rollback(c)
    except BaseException:
        b.rollback(c)
        raise
    res["conflicts"].append({"table": table, "shard": shard, "owner": owner,
                             "pk": [_jsonable(v) for v in pkv], "row": [_jsonable(v) for v in row],
                             "owner_row": [_jsonable(v) for v in row],
                             "note": "the stray row changed after it was copied to its owner: left in place"})


def check(cluster: Any, group: str | None = None, *, repair: bool = False, first: int = FIRST,
          chunk: int = CHUNK, _fault: Callable[[str, tuple[Any, ...]], None] | None = None) -> dict[str, Any]:
    """Scan every shard of ``group`` (None: every group) for stranded rows.

    Returns a plain dict (JSON-ready)::

        {"groups": {G: {"topology_version": V, "rows_scanned": N,
                        "stranded": N, "retained": N,
                        "tables": [{"shard", "table", "rows_scanned", "stranded",
                                    "retained": {migration id: N},
                                    "first": [{"pk": [...], "key": K, "owner": S}]}]}},
         "rows_scanned": N, "stranded": N, "retained": N, "seconds": T, "rows_per_s": R,
         "repair": None | {"moved": N, "already_on_owner": N, "skipped": N, "conflicts": [...]}}

    ``repair``: move each stranded row to its owner (see the module's
    description); the counts describe this run, and a second check after a
    complete repair reports only the conflicts as still stranded."""
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, not {chunk!r}")
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise ValueError(f"first must be a non-negative integer, not {first!r}")
    names = list(cluster.groups) if group is None else [cluster.group(group).name]
    t0 = time.perf_counter()
    out: dict[str, Any] = {"groups": {}}
    rep: dict[str, Any] | None = ({"moved": 0, "already_on_owner": 0, "skipped": 0, "conflicts": []}
                                  if repair else None)
    total = stranded_total = retained_total = 0
    for gname in names:
        g = cluster.group(gname)
        cmig = f"check-repair:{gname}"
        router = cluster.refresh(gname)
        shards = list(router.shards)
        gres: dict[str, Any] = {"topology_version": router.version, "rows_scanned": 0, "stranded": 0,
                                "retained": 0, "tables": []}
        for sid in cluster.shard_ids():
            b = cluster.backend(sid)
            c = b.conn()
            me = shards.index(sid) if sid in shards else -1
            for t in g.tables:
                if not b.has_table(c, t.name):
                    continue
                cols, pk = b.table_info(c, t.name)
                sel = list(pk) + ([t.key] if t.key not in pk else [])
                kx = sel.index(t.key)
                pkx = list(range(len(pk)))
                tres: dict[str, Any] = {"shard": sid, "table": t.name, "rows_scanned": 0, "stranded": 0,
                                        "retained": {}, "first": []}
                found: list[tuple[tuple[Any, ...], Any, str]] = []  # (pk, key, owner)
                ckey = f"{sid}/{t.name}"
                after = cluster.metadata.get(cmig, ckey) if repair else None
                if after is not None:
                    tres["resumed_after"] = after
                if not repair:
                    b.begin_read(c)  # (one snapshot per table; a repair commits chunk by chunk)
                try:
                    for rows in keyset_chunks(b, c, t.name, sel, pk, chunk, after):
                        tres["rows_scanned"] += len(rows)
                        keys = [r[kx] for r in rows]
                        own = np.asarray(router.route_many(keys))
                        bad = np.flatnonzero(own != me)
                        if len(bad):
                            bl = bad.tolist()
                            bkeys = [keys[i] for i in bl]
                            held = _held(cluster, sid, b, c, gname, bkeys)
                            new_found = []
                            for i, k, m in zip(bl, bkeys, held):
                                if m is not None:
                                    tres["retained"][m] = tres["retained"].get(m, 0) + 1
                                else:
                                    new_found.append((tuple(rows[i][j] for j in pkx), k, shards[int(own[i])]))
                            found.extend(new_found)
                            if rep is not None:
                                for p, k, o in new_found:
                                    got = b.fetch(c, t.name, cols, pk, [p])
                                    b.rollback(c)  # (a read transaction the fetch may have opened)
                                    if not got:
                                        rep["skipped"] += 1  # (deleted since the scan)
                                        continue
                                    _repair_row(cluster, gname, sid, o, t.name, cols, list(pk), k,
                                                tuple(got[0]), rep, _fault)
                        if repair:
                            last = [rows[-1][j] for j in pkx]
                            if all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in last):
                                # (the committed cursor: a killed repair resumes after this chunk)
                                with cluster.metadata.tx() as mc:
                                    cluster.metadata.put(cmig, ckey, last, c=mc)
                finally:
                    b.rollback(c)
                tres["stranded"] = len(found)
                tres["first"] = [{"pk": [_jsonable(v) for v in p], "key": _jsonable(k), "owner": o}
                                 for p, k, o in found[:first]]
                n_ret = sum(tres["retained"].values())
                gres["rows_scanned"] += tres["rows_scanned"]
                gres["stranded"] += len(found)
                gres["retained"] += n_ret
                if found or n_ret:
                    gres["tables"].append(tres)
        if repair:  # (the whole group was scanned: the next repair starts from the beginning)
            with cluster.metadata.tx() as mc:
                for k in cluster.metadata.progress(cmig):
                    cluster.metadata.put(cmig, k, None, c=mc)
        out["groups"][gname] = gres
        total += gres["rows_scanned"]
        stranded_total += gres["stranded"]
        retained_total += gres["retained"]
    secs = time.perf_counter() - t0
    out.update(rows_scanned=total, stranded=stranded_total, retained=retained_total, seconds=secs,
               rows_per_s=(total / secs if secs > 0 else None), repair=rep)
    return out
