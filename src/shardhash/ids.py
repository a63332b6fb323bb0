"""64-bit ids that carry their bucket: routing one needs no lookup.

An id is a non-negative 64-bit signed integer (it fits a ``BIGINT``) made of,
from the most significant bit down::

    0 | time (ms since the layout's epoch) | sequence | worker | bucket

* ``time``: milliseconds since ``epoch_ms`` (Unix ms), ``time_bits`` wide;
* ``sequence``: a per-generator counter, reset every millisecond;
* ``worker``: the generator's worker number (distinct per process minting
  at once: that is what makes ids unique across processes);
* ``bucket``: the virtual bucket the id lives in; a
  :class:`~shardhash.routing.IdBucketRouter` routes an id by it through its
  bucket placement table, so a migration moves buckets and every id keeps
  routing to its row's shard.

The four widths add up to 63 and are recorded, with the epoch, in a layout
document (``{"format": "shardhash.idlayout/1", ...}``), like a router's.
The bucket sits in the low bits and the sequence above the worker, so the
ids one generator mints strictly increase (whatever buckets they carry) and
sort by time across generators.

>>> from shardhash.ids import IdLayout, IdGenerator
>>> layout = IdLayout(epoch_ms=1_700_000_000_000)
>>> gen = IdGenerator(layout, worker=3, clock=lambda: 1_700_000_000_123)
>>> a, b = gen.next_id(bucket=5), gen.next_id(bucket=2)
>>> a < b, layout.bucket_of(a), layout.bucket_of(b), layout.worker_of(a)
(True, 5, 2, 3)
>>> layout.time_of(a) == 1_700_000_000_123
True

Clock going backwards (an NTP step): a generator never mints an id below
its last one.  When the clock reads earlier than the last id's millisecond
by at most ``max_backwards_ms`` (default 1000), :meth:`IdGenerator.next_id`
waits until the clock catches up; further back, it raises
:class:`ClockWentBackwards` (nothing is minted).  When a millisecond's
sequence runs out, it waits for the next millisecond.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["IdLayout", "IdGenerator", "ClockWentBackwards", "LAYOUT_FORMAT"]

LAYOUT_FORMAT = "shardhash.idlayout/1"
_FIELDS = ("format", "epoch_ms", "time_bits", "sequence_bits", "worker_bits", "bucket_bits")
#: Bounds of each width (bits); they add up to 63.
_BOUNDS = {"time_bits": (32, 60), "sequence_bits": (1, 24), "worker_bits": (0, 20), "bucket_bits": (0, 24)}


class ClockWentBackwards(RuntimeError):
    """The clock reads more than ``max_backwards_ms`` before the last id's
    millisecond: no id was minted (minting one could repeat an id)."""


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, not {v}")
    return v


@dataclass(frozen=True)
class IdLayout:
    """The bit layout of an id (see the module docstring).

    Defaults: 41 bits of milliseconds (69 years from ``epoch_ms``), 7 of
    sequence (128 ids per millisecond and worker), 5 of worker (32 processes)
    and 10 of bucket (1024 buckets)."""

    epoch_ms: int = 1_704_067_200_000  # 2024-01-01T00:00:00Z
    time_bits: int = 41
    sequence_bits: int = 7
    worker_bits: int = 5
    bucket_bits: int = 10

    def __post_init__(self) -> None:
        _int(self.epoch_ms, "epoch_ms", 0, 2**53)
        for name, (lo, hi) in _BOUNDS.items():
            _int(getattr(self, name), name, lo, hi)
        total = self.time_bits + self.sequence_bits + self.worker_bits + self.bucket_bits
        if total != 63:
            raise ValueError(f"time_bits + sequence_bits + worker_bits + bucket_bits must be 63 (the sign bit "
                             f"stays 0), not {total}")

    # ------------------------------------------------------------ fields

    @property
    def buckets(self) -> int:
        """The number of buckets (``2 ** bucket_bits``)."""
        return 1 << self.bucket_bits

    @property
    def workers(self) -> int:
        return 1 << self.worker_bits

    @property
    def _shift_worker(self) -> int:
        return self.bucket_bits

    @property
    def _shift_seq(self) -> int:
        return self.bucket_bits + self.worker_bits

    @property
    def _shift_time(self) -> int:
        return self.bucket_bits + self.worker_bits + self.sequence_bits

    def compose(self, time_ms: int, sequence: int, worker: int, bucket: int) -> int:
        """The id of these fields (``time_ms``: Unix milliseconds)."""
        t = _int(time_ms, "time_ms", self.epoch_ms, self.epoch_ms + (1 << self.time_bits) - 1) - self.epoch_ms
        s = _int(sequence, "sequence", 0, (1 << self.sequence_bits) - 1)
        w = _int(worker, "worker", 0, self.workers - 1)
        b = _int(bucket, "bucket", 0, self.buckets - 1)
        return (t << self._shift_time) | (s << self._shift_seq) | (w << self._shift_worker) | b

    def _check_id(self, id_: Any) -> int:
        if isinstance(id_, bool) or not isinstance(id_, int):
            try:
                import numpy as np

                if isinstance(id_, np.integer):
                    id_ = int(id_)
                else:
                    raise TypeError
            except TypeError:
                raise TypeError(f"an id is an int, not {type(id_).__name__}") from None
        if not 0 <= id_ < 2**63:
            raise ValueError(f"an id is in 0..2**63-1, not {id_}")
        return int(id_)

    def bucket_of(self, id_: int) -> int:
        return self._check_id(id_) & (self.buckets - 1)

    def worker_of(self, id_: int) -> int:
        return (self._check_id(id_) >> self._shift_worker) & (self.workers - 1)

    def sequence_of(self, id_: int) -> int:
        return (self._check_id(id_) >> self._shift_seq) & ((1 << self.sequence_bits) - 1)

    def time_of(self, id_: int) -> int:
        """The Unix millisecond the id was minted in."""
        return (self._check_id(id_) >> self._shift_time) + self.epoch_ms

    # ---------------------------------------------------------- document

    def to_dict(self) -> dict[str, Any]:
        return {"format": LAYOUT_FORMAT, "epoch_ms": self.epoch_ms, "time_bits": self.time_bits,
                "sequence_bits": self.sequence_bits, "worker_bits": self.worker_bits,
                "bucket_bits": self.bucket_bits}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any] | str) -> IdLayout:
        """A layout from its document (or its JSON text); ValueError naming a
        bad or unknown field."""
        if isinstance(doc, str):
            doc = json.loads(doc)
        if not isinstance(doc, Mapping):
            raise TypeError(f"an id layout document is a mapping, not {type(doc).__name__}")
        if doc.get("format") != LAYOUT_FORMAT:
            raise ValueError(f"id layout document: format must be {LAYOUT_FORMAT!r}, not {doc.get('format')!r}")
        for k in doc:
            if k not in _FIELDS:
                raise ValueError(f"id layout document: unknown field {k!r} (fields: {', '.join(_FIELDS)})")
        missing = [k for k in _FIELDS if k not in doc]
        if missing:
            raise ValueError(f"id layout document: missing field(s) {', '.join(missing)}")
        try:
            return cls(doc["epoch_ms"], doc["time_bits"], doc["sequence_bits"], doc["worker_bits"],
                       doc["bucket_bits"])
        except TypeError as e:
            raise ValueError(f"id layout document: {e}") from None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class IdGenerator:
    """Mints the ids of one process: ``IdGenerator(layout, *, worker,
    clock=None, max_backwards_ms=1000)``.

    ``worker`` must differ between every process (or generator) minting at
    the same time under one layout.  Thread-safe; strictly increasing.
    ``clock`` (default: the system clock) returns Unix milliseconds.  A
    generator refuses to mint in a process forked from the one that made it
    (the child would repeat the parent's ids): make a new one there, with
    its own worker number."""

    def __init__(self, layout: IdLayout, *, worker: int, clock: Callable[[], int] | None = None,
                 max_backwards_ms: int = 1000) -> None:
        if not isinstance(layout, IdLayout):
            raise TypeError(f"layout must be an IdLayout, not {type(layout).__name__}")
        self.layout = layout
        self.worker = _int(worker, "worker", 0, layout.workers - 1)
        self.max_backwards_ms = _int(max_backwards_ms, "max_backwards_ms", 0, 3_600_000)
        self._clock = clock or _now_ms
        self._lock = threading.Lock()
        self._last_ms = -1
        self._seq = 0
        self._next_bucket = 0
        self._pid = os.getpid()

    def _tick(self) -> tuple[int, int]:
        """(millisecond, sequence) of the next id; under the lock."""
        max_seq = (1 << self.layout.sequence_bits) - 1
        while True:
            now = int(self._clock())
            if now < self._last_ms:
                behind = self._last_ms - now
                if behind > self.max_backwards_ms:
                    raise ClockWentBackwards(f"the clock reads {behind} ms before the last id's millisecond "
                                             f"(more than max_backwards_ms={self.max_backwards_ms}): no id minted")
                time.sleep(min(behind, 10) / 1000)
                continue
            if now == self._last_ms:
                if self._seq < max_seq:
                    self._seq += 1
                    return now, self._seq
                time.sleep(0.0001)  # (this millisecond's sequence is used up)
                continue
            self._last_ms, self._seq = now, 0
            return now, 0

    def next_id(self, bucket: int | None = None) -> int:
        """A new id in ``bucket`` (default: the buckets in turn, so that ids
        spread evenly).  To keep rows together, mint a child's id in its
        parent's bucket: ``next_id(layout.bucket_of(parent_id))``."""
        if os.getpid() != self._pid:
            raise RuntimeError("this IdGenerator was made in another process (a fork): make a new one here, "
                               "with a worker number of its own")
        if bucket is not None:
            _int(bucket, "bucket", 0, self.layout.buckets - 1)
        with self._lock:
            if bucket is None:
                bucket = self._next_bucket
                self._next_bucket = (bucket + 1) % self.layout.buckets
            ms, seq = self._tick()
        return self.layout.compose(ms, seq, self.worker, bucket)
