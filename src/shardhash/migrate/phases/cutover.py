"""Fence and cutover: freeze the sources' units, drain, check, commit.

The freeze moves the sources' unit records to ``frozen`` (writers to those
keys wait; reads go on); the changes committed before it are drained and the
rows changed since the verify are compared; the destinations start their
reverse capture; then the metadata store's one transaction -- the single
decision point -- records the new topology and the state ``cutover``.
:func:`reconcile` brings the shards' own records in line afterwards
(destinations ``owned``, sources ``moved``) and records the write pause.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ... import _events
from ..errors import FenceAborted, MigrationError, VerifyMismatch, crash_point
from ..metadata import COMMITTED

if TYPE_CHECKING:
    from ..executor import Migration


def set_units(m: Migration, shard: str, role: str, frm: Sequence[str], to: str) -> None:
    b = m.cluster.backend(shard)
    with b.writing() as c:
        b.set_unit_state(c, m.id, role, frm, to)
        b.bump_epoch(c)


def wait_turn(m: Migration) -> None:
    """Migrations of one group cut over in the order they were created: a
    migration planned on top of another one's target waits (with a clear
    error; the state stays ``catching-up``) until that one has cut over."""
    cur = m.meta.topology(m.group.name)
    if cur is None or int(cur[0]) == m.old.version:
        return
    ahead = m.info.get("after")
    rec = m.meta.migration(ahead) if ahead else None
    if rec is not None and rec["state"] not in COMMITTED and rec["state"] != "rolled-back":
        raise MigrationError(f"migration {m.id} is copied, caught up and verified; its cutover waits for "
                             f"migration {ahead} (state {rec['state']}), which cuts over to version "
                             f"{m.old.version} first: resume this one after it")
    raise MigrationError(f"group {m.group.name!r} is at version {cur[0]}, but this migration was planned "
                         f"from version {m.old.version}: roll it back and plan again")


def freeze_and_commit(m: Migration) -> None:
    """One fence attempt: freeze the sources' units (with the attempt's
    deadline, ``m.fence_timeout`` from now, on each source), drain, check,
    commit.  :class:`FenceAborted` when a writer aborted the attempt (its
    wait passed the deadline) before the commit: nothing was committed."""
    cl = m.cluster
    meta = m.meta
    for s in m.mem.sources:
        b = cl.backend(s)
        with m._on(s, "source", "preparing its fence record"):
            if not b.has_table(b.conn(), "_shardhash_fence"):  # (prepared before fence deadlines existed)
                with b.writing() as c:
                    b.ensure_system(c)
    attempt = int(meta.get(m.id, "fence_attempt", 0)) + 1
    meta.put(m.id, "fence_attempt", attempt)
    t0 = time.time()
    deadline = t0 + m.fence_timeout
    upto: dict[str, int] = {}
    for s in m.mem.sources:
        b = cl.backend(s)
        with m._on(s, "source", "freezing its units"):
            with b.writing() as c:
                # (the deadline in the transaction that freezes the units)
                b.set_fence(c, m.id, attempt, deadline)
                b.set_unit_state(c, m.id, "source", ("copying",), "frozen")
                b.bump_epoch(c)
            upto[s] = b.position(b.conn())
    meta.put(m.id, "frozen_at", meta.get(m.id, "frozen_at") or t0)
    timings = {"freeze": time.time() - t0}
    crash_point("after-freeze")
    # Drain: every change committed before the freeze (ids <= upto).
    while True:
        applied, _ = m.catch_up(limit=5000, upto=upto)
        if applied == 0:
            break
    timings["drain"] = time.time() - t0
    diffs = m._final_check()
    timings["final_check"] = time.time() - t0
    if diffs and meta.fence_aborted(None, m.id, attempt):
        # (a writer unfroze a unit and wrote: its change is pending, not a mismatch)
        raise FenceAborted(f"migration {m.id}: fence attempt {attempt} was aborted by a writer")
    if diffs:
        for s in m.mem.sources:
            m._set_units(s, "source", ("frozen",), "copying")
        # (the writers are released: the next freeze is timed from its own start)
        m.meta.put(m.id, "frozen_at", None)
        m.meta.put(m.id, "verify_result", {"mismatches": len(diffs), "first": diffs[:10], "final": True})
        m.meta.put(m.id, "verify", {"verified": []})
        m._set("verify-failed")
        _events.emit("verify_mismatch", migration_id=m.id, count=len(diffs))
        raise VerifyMismatch(m.id, diffs)
    for d in m.mem.destinations:
        b = cl.backend(d)
        with m._on(d, "destination", "starting the reverse capture"), b.writing() as c:
            b.start_capture(c, m.id + ":reverse", m.group.name)
            b.bump_epoch(c)  # (clients learn that the group has a capture here)
    crash_point("before-commit")
    with meta.tx() as c:
        if meta.fence_aborted(c, m.id, attempt):
            raise FenceAborted(f"migration {m.id}: fence attempt {attempt} was aborted by a writer that waited "
                               f"past its deadline ({m.fence_timeout:g} s after the freeze); nothing was committed")
        cur = meta.topology(m.group.name, c)
        if cur is not None and int(cur[0]) != m.old.version:
            raise MigrationError(f"group {m.group.name!r} moved to version {cur[0]} meanwhile; "
                                 f"expected {m.old.version}")
        meta.set_topology(c, m.group.name, m.new.version, m.new.to_json())
        meta.set_state(m.id, "cutover", c=c)
        meta.put(m.id, "committed_at", time.time(), c)
        timings["commit"] = time.time() - t0
        meta.put(m.id, "fence_timings", timings, c)
    m.log(f"cutover committed: group {m.group.name} is at version {m.new.version}")
    crash_point("after-commit")


def after_abort(m: Migration) -> None:
    """After an aborted fence attempt: the sources' units are unfrozen (a
    writer may have done it already), the reverse capture the attempt
    started on the destinations is dropped, and the writers' pause is over."""
    for s in m.mem.sources:
        with m._on(s, "source", "unfreezing its units after an aborted fence"):
            m._set_units(s, "source", ("frozen",), "copying")
    for d in m.mem.destinations:
        b = m.cluster.backend(d)
        with m._on(d, "destination", "dropping the reverse capture of an aborted fence"), b.writing() as c:
            b.drop_capture(c, m.id + ":reverse")
            b.bump_epoch(c)
    m.meta.put(m.id, "frozen_at", None)


