"""What ``shardhash.migrate.Cluster`` offers beyond one routed key.

Mixed into :class:`shardhash.migrate.Cluster` (kept apart so that the
migration machinery and these helpers can change independently):

* hot keys, per table group: a group whose router document is a
  :class:`~shardhash.hotkeys.HotKeyRouter` spreads its hot keys' writes
  (:meth:`hot_transaction`) and reads every sub-key (:meth:`hot_read`);
  other groups are untouched;
* queries without the shard key: :meth:`scatter_gather` and
  :meth:`scatter_aggregate` over a group's shards, counting only the rows a
  shard owns (not the copies a migration in flight makes, nor those retained
  after its cutover);
* global lookups: :meth:`add_lookup` declares a lookup index (a table group
  sharded by the value) over an owner group; :meth:`lookup` returns the
  owner id, :meth:`lookup_row` the owner row (one extra routed read).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .. import _events
from .metadata import DONE

__all__ = ["ClusterExtras"]


class ClusterExtras:
    """Hot keys, scatter-gather and lookup indexes for a Cluster (a mixin)."""

    # provided by Cluster
    def group(self, name: str | None = None) -> Any: ...  # pragma: no cover
    def router(self, group: str | None = None) -> Any: ...  # pragma: no cover
    def backend(self, shard: str) -> Any: ...  # pragma: no cover
    def transaction(self, key: Any, *, group: str | None = None) -> Any: ...  # pragma: no cover
    def read(self, key: Any, *, group: str | None = None) -> Any: ...  # pragma: no cover
    def refresh(self, group: str | None = None) -> Any: ...  # pragma: no cover
    metadata: Any

    def _lookup_indexes(self) -> dict[str, Any]:
        d = self.__dict__.get("_shardhash_lookups")
        if d is None:
            d = self.__dict__["_shardhash_lookups"] = {}
        return d

    # -- hot keys --------------------------------------------------------------------

    @contextlib.contextmanager
    def hot_transaction(self, key: Any, *, group: str | None = None,
                        sub_key: int | None = None) -> Iterator[Any]:
        """A write transaction for a row of ``key``: on the shard of the
        sub-key the group's hot policy picks (``tx.sub_key``; 0 for a cold
        key or a group without a hot policy).

        Store ``tx.routing_key`` (``subkey(key, tx.sub_key)``: the key
        itself for sub-key 0, ``f"{key}#{i}"`` otherwise) in the table's
        shard-key column, so that migrations, ownership checks and
        :meth:`scatter_gather` place each row where its sub-key lives; keep
        the key itself in another column for queries."""
        from shardhash.hotkeys import HotKeyRouter, subkey

        g = self.group(group)
        r = self.router(g.name)
        if isinstance(r, HotKeyRouter):
            shard, i = r.route_write(key, sub_key=sub_key)
            _events.emit("hot_write", shard=shard, hot=r.fan_out(key) > 1, sub_key=i,
                         topology_version=r.version, group=g.name)
        else:
            if sub_key:
                raise ValueError(f"group {g.name!r} has no hot-key policy: the only sub-key is 0")
            i = 0
        rk = subkey(key, i)
        with self.transaction(rk, group=g.name) as tx:
            tx.sub_key = i
            tx.routing_key = rk
            yield tx

    def hot_read(self, key: Any, sql: str, params: Sequence[Any] = (), *,
                 group: str | None = None) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` from every sub-key of ``key`` (one read per
        sub-key, in sub-key order).  ``sql`` selects one sub-key's rows;
        ``params`` may hold the placeholder values, then the sub-key number
        is appended as the last parameter."""
        from shardhash.hotkeys import HotKeyRouter, subkey

        g = self.group(group)
        r = self.router(g.name)
        subs = [i for _, i in r.route_read(key)] if isinstance(r, HotKeyRouter) else [0]
        if isinstance(r, HotKeyRouter):  # a group with a hot policy: count its reads, hot or not
            _events.emit("hot_read", key=key, hot=len(subs) > 1, fan_out=len(subs), group=g.name)
        out: list[tuple[Any, ...]] = []
        for i in subs:
            with self.read(subkey(key, i), group=g.name) as tx:
                out += [tuple(x) for x in tx.execute(sql, (*params, i)).fetchall()]
        return out

    # -- scatter-gather ----------------------------------------------------------------

    def _scatter_args(self, group: str | None, key_column: str | None,
                      router: Any = None) -> tuple[dict[str, Any], Any, str, dict[str, str]]:
        """The group's shards as connection factories, its router, the shard-key
        column, and each shard's placeholder style (``?`` SQLite, ``%s`` psycopg)."""
        g = self.group(group)
        r = self.router(g.name) if router is None else router
        shards: dict[str, Any] = {}
        styles: dict[str, str] = {}
        for s in r.shards:
            b = self.backend(s)
            if getattr(b, "kind", "") in ("postgresql", "mysql"):
                # the raw psycopg / mysqlclient connection (the backend's adapter has no cursor();
                # a MySQL one reads "name" as an identifier: the backend sets ANSI_QUOTES)
                shards[s] = (lambda b=b: b.connect().raw)
                styles[s] = "%s"
            else:
                shards[s] = b.connect
                styles[s] = "?"
        col = key_column if key_column is not None else (g.tables[0].key if len(g.tables) == 1 else None)
        return shards, r, col, styles  # type: ignore[return-value]

    def scatter_gather(self, query: str, *, group: str | None = None, key_column: str | None = None,
                       owned_only: bool = True, **kw: Any) -> Any:
        """:func:`shardhash.scatter.scatter_gather` over the group's shards.

        With ``owned_only`` (default) a row is kept only on the shard the
        group's router places its ``key_column`` on (default: the shard key
        of the group's table when it has one table), so copies a migration
        left on another shard are never returned twice; ``key_column`` must
        then be a column of the result.

        Each shard gets its backend's placeholder style (``?`` SQLite, ``%s``
        PostgreSQL) in the statements scatter-gather adds; ``query``'s own
        parameters need one style, so a group whose shards mix the two
        backends refuses ``params``.  A cursor stays valid across a cutover
        (also one that adds or removes shards); one that still holds a failed
        shard's own position (``on_partial="partial"``) is refused once the
        router changed, since that shard's unread rows may have moved.
        """
        from shardhash.scatter import scatter_gather

        # The current router (not a cached one): ownership is decided by it.
        shards, r, col, styles = self._scatter_args(group, key_column, self.refresh(self.group(group).name))
        if "placeholder" in kw:
            raise TypeError("Cluster.scatter_gather sets each shard's placeholder style from its backend; "
                            "do not pass placeholder")
        if "epoch" in kw:
            raise TypeError("Cluster.scatter_gather sets the epoch from the group's router; do not pass epoch")
        if len(set(styles.values())) > 1 and kw.get("params"):
            raise ValueError("this group's shards mix SQLite (?) and PostgreSQL (%s) placeholders, so a query "
                             "with params cannot be written for both; filter the returned rows instead, or "
                             "query each backend's shards with shardhash.scatter.scatter_gather")
        kw["placeholder"] = styles
        kw["epoch"] = f"{r.version}:{r.fingerprint}"
        if owned_only:
            if col is None:
                raise ValueError("name the shard-key column of the result (key_column=...) or pass owned_only=False")

            def keep(shard: str, columns: list[str], row: tuple[Any, ...]) -> bool:
                try:
                    j = columns.index(col)
                except ValueError:
                    raise ValueError(f"the result has no column {col!r} (the shard key); select it, "
                                     f"or pass owned_only=False") from None
                return bool(r.route(row[j]) == shard)

            kw["row_filter"] = keep
        return scatter_gather(query, shards, **kw)

    def _ownership_state(self, group: str) -> tuple[tuple[Any, ...], Any]:
        """What decides which rows each shard owns: the group's router version
        and its migrations' states."""
        r = self.refresh(group)
        migs = tuple((m["id"], m["state"]) for m in self.metadata.migrations(group))
        return (r.version, r.fingerprint, migs), r

    def scatter_aggregate(self, query: str, aggregates: Mapping[str, str], *, group: str | None = None,
                          key_column: str | None = None, owned_only: bool = True, attempts: int = 3,
                          **kw: Any) -> Any:
        """:func:`shardhash.scatter.scatter_aggregate` over the group's shards.

        With ``owned_only`` (default) every row counts once, on the shard that
        owns it, also while a migration of the group copies rows or keeps
        the moved rows retained on their old shard: then each shard
        aggregates per shard key (``key_column``, default: the shard key of
        the group's single table; a column of ``query``'s result) and only
        the keys the group's current router places on that shard are
        combined.  When every migration of the group is cleaned up or rolled
        back no shard holds a row it does not own, and the aggregates run
        whole on each shard.  The router and the migrations' states are read
        before and after the query; if they changed meanwhile (a cutover, a
        new migration) the query runs again, at most ``attempts`` times, then
        a RuntimeError says so.
        """
        from shardhash.scatter import scatter_aggregate

        g = self.group(group)
        if not owned_only:
            shards, _r, _c, _p = self._scatter_args(g.name, None)
            return scatter_aggregate(query, shards, aggregates, **kw)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"attempts must be an int >= 1, got {attempts!r}")
        for _ in range(attempts):
            before, r = self._ownership_state(g.name)
            shards, _r, col, _p = self._scatter_args(g.name, key_column, r)
            if all(state in DONE for _id, state in before[2]):
                res = scatter_aggregate(query, shards, aggregates, **kw)
            else:
                if col is None:
                    raise ValueError(f"group {g.name!r} has a migration in flight or retained rows: name the "
                                     "shard-key column of the query's result (key_column=...) or pass "
                                     "owned_only=False")

                def owns(shard: str, key: Any, r: Any = r) -> bool:
                    return bool(r.route(key) == shard)

                res = scatter_aggregate(query, shards, aggregates, key_column=col, owns=owns, **kw)
            after, _ = self._ownership_state(g.name)
            if after == before:
                return res
        raise RuntimeError(f"group {g.name!r}: the topology or a migration changed during each of "
                           f"{attempts} scatter_aggregate attempts; try again")

    # -- lookup indexes -----------------------------------------------------------------

    def add_lookup(self, name: str, *, group: str, owner_group: str, owner_table: str,
                   owner_key: str | None = None, owner_value: str | None = None, table: str | None = None,
                   grace: float = 60.0, create: bool = True) -> Any:
        """Declare the lookup index ``name``: its table (default
        ``f"{name}_lookup"``) lives in table group ``group`` (sharded by the
        value; the group's table key is ``value``), the owners in
        ``owner_table`` of ``owner_group``.  Creates the lookup table on the
        group's shards unless ``create=False``; declare lookups before
        ``init()`` so that ``init`` sets their tables up for migrations too.  Returns the
        :class:`shardhash.lookups.LookupIndex`."""
        from shardhash.lookups import ClusterStore, LookupIndex

        og = self.group(owner_group)
        if owner_key is None:
            owner_key = next((t.key for t in og.tables if t.name == owner_table), None)
            if owner_key is None:
                raise ValueError(f"table {owner_table!r} is not in group {owner_group!r}")
        idx = LookupIndex(name, lookup=ClusterStore(self, group), owner=ClusterStore(self, owner_group),
                          owner_table=owner_table, owner_key=owner_key, owner_value=owner_value, table=table,
                          grace=grace)
        if create:  # on the group's shards as declared (works before init())
            idx.create_table(self.group(group).router.shards)
        self._lookup_indexes()[name] = idx
        return idx

    def lookup_index(self, name: str) -> Any:
        try:
            return self._lookup_indexes()[name]
        except KeyError:
            raise KeyError(f"no lookup index {name!r} (declare it with add_lookup)") from None

    def lookup(self, name: str, value: Any) -> Any:
        """The owner id of ``value`` in lookup index ``name``, or None."""
        return self.lookup_index(name).lookup(value)

    def lookup_row(self, name: str, value: Any) -> dict[str, Any] | None:
        """The owner row of ``value`` (lookup, then one routed read), or None."""
        return self.lookup_index(name).get(value)  # type: ignore[no-any-return]

    # -- stranded rows ---------------------------------------------------------------

    def check(self, group: str | None = None, *, repair: bool = False, first: int = 10) -> dict[str, Any]:
        """Rows on a shard that does not own them under the current topology
        (``group``: None for every group), leaving aside the copies a
        migration's records account for; ``repair=True`` moves each to its
        owner when the owner has no row with its primary key.  See
        :func:`shardhash.migrate.check.check` for the result's shape."""
        from shardhash.migrate.check import check

        return check(self, group, repair=repair, first=first)
