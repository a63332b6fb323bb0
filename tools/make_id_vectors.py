"""Generate the frozen id vectors in tests/vectors/ids/.

``id_bucket.json`` holds id layout documents, the fields of sample ids with
the id each makes, and an ``id_bucket`` router document with the shard index
each id routes to.  The expected values are computed here from the layout as
docs/integrations.md states it (``0 | time | sequence | worker | bucket``,
most significant first; an id routes to ``placement[id mod 2**bucket_bits]``),
with plain integer arithmetic, never by shardhash.ids or the router.

Run once; the file is frozen (refused unless --force when it would change).
``--check`` regenerates it in memory and compares it byte for byte.

    python tools/make_id_vectors.py [--force] [--out DIR]
    python tools/make_id_vectors.py --check [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.make_router_vectors import frozen_main  # noqa: E402

OUT = ROOT / "tests" / "vectors" / "ids"

LAYOUTS = [
    # (epoch_ms, time_bits, sequence_bits, worker_bits, bucket_bits)
    (1_704_067_200_000, 41, 7, 5, 10),   # the default layout
    (1_288_834_974_657, 41, 12, 0, 10),  # Twitter's epoch, no worker field
    (0, 32, 1, 20, 10),
    (1_600_000_000_000, 39, 24, 0, 0),   # no bucket: one bucket
]


def _lcg(x: int) -> int:
    return int((x * 6364136223846793005 + 1442695040888963407) % 2**64)


def layout_case(epoch: int, tb: int, sb: int, wb: int, bb: int) -> dict[str, Any]:
    doc = {"format": "shardhash.idlayout/1", "epoch_ms": epoch, "time_bits": tb, "sequence_bits": sb,
           "worker_bits": wb, "bucket_bits": bb}
    fields = []
    x = 0x9E3779B97F4A7C15 ^ tb ^ (bb << 8)
    tmax, smax, wmax, bmax = 2**tb - 1, 2**sb - 1, 2**wb - 1, 2**bb - 1
    edges = [(0, 0, 0, 0), (tmax, smax, wmax, bmax), (1, 0, 0, bmax), (0, smax, 0, 0), (0, 0, wmax, 0)]
    for t, s, w, b in edges:
        fields.append([epoch + t, s, w, b])
    while len(fields) < 40:
        x = _lcg(x)
        t, s, w, b = x % (tmax + 1), (x >> 7) % (smax + 1), (x >> 29) % (wmax + 1), (x >> 43) % (bmax + 1)
        fields.append([epoch + t, s, w, b])
    ids = [((t - epoch) << (sb + wb + bb)) | (s << (wb + bb)) | (w << bb) | b for t, s, w, b in fields]
    # an id_bucket router over three shards: bucket b -> shard (b * 7 + b // 3) mod 3
    placement = [(b * 7 + b // 3) % 3 for b in range(2**bb)]
    router = {"format": "shardhash.router/1", "type": "id_bucket", "shards": ["s0", "s1", "s2"],
              "params": {"layout": doc, "placement": placement}}
    return {"layout": doc, "fields": fields, "ids": ids, "router": router,
            "routes": [placement[i % 2**bb] for i in ids]}


def all_files() -> dict[str, Any]:
    return {"id_bucket.json": {"format": "time_ms, sequence, worker, bucket -> id; id -> shard index",
                               "cases": [layout_case(*lay) for lay in LAYOUTS]}}


def main(argv: list[str] | None = None) -> int:
    return frozen_main(argv, OUT, all_files)


if __name__ == "__main__":
    sys.exit(main())