def reconcile(m: Migration) -> None:
    """Bring the shards' ownership records in line with the metadata commit.

    The write pause (freeze to release) is recorded from the two events:
    the freeze time, and the time this call released the sources' units
    (``released_at``).  A re-run after a crash that came after the
    release keeps the recorded figure, never "now minus the freeze"."""
    for d in m.mem.destinations:
        with m._on(d, "destination", "taking ownership of the moved units"):
            m._set_units(d, "destination", ("importing",), "owned")
    crash_point("after-destination-owned")
    held = False
    for s in m.mem.sources:
        b = m.cluster.backend(s)
        with m._on(s, "source", "reading its unit records"):
            held = held or any(r[1] == m.id and r[3] == "source" and r[4] in ("copying", "frozen")
                               for r in b.unit_rows(b.conn(), m.group.name))
    for s in m.mem.sources:
        with m._on(s, "source", "releasing the moved units"):
            m._set_units(s, "source", ("copying", "frozen"), "moved")
    released = time.time()
    crash_point("after-sources-moved")
    frozen_at = m.meta.get(m.id, "frozen_at")
    if held:
        pause = None if frozen_at is None else released - float(frozen_at)
        with m.meta.tx() as c:
            m.meta.put(m.id, "released_at", released, c)
            m.meta.put(m.id, "unit_pause_seconds", pause, c)
        note = "unknown" if pause is None else f"{pause:.3f} s"
    elif m.meta.get(m.id, "released_at") is None:
        # Released by an executor that was killed before it recorded the
        # time: the figure is unknown (not the time since the freeze).
        m.meta.put(m.id, "unit_pause_seconds", None)
        note = "not recorded (the executor that released the units was killed before recording it)"
    else:
        pause = m.meta.get(m.id, "unit_pause_seconds")
        note = "unknown" if pause is None else f"{float(pause):.3f} s (recorded at the release)"
    for s in m.mem.sources:
        b = m.cluster.backend(s)
        with m._on(s, "source", "dropping its change capture"), b.writing() as c:
            b.drop_capture(c, m.capture)
    crash_point("after-reconcile")
    m.log(f"ownership reconciled; write pause {note}")


def retain(m: Migration) -> None:
    """``cutover`` -> ``retained``; for a reverse migration, in the same
    metadata transaction, its forward migration becomes ``rolled-back``
    (never one without the other)."""
    fwd = m.info.get("reverse_of")
    with m.meta.tx() as c:
        m.meta.set_state(m.id, "retained", c=c)
        if fwd:
            # A completed rollback: the forward migration's copy is the retained one now.
            m.meta.set_state(fwd, "rolled-back", c=c)
    m.log("state -> retained" + (f"; migration {fwd} is rolled-back" if fwd else ""))
    crash_point("after-retained")
