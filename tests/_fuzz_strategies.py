"""Hypothesis strategies for the fuzz suite (tests/test_fuzz.py): routers,
router documents, keys of every kind (including hostile user objects),
numpy layouts of a 1-D array.

``SHARDHASH_HYPOTHESIS=thorough`` (tests/conftest.py) runs every fuzz test
with 20x the examples.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from hypothesis import strategies as st

import shardhash as sh

# ------------------------------------------------------------------ shards, hashers

shard_ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
shard_lists = st.lists(shard_ids, min_size=1, max_size=9, unique=True)
hashers = st.sampled_from(sh.ALGORITHMS).flatmap(
    lambda a: st.builds(sh.Hasher, st.just(a),
                        seed=st.just(0) if a.startswith("fnv") else st.one_of(st.just(0), st.integers(0, 2**32 - 1))))
u64 = st.integers(0, 2**64 - 1)


def weights_for(shards: list[str]) -> st.SearchStrategy[dict[str, float] | None]:
    return st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(shards), st.floats(0.05, 8.0), max_size=len(shards)),
    )


@st.composite
def hash_routers(draw: st.DrawFn) -> sh.Router:
    """A router over hashes, of any strategy, with random parameters."""
    shards = draw(shard_lists)
    hz = draw(hashers)
    kind = draw(st.sampled_from(["jump", "modulo", "ring", "ring_tokens", "rendezvous", "maglev",
                                 "bucket", "hash_range", "directory"]))
    if kind == "jump":
        return sh.JumpRouter(shards, hasher=hz)
    if kind == "modulo":
        return sh.ModuloRouter(shards, hasher=hz)
    if kind == "ring":
        return sh.RingRouter(shards, vnodes=draw(st.integers(1, 24)), weights=draw(weights_for(shards)),
                             hasher=hz, collisions="first")
    if kind == "ring_tokens":
        toks = draw(st.lists(u64, min_size=len(shards), max_size=len(shards) * 3, unique=True))
        tokens = {s: [toks[i]] for i, s in enumerate(shards)}
        for j, t in enumerate(toks[len(shards):]):
            tokens[shards[j % len(shards)]].append(t)
        return sh.RingRouter(shards, tokens=tokens, hasher=hz)
    if kind == "rendezvous":
        return sh.RendezvousRouter(shards, weights=draw(weights_for(shards)), hasher=hz)
    if kind == "maglev":
        size = draw(st.sampled_from([p for p in (11, 13, 101, 211, 1009) if p >= len(shards)]))
        return sh.MaglevRouter(shards, table_size=size, weights=draw(weights_for(shards)), hasher=hz)
    if kind == "bucket":
        placement = draw(st.lists(st.sampled_from(shards), min_size=1, max_size=64))
        used = list(dict.fromkeys(placement))
        return sh.BucketRouter(used, placement, hasher=hz)
    if kind == "hash_range":
        splits = sorted(draw(st.sets(st.integers(1, 2**64 - 1), max_size=6)))
        owners = [draw(st.sampled_from(shards)) for _ in range(len(splits) + 1)]
        return sh.HashRangeRouter(splits, owners, hasher=hz)
    base = sh.JumpRouter(shards, hasher=hz)
    over = draw(st.dictionaries(st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=5)),
                                st.sampled_from(shards + ["extra"]), max_size=4))
    try:
        return sh.DirectoryRouter(base, over)
    except ValueError:  # two override keys with one 32-bit hash
        return base


# ------------------------------------------------------------------ keys

int_keys = st.one_of(st.integers(-(2**63), 2**64 - 1), st.integers())
str_keys = st.text(max_size=40)
bytes_keys = st.binary(max_size=40)
plain_keys = st.one_of(int_keys, str_keys, bytes_keys, st.uuids(),
                       st.tuples(int_keys, str_keys), st.tuples(bytes_keys))
# what hashing must refuse, with the same exception type, scalar and batch
odd_keys = st.one_of(st.booleans(), st.floats(allow_nan=True), st.none(), st.just([1]),
                     st.just({"a": 1}), st.just(object()), st.just(1j),
                     st.just(np.float64(1.5)), st.just("\ud800"))
any_keys = st.one_of(plain_keys, plain_keys, odd_keys,
                     st.sampled_from([np.int64(5), np.uint64(2**64 - 1), np.int8(-3), np.str_("x"),
                                      np.bytes_(b"y"), True, uuid.UUID(int=0)]))


class Hostile:
    """A key whose conversions run user code that mutates the list being
    hashed or routed (the list is ``victim``)."""

    def __init__(self, victim: list[Any], action: str, value: Any = "k") -> None:
        self.victim = victim
        self.action = action
        self.value = value

    def _act(self) -> None:
        v = self.victim
        if self.action == "clear":
            v.clear()
        elif self.action == "shrink":
            del v[1:]
        elif self.action == "grow":
            v.extend([b"x" * 50] * 50)
        elif self.action == "replace":
            for i in range(len(v)):
                v[i] = 12345
        elif self.action == "raise":
            raise ValueError("user code failed")

    def __str__(self) -> str:
        self._act()
        return str(self.value)

    def __bytes__(self) -> bytes:
        self._act()
        return str(self.value).encode()

    def __int__(self) -> int:
        self._act()
        return 7

    def __index__(self) -> int:
        self._act()
        return 7

    def __eq__(self, other: object) -> bool:
        self._act()
        return False

    def __hash__(self) -> int:
        return 1

    def __lt__(self, other: object) -> bool:
        self._act()
        return False

    def __len__(self) -> int:
        self._act()
        return 1

    def __iter__(self) -> Any:
        self._act()
        return iter(())


hostile_actions = st.sampled_from(["clear", "shrink", "grow", "replace", "raise", "none"])


# ------------------------------------------------------------------ numpy layouts


def layouts(a: np.ndarray) -> list[np.ndarray]:
    """The same 1-D values in other layouts: strided, reversed, big-endian,
    read-only, non-contiguous slices of a 2-D array, a masked array with no
    masked entries."""
    out = [a, a[::-1][::-1]]
    twice = np.repeat(a, 2)
    out.append(twice[::2])
    if a.dtype.kind in "iu" and a.dtype.itemsize > 1:
        out.append(a.astype(a.dtype.newbyteorder(">")))
    ro = a.copy()
    ro.setflags(write=False)
    out.append(ro)
    if a.size:
        out.append(np.stack([a, a], axis=1)[:, 1])
    out.append(np.ma.MaskedArray(a, mask=np.zeros(a.shape, bool)))
    return out
