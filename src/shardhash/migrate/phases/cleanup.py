"""Cleanup: delete the retained source copy of the moved rows and stop the
reverse capture, after which a rollback is impossible."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MigrationError, crash_point

if TYPE_CHECKING:
    from ..executor import Migration


def delete_members(m: Migration, side: str, chunk: int = 5000) -> int:
    cl = m.cluster
    shards = m.mem.sources if side == "source" else m.mem.destinations

    def holder(u: int) -> str:  # the shard on this side of unit u
        return m.units[u].source if side == "source" else m.units[u].destination

    total = 0
    what = "the retained copy" if side == "source" else "the copy"
    for sh in shards:
        b = cl.backend(sh)
        for t in m.group.tables:
            with m._on(sh, side, f"deleting {what} of {t.name!r}"):
                c = b.conn()
                if not b.has_table(c, t.name):
                    continue
                cols, pk, kx = m._table(sh, t.name)
                pkx = [cols.index(k) for k in pk]
                for rows in b.scan_chunks(c, t.name, cols, pk, chunk):
                    ui = m.mem.assign([r[kx] for r in rows]).tolist()
                    dels = [tuple(r[j] for j in pkx) for r, u in zip(rows, ui) if u >= 0 and holder(u) == sh]
                    if dels:
                        with b.writing(c):
                            b.delete(c, t.name, pk, dels)
                        total += len(dels)
                        crash_point("cleanup-chunk")
    return total


def cleanup(m: Migration) -> int:
    """Delete the retained source copy of the moved rows (in chunks) and
    stop the reverse capture: rollback is impossible afterwards.

    A migration in ``cutover`` (a crash after its metadata commit) is
    reconciled first.  A ``rolled-back`` migration's cleanup is its
    reverse migration's: the copy the rollback left on the old
    destinations is deleted and the old sources' reverse capture is
    stopped.  Returns the number of rows deleted."""
    st = m.state
    if st == "rolled-back":
        rev_id = m._info().get("reverse")
        if not rev_id or m.meta.migration(rev_id) is None:
            return 0  # (rolled back before its cutover: nothing was retained)
        if m._reverse_unfinished():
            m.rollback()
        rev = type(m)(m.cluster, rev_id)
        rev.log_fn = m.log_fn
        return rev.cleanup()
    if st == "cleaned":
        return 0  # (idempotent: a crash may have come after the last step)
    if st == "cutover":
        m.run()  # (reconciles: cutover -> retained)
        st = m.state
    if st not in ("retained", "cleaning"):
        raise MigrationError(f"migration {m.id} is {st}: only a retained migration can be cleaned up; "
                             f"{m.next_step(st)}")
    try:
        m._set("cleaning")
        crash_point("cleanup-marked")
        n = m._delete_members("source")
        crash_point("cleanup-deleted")
        for d in m.mem.destinations:
            b = m.cluster.backend(d)
            with m._on(d, "destination", "dropping its reverse capture"), b.writing() as c:
                b.drop_capture(c, m.id + ":reverse")
        crash_point("cleanup-capture-dropped")
        m._set("cleaned")
    except Exception as e:
        err = m._db_error(e, "cleaning up")
        if err is not e:
            raise err from e
        raise
    m.log(f"cleanup: {n} retained rows deleted")
    return n
