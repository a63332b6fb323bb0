"""What a router may cost to build, checked before anything is allocated.

A router document is small text, but some of its numbers say how much to
build: a ring weight multiplies a shard's token count, a Maglev table size
is the table's length, a watermark nests two more routers.  Every such size
is checked here, with a ValueError, *before* the structure is built, so that
loading an untrusted document costs at most what docs/protocol.md
("What loading a document may cost") promises.

>>> check_size(10, MAX_RING_TOKENS, "ring tokens")
10
>>> check_size(2**40, MAX_RING_TOKENS, "ring tokens")
Traceback (most recent call last):
...
ValueError: ring tokens: 1,099,511,627,776 is more than the limit of 4,194,304
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = [
    "MAX_DOC_DEPTH",
    "MAX_RING_TOKENS",
    "MAX_MAGLEV_TABLE",
    "MAX_BUCKETS",
    "MAX_RANGES",
    "MAX_RESIDUES",
    "MAX_DOC_ENTRIES",
    "check_size",
    "reserve",
    "document_budget",
    "check_depth",
    "loads",
]

#: deepest nesting of JSON arrays/objects in a router document (a watermark
#: of a directory of a ring is 9 levels deep; 64 leaves room for any real one)
MAX_DOC_DEPTH = 64
#: ring tokens (vnodes x weights summed over the shards, or explicit tokens);
#: each costs about 200 bytes and a hash while the ring is built
MAX_RING_TOKENS = 1 << 22
#: Maglev lookup-table slots (a prime at most this)
MAX_MAGLEV_TABLE = 1 << 24
#: buckets of a BucketRouter (its placement, or bucket_count in from_ranges)
MAX_BUCKETS = 1 << 24
#: ranges of a RangeRouter built from a sample
MAX_RANGES = 1 << 20
#: residue classes a planner enumerates when comparing two bucket tables
MAX_RESIDUES = 1 << 22
#: table entries (tokens, slots, buckets, remainders) one document may
#: imply in all, summed over the routers it nests (4 bytes each in the
#: finished router)
MAX_DOC_ENTRIES = 1 << 26

# the entries left to the document being loaded (None: not loading one)
_BUDGET: ContextVar[list[int] | None] = ContextVar("shardhash_document_budget", default=None)


def check_size(n: int, limit: int, what: str) -> int:
    """``n`` if it is at most ``limit``, else a ValueError naming ``what``."""
    if n > limit:
        raise ValueError(f"{what}: {n:,} is more than the limit of {limit:,}")
    return n


def reserve(n: int, limit: int, what: str) -> int:
    """:func:`check_size`, and while a document is being loaded
    (:func:`document_budget`), also take ``n`` entries from its budget of
    :data:`MAX_DOC_ENTRIES`.

    >>> with document_budget():
    ...     _ = reserve(MAX_DOC_ENTRIES, MAX_DOC_ENTRIES, "slots")
    ...     _ = reserve(1, MAX_DOC_ENTRIES, "tokens")
    Traceback (most recent call last):
    ...
    ValueError: tokens: the document implies more than 67,108,864 table entries in all
    """
    check_size(n, limit, what)
    left = _BUDGET.get()
    if left is not None:
        if n > left[0]:
            raise ValueError(f"{what}: the document implies more than {MAX_DOC_ENTRIES:,} "
                             "table entries in all")
        left[0] -= n
    return n


@contextmanager
def document_budget() -> Iterator[None]:
    """Count what the routers built inside the block cost against one
    document's budget (nested blocks share the outer one)."""
    if _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set([MAX_DOC_ENTRIES])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def check_depth(doc: Any, where: str = "router document", limit: int = MAX_DOC_DEPTH) -> None:
    """ValueError when ``doc`` nests lists/dicts deeper than ``limit``.

    Walks without recursion, so that a hostile document cannot turn into a
    RecursionError (here, or later when an error message repr()s it).

    >>> check_depth({"a": [[1]]})
    >>> check_depth([[[[1]]]], limit=3)
    Traceback (most recent call last):
    ...
    ValueError: router document nests lists/objects more than 3 deep
    """
    stack: list[tuple[Any, int]] = [(doc, 1)]
    seen: dict[int, int] = {}  # id -> shallowest depth walked (shared objects once)
    while stack:
        obj, d = stack.pop()
        if isinstance(obj, dict):
            children: Any = obj.values()
        elif isinstance(obj, (list, tuple)):
            children = obj
        else:
            continue
        if d > limit:
            raise ValueError(f"{where} nests lists/objects more than {limit} deep")
        if seen.get(id(obj), limit + 1) <= d:
            continue
        seen[id(obj)] = d
        for c in children:
            if isinstance(c, (dict, list, tuple)):
                stack.append((c, d + 1))


def loads(text: str, where: str = "router document") -> Any:
    """``json.loads`` for documents: too deep a nesting is a ValueError (the
    JSON parser itself would raise RecursionError), as is invalid JSON.

    >>> loads('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> loads("[" * 100000)
    Traceback (most recent call last):
    ...
    ValueError: router document nests lists/objects more than 64 deep
    """
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError(f"{where} nests lists/objects more than {MAX_DOC_DEPTH} deep") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where} is not valid JSON: {e}") from None
    check_depth(doc, where)
    return doc
