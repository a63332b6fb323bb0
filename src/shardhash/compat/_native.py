"""The compiled bindings of the compatibility modes, under one name.

One binding module per system does the work -- ``_native_redis``,
``_native_cassandra``, ``_native_ketama`` (ketama and twemproxy),
``_native_vitess``, ``_native_mongo``, ``_native_postgres`` (PostgreSQL and
Citus), ``_native_guava`` -- on the shared key-intake layer
:mod:`shardhash._intake` (keys as Arrow-style ``(data, offsets)``, keys read
in place from lists, the threaded list pipeline) and the shared plumbing of
``_native_base``.  This module re-exports them for the compat modules, the
tests and the benchmarks.  The public API is in the modules of
:mod:`shardhash.compat`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardhash._intake import (
    find_byte,
    first_not_ascii_str,
    first_not_bytes_like,
    first_not_type,
    first_of_type,
    list_walk_floor,
    list_walk_floor_refcounted,
    pack_keys,
)

from . import _native_cassandra, _native_postgres, _native_redis, _native_vitess
from ._native_cassandra import (
    CassandraKeys,
    cassandra_kernels,
    cassandra_ring_index,
    cassandra_ring_owner,
    cassandra_token,
    cassandra_token_bigint,
    cassandra_token_cql,
    cassandra_token_int,
    cassandra_token_offsets,
    cassandra_token_seq,
    token,
    token_small,
)
from ._native_cassandra import (
    _cassandra_token_offsets_with as _cassandra_token_offsets_with,
)
from ._native_guava import guava_consistent_hash, guava_consistent_hash_array
from ._native_ketama import (
    KetamaKeys,
    ketama_bucket_index,
    ketama_hash,
    ketama_hash_offsets,
    ketama_lookup,
    ketama_route_offsets,
    md5,
    twemproxy_fnv1a_64,
)
from ._native_mongo import (
    MongoKeys,
    mongo_double_to_long,
    mongo_hash_double_array,
    mongo_hash_int64,
    mongo_hash_int64_array,
)
from ._native_postgres import (
    HASH_PARTITION_SEED,
    PG_CODES,
    CitusKeys,
    PgPartitionKeys,
    combine64,
    fixed_32,
    fixed_extended,
    float8_32,
    float8_32_array,
    float8_extended,
    float8_extended_array,
    fold_int8,
    hash_bytes,
    hash_bytes_extended,
    hash_combine64,
    hash_extended,
    hash_extended_small,
    hash_uint32,
    hash_uint32_extended,
    int_32,
    int_extended,
    remainder,
    varlen_32,
    varlen_extended,
)
from ._native_redis import (
    RedisKeys,
    crc16_xmodem,
    keyslot,
    keyslot_small,
    redis_keyslot,
    redis_keyslot_offsets,
    redis_keyslot_seq,
)
from ._native_vitess import (
    VitessKeys,
    des_decrypt_zero_key,
    des_encrypt_zero_key,
    des_encrypt_zero_key_array,
    vitess_xxhash_seq,
    xxh64,
    xxh64_decimal_int64,
    xxh64_kernels,
    xxh64_offsets,
)
from ._native_vitess import (
    _xxh64_offsets_with as _xxh64_offsets_with,
)

__all__ = [
    "pack_keys", "cassandra_token_seq", "redis_keyslot_seq", "list_walk_floor", "list_walk_floor_refcounted",
    "crc16_xmodem", "redis_keyslot", "keyslot", "keyslot_small", "redis_keyslot_offsets", "RedisKeys",
    "cassandra_token", "token", "token_small", "cassandra_token_offsets", "cassandra_token_bigint",
    "cassandra_token_int", "cassandra_token_cql", "cassandra_ring_index", "CassandraKeys", "md5", "ketama_hash",
    "twemproxy_fnv1a_64", "ketama_bucket_index", "ketama_hash_offsets", "ketama_route_offsets",
    "ketama_lookup", "KetamaKeys", "des_encrypt_zero_key", "des_decrypt_zero_key", "xxh64",
    "des_encrypt_zero_key_array", "xxh64_offsets", "xxh64_decimal_int64", "VitessKeys",
    "mongo_hash_int64", "mongo_double_to_long", "mongo_hash_int64_array", "mongo_hash_double_array",
    "MongoKeys", "hash_extended", "hash_extended_small", "PgPartitionKeys", "CitusKeys",
    "hash_uint32_extended", "hash_uint32", "fold_int8", "hash_combine64", "hash_bytes_extended",
    "hash_bytes", "float8_extended", "float8_32", "int_extended", "int_32", "float8_extended_array",
    "float8_32_array", "fixed_extended", "fixed_32", "varlen_extended", "varlen_32", "combine64",
    "remainder", "guava_consistent_hash", "guava_consistent_hash_array", "PG_CODES",
    "HASH_PARTITION_SEED", "simd_kernels", "cassandra_kernels", "xxh64_kernels", "vitess_xxhash_seq",
    "cassandra_ring_owner", "first_not_bytes_like", "first_not_type", "first_of_type", "first_not_ascii_str",
    "find_byte",
]


def simd_kernels() -> dict[str, str]:
    """The vector kernels this build and this CPU run for variable-length
    keys, by system: ``{"cassandra": "avx512", "avx2" or "scalar",
    "postgres": "avx2" or "scalar", "vitess": "avx512" or "scalar"}`` (the
    answers are the same either way; for benchmark reports and bug
    reports)."""
    return {"cassandra": _native_cassandra._simd_kernel(),
            "vitess": _native_vitess._simd_kernel(),
            "postgres": _native_postgres._simd_kernel()}


def _set_fallbacks(*, keyslot: Callable[[Any], int] | None = None, token: Callable[[Any], int] | None = None,
                   hash_extended: Callable[..., int] | None = None,
                   pg_type_codes: dict[str, str] | None = None) -> None:
    """The Python functions the one-key bindings hand every key they do not
    take in C to (each set by its compat module), and the PostgreSQL type
    names hash_extended takes."""
    if keyslot is not None:
        _native_redis._set_fallback(keyslot)
    if token is not None:
        _native_cassandra._set_fallback(token)
    if hash_extended is not None or pg_type_codes is not None:
        _native_postgres._set_fallback(hash_extended, pg_type_codes)
