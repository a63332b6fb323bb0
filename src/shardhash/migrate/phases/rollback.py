"""Rollback: undo a migration, before or after its cutover.

Before the cutover the sources are unfrozen, the captures and unit records
dropped and the destinations' copies deleted.  After it (until the
cleanup) a reverse migration, recorded under this one and run like any
other, applies the writes the destinations took since the cutover back to
the sources and hands ownership back at its own cutover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...routing import Router
from ..errors import MigrationError, crash_point
from ..metadata import COMMITTED, DONE
from ..units import Unit

if TYPE_CHECKING:
    from ..executor import Migration


def rollback(m: Migration) -> str:
    """Undo the migration.

    Before the cutover: unfreeze the sources, drop the captures, delete the
    destination copies.  After it (until cleanup): the changes the
    destinations accepted since the cutover are applied back to the
    sources by a reverse migration to a new version that routes like the
    old one; ownership returns at its own cutover, and this migration
    becomes ``rolled-back`` in the metadata transaction that makes the
    reverse one ``retained``.  Call again after any crash: it resumes the
    reverse migration."""
    st = m.state
    if st in ("cleaning", "cleaned"):
        raise MigrationError(f"migration {m.id} is {st}: the source copy is gone, rollback is impossible")
    if st == "rolled-back":
        if m._reverse_unfinished():
            # (recorded by an older executor before its reverse finished: finish it)
            rev = type(m)(m.cluster, m._info()["reverse"])
            rev.log_fn = m.log_fn
            rev.run()
        return m.state
    later = [r["id"] for r in m.meta.migrations(m.group.name)
             if r["state"] not in DONE and r["id"] != m.id and r["info"].get("after") == m.id
             and r["id"] != m.info.get("reverse")]
    if later:
        raise MigrationError(f"migration {m.id} cannot be rolled back while migration(s) "
                             f"{', '.join(later)} planned on top of it hold the group: roll those back "
                             f"(or finish them) first")
    # (``committed_at`` is written by the cutover's metadata transaction)
    committed = m.meta.get(m.id, "committed_at") is not None or st in COMMITTED
    if st in ("retained", "cutover") and not m.info.get("reverse"):
        top = m.meta.topology(m.group.name)
        if top is not None and int(top[0]) != m.new.version:
            raise MigrationError(f"migration {m.id} cannot be rolled back: group {m.group.name!r} has "
                                 f"moved on to version {top[0]} since its cutover (version "
                                 f"{m.new.version}); a rollback would undo the later migration too")
    if committed:
        if st == "cutover":
            m._reconcile()
            m._retain()
        rev_id = m.info.get("reverse") or f"{m.id}-rollback"
        if m.meta.migration(rev_id) is None:
            cur = m.cluster.refresh(m.group.name)
            back = m.old.with_version(cur.version + 1)
            units = [Unit.from_dict(dict(u.to_dict(), source=u.destination, destination=u.source))
                     for u in m.units]
            # The group is held by this migration: mark it rolling back
            # (and name its reverse migration) first, in one transaction.
            with m.meta.tx() as c:
                m.meta.set_info(m.id, c=c, touch=False, reverse=rev_id)
                m.meta.set_state(m.id, "rolling-back", c=c)
            m.info["reverse"] = rev_id
            m.log("state -> rolling-back")
            crash_point("rollback-marked")
            rev = m._create_reverse(rev_id, cur, back, units)
            crash_point("rollback-reverse-created")
        else:
            if m.state != "rolling-back":
                m._set("rolling-back")
            rev = type(m)(m.cluster, rev_id)
        rev.log_fn = m.log_fn
        rev.run()
        return m.state
    # Before the cutover.
    for s in m.mem.sources:
        with m._on(s, "source", "unfreezing its units for the rollback"):
            m._set_units(s, "source", ("frozen",), "copying")
    m.meta.put(m.id, "frozen_at", None)
    m._set("rolling-back")
    crash_point("rollback-before-cutover-marked")
    for shard in m._involved():
        b = m.cluster.backend(shard)
        with m._on(shard, "source" if shard in m.mem.sources else "destination",
                      "dropping its captures and unit records for the rollback"):
            # The system tables in a transaction of their own (a shard the
            # run never prepared may lack them); then the epoch before any
            # table: a client write holds the epoch row (FOR SHARE) before
            # it touches a table, so taking the row first waits for the
            # writes in flight and then holds off new ones.  A table lock
            # taken first (the index ensure_system creates, a dropped
            # trigger) deadlocked with such a write on PostgreSQL: the
            # write held the row and waited for the table, the rollback
            # held the table and waited for the row.
            with b.writing() as c:
                b.ensure_system(c)
            with b.writing() as c:
                b.bump_epoch(c)
                b.drop_capture(c, m.capture)
                b.drop_capture(c, m.id + ":reverse")
                b.delete_units(c, m.id)
        crash_point("rollback-before-cutover-shard")
    m._delete_members("destination")
    crash_point("rollback-before-cutover-deleted")
    m._set("rolled-back")
    return "rolled-back"


def create_reverse(m: Migration, rev_id: str, cur: Router, back: Router, units: list[Unit]) -> Migration:
    info = {"kind": "rollback", "reverse_of": m.id, "skip_copy": True, "capture": m.id + ":reverse"}
    with m.meta.tx() as c:
        m.meta.create_migration(c, rev_id, m.group.name, "rollback", cur, back, units, info)
    return type(m)(m.cluster, rev_id)
