"""The list kernels on helper threads (the plain-C pipeline, _core/common/sh_pipe.c):
Redis slots, Cassandra tokens and Vitess keyspace ids of a list equal the
one-thread answers whatever the thread count, across many pipeline chunks and
slot reuses, with keys that need converting on the way; an error part-way
names the key and leaves no thread behind."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash.compat import _native

CHUNK = 8192            # SH_PIPE_CHUNK
N = CHUNK * 8 * 2 + 123  # every slot used twice, a partial last chunk


def _keys() -> list[Any]:
    keys: list[Any] = []
    for i in range(N):
        r = i % 7
        if r == 5:
            keys.append(f"é{i}")                 # UTF-8 kept outside the str
        elif r == 6 and i % 3 == 0:
            keys.append(bytearray(b"ba%d" % i))  # converted to bytes on the way
        else:
            keys.append(b"k%d" % i if r % 2 else f"s{i}")
    return keys


def _vitess(keys: Any, threads: int | None = None) -> Any:
    return _native.vitess_xxhash_seq(keys, lambda v: str(v).encode(), threads)


SEQ: dict[str, Callable[..., Any]] = {
    "redis": _native.redis_keyslot_seq,
    "cassandra": _native.cassandra_token_seq,
    "vitess": _vitess,
}


@pytest.mark.parametrize("kind", sorted(SEQ))
def test_threads_give_the_one_thread_answer(kind: str) -> None:
    fn = SEQ[kind]
    keys = _keys()
    want = fn(keys, threads=1)
    packed: dict[str, Callable[[], Any]] = {
        "redis": lambda: _native.redis_keyslot_offsets(*_native.pack_keys(keys)),
        "cassandra": lambda: _native.cassandra_token_offsets(*_native.pack_keys(keys)),
        "vitess": lambda: _native.xxh64_offsets(*_native.pack_keys(keys), swap=True)}
    np.testing.assert_array_equal(want, packed[kind]())
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(fn(keys, threads=threads), want)
        np.testing.assert_array_equal(fn(tuple(keys), threads=threads), want)


@pytest.mark.parametrize("kind", sorted(SEQ))
def test_an_error_part_way_names_the_key_and_joins_the_helpers(kind: str) -> None:
    keys: list[Any] = [b"k%d" % i for i in range(N)]
    bad = CHUNK * 9 + 17
    keys[bad] = object() if kind != "vitess" else _Unconvertible()
    before = _os_threads()
    with pytest.raises((TypeError, ValueError), match=f"key at position {bad}"):
        SEQ[kind](keys, threads=4)
    assert _os_threads() == before  # the helpers are plain OS threads, joined before the error


def _os_threads() -> int | None:
    """The process's OS threads (Linux), None elsewhere."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


class _Unconvertible:
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_threads_is_checked(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="threads"):
        _native.redis_keyslot_seq([b"a"], threads=bad)
