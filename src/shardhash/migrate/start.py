"""Starting a migration: the checks a start (and a dry run) runs, the
router a new migration is planned from, and the record it creates.

Migrations of one group may run side by side when their units cannot share
a key (:func:`_overlap`); a migration planned on top of another one's
target cuts over after it (:func:`pending_router`).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..routing import Router, load_router
from .errors import MigrationError, is_db_error
from .metadata import ACTIVE, COMMITTED, DONE
from .units import Unit, units_for

if TYPE_CHECKING:
    from .cluster import Cluster
    from .executor import Migration

__all__ = ["active_migrations", "check_new_shards", "check_start", "create", "pending_router"]


def create(cls: type[Migration], cluster: Cluster, group: str | None, new_router: Router, *,
           units: Sequence[Unit] | None = None, max_step_share: float = 0.02,
           mig_id: str | None = None, from_version: int | None = None,
           info: dict[str, Any] | None = None, old_router: Router | None = None,
           new_shards: dict[str, tuple[str, list[str]]] | None = None) -> Migration:
    """The body of :meth:`Migration.create <shardhash.migrate.executor.Migration.create>`,
    whose docstring says what it records and refuses."""
    g = cluster.group(group)
    meta = cluster.metadata
    meta.setup()
    cur = cluster.refresh(g.name)
    if not isinstance(new_router, Router):
        raise TypeError(f"new_router must be a Router, not {type(new_router).__name__}")
    new_shards = check_start(cluster, g.name, new_router, new_shards)
    mig = mig_id or f"m{int(time.time())}-{uuid.uuid4().hex[:6]}"
    with meta.tx() as c:
        # (inside the store's write transaction: two executors creating
        # migrations of one group are serialised, the second sees the first)
        holders = [m for m in meta.migrations(g.name) if m["state"] not in DONE]
        base, pending = _base(cur, holders)
        old = old_router if old_router is not None else base
        if from_version is not None and from_version != base.version:
            what = "is at version" if pending is None else \
                f"will be at version (once migration {pending} cuts over)"
            raise MigrationError(f"the plan was made from topology version {from_version}, but group "
                                 f"{g.name!r} {what} {base.version}: plan again from the current "
                                 f"topology (shardhash.migrate.executor.pending_router)")
        if new_router.version <= base.version:
            if pending is None:
                raise MigrationError(f"the new router's version ({new_router.version}) must be greater "
                                     f"than the current version ({base.version})")
            raise MigrationError(f"the new router's version ({new_router.version}) must be greater than "
                                 f"the pending version ({base.version}): group {g.name!r} is held by "
                                 f"migration {pending}, which cuts over to version {base.version} first; "
                                 f"plan on top of its target (shardhash.migrate.executor.pending_router) "
                                 f"or finish it first")
        us = list(units) if units is not None else units_for(old, new_router, max_step_share=max_step_share)
        for h in holders:
            hu = [Unit.from_dict(u) for u in h["units"]]
            # (hash filters compare only in one hash space)
            same = load_router(json.loads(h["new_router"])).hasher == new_router.hasher
            clash = _overlap(hu, us, same)
            if clash is not None:
                a, b = clash
                raise MigrationError(
                    f"group {g.name!r}: the new migration's unit {b.index} ({b.source} -> {b.destination}) "
                    f"overlaps unit {a.index} ({a.source} -> {a.destination}) of migration {h['id']} "
                    f"(state {h['state']}), which holds those keys: finish, clean up or roll it back first")
        inf = dict(info or {})
        # The version clients route with while this migration copies: its
        # sources own the units under every router from there on.
        inf.setdefault("base_version", cur.version)
        if pending is not None:
            inf.setdefault("after", pending)
        for sid, (url, reps) in new_shards.items():
            try:
                meta.add_shard(c, sid, url, reps)
            except ValueError as e:
                raise MigrationError(str(e)) from None
        meta.create_migration(c, mig, g.name, inf.get("kind", "reshard"), old, new_router, us, inf,
                              f"created: group {g.name} version {old.version} -> {new_router.version}, "
                              f"{len(us)} unit(s)" + (f", after {pending}" if pending else "")
                              + (f", shard(s) {', '.join(sorted(new_shards))} added to the shard map"
                                 if new_shards else ""))
    if new_shards:
        cluster.refresh(g.name)  # (the shard map now names the new shards)
    return cls(cluster, mig)


def _base(cur: Router, holders: Sequence[dict[str, Any]]) -> tuple[Router, str | None]:
    """The router a new migration of the group starts from: the target of the
    newest holder that has not cut over (and its id), else the current one."""
    pend = [h for h in holders if h["state"] not in COMMITTED and h["state"] != "rolling-back"
            and int(h["to_version"]) > cur.version]
    if not pend:
        return cur, None
    top = max(pend, key=lambda h: int(h["to_version"]))
    return load_router(json.loads(top["new_router"])), str(top["id"])


def check_new_shards(cluster: Cluster, new_shards: dict[str, tuple[str, list[str]]] | None
                     ) -> dict[str, tuple[str, list[str]]]:
    """Shards to register (id -> (primary, replicas)), validated like the
    cluster file's (ValueError); MigrationError for an id that the shard map
    already has with another primary."""
    from .cluster import _check_shard_id, _check_url

    add: dict[str, tuple[str, list[str]]] = {}
    for sid, (url, reps) in (new_shards or {}).items():
        try:
            _check_shard_id(sid, "--add")
            for i, u in enumerate([url, *reps]):
                _check_url(u, "--primary" if i == 0 else "--replica")
        except ValueError as e:
            raise ValueError(str(e).replace("cluster document: ", "", 1)) from None
        add[sid] = (url, [r for r in reps if r != url])
    smap = cluster.shard_map()
    for sid, (url, _) in add.items():
        if sid in smap and smap[sid][0] != url:
            raise MigrationError(f"shard {sid!r} is already in the shard map with primary {smap[sid][0]!r}, "
                                 f"not {url!r}: pick another shard id, or move the shard with Cluster.failover")
    return add


def check_start(cluster: Cluster, group: str | None, new_router: Router,
                new_shards: dict[str, tuple[str, list[str]]] | None = None) -> dict[str, tuple[str, list[str]]]:
    """The checks a start runs before it records anything (a dry run runs
    the same ones, so it fails the same way): every shard of the new router
    is in the shard map or in ``new_shards``, every shard of the pending
    and the new router can be reached (a new SQLite file is not created:
    its folder must exist and be writable), and every shard that owns keys
    now has every table of the group.  Returns the shards of
    ``new_shards`` that are not in the shard map yet (validated like the
    cluster file's); MigrationError otherwise, naming the command to run."""
    from .cluster import open_backend

    add = check_new_shards(cluster, new_shards)
    smap = cluster.shard_map()
    conf = cluster.file or "CLUSTER"
    for s in new_router.shards:
        if s in smap or s in add:
            continue
        seed = cluster._seed_shards.get(s)
        if seed is not None:
            reps = "".join(f" --replica {r}" for r in seed[1])
            raise MigrationError(
                f"the new router names shard {s!r}, which is in the cluster file but not in the metadata store's "
                f"shard map: run `shardhash migrate init --config {conf}` (it registers the cluster file's new "
                f"shards), or start with `shardhash migrate start --config {conf} --add {s} "
                f"--primary {seed[0]}{reps}`")
        raise MigrationError(
            f"the new router names shard {s!r}, which is not in the shard map: register it as you start, "
            f"with `shardhash migrate start --config {conf} --add {s} --primary URL [--replica URL ...]`")
    old = pending_router(cluster, group)
    g = cluster.group(group)
    tables = g.tables
    owners = cluster.router(g.name).shards  # (the current topology: a pending migration's targets
    #                                         get their tables when it prepares)
    for s in sorted(set(old.shards) | set(new_router.shards)):
        url = add[s][0] if s in add else smap[s][0]
        b = open_backend(url, cluster.base_dir)
        try:
            if b.kind == "sqlite" and not os.path.exists(b.path):
                parent = os.path.dirname(os.path.abspath(b.path))
                if not os.path.isdir(parent):
                    raise ConnectionError(f"cannot open {b.path}: folder {parent} does not exist")
                if not os.access(parent, os.W_OK | os.X_OK):
                    raise ConnectionError(f"cannot create {b.path}: folder {parent} is not writable")
            else:
                c = b.connect()
                try:
                    c.execute("SELECT 1").fetchone()
                    # (a shard that owns keys now needs every table of the group)
                    missing = [t.name for t in tables if s in owners and not b.has_table(c, t.name)]
                finally:
                    c.close()
                if missing:
                    raise MigrationError(f"shard {s!r} owns keys of group {g.name!r} but has no table "
                                         f"{missing[0]!r}: nothing was started; create it there (or restore "
                                         f"it) first")
        except MigrationError:
            raise
        except Exception as e:
            if not is_db_error(e):
                raise
            where = "its --primary URL" if s in add else "its primary in the metadata store's shard map"
            raise MigrationError(f"shard {s!r} cannot be reached ({type(e).__name__}: {e}): nothing was "
                                 f"started; check {where}, or bring the database up") from None
    return {s: v for s, v in add.items() if s not in smap}


def pending_router(cluster: Cluster, group: str | None = None) -> Router:
    """The router to plan a new migration of ``group`` from: the current
    topology, or the target of the newest migration that has not cut over
    yet (a migration planned from it cuts over after that one)."""
    g = cluster.group(group)
    cur = cluster.refresh(g.name)
    return _base(cur, [m for m in cluster.metadata.migrations(g.name) if m["state"] not in DONE])[0]


def _disjoint_filters(a: Unit, b: Unit, same_hash: bool = True) -> bool:
    """Whether no key can pass both units' own filters.  Hash filters
    (intervals, buckets) compare only when both migrations hash keys with
    the same hasher (``same_hash``)."""
    if same_hash and a.kind in ("range", "ranges") and b.kind in ("range", "ranges"):
        ia, ib = sorted(a.intervals()), sorted(b.intervals())
        i = j = 0
        while i < len(ia) and j < len(ib):
            if ia[i][1] < ib[j][0]:
                i += 1
            elif ib[j][1] < ia[i][0]:
                j += 1
            else:
                return False
        return True
    if a.kind == b.kind == "ids":
        return a.hi < b.lo or b.hi < a.lo
    if same_hash and a.kind == b.kind == "buckets" and a.modulus == b.modulus:
        return not (set(a.buckets) & set(b.buckets))
    return False


def _overlap(held: Sequence[Unit], new: Sequence[Unit], same_hash: bool = True) -> tuple[Unit, Unit] | None:
    """A pair (held unit, new unit) that may share a key, or None.

    Membership is exact (a key belongs to a unit when the unit's old router
    places it on the unit's source and its new router on its destination).
    The new migration is planned from the held one's target (or a later
    one's, which agrees with it on the held keys), where a key of a held
    unit lives on that unit's destination: a new unit can only hold it when
    it moves keys *from* that destination, and when their own filters (hash
    ranges, bucket sets, id ranges) intersect.  Anything not provably
    disjoint counts as overlapping."""
    for a in held:
        for b in new:
            if b.source != a.destination:
                continue
            if not _disjoint_filters(a, b, same_hash):
                return a, b
    return None


def active_migrations(cluster: Cluster) -> list[str]:
    return [m["id"] for m in cluster.metadata.migrations() if m["state"] in ACTIVE + COMMITTED[:1]]
