"""The ketama continuum of libmemcached, libketama, twemproxy and uhashring,
written plainly (test oracle).

Point counts in each flavour's own arithmetic (float32 where the C code uses
``float``), four points per MD5 digest, and each flavour's tie and search
rule; use :mod:`shardhash.compat.ketama`.  Also libmemcached itself, driven
as an oracle (:func:`build_libmemcached_oracle`).
"""

from __future__ import annotations

import hashlib
import math
import shutil
import struct
import subprocess
from pathlib import Path

__all__ = ["ketama_points", "ketama_route", "LIBMEMCACHED_PROGRAM", "build_libmemcached_oracle", "libmemcached_servers"]


def _md5_words(s: bytes) -> list[int]:
    d = hashlib.md5(s).digest()
    return [int.from_bytes(d[4 * i:4 * i + 4], "little") for i in range(4)]


def _f32(x: float) -> float:
    """Round a double to the nearest float32 (what a C float assignment does)."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def ketama_points(names: list[bytes], weights: list[int], flavor: str) -> list[tuple[int, int]]:
    """The continuum as (point, server index) pairs, unsorted, before ties
    are resolved.  ``names`` are the per-flavour point-name prefixes."""
    n = len(names)
    total = sum(weights)
    out = []
    for idx, (name, w) in enumerate(zip(names, weights)):
        if flavor == "uhashring":
            count = (40 * n * w) // total
        elif flavor == "libketama":
            pct = _f32(_f32(float(w)) / _f32(float(total)))
            count = int(math.floor(_f32(pct * 40.0 * n)))
        else:  # libmemcached, twemproxy: float32 arithmetic throughout
            pct = _f32(_f32(float(w)) / _f32(float(total)))
            prod = _f32(_f32(_f32(pct * 160.0) / 4.0) * _f32(float(n)))
            count = int(math.floor(_f32(prod + _f32(1e-10))))
        for k in range(count):
            for p in _md5_words(name + b"-" + str(k).encode()):
                out.append((p, idx))
    return out


def ketama_route(points: list[tuple[int, int]], flavor: str, key_hash: int) -> int:
    """Server index for a key hash: sort, resolve ties, search, wrap."""
    if flavor == "uhashring":
        owner: dict[int, int] = {}
        for p, idx in points:  # insertion order: the last inserted wins
            owner[p] = idx
        ring = sorted(owner)
        for p in ring:  # bisect_right: first point > h
            if p > key_hash:
                return owner[p]
        return owner[ring[0]]
    ring2 = sorted(points)  # ties: lowest server index first
    for p, idx in ring2:  # lower_bound: first point >= h
        if p >= key_hash:
            return idx
    return ring2[0][1]


# ---------------------------------------------------------------------------
# libmemcached itself, as an oracle: a small C program built against the
# installed library (libmemcached-dev) prints the server index that
# ``memcached_generate_hash`` (KETAMA_WEIGHTED) gives each key.  The live test
# and the golden-vector generator (tools/make_compat_vectors.py) both use it.

LIBMEMCACHED_PROGRAM = r"""
/* argv: host port weight triples; stdin: one hex key per line;
 * stdout: memcached_generate_hash (the server index) per key. */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    memcached_st *m = memcached_create(NULL);
    char line[4096], key[2048];
    int i;
    for (i = 1; i + 2 < argc; i += 3)
        memcached_server_add_with_weight(m, argv[i], (in_port_t)atoi(argv[i + 1]), (uint32_t)atoi(argv[i + 2]));
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strcspn(line, "\r\n"), k;
        for (k = 0; k + 1 < n; k += 2) {
            unsigned v;
            sscanf(line + k, "%2x", &v);
            key[k / 2] = (char)v;
        }
        printf("%u\n", memcached_generate_hash(m, key, n / 2));
    }
    memcached_free(m);
    return 0;
}
"""


def build_libmemcached_oracle(workdir: Path) -> Path:
    """Compile :data:`LIBMEMCACHED_PROGRAM` in ``workdir``; return the program.

    Raises LookupError (saying what is missing) when no C compiler,
    pkg-config or libmemcached is installed.
    """
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or shutil.which("pkg-config") is None:
        raise LookupError("no C compiler or pkg-config")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libmemcached"], capture_output=True, text=True)
    if flags.returncode != 0:
        raise LookupError("libmemcached (libmemcached-dev) not installed")
    (workdir / "mc.c").write_text(LIBMEMCACHED_PROGRAM)
    exe = workdir / "mc"
    subprocess.run([cc, str(workdir / "mc.c"), "-o", str(exe), *flags.stdout.split()], check=True)
    return exe


def libmemcached_servers(exe: Path, servers: list[tuple[str, int, int]], keys: list[bytes]) -> list[int]:
    """The server index (in ``servers`` order: host, port, weight) that
    libmemcached picks for each key."""
    args = [str(x) for server in servers for x in server]
    out = subprocess.run([str(exe), *args], input="\n".join(k.hex() for k in keys) + "\n",
                         capture_output=True, text=True, check=True).stdout.split()
    return [int(x) for x in out]
