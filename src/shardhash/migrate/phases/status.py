"""What an operator sees of a migration: its status, its captures and the
next command to run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import describe_fault, is_db_error

if TYPE_CHECKING:
    from ..executor import Migration


def next_step(m: Migration, state: str | None = None) -> str:
    """What to run next, for an operator (the CLI's words)."""
    st = m.state if state is None else state
    rec = m.meta.migration(m.id)
    assert rec is not None
    info = rec["info"]
    fwd = info.get("reverse_of")
    if fwd:  # a reverse migration (a rollback of ``fwd``)
        if st in ("retained", "cleaning"):
            return (f"run `cleanup {fwd}` (deletes the copy the rollback left on the old destinations "
                    f"and stops the reverse capture)")
        if st == "cleaned":
            return "nothing: the rollback is complete and cleaned up"
        return f"run `rollback {fwd}` (or `resume {m.id}`) to finish the rollback"
    if st == "rolled-back":
        rev = info.get("reverse")
        rrec = m.meta.migration(rev) if rev else None
        if rrec is None or rrec["state"] == "cleaned":
            return "nothing: the migration is rolled back" + (" and cleaned up" if rrec else "")
        if rrec["state"] in ("retained", "cleaning"):
            return (f"run `cleanup {m.id}` (deletes the copy the rollback left on the old destinations "
                    f"and stops the reverse capture)")
        return f"run `rollback {m.id}` to finish the rollback"
    if st == "rolling-back":
        return f"run `rollback {m.id}` (or `resume {m.id}`) to finish the rollback"
    if st in ("retained", "cleaning"):
        return (f"run `cleanup {m.id}` after the retention window, or `rollback {m.id}`"
                if st == "retained" else f"run `cleanup {m.id}` to finish the cleanup")
    if st == "cleaned":
        return "nothing: the migration is complete"
    if st == "cutover":
        return f"run `resume {m.id}` (or `cleanup {m.id}`, which reconciles first)"
    return f"run `resume {m.id}` to finish it (then `cleanup {m.id}`), or `rollback {m.id}`"


def status(m: Migration) -> dict[str, Any]:
    rec = m.meta.migration(m.id)
    assert rec is not None
    prog = m.meta.progress(m.id)
    out = {
        "id": m.id, "group": rec["group"], "state": rec["state"], "error": rec["error"],
        "kind": rec["kind"], "from_version": rec["from_version"], "to_version": rec["to_version"],
        "units": len(m.units), "sources": m.mem.sources, "destinations": m.mem.destinations,
        "rows_copied": prog.get("copied", 0),
        # (measured rates only: null when nothing was measured)
        "copy_rows_scanned_per_s": prog.get("copy_scanned_rate"),
        "copy_rows_copied_per_s": prog.get("copy_copied_rate"),
        "lag": prog.get("lag"), "catchup_changes_per_s": prog.get("catchup_rate"),
        "verify": prog.get("verify_result"), "write_pause_seconds": prog.get("unit_pause_seconds"),
        "frozen_at": prog.get("frozen_at"), "released_at": prog.get("released_at"),
        "info": rec["info"], "captures": m.captures(), "next": m.next_step(rec["state"]),
    }
    return out


def captures(m: Migration) -> list[dict[str, Any]]:
    """This migration's change captures that still exist on a shard, with
    their pending (not yet applied) change rows: a capture nobody
    consumes shows here as a growing ``pending``."""
    out = []
    names = [(s, m.capture) for s in m.mem.sources] + \
            [(d, m.id + ":reverse") for d in m.mem.destinations]
    for shard, name in names:
        b = m.cluster.backend(shard)
        try:
            c = b.conn()
            cid = b.capture_id(c, name)
            if cid is None:
                continue
            out.append({"shard": shard, "capture": name, "pending": b.pending_count(c, cid)})
        except Exception as e:  # noqa: BLE001 - status reports, never fails on one shard
            if not is_db_error(e):
                raise
            if "no such table" in str(e) or "does not exist" in str(e):
                continue  # (a shard never prepared: no capture)
            out.append({"shard": shard, "capture": name, "error": describe_fault(e)})
    return out
