"""The migration executor's errors, its crash-test hook and what a database
fault means for an operator.

Every phase of :mod:`shardhash.migrate.executor` raises :class:`MigrationError`
(or :class:`VerifyMismatch`) with a message that names the shard, its role and
the step; :func:`describe_fault` turns a driver's error into words from its
class and code (SQLite's result code, PostgreSQL's SQLSTATE), never from its
message text.
"""

from __future__ import annotations

import os
import signal
from typing import Any

__all__ = ["FenceAborted", "MigrationError", "VerifyMismatch", "crash_point", "describe_fault", "is_db_error"]


class MigrationError(RuntimeError):
    """A migration cannot proceed (the message says why; the state is recorded)."""


class VerifyMismatch(MigrationError):
    """Verify found rows that differ between source and destination."""

    def __init__(self, mig: str, diffs: list[dict[str, Any]]) -> None:
        self.diffs = diffs
        first = ", ".join(f"{d['table']}{d['pk']}" for d in diffs[:10])
        super().__init__(f"migration {mig}: verify found {len(diffs)} differing row(s); first: {first}")


class FenceAborted(MigrationError):
    """A writer that waited past the freeze's deadline aborted this fence
    attempt (recorded in the metadata store before the cutover could
    commit): the executor catches up again and fences anew."""


def crash_point(name: str) -> None:
    """Test hook: SIGKILL this process when ``SHARDHASH_MIGRATE_CRASH`` names
    this point (after ``SHARDHASH_MIGRATE_CRASH_SKIP`` earlier hits)."""
    if os.environ.get("SHARDHASH_MIGRATE_CRASH") != name:
        return
    skip = int(os.environ.get("SHARDHASH_MIGRATE_CRASH_SKIP", "0"))
    if skip > 0:
        os.environ["SHARDHASH_MIGRATE_CRASH_SKIP"] = str(skip - 1)
        return
    os.kill(os.getpid(), signal.SIGKILL)


#: SQLite's primary result codes and their fixed messages (sqlite3_errstr),
#: for Pythons whose sqlite3 errors carry no code (before 3.11).
_SQLITE_CODES = {13: ("full", "database or disk is full"), 8: ("readonly", "attempt to write a readonly database"),
                 14: ("unreachable", "unable to open database file"), 10: ("unreachable", "disk I/O error")}
#: PostgreSQL SQLSTATEs (or their two-character classes) and what they mean for an operator.
_PG_STATES = {"53100": "full", "25006": "readonly", "08": "unreachable", "57P01": "unreachable",
              "57P02": "unreachable", "57P03": "unreachable", "42P01": "gone", "3F000": "gone"}


def _fault_kind(e: BaseException) -> str | None:
    """What a database error is, from its class and code (SQLite's result
    code, PostgreSQL's SQLSTATE), never from words in its message: "full",
    "readonly", "unreachable", "gone" (a prepared table or schema is missing) or None."""
    if isinstance(e, (ConnectionError, TimeoutError)):
        return "unreachable"
    if isinstance(e, OSError):
        import errno

        return {errno.ENOSPC: "full", errno.EROFS: "readonly", errno.ENOENT: "unreachable",
                errno.ENOTDIR: "unreachable", errno.EIO: "unreachable", errno.ENXIO: "unreachable",
                errno.ESTALE: "unreachable"}.get(e.errno or 0)
    mod = type(e).__module__
    if mod.startswith("sqlite3"):
        code = getattr(e, "sqlite_errorcode", None)
        if code is not None:
            return _SQLITE_CODES.get(int(code) & 0xFF, (None, ""))[0]
        return next((k for k, msg in _SQLITE_CODES.values() if str(e) == msg), None)
    if mod.startswith("psycopg"):
        state = getattr(e, "sqlstate", None)
        if state is None:  # (a client-side error: the connection is lost or closed)
            import psycopg

            return "unreachable" if isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError)) else None
        return _PG_STATES.get(state) or _PG_STATES.get(state[:2])
    return None


def describe_fault(e: BaseException) -> str:
    """What a database error means for an operator (full disk, lost
    connection, read-only file), or its own text."""
    text = f"{type(e).__name__}: {e}".strip()
    kind = _fault_kind(e)
    if kind == "full":
        return f"the disk is full ({text}); free space, then resume"
    if kind == "readonly":
        return f"the database cannot be written ({text}); make it writable, then resume"
    if kind == "unreachable":
        return f"the shard is unreachable or its connection was lost ({text}); bring it back, then resume"
    if kind == "gone":
        return (f"the shard is unreachable or its prepared tables are gone ({text}); on a cluster that "
                f"`shardhash migrate init` has not set up yet, run it; else bring them back, then resume")
    return text


#: The modules whose exceptions are database errors (a backend's driver
#: adds its own here, e.g. ``MySQLdb``).
DRIVER_MODULES: tuple[str, ...] = ("sqlite3", "psycopg")


def is_db_error(e: BaseException) -> bool:
    """Whether ``e`` comes from a database (a driver's exception, a lost
    connection, an OS error on a database file)."""
    if isinstance(e, (ConnectionError, OSError)) or type(e).__module__.startswith(DRIVER_MODULES):
        return True
    return any(c.__module__.startswith(DRIVER_MODULES) for c in type(e).__mro__)


_is_db_error = is_db_error
