"""Loading the ``params`` of a compatibility router's document: every error
names the field (``params.<field>``) and, for a malformed entry, its position."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..routing.base import _check_shard_id, _describe


@contextmanager
def doc_field(name: str) -> Iterator[None]:
    """Prefix a TypeError or ValueError raised in the block (typically by the
    router's constructor checking the field's value) with ``params.<name>: ``."""
    try:
        yield
    except TypeError as e:
        raise TypeError(f"params.{name}: {e}") from None
    except ValueError as e:
        raise ValueError(f"params.{name}: {e}") from None


def int_pairs(value: Any, where: str, pair: str) -> list[tuple[int, int]]:
    """A document's list of ``[a, b]`` int pairs (``pair`` names the two),
    each malformed entry refused with its position (``where[i]``)."""
    if not isinstance(value, list):
        raise TypeError(f"{where} must be a list of [{pair}] pairs, not {_describe(value)} "
                        f"(type {type(value).__name__})")
    out = []
    for i, p in enumerate(value):
        if not isinstance(p, list) or len(p) != 2:
            raise TypeError(f"{where}[{i}] must be a [{pair}] pair, not {_describe(p)}")
        for j, v in enumerate(p):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{where}[{i}][{j}] must be an int, not {_describe(v)} (type {type(v).__name__})")
        out.append((p[0], p[1]))
    return out


def int_list(value: Any, where: str) -> list[int]:
    """A document's list of ints, a malformed entry refused with its position."""
    if not isinstance(value, list):
        raise TypeError(f"{where} must be a list of ints, not {_describe(value)} (type {type(value).__name__})")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{where}[{i}] must be an int, not {_describe(v)} (type {type(v).__name__})")
    return list(value)


def node_map(value: Any, where: str, shards: tuple[str, ...], what: str) -> Mapping[str, Any]:
    """A document's object mapping exactly the document's shards to ``what``."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{where} must be an object mapping each shard to its {what}, "
                        f"not {_describe(value)} (type {type(value).__name__})")
    if set(value) != set(shards):
        missing = sorted(set(shards) - set(value), key=str)
        extra = sorted(set(value) - set(shards), key=str)
        raise ValueError(f"{where} must map exactly the document's shards to their {what} "
                         f"(missing: {missing}, not a shard: {extra})")
    return value


def doc_shards(shards: tuple[Any, ...]) -> tuple[str, ...]:
    """The document's ``shards``: at least one, each a non-empty str, refused
    with its position."""
    if not shards:
        raise ValueError("shards: a router needs at least one shard")
    for i, s in enumerate(shards):
        _check_shard_id(s, f"shards[{i}]")
    return shards


def raw_doc_shards(shards: tuple[Any, ...], key_prefix: int | None, router: str) -> tuple[str, ...]:
    """:func:`doc_shards` for a router that places the whole raw key: a
    document with a ``key_prefix`` is refused (ValueError naming ``router``)."""
    if key_prefix is not None:
        raise ValueError(f"{router} has no key_prefix")
    return doc_shards(shards)
