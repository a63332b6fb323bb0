"""What a shard backend must offer the migration executor and the cluster client.

:class:`ShardBackend` is the contract, as a typed :class:`typing.Protocol`:
:class:`~shardhash.migrate.sqlite.SQLiteShard`,
:class:`~shardhash.migrate.postgres.PostgresShard` and
:class:`~shardhash.migrate.mysql.MySQLShard` implement it -- nothing in the
executor, the client or the metadata store asks which class a backend is.

The contract in one paragraph.  A backend owns the SQL of its database: its
placeholder style (:attr:`~ShardBackend.placeholder`) and its quoting of
identifiers and string literals (:meth:`~ShardBackend.quote_ident`,
:meth:`~ShardBackend.quote_literal`), which it uses for every statement it
builds; values are always bound as parameters.  Beside the application's
tables every shard holds a few ``_shardhash_*`` tables (see
:mod:`shardhash.migrate.sqlite`): the shard's own ownership records of the
units it gives or receives, with an epoch counter bumped whenever they
change; the routers of those migrations; and the change capture (every row
written to a group table is logged by primary key once per active capture
of its group).  A client's write transaction must exclude the fence's
update of the ownership records (:meth:`~ShardBackend.begin_client_write`);
that, plus the metadata store's single commit, is what makes a migration
safe.

Lock order.  The methods that write the ownership, fence or capture records
(:meth:`~ShardBackend.put_unit`, :meth:`~ShardBackend.set_unit_state`,
:meth:`~ShardBackend.set_fence`, :meth:`~ShardBackend.start_capture`, ...)
run in the executor's transactions in whatever order the phase needs; a
backend whose writers lock the epoch row before the tables their triggers
read (MySQL: ``LOCK IN SHARE MODE``) takes the epoch row's exclusive lock in
the first of them, so that both sides lock in one order.  A transaction the
backend owns whole (:meth:`~ShardBackend.copy_new`) may be run again after a
deadlock or lock wait timeout of its database; a caller's transaction never
is (the error reaches the caller, nothing of it written).

Connections.  :meth:`~ShardBackend.conn` is this thread's connection,
:meth:`~ShardBackend.connect` a new one the caller closes.  A connection is
in autocommit mode: every transaction is an explicit begin
(:meth:`~ShardBackend.begin_write`, :meth:`~ShardBackend.begin_read`, ...)
and ends with :meth:`~ShardBackend.commit` / :meth:`~ShardBackend.rollback`.
The connection an application gets through
:meth:`shardhash.migrate.Cluster.transaction` takes ``?`` placeholders on
every backend (docs/migrate.md); the backend's own statements use its own
style through :meth:`~ShardBackend.execute`.

Row values.  Primary keys travel as tuples; in the change log they are JSON
arrays (:func:`shardhash.migrate.sqlite.decode_pk`).  Rows are tuples in the
order of the columns asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

__all__ = ["ShardBackend"]


@runtime_checkable
class ShardBackend(Protocol):
    """One shard (one database, or a schema of one) as the executor, the
    client and the metadata store use it.  Every method that takes ``c``
    runs on that connection (from :meth:`conn` or :meth:`connect`), inside
    whatever transaction the caller opened, and commits nothing itself
    unless it says so."""

    #: The backend's name: ``"sqlite"``, ``"postgresql"``, ``"mysql"`` (error
    #: messages, the cross-backend column checks of
    #: :mod:`shardhash.migrate.coltypes`, the metadata store's dialect).
    kind: str
    #: The placeholder of a bound value in this backend's own statements
    #: (``"?"`` for sqlite3, ``"%s"`` for psycopg and MySQLdb).
    placeholder: str
    #: Whether the snapshot copy reads the next chunk on a thread of its own
    #: while the current one is written (worth it when the driver leaves the
    #: GIL while the server works).
    prefetch: bool
    #: The URL or file the backend was opened with (messages, identity).
    path: str

    # ------------------------------------------------------------ SQL text

    def quote_ident(self, name: str) -> str:
        """``name`` quoted as an identifier of this database (the one quoting
        helper: a quoted name goes into SQL text once, after any
        templating); ValueError for a name the database cannot hold."""
        ...

    def quote_literal(self, text: str) -> str:
        """``text`` quoted as a string literal of this database (for DDL
        bodies such as trigger code, where a bound value cannot go)."""
        ...

    def execute(self, c: Any, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement written in this backend's placeholder style
        (:attr:`placeholder`) with ``params`` bound; returns a cursor (with
        ``fetchone`` / ``fetchall``)."""
        ...

    # --------------------------------------------------------- connections

    def connect(self) -> Any:
        """A new connection in autocommit mode (the caller closes it);
        ConnectionError when the database cannot be reached."""
        ...

    def conn(self) -> Any:
        """This thread's connection (opened on first use; a lost one is
        replaced)."""
        ...

    def close(self) -> None:
        """Close this thread's connection."""
        ...

    # -------------------------------------------------------- transactions

    def begin_write(self, c: Any) -> None:
        """Begin a write transaction on ``c``."""
        ...

    def begin_client_write(self, c: Any, guard: tuple[str, Any] | None = None) -> None:
        """Begin a client's write transaction: it must exclude the fence's
        update of the ownership records (:meth:`set_unit_state` with
        :meth:`bump_epoch`) until it ends -- SQLite: the write lock;
        PostgreSQL: ``FOR SHARE`` of the epoch row.  ``guard``: the
        transaction's (group, key) for :meth:`begin_guard`."""
        ...

    def begin_read(self, c: Any) -> None:
        """Begin a read transaction that sees one snapshot until it ends (the
        snapshot copy and verify read in one)."""
        ...

    def commit(self, c: Any) -> None:
        """Commit the transaction of ``c``."""
        ...

    def rollback(self, c: Any) -> None:
        """Roll back the transaction of ``c``, if one is open."""
        ...

    def writing(self, c: Any = None) -> AbstractContextManager[Any]:
        """A write transaction on ``c`` (default: this thread's connection)
        as a context manager yielding the connection: committed when the
        block ends, rolled back when it raises."""
        ...

    # ------------------------------------------------------------- schema

    def lock_schema(self, c: Any) -> None:
        """Inside a write transaction: exclude other schema changes on this
        shard (two executors preparing it at once) until it ends."""
        ...

    def ensure_schema(self, c: Any) -> None:
        """Inside a write transaction: make sure there is a schema to create
        tables in (a server backend creates the one its URL names, or
        refuses with the SQL to run; a file database has nothing to do)."""
        ...

    def ensure_system(self, c: Any) -> None:
        """Create the ``_shardhash_*`` tables when missing (idempotent)."""
        ...

    def has_table(self, c: Any, table: str) -> bool:
        """Whether ``table`` exists (in the connection's schema)."""
        ...

    def table_info(self, c: Any, table: str) -> tuple[list[str], list[str]]:
        """(columns, primary-key columns in key order); ValueError when the
        table is missing or has no primary key."""
        ...

    def table_ddl(self, c: Any, table: str) -> list[str]:
        """The statements that create ``table`` and its indexes here."""
        ...

    def create_from(self, c: Any, ddl: Sequence[str]) -> None:
        """Run ``ddl`` (from :meth:`table_ddl`, translated to this backend by
        :func:`shardhash.migrate.coltypes.translate_ddl`) as create-if-missing."""
        ...

    def install_triggers(self, c: Any, group: str, table: str, pk: Sequence[str], key: str | None = None) -> None:
        """Install the change-capture triggers of ``table`` (group ``group``,
        primary key ``pk``): every inserted, updated or deleted row's primary
        key is logged once per active capture of the group, unless the
        writing transaction called :meth:`skip_capture`.  With ``key`` (the
        shard-key column) also the guard of client transactions.  Idempotent."""
        ...

    # ------------------------------------------------- client transactions

    def begin_guard(self, c: Any, group: str, key: Any) -> None:
        """In a client's write transaction: watch for rows of another shard
        key or group (see :meth:`end_guard`, :meth:`guard_violation`)."""
        ...

    def end_guard(self, c: Any) -> list[tuple[str, str, Any]]:
        """(group, table, key) of every row written since :meth:`begin_guard`
        that is not of the transaction's key or group; the guard is off."""
        ...

    def guard_violation(self, exc: BaseException) -> tuple[str, str, Any] | None:
        """(group, table, key) when ``exc`` is the guard refusing a statement
        (a backend that refuses at the statement), else None."""
        ...

    def skip_capture(self, c: Any, group: str) -> None:
        """In a client's write transaction whose key is in no moving unit:
        its writes to ``group``'s tables are not logged."""
        ...

    def end_skip(self, c: Any, group: str) -> None:
        """End :meth:`skip_capture` before the commit (when the backend needs to)."""
        ...

    def active_capture_groups(self, c: Any) -> set[str]:
        """The groups with an active change capture here (none on a shard
        not set up yet)."""
        ...

    # ------------------------------------------------- ownership (epoch)

    def bump_epoch(self, c: Any) -> None:
        """Increment the ownership epoch (in the transaction that changes the
        unit records: clients cache the parsed records per epoch)."""
        ...

    def epoch(self, c: Any) -> int:
        """The ownership epoch; -1 on a shard not set up."""
        ...

    def unit_rows(self, c: Any, group: str | None = None) -> list[tuple[Any, ...]]:
        """The shard's unit records ``(grp, mig, idx, role, state, version,
        unit_json)`` (of ``group``); none on a shard not set up."""
        ...

    def put_routers(self, c: Any, mig: str, old: str, new: str) -> None:
        """Record the old and new router documents of migration ``mig`` (once)."""
        ...

    def put_unit(self, c: Any, grp: str, mig: str, idx: int, role: str, state: str, version: int,
                 unit: str) -> None:
        """Record unit ``idx`` of ``mig`` with ``role`` (``source`` /
        ``destination``) in ``state`` (once: an existing record is kept)."""
        ...

    def set_unit_state(self, c: Any, mig: str, role: str, frm: Sequence[str], to: str) -> None:
        """Move every unit record of ``mig`` with ``role`` in a state of
        ``frm`` to ``to``."""
        ...

    def delete_units(self, c: Any, mig: str) -> None:
        """Delete the unit records and routers of ``mig``."""
        ...

    def set_fence(self, c: Any, mig: str, attempt: int, deadline: float) -> None:
        """Record that fence attempt ``attempt`` of ``mig`` froze its source
        units here until ``deadline`` (seconds since the epoch), in the
        transaction that freezes them."""
        ...

    def fence_of(self, c: Any, mig: str) -> tuple[int, float] | None:
        """(attempt, deadline) of the last freeze of ``mig`` here, or None
        (none recorded, or a shard set up before deadlines existed)."""
        ...

    def lock_fence(self, c: Any, mig: str) -> None:
        """In a write transaction, before :meth:`fence_of`: wait for and hold
        the lock a freeze takes first (its :meth:`set_fence`), so that a
        writer breaking fence attempt N and a freeze of attempt N+1 are
        serialised -- the writer then reads N+1 and leaves the new freeze be.
        (SQLite: nothing, its write transactions are serial; PostgreSQL: the
        fence record's row lock; MySQL: the epoch row, see ``fence_of``.)"""
        ...

    def routers_of(self, c: Any, mig: str) -> tuple[str, str] | None:
        """(old, new) router documents of ``mig``, or None."""
        ...

    # ---------------------------------------------------------- row access

    def scan(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str], after: Sequence[Any] | None,
             limit: int, where: str = "", args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """At most ``limit`` rows (columns ``cols``) in primary-key order,
        after primary key ``after`` (None: from the first); ``where`` (in
        this backend's placeholder style, names quoted by
        :meth:`quote_ident`) with ``args`` filters them."""
        ...

    def scan_chunks(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
                    chunk: int) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of ``table``, ``chunk`` rows at a time in primary-key order."""
        ...

    def fetch(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
              keys: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """The rows whose primary keys are in ``keys`` (any order)."""
        ...

    def upsert(self, c: Any, table: str, cols: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Insert the rows, replacing a row with the same primary key."""
        ...

    def insert_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Insert the rows whose primary key is absent, in the caller's
        transaction; returns how many were inserted (a backend may insert
        none when any is present: the caller compares with ``len(rows)``)."""
        ...

    def insert_absent(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert the rows whose primary key is absent, in the caller's
        transaction; a row whose key is there is left as it is (``INSERT ...
        ON CONFLICT DO NOTHING``; MySQL has its own spelling)."""
        ...

    def copy_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """The snapshot copy's fast path: insert every row, atomically and
        committed, when none of their primary keys is there (True); else
        change nothing (False).  The backend may run it again after a
        deadlock or lock wait timeout (it owns the whole transaction), and may
        skip the capture triggers' work when it sees, under the lock that
        keeps a capture from starting, that the shard has none."""
        ...

    def delete(self, c: Any, table: str, pk: Sequence[str], keys: Iterable[Sequence[Any]]) -> None:
        """Delete the rows with these primary keys."""
        ...

    def min_key(self, c: Any, table: str, column: str) -> Any:
        """The smallest value of ``column`` (None for an empty table)."""
        ...

    def count(self, c: Any, table: str) -> int:
        """The number of rows of ``table``."""
        ...

    # -------------------------------------------------------- change capture

    def start_capture(self, c: Any, name: str, group: str) -> None:
        """Start capture ``name`` of ``group``'s tables (once): from its
        commit on, every row written is logged for it."""
        ...

    def capture_id(self, c: Any, name: str) -> int | None:
        """The id of capture ``name``, or None."""
        ...

    def drop_capture(self, c: Any, name: str) -> None:
        """Stop capture ``name`` and delete its change rows (if it exists)."""
        ...

    def pending(self, c: Any, cid: int, limit: int) -> list[tuple[int, str, str]]:
        """At most ``limit`` pending changes ``(id, table, pk_json)`` of
        capture ``cid``, oldest first."""
        ...

    def pending_count(self, c: Any, cid: int) -> int:
        """How many changes of capture ``cid`` are pending."""
        ...

    def pending_keys(self, c: Any, cid: int) -> list[tuple[str, str]]:
        """(table, pk_json) of every pending change of capture ``cid``."""
        ...

    def mark_applied(self, c: Any, ids: Sequence[int]) -> None:
        """Mark these changes applied (kept until the next full verify)."""
        ...

    def dirty(self, c: Any, cid: int) -> list[tuple[str, str]]:
        """(table, pk_json) of every change applied since the last full verify."""
        ...

    def dirty_rows(self, c: Any, cid: int, limit: int) -> list[tuple[int, str, str]]:
        """At most ``limit`` applied changes ``(id, table, pk_json)``, oldest first."""
        ...

    def forget(self, c: Any, ids: Sequence[int]) -> None:
        """Delete these change rows."""
        ...

    def forget_applied(self, c: Any, cid: int) -> None:
        """Delete every applied change of capture ``cid`` (a fresh verify)."""
        ...

    def all_keys(self, c: Any, cid: int) -> list[tuple[str, str]]:
        """(table, pk_json) of every change row of capture ``cid``."""
        ...

    def position(self, c: Any) -> int:
        """The highest change id so far (0 for none): changes committed
        before a freeze have ids at or below the position read after it."""
        ...
