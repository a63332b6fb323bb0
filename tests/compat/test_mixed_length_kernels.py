"""The batch kernels over variable-length keys against the pure-Python
references, on keys of every length mixed together, from Python lists, tuples,
numpy object arrays and Arrow arrays (including sliced Arrow arrays, whose
keys do not start at the beginning of the data buffer).

The C kernels cut a key's tail out of the 16 bytes that end where the key
ends (reading before the key where an Arrow buffer allows it, otherwise
assembling it from loads inside the key) and sign-extend Cassandra's tail
bytes a word at a time; Python sequences are read in place, a pointer per
key.  Each of these depends on the length and the position of a key, which
is what these tests vary.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardhash._reference import cassandra as cassandra_ref
from shardhash._reference import postgres as pg_ref
from shardhash._reference import redis as redis_ref
from shardhash.compat import cassandra, redis
from shardhash.compat import postgres as pg
from tests._support import examples

pa = pytest.importorskip("pyarrow")

# bytes that exercise the length-dependent paths: >= 0x80 (Cassandra's
# sign-extended tail), the hash-tag characters and their neighbours ('z',
# '|'), NUL (the zero-byte search), anything else
_tag_bytes = st.sampled_from(b"{}z|\x00\x7a\x7b\x7c\x7d\x80\xff\x01a")
_any_bytes = st.integers(0, 255)
key = st.lists(st.one_of(_tag_bytes, _any_bytes), max_size=80).map(bytes)
keys = st.lists(key, max_size=60)
SETTINGS = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _layouts(ks: list[bytes], pad: list[bytes]) -> list[object]:
    """The same keys as a list, a tuple, a numpy object array, an Arrow binary
    and large_binary array, and a slice of a longer Arrow array."""
    sliced = pa.array(pad + ks + pad, pa.binary()).slice(len(pad), len(ks))
    return [ks, tuple(ks), np.array(ks + [b""], dtype=object)[: len(ks)],
            pa.array(ks, pa.binary()), pa.array(ks, pa.large_binary()), sliced]


@SETTINGS
@given(keys, st.lists(key, max_size=4))
def test_cassandra_token_array_matches_the_reference(ks: list[bytes], pad: list[bytes]) -> None:
    want = [cassandra_ref.cassandra_token(k) for k in ks]
    for data in _layouts(ks, pad):
        assert cassandra.token_array(data).tolist() == want
    assert cassandra.token_array(ks, threads=2).tolist() == want


@SETTINGS
@given(keys, st.lists(key, max_size=4))
def test_redis_keyslot_array_matches_the_reference(ks: list[bytes], pad: list[bytes]) -> None:
    want = [redis_ref.redis_keyslot(k) for k in ks]
    for data in _layouts(ks, pad):
        assert redis.keyslot_array(data).tolist() == want
    assert redis.keyslot_array(ks, threads=2).tolist() == want


@SETTINGS
@given(st.lists(st.text(st.sampled_from("{}az|é€\U0001f600:"), max_size=30), max_size=40))
def test_redis_keyslot_array_of_text_matches_the_reference(ks: list[str]) -> None:
    want = [redis_ref.redis_keyslot(k.encode()) for k in ks]
    assert redis.keyslot_array(ks).tolist() == want
    assert redis.keyslot_array(pa.array(ks, pa.string())).tolist() == want


@settings(SETTINGS, max_examples=examples(50))
@given(keys, st.lists(key, max_size=4), st.sampled_from([0, pg.HASH_PARTITION_SEED, 1, 2**64 - 1]))
def test_postgres_varlen_kernels_match_the_reference(ks: list[bytes], pad: list[bytes], seed: int) -> None:
    want_ext = [pg_ref.hash_bytes_extended(k, seed) for k in ks]
    want_32 = [pg_ref._signed32(pg_ref.hash_bytes(k)) for k in ks]
    for data in (ks, pa.array(pad + ks + pad, pa.binary()).slice(len(pad), len(ks))):
        assert pg.hash_extended_array(data, "bytea", seed).tolist() == want_ext
        assert pg.hash32_array(data, "bytea").tolist() == want_32


def test_every_length_at_every_offset() -> None:
    # Deterministic sweep: every length 0..70, each key after a prefix of
    # every length 0..17 in the same Arrow buffer.
    rng = np.random.default_rng(5)
    ks = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in range(71)]
    want_t = [cassandra_ref.cassandra_token(k) for k in ks]
    want_s = [redis_ref.redis_keyslot(k) for k in ks]
    for lead in range(18):
        arr = pa.array([b"{" * lead] + ks, pa.binary()).slice(1)
        assert cassandra.token_array(arr).tolist() == want_t
        assert redis.keyslot_array(arr).tolist() == want_s


_GROUP_SHAPES = ["one long key per group", "uniform long", "short and empty", "ragged"]


@pytest.mark.parametrize("shape", _GROUP_SHAPES)
def test_cassandra_groups_of_eight_keys(shape: str) -> None:
    # The vector kernel hashes eight keys side by side for as many block
    # rounds as the group's longest key has, and hands a group whose lanes
    # would mostly idle (one long key among short ones) to the scalar kernel:
    # both kinds of group, keys of every length class, high bytes.
    rng = np.random.default_rng(_GROUP_SHAPES.index(shape))
    n = 803  # not a multiple of eight: the last keys take the scalar path
    if shape == "one long key per group":
        lens = [1000 + i % 97 if i % 8 == 3 else int(rng.integers(0, 40)) for i in range(n)]
    elif shape == "uniform long":
        lens = [300] * n
    elif shape == "short and empty":
        lens = [int(rng.integers(0, 16)) for _ in range(n)]
    else:
        lens = [int(rng.choice([0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 79, 80, 81, 200])) for _ in range(n)]
    ks = [bytes(rng.integers(0x70, 0x100, m, dtype=np.uint8)) for m in lens]
    want = [cassandra_ref.cassandra_token(k) for k in ks]
    for data in _layouts(ks, [b"x" * 5]):
        assert cassandra.token_array(data).tolist() == want
    for threads in (1, 2):
        assert cassandra.token_array(ks, threads=threads).tolist() == want


@SETTINGS
@given(keys, st.lists(key, max_size=4))
def test_every_cassandra_kernel_matches_the_reference(ks: list[bytes], pad: list[bytes]) -> None:
    # token_array runs the kernel chosen for this CPU; here every kernel the
    # CPU can run (scalar, AVX2, AVX-512) on the same keys, with padding keys
    # before them in the buffer
    from shardhash.compat import _native

    want = [cassandra_ref.cassandra_token(k) for k in ks]
    data, offsets = _native.pack_keys(pad + ks)
    for kernel in _native.cassandra_kernels():
        got = _native._cassandra_token_offsets_with(kernel, data, offsets[len(pad):])
        assert got.tolist() == want, kernel


def test_an_unknown_cassandra_kernel_is_refused() -> None:
    from shardhash.compat import _native

    data, offsets = _native.pack_keys([b"a"])
    with pytest.raises(ValueError, match="not available"):
        _native._cassandra_token_offsets_with("neon", data, offsets)


def test_simd_kernels_names_the_kernels() -> None:
    from shardhash.compat import _native

    kinds = _native.simd_kernels()
    assert kinds.keys() == {"cassandra", "postgres", "vitess"}
    assert kinds["cassandra"] in ("avx512", "avx2", "scalar") and kinds["postgres"] in ("avx2", "scalar")
    assert kinds["vitess"] in ("avx512", "scalar")


def test_sequence_keys_stay_alive_and_unchanged() -> None:
    # The list path reads pointers into the keys themselves: keys that only
    # the list owns, str keys (their cached UTF-8 form), bytearray and
    # memoryview keys (converted), and the caller's list is left as it was.
    ks: list[object] = [bytes([i % 256]) * (i % 45) for i in range(3000)]
    ks += ["tëxt-{é}" * (i % 5) for i in range(300)]
    ks += [bytearray(b"{ba}x"), memoryview(b"mv-key-0123456789")]
    before = list(ks)
    raw = [k.encode() if isinstance(k, str) else bytes(k)
           for k in ks if isinstance(k, (str, bytes, bytearray, memoryview))]
    assert len(raw) == len(ks)
    gc.collect()
    assert cassandra.token_array(ks).tolist() == [cassandra_ref.cassandra_token(k) for k in raw]
    assert redis.keyslot_array(ks).tolist() == [redis_ref.redis_keyslot(k) for k in raw]
    assert ks == before


@pytest.mark.parametrize("bad", [1, None, 2.5, object()])
def test_a_bad_key_is_named_by_its_position(bad: object) -> None:
    ks: list[object] = [b"a"] * 1500 + [bad] + [b"b"]
    with pytest.raises(TypeError, match="position 1500"):
        cassandra.token_array(ks)
    with pytest.raises(TypeError, match="position 1500"):
        redis.keyslot_array(ks)


class _Bytes(bytes):
    pass


class _Str(str):
    pass


def test_list_walk_mixed_kinds_across_chunks() -> None:
    # The C walk takes exact bytes and compact-ASCII str keys; subclasses and
    # non-ASCII str (whose UTF-8 lies outside the object) take the general
    # rules, anywhere in a 256-key chunk, before and after the walk resumes.
    rng = np.random.default_rng(18)
    ks: list[bytes | str] = []
    for i in range(2000):
        n = int(rng.integers(0, 41))
        body = "".join(chr(int(c)) for c in rng.integers(97, 123, n))
        kind = i % 7
        if kind == 0:
            ks.append(body.encode())
        elif kind == 1:
            ks.append(body)
        elif kind == 2:
            ks.append("é{" + body[:3] + "}" + body)
        elif kind == 3:
            ks.append(_Bytes(body.encode()))
        elif kind == 4:
            ks.append(_Str("{" + body))
        elif kind == 5:
            ks.append("€" * (n % 5))
        else:
            ks.append(bytes(rng.integers(0, 256, n, dtype=np.uint8)))
    raw = [k.encode() if isinstance(k, str) else bytes(k) for k in ks]
    want_t = [cassandra_ref.cassandra_token(k) for k in raw]
    want_s = [redis_ref.redis_keyslot(k) for k in raw]
    for seq in (ks, tuple(ks), np.array(ks, dtype=object)):
        assert cassandra.token_array(seq).tolist() == want_t
        assert redis.keyslot_array(seq).tolist() == want_s


def _mixed_kinds(n: int, seed: int) -> list[bytes | str | bytearray | memoryview]:
    rng = np.random.default_rng(seed)
    out: list[bytes | str | bytearray | memoryview] = []
    for i in range(n):
        m = int(rng.integers(0, 45))
        body = bytes(rng.integers(0, 256, m, dtype=np.uint8))
        kind = i % 11
        if kind == 3:
            out.append(body.hex()[:m])  # ASCII str
        elif kind == 5:
            out.append("é€" * (m % 4))  # str whose UTF-8 lies outside it
        elif kind == 7:
            out.append(_Bytes(body))
        elif kind == 9:
            out.append(bytearray(body) if i % 2 else memoryview(body))
        else:
            out.append(body)
    return out


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_list_tokens_on_helper_threads(threads: int) -> None:
    # Two threads or more: the calling thread reads the list chunk by chunk
    # and helper threads hash the chunks (every kind of key, many chunks,
    # a last chunk that is not full), as one thread does.
    ks = _mixed_kinds(25_000 + 37, 181)
    raw = [k.encode() if isinstance(k, str) else bytes(k) for k in ks]
    want = [cassandra_ref.cassandra_token(k) for k in raw[:2000]]
    one = cassandra.token_array(ks, threads=1)
    assert one.tolist()[:2000] == want
    for seq in (ks, tuple(ks), np.array(ks + [b""], dtype=object)[: len(ks)]):
        assert (cassandra.token_array(seq, threads=threads) == one).all()
    small = ks[:5]
    assert cassandra.token_array(small, threads=threads).tolist() == one.tolist()[:5]
    assert cassandra.token_array([], threads=threads).tolist() == []


@pytest.mark.parametrize("at", [0, 1023, 1024, 9000, 20_000])
def test_a_bad_key_on_helper_threads_is_named_by_its_position(at: int) -> None:
    ks: list[object] = [b"k%d" % i for i in range(20_001)]
    ks[at] = 3.5
    with pytest.raises(TypeError, match=f"position {at}"):
        cassandra.token_array(ks, threads=2)
    not_an_int: Any = 2.0
    with pytest.raises(TypeError, match="threads must be an int"):
        cassandra.token_array([b"a"], threads=not_an_int)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        cassandra.token_array([b"a"], threads=0)


def test_list_tokens_while_other_threads_replace_the_keys() -> None:
    # Other threads replace the list's keys with equal new objects (the old
    # ones freed) while the list is hashed on helper threads: every token is
    # still the key's, whichever object was read.
    import threading

    ks = [bytes([i % 251, i % 13]) * (1 + i % 20) for i in range(40_000)]
    want = cassandra.token_array(ks, threads=1)
    stop = threading.Event()

    def replace() -> None:
        i = 0
        while not stop.is_set():
            j = (i * 7919) % len(ks)
            ks[j] = ks[j][:1] + ks[j][1:]  # an equal, new object
            i += 1

    workers = [threading.Thread(target=replace) for _ in range(2)]
    for w in workers:
        w.start()
    try:
        for _ in range(30):
            assert (cassandra.token_array(ks, threads=2) == want).all()
    finally:
        stop.set()
        for w in workers:
            w.join()
