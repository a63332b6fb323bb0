"""Type stubs for shardhash.compat._scalar (one key at a time in C for the
compat routers and their one-key functions)."""

from collections.abc import Callable
from typing import Any

PG_CODES: dict[str, int]

def _set_fallbacks(
    *,
    keyslot: Callable[[Any], int] | None = ...,
    token: Callable[[Any], int] | None = ...,
    hash_extended: Callable[..., int] | None = ...,
    pg_type_codes: dict[str, str] | None = ...,
) -> None: ...
def keyslot(key: bytes | str) -> int: ...
def token(key: bytes) -> int: ...
def hash_extended(value: Any, type: str, seed: int = ...) -> int: ...

class _Keys:
    def capsule(self) -> Any: ...

class RedisKeys(_Keys):
    def __init__(self, table: Any) -> None: ...

class CassandraKeys(_Keys):
    def __init__(self, ring: Any, owners: Any, cql_type: Any) -> None: ...

class KetamaKeys(_Keys):
    def __init__(self, points: Any, owners: Any, index: Any, bits: int, *, upper: bool, fnv: bool,
                 empty_zero: bool, str_all: bool) -> None: ...

class PgPartitionKeys(_Keys):
    def __init__(self, types: Any, table: Any) -> None: ...

class CitusKeys(_Keys):
    def __init__(self, type_name: str, mins: Any, owner: Any) -> None: ...

class VitessKeys(_Keys):
    def __init__(self, starts: Any, owners: Any, xxhash: bool) -> None: ...

class MongoKeys(_Keys):
    def __init__(self, mins: Any, owners: Any) -> None: ...
