"""Generate the conformance kit, conformance/cases.jsonl (format shardhash.conformance/1).

Every expected value comes from the package (``shardhash.hash_bytes``,
``KeyCodec``, ``Hasher``, ``load_router`` and the routers' own methods) and is
cross-checked before it is written:

* hash cases against the frozen ``tests/vectors/hashes.tsv`` (each case is a
  row of that file);
* codec cases against the frozen ``tests/vectors/codec.tsv`` (each case is a
  row of that file);
* route and replica cases against the frozen ``tests/vectors/routers/*.json``
  and ``tests/vectors/replicas/*.json`` where they come from those files, and
  against the pure-Python references (``shardhash._reference``) for the extra
  documents this tool builds;
* document checks: every refused document is refused by ``load_router``.

The case file is frozen like the vectors: ``--check`` regenerates it in memory
and fails on any difference.  The format is described in conformance/README.md.

    python tools/gen_conformance.py [--out FILE]
    python tools/gen_conformance.py --check
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

import shardhash  # noqa: E402
from shardhash import Hasher, KeyCodec, hash_bytes, load_router  # noqa: E402
from shardhash._reference.hasher import ReferenceHasher  # noqa: E402
from shardhash._reference.routing import ReferenceRouter  # noqa: E402
from shardhash.routing import (  # noqa: E402
    BoundedLoadRouter,
    BucketRouter,
    DirectoryRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    MementoRouter,
    ModuloRouter,
    MultiProbeRouter,
    RangeRouter,
    RendezvousRouter,
    RingRouter,
    Router,
    WatermarkRouter,
)

FORMAT = "shardhash.conformance/1"
OUT = ROOT / "conformance" / "cases.jsonl"
VECTORS = ROOT / "tests" / "vectors"
M64 = (1 << 64) - 1

ALGORITHMS = ["xxh3_64", "xxh64", "xxh32", "murmur3_32", "murmur3_128", "fnv1a_32", "fnv1a_64"]

# Lengths of hashes.tsv rows kept as hash cases: every path of every function
# (xxh3: 0, 1-3, 4-8, 9-16, 17-128, 129-240, >240 with its stripes and blocks).
HASH_LENGTHS = sorted(set(range(0, 41)) | {47, 48, 49, 63, 64, 65, 79, 80, 96, 97, 111, 112, 127, 128, 129,
                                           130, 143, 160, 191, 192, 200, 223, 239, 240, 241, 242, 255, 256, 257,
                                           319, 320, 321, 511, 512, 513, 1023, 1024, 1025, 1087, 1088, 2047, 2048})


def buffer_bytes() -> bytes:
    """The 2048-byte input buffer of hashes.tsv (tests/vectors/README.md)."""
    return bytes((((i * 2654435761 + 1013904223) % 2**32) >> 24) for i in range(2048))


# -- typed keys (the tagged JSON of codec.tsv) ---------------------------------

def tag(key: Any) -> Any:
    """A key as tagged JSON: ["int","-1"], ["str",s], ["bytes",hex], ["uuid",s], ["tuple",[...]]."""
    if isinstance(key, bool):
        return ["bool", key]
    if isinstance(key, int):
        return ["int", str(key)]
    if isinstance(key, str):
        return ["str", key]
    if isinstance(key, bytes):
        return ["bytes", key.hex()]
    if isinstance(key, uuid.UUID):
        return ["uuid", str(key)]
    if isinstance(key, tuple):
        return ["tuple", [tag(k) for k in key]]
    if key is None:
        return ["none", None]
    if isinstance(key, float):
        return ["float", repr(key)]
    raise TypeError(f"cannot tag {key!r}")


def untag(t: Any) -> Any:
    kind, v = t
    if kind == "int":
        return int(v)
    if kind == "str":
        return v
    if kind == "bytes":
        return bytes.fromhex(v)
    if kind == "uuid":
        return uuid.UUID(v)
    if kind == "tuple":
        return tuple(untag(x) for x in v)
    if kind == "bool":
        return bool(v)
    if kind == "none":
        return None
    if kind == "float":
        return float(v)
    raise ValueError(f"unknown key tag {kind!r}")


def err(exc: BaseException) -> dict[str, Any]:
    return {"error": type(exc).__name__}


# -- hash and codec cases -------------------------------------------------------

def hash_cases() -> Iterator[dict[str, Any]]:
    buf = buffer_bytes()
    with open(VECTORS / "hashes.tsv", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    for alg, seed_s, length_s, expected in rows[1:]:
        length, seed = int(length_s), int(seed_s)
        if length not in HASH_LENGTHS:
            continue
        data = buf[:length]
        got = hash_bytes(data, alg, seed=seed)
        if got != int(expected, 16):
            raise SystemExit(f"hash_bytes({length} bytes, {alg}, seed={seed}) disagrees with hashes.tsv")
        if Hasher(alg, seed=seed)(data) != got & M64:
            raise SystemExit(f"{alg}: routing value is not the low 64 bits")
        yield {"id": f"hash/{alg}/{seed}/{length}", "op": "hash", "algorithm": alg, "seed": str(seed),
               "data": data.hex(), "expect": {"hash": f"{got & M64:016x}"}}


CODEC_DEFAULT = KeyCodec().to_dict()


def codec_doc(int_encoding: str = "le64", normalization: str | None = None, casefold: bool = False,
              strip: bool = False) -> dict[str, Any]:
    return KeyCodec(int_encoding=int_encoding, normalization=normalization, casefold=casefold,
                    strip=strip).to_dict()


def codec_cases() -> Iterator[dict[str, Any]]:
    with open(VECTORS / "codec.tsv", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    for i, (ienc, norm, cf, strip, key_s, encoded, xxh) in enumerate(rows[1:]):
        codec = codec_doc(ienc, None if norm == "-" else norm, cf == "1", strip == "1")
        tagged = json.loads(key_s)
        kc = KeyCodec.from_dict(codec)
        try:
            got: dict[str, Any] = {"encoded": kc.encode(untag(tagged)).hex()}
        except (TypeError, ValueError, OverflowError) as exc:
            got = err(exc)
        want = {"error": encoded[1:]} if encoded.startswith("!") else {
            "encoded": "" if encoded == "-" else encoded}
        if got != want:
            raise SystemExit(f"codec.tsv row {i}: package gives {got}, the frozen file {want}")
        if "encoded" in got:
            h = Hasher("xxh3_64", codec=kc)(untag(tagged))
            if f"{h:016x}" != xxh:
                raise SystemExit(f"codec.tsv row {i}: xxh3_64 differs")
        yield {"id": f"codec/{i:04d}", "op": "encode", "codec": codec, "key": tagged, "expect": got}


def unicode_cases() -> Iterator[dict[str, Any]]:
    """The string options over whole blocks of text: every code point assigned
    by Unicode 3.2 (so that every platform's Unicode tables know it) that has a
    decomposition or a non-zero combining class, 48 at a time, in code point
    order and reversed (combining marks before their bases, out of order), in
    each normalisation form; and every code point with a case folding."""
    import unicodedata

    old = unicodedata.ucd_3_2_0
    marked = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and old.category(chr(c)) != "Cn"
              and (unicodedata.decomposition(chr(c)) or unicodedata.combining(chr(c)))]
    chunks = [marked[i:i + 48] for i in range(0, len(marked), 48)]
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        kc = KeyCodec(normalization=form)
        for i, chunk in enumerate(chunks):
            for order, cps in (("up", chunk), ("down", chunk[::-1])):
                text = "".join(map(chr, cps))
                yield {"id": f"unicode/{form}/{i:03d}/{order}", "op": "encode", "codec": kc.to_dict(),
                       "key": tag(text), "expect": {"encoded": kc.encode(text).hex()}}
    folded = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and chr(c).casefold() != chr(c)]
    kc = KeyCodec(casefold=True)
    for i in range(0, len(folded), 64):
        text = "".join(map(chr, folded[i:i + 64]))
        if text.casefold().encode("utf-8") != kc.encode(text):
            raise SystemExit("casefold: the codec is not str.casefold")
        yield {"id": f"unicode/casefold/{i // 64:03d}", "op": "encode", "codec": kc.to_dict(), "key": tag(text),
               "expect": {"encoded": kc.encode(text).hex()}}


HASH_KEYS: list[Any] = [0, 1, -1, 42, 2**63, 2**64 - 1, -(2**63), "", "user-42", "Straße", "日本", "e\u0301",
                        b"", b"\x00\xff", uuid.UUID("12345678-1234-5678-1234-567812345678"),
                        ("tenant-7", 42), ("a", ("b", 1), b"\x01")]


def hash_key_cases() -> Iterator[dict[str, Any]]:
    seeds = {"xxh3_64": [0, 7, 2**64 - 1], "xxh64": [0, 5, 2**64 - 1], "xxh32": [0, 9, 2**32 - 1],
             "murmur3_32": [0, 2, 2**32 - 1], "murmur3_128": [0, 3, 2**32 - 1], "fnv1a_32": [0], "fnv1a_64": [0]}
    codecs = [codec_doc(), codec_doc("decimal"), codec_doc(normalization="NFKC", casefold=True, strip=True)]
    for alg in ALGORITHMS:
        for seed in seeds[alg]:
            for ci, codec in enumerate(codecs):
                hasher = Hasher(alg, seed=seed, codec=KeyCodec.from_dict(codec))
                doc = hasher.to_dict()
                ref = ReferenceHasher.from_dict(doc)
                hashes = []
                for k in HASH_KEYS:
                    h = hasher(k)
                    if h != ref(k):
                        raise SystemExit(f"hash_key {alg}/{seed}/{k!r}: package and reference differ")
                    hashes.append(f"{h:016x}")
                yield {"id": f"hash_key/{alg}/{seed}/{ci}", "op": "hash_key", "hasher": doc,
                       "keys": [tag(k) for k in HASH_KEYS], "expect": {"hashes": hashes}}


# -- routers --------------------------------------------------------------------

SHARDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def sample_hashes(n: int, x: int = 0x9E3779B97F4A7C15) -> list[int]:
    out = [0, 1, 2, 41, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        out.append(x)
    return out


def sample_keys() -> list[Any]:
    return [0, 1, -1, 7, 999, 1000, 10**6, 2**40, 2**63 - 1, 2**64 - 1, -(2**63), "", "a", "user:42",
            "tenant-huge", "tenant-7", "日本", "Straße", "  Mixed Case ", "e\u0301", "\u00e9", b"", b"\x00\xff",
            uuid.UUID("12345678-1234-5678-1234-567812345678"), ("tenant-7", 42), ("tenant-7", 43),
            (42, "x"), ((1, 2), "y"), 42] + [f"key-{i}" for i in range(24)] + list(range(10_000, 10_000 + 24))


def extra_routers() -> dict[str, Router]:
    """Documents beyond the frozen vector files: every hash, codec options,
    key prefixes, key types, zones, nested documents."""
    out: dict[str, Router] = {}
    for alg in ALGORITHMS:
        seed = 0 if alg.startswith("fnv") else 12345
        out[f"jump_{alg}"] = JumpRouter(SHARDS, hasher=Hasher(alg, seed=seed))
        out[f"ring_{alg}"] = RingRouter(SHARDS[:4], vnodes=8, hasher=Hasher(alg, seed=seed))
    text = KeyCodec(normalization="NFC", casefold=True, strip=True)
    out["ring_casefold_nfc"] = RingRouter(SHARDS[:5], vnodes=20, hasher=Hasher("xxh3_64", codec=text))
    out["jump_nfkd"] = JumpRouter(SHARDS[:5], hasher=Hasher("xxh64", seed=1, codec=KeyCodec(normalization="NFKD")))
    decimal = KeyCodec(int_encoding="decimal")
    out["modulo_decimal"] = ModuloRouter(SHARDS[:3], hasher=Hasher("murmur3_32", codec=decimal))
    out["jump_prefix2"] = JumpRouter(SHARDS, key_prefix=2)
    out["rendezvous_prefix1"] = RendezvousRouter(SHARDS[:4], key_prefix=1)
    out["ring_weighted_floats"] = RingRouter(["a", "b", "c", "d"], vnodes=7,
                                             weights={"a": 0.1, "b": 1e-05 * 1e5, "c": 3.75, "d": 12.0})
    out["ring_collisions_first"] = RingRouter(["A", "B", "C"], tokens={"A": [5, 100], "B": [100, 7], "C": [2**64 - 1]},
                                              collisions="first")
    out["ring_unicode_ids"] = RingRouter(["Zürich", "東京", "a\"b\\c", "tab\there"], vnodes=5)
    out["rendezvous_weighted_xxh64"] = RendezvousRouter(SHARDS, weights={"alpha": 0.5, "gamma": 4, "zeta": 1.25},
                                                        hasher=Hasher("xxh64", seed=99))
    out["maglev_small"] = MaglevRouter(["a", "b", "c"], table_size=7)
    out["maglev_weighted_big"] = MaglevRouter(SHARDS, weights={"alpha": 3, "beta": 0.5, "zeta": 2.25},
                                              table_size=1009, hasher=Hasher("murmur3_128", seed=4))
    out["maglev_default"] = MaglevRouter(SHARDS[:3], hasher=Hasher("fnv1a_64"))
    out["bucket_even"] = BucketRouter(SHARDS[:5], buckets=64, hasher=Hasher("xxh32", seed=3))
    out["bucket_ranges_tuple"] = BucketRouter.from_ranges({0: "db1", 100: "db2", 900: "db1"}, 1000, key_prefix=1)
    out["hash_range_repeat"] = HashRangeRouter([1, 2**32, 2**63, 2**64 - 1], ["x", "y", "x", "z", "y"])
    out["range_int_wide"] = RangeRouter([-(2**63), -1, 0, 2**63, 2**64 - 1], ["a", "b", "c", "d", "e", "f"])
    out["range_str_unicode"] = RangeRouter(["B", "a", "é", "日", "\U0001f600"], ["s1", "s2", "s3", "s4", "s5", "s6"])
    out["directory_over_jump"] = DirectoryRouter(JumpRouter(SHARDS[:3], hasher=Hasher("xxh64", seed=8)),
                                                 {7: "gamma", -1: "special", "vip": "special", 2**64 - 2: "alpha"})
    out["watermark_ring_maglev"] = WatermarkRouter(RingRouter(["a", "b"], vnodes=4),
                                                   MaglevRouter(["c", "a", "d"], table_size=13), -5)
    out["memento_one_removed"] = MementoRouter(["a", "b", "d", "e"], buckets=5, removed=[2])
    out["memento_decimal"] = MementoRouter(SHARDS[:3], buckets=6, removed=[5, 0, 2],
                                           hasher=Hasher("murmur3_128", codec=KeyCodec(int_encoding="decimal")))
    out["multiprobe_1probe"] = MultiProbeRouter(SHARDS[:5], probes=1)
    out["multiprobe_64probes"] = MultiProbeRouter(SHARDS, probes=64, hasher=Hasher("fnv1a_32"))
    out["bounded_weighted"] = BoundedLoadRouter(SHARDS[:4], vnodes=6, weights={"alpha": 2.0}, balance_factor=100)
    out["jump_versioned_zones"] = JumpRouter(SHARDS[:4], version=17).with_zones(
        {"alpha": "east", "beta": "east", "gamma": "west", "delta": "north"})
    out["ring_zones"] = RingRouter(SHARDS, vnodes=6).with_zones(
        {"alpha": "z1", "beta": "z2", "gamma": "z1", "delta": "z3", "epsilon": "z2", "zeta": "z3"})
    return out


def hot_routers() -> dict[str, Router]:
    """Hot-key routers (docs/routers.md 2.13): route is the base's; route_read lists the sub-keys."""
    from shardhash.hotkeys import HotKeyRouter

    return {
        "hot_jump": HotKeyRouter(JumpRouter(SHARDS, hasher=Hasher("xxh64", seed=2)),
                                 {42: 3, "celebrity": 5, -7: 2, "日本": 4}, write="round_robin"),
        "hot_ring_time": HotKeyRouter(RingRouter(SHARDS[:4], vnodes=16), {"a": 4, 10**12: 2}, write="time",
                                      bucket_seconds=2.5),
        "hot_maglev_empty": HotKeyRouter(MaglevRouter(SHARDS[:3], table_size=101), {}),
    }


def hot_read_cases() -> Iterator[dict[str, Any]]:
    from shardhash.hotkeys import subkey

    for name, router in hot_routers().items():
        doc = router.to_dict()
        r = load_router(doc)
        base = ReferenceRouter(doc["params"]["base"])
        keys: list[Any] = [k for k, _ in doc["params"]["hot"]] + [0, 1, 7, "42", "celebrity#1", "a#1", "", b"a"]
        reads = []
        for k in keys:
            got = [[r.shards.index(s), i] for s, i in r.route_read(k)]
            want = [[base.route_key(subkey(k, i)), i] for i in range(len(got))]
            if got != want:
                raise SystemExit(f"hot_read {name}/{k!r}: package and reference differ")
            reads.append(got)
        yield {"id": f"hot_read/{name}", "op": "hot_read", "document": doc, "keys": [tag(k) for k in keys],
               "expect": {"reads": reads}}


def key_type_doc() -> dict[str, Any]:
    """A document declaring its key type (protocol section 6)."""
    d = JumpRouter(SHARDS[:3]).to_dict()
    del d["fingerprint"]
    d["key_type"] = {"format": "shardhash.keytype/1", "type": ["str", "int"]}
    return load_router(d).to_dict()


def route_case(name: str, doc: dict[str, Any], keys: list[Any], hashes: list[int]) -> dict[str, Any]:
    router = load_router(doc)
    # a hot-key router routes as its base (docs/routers.md 2.13)
    ref = ReferenceRouter(doc["params"]["base"] if doc["type"] == "hot" else doc)
    raw = not router.routes_on_hash and doc["type"] in ("range", "watermark")
    routes: list[Any] = []
    ids: list[Any] = []
    key_hashes: list[Any] = []
    tagged = []
    for k in keys:
        try:
            idx = router.route_index(k)
        except (TypeError, ValueError, OverflowError) as exc:
            tagged.append(tag(k))
            routes.append("!" + type(exc).__name__)
            ids.append(None)
            key_hashes.append(None)
            continue
        if ref.route_key(k) != idx:
            raise SystemExit(f"{name}: key {k!r}: package {idx}, reference {ref.route_key(k)}")
        if router.route(k) != router.shards[idx]:
            raise SystemExit(f"{name}: route and route_index disagree")
        tagged.append(tag(k))
        routes.append(idx)
        ids.append(router.shards[idx])
        key_hashes.append(None if raw else f"{router.hasher(k):016x}")
    hash_routes = []
    if not raw:
        for h in hashes:
            idx = router.route_hash(h)
            if ref.route_hash(h) != idx:
                raise SystemExit(f"{name}: hash {h}: package {idx}, reference {ref.route_hash(h)}")
            hash_routes.append(idx)
    return {"id": f"route/{name}", "op": "route", "document": doc, "keys": tagged,
            "hashes": [str(h) for h in hashes] if not raw else [],
            "expect": {"shards": list(router.shards), "key_hashes": key_hashes, "routes": routes, "ids": ids,
                       "hash_routes": hash_routes}}


def frozen_router_files() -> list[tuple[str, dict[str, Any]]]:
    return [(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in sorted((VECTORS / "routers").glob("*.json"))
            if p.stem != "jump_hash"]


def jump_cases() -> Iterator[dict[str, Any]]:
    """Jump itself (64-bit hash, bucket count): routers/jump_hash.json, checked against shardhash.jump_hash."""
    vec = json.loads((VECTORS / "routers" / "jump_hash.json").read_text(encoding="utf-8"))
    for i, c in enumerate(vec["cases"]):
        got = [shardhash.jump_hash(k, c["num_buckets"]) for k in c["keys"]]
        if got != c["buckets"]:
            raise SystemExit(f"jump_hash.json, {c['num_buckets']} buckets: package disagrees")
        yield {"id": f"jump/{i}/{c['num_buckets']}", "op": "jump", "n": c["num_buckets"],
               "hashes": [str(k) for k in c["keys"]], "expect": {"buckets": got}}


def route_cases() -> Iterator[dict[str, Any]]:
    for name, vec in frozen_router_files():
        doc = vec["document"]
        keys = [tuple(k) if t else k for k, t in zip(vec.get("keys", []), vec.get("key_is_tuple", []))]
        hashes = vec.get("hashes", [])
        case = route_case(name, doc, keys, hashes)
        if "routes" in vec and case["expect"]["hash_routes"] != vec["routes"]:
            raise SystemExit(f"{name}: package disagrees with the frozen routers/{name}.json (hashes)")
        if "key_routes" in vec and case["expect"]["routes"] != vec["key_routes"]:
            raise SystemExit(f"{name}: package disagrees with the frozen routers/{name}.json (keys)")
        yield case
    keys = sample_keys()
    for name, router in extra_routers().items():
        seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
        yield route_case(name, router.to_dict(), keys, sample_hashes(48, seed))
    yield route_case("jump_key_type", key_type_doc(), keys, sample_hashes(16))
    for name, router in hot_routers().items():
        yield route_case(name, router.to_dict(), keys, sample_hashes(32))


def replica_cases() -> Iterator[dict[str, Any]]:
    for p in sorted((VECTORS / "replicas").glob("*.json")):
        vec = json.loads(p.read_text(encoding="utf-8"))
        doc = vec["document"]
        router = load_router(doc)
        hashes = vec["hashes"][:64]
        for ci, c in enumerate(vec["cases"]):
            lists = [router.route_replicas_hash(h, c["n"], zones=c["zones"]) for h in hashes]
            if lists != c["lists"][:64]:
                raise SystemExit(f"replicas/{p.name} case {ci}: package disagrees with the frozen file")
            yield {"id": f"replicas/{p.stem}/{ci}", "op": "replicas", "document": doc, "n": c["n"],
                   "zones": c["zones"], "hashes": [str(h) for h in hashes], "expect": {"lists": lists}}


def assign_cases() -> Iterator[dict[str, Any]]:
    """Bounded loads, unweighted: a batch's assignment (keys placed in order)."""
    from shardhash._reference import bounded as ref_bounded

    for name, router in [("bounded5", BoundedLoadRouter(SHARDS[:5], vnodes=16, balance_factor=105)),
                         ("bounded_tokens", BoundedLoadRouter(["A", "B", "C"], tokens={"A": [20, 2**63], "B": [50],
                                                                                       "C": [80]},
                                                              balance_factor=150))]:
        doc = router.to_dict()
        for size in (1, 7, 100):
            hashes = sample_hashes(size + 11)[:size] if size > 11 else sample_hashes(60)[11:11 + size]
            got = [int(x) for x in router.assign_hashes(hashes)]
            ref_r = ReferenceRouter(doc)
            caps = [ref_bounded.capacity(len(hashes), len(router.shards), doc["params"]["balance_factor"])] * len(
                router.shards)
            want, _, _ = ref_bounded.assign(ref_r.tokens, ref_r.owners, hashes, caps)
            if got != want:
                raise SystemExit(f"assign {name}/{size}: package and reference differ")
            yield {"id": f"assign/{name}/{size}", "op": "assign", "document": doc,
                   "hashes": [str(h) for h in hashes], "expect": {"routes": got}}


# -- document checks ------------------------------------------------------------

def refit(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with its fingerprint recomputed (so only the change under test is wrong)."""
    d = copy.deepcopy(doc)
    d.pop("fingerprint", None)
    d["fingerprint"] = hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                                 allow_nan=False).encode("utf-8")).hexdigest()
    return d


def load_case(name: str, doc: Any) -> dict[str, Any]:
    try:
        r = load_router(doc)
    except (TypeError, ValueError, OverflowError) as exc:
        return {"id": f"load/{name}", "op": "load", "document": doc, "expect": err(exc)}
    return {"id": f"load/{name}", "op": "load", "document": doc,
            "expect": {"fingerprint": r.fingerprint, "shards": list(r.shards)}}


def load_cases() -> Iterator[dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {n: v["document"] for n, v in frozen_router_files()}
    docs.update({n: r.to_dict() for n, r in extra_routers().items()})
    docs["jump_key_type"] = key_type_doc()
    docs.update({n: r.to_dict() for n, r in hot_routers().items()})
    for name, doc in docs.items():  # accepted as they are, and without their fingerprint
        yield load_case(name, doc)
        d = copy.deepcopy(doc)
        del d["fingerprint"]
        yield load_case(f"{name}/no_fingerprint", d)

    refused: list[tuple[str, dict[str, Any]]] = []
    ring = docs["ring_weighted"]
    jump = docs["jump"]

    def edit(base: dict[str, Any], fn: Any, fit: bool = True) -> dict[str, Any]:
        d = copy.deepcopy(base)
        fn(d)
        return refit(d) if fit else d

    fp = jump["fingerprint"]
    refused += [
        ("tampered_fingerprint", edit(jump, lambda d: d.update(fingerprint=fp[:-1] + ("0" if fp[-1] != "0" else "1")),
                                      fit=False)),
        ("fingerprint_uppercase", edit(jump, lambda d: d.update(fingerprint=fp.upper()), fit=False)),
        ("tampered_content", edit(ring, lambda d: d["params"].update(vnodes=11), fit=False)),
        ("tampered_weight", edit(ring, lambda d: d["params"]["weights"].update(alpha=2.25), fit=False)),
        ("tampered_shards_order", edit(jump, lambda d: d.update(shards=d["shards"][::-1]), fit=False)),
        ("tampered_seed", edit(jump, lambda d: d["hasher"].update(seed=4), fit=False)),
        ("tampered_nested", edit(docs["directory"], lambda d: d["params"]["base"]["params"].update(vnodes=13))),
        ("tampered_watermark_old", edit(docs["watermark"], lambda d: d["params"]["old"].update(version=2))),
        ("unknown_field", edit(jump, lambda d: d.update(owner="x"))),
        ("unknown_param", edit(jump, lambda d: d["params"].update(extra=1))),
        ("unknown_ring_param", edit(ring, lambda d: d["params"].update(replicas=3))),
        ("unknown_hasher_field", edit(jump, lambda d: d["hasher"].update(salt=1))),
        ("unknown_codec_field", edit(jump, lambda d: d["hasher"]["codec"].update(lower=True))),
        ("wrong_format_version", edit(jump, lambda d: d.update(format="shardhash.router/2"))),
        ("wrong_format", edit(jump, lambda d: d.update(format="shardhash.router"))),
        ("wrong_hasher_format", edit(jump, lambda d: d["hasher"].update(format="shardhash.hasher/2"))),
        ("wrong_codec_format", edit(jump, lambda d: d["hasher"]["codec"].update(format="shardhash.codec/2"))),
        ("unknown_type", edit(jump, lambda d: d.update(type="jump2"))),
        ("unknown_algorithm", edit(jump, lambda d: d["hasher"].update(algorithm="sha1"))),
        ("unknown_int_encoding", edit(jump, lambda d: d["hasher"]["codec"].update(int_encoding="be64"))),
        ("unknown_normalization", edit(jump, lambda d: d["hasher"]["codec"].update(normalization="nfc"))),
        ("missing_params", edit(jump, lambda d: d.pop("params"))),
        ("missing_version", edit(jump, lambda d: d.pop("version"))),
        ("missing_shards", edit(jump, lambda d: d.pop("shards"))),
        ("missing_hasher", edit(jump, lambda d: d.pop("hasher"))),
        ("missing_codec_field", edit(jump, lambda d: d["hasher"]["codec"].pop("strip"))),
        ("missing_ring_vnodes", edit(ring, lambda d: d["params"].pop("vnodes"))),
        ("version_string", edit(jump, lambda d: d.update(version="1"))),
        ("version_bool", edit(jump, lambda d: d.update(version=True))),
        ("version_negative", edit(jump, lambda d: d.update(version=-1))),
        ("seed_negative", edit(jump, lambda d: d["hasher"].update(seed=-1))),
        ("seed_too_wide_xxh32", edit(jump, lambda d: d["hasher"].update(algorithm="xxh32", seed=2**32))),
        ("seed_too_wide_xxh64", edit(jump, lambda d: d["hasher"].update(algorithm="xxh64", seed=2**64))),
        ("seed_fnv_nonzero", edit(jump, lambda d: d["hasher"].update(algorithm="fnv1a_64", seed=1))),
        ("casefold_not_bool", edit(jump, lambda d: d["hasher"]["codec"].update(casefold=1))),
        ("shards_empty", edit(jump, lambda d: d.update(shards=[]))),
        ("shards_duplicate", edit(jump, lambda d: d.update(shards=["a", "a"]))),
        ("shard_id_empty", edit(jump, lambda d: d.update(shards=["a", ""]))),
        ("shard_id_not_string", edit(jump, lambda d: d.update(shards=["a", 1]))),
        ("bucket_index_out_of_range", edit(docs["bucket"], lambda d: d["params"]["placement"].__setitem__(0, 5))),
        ("bucket_too_few_shards", edit(docs["bucket"], lambda d: d.update(shards=d["shards"][:2]))),
        ("maglev_not_prime", edit(docs["maglev"], lambda d: d["params"].update(table_size=400))),
        ("hash_range_unsorted", edit(docs["hash_range"], lambda d: d["params"].update(
            splits=d["params"]["splits"][::-1]))),
        ("range_shards_mismatch", edit(docs["range_int"], lambda d: d.update(shards=["a", "b"]))),
        ("range_mixed_splits", edit(docs["range_int"], lambda d: d["params"].update(splits=[-5, "x", 2000000]))),
        ("ring_weight_zero", edit(ring, lambda d: d["params"]["weights"].update(alpha=0))),
        ("ring_weight_negative", edit(ring, lambda d: d["params"]["weights"].update(alpha=-1.5))),
        ("ring_collision_error", edit(docs["ring_tokens"], lambda d: d["params"]["tokens"].update(B=[20]))),
        ("memento_removed_out_of_range", edit(docs["memento"], lambda d: d["params"].update(removed=[3, 1, 7, 8, 9]))),
        ("multiprobe_zero_probes", edit(docs["multiprobe"], lambda d: d["params"].update(probes=0))),
        ("bounded_factor_below_100", edit(docs["bounded"], lambda d: d["params"].update(balance_factor=99))),
        ("key_prefix_zero", edit(jump, lambda d: d.update(key_prefix=0))),
        ("zones_missing_shard", edit(docs["jump_versioned_zones"], lambda d: d["zones"].pop("alpha"))),
        ("key_type_unknown", edit(docs["jump_key_type"], lambda d: d["key_type"].update(type="float"))),
        ("hot_fan_out_1", edit(docs["hot_jump"], lambda d: d["params"]["hot"][0].__setitem__(1, 1))),
        ("hot_fan_out_1025", edit(docs["hot_jump"], lambda d: d["params"]["hot"][0].__setitem__(1, 1025))),
        ("hot_key_twice", edit(docs["hot_jump"], lambda d: d["params"]["hot"].append([42, 2]))),
        ("hot_key_float", edit(docs["hot_jump"], lambda d: d["params"]["hot"].append([1.5, 2]))),
        ("hot_key_bool", edit(docs["hot_jump"], lambda d: d["params"]["hot"].append([True, 2]))),
        ("hot_pair_of_three", edit(docs["hot_jump"], lambda d: d["params"]["hot"].append(["x", 2, 3]))),
        ("hot_write_unknown", edit(docs["hot_jump"], lambda d: d["params"].update(write="sticky"))),
        ("hot_bucket_seconds_without_time", edit(docs["hot_jump"], lambda d: d["params"].update(bucket_seconds=1.0))),
        ("hot_time_without_bucket_seconds", edit(docs["hot_ring_time"], lambda d: d["params"].update(
            bucket_seconds=None))),
        ("hot_bucket_seconds_too_small", edit(docs["hot_ring_time"], lambda d: d["params"].update(
            bucket_seconds=1e-7))),
        ("hot_hasher_not_the_bases", edit(docs["hot_jump"], lambda d: d["hasher"].update(seed=3))),
        ("hot_key_prefix_not_the_bases", edit(docs["hot_jump"], lambda d: d.update(key_prefix=1))),
        ("hot_over_range", edit(docs["hot_jump"], lambda d: d["params"].update(base=docs["range_int"]) or d.update(
            shards=docs["range_int"]["shards"]))),
        ("hot_over_hot", edit(docs["hot_jump"], lambda d: d["params"].update(base=docs["hot_maglev_empty"]) or d.update(
            shards=docs["hot_maglev_empty"]["shards"], hasher=docs["hot_maglev_empty"]["hasher"]))),
        ("hot_unknown_param", edit(docs["hot_jump"], lambda d: d["params"].update(cold=[]))),
    ]
    for name, doc in refused:
        case = load_case(name, doc)
        if "error" not in case["expect"]:
            raise SystemExit(f"load/{name}: the package accepts a document the kit says must be refused")
        yield case
    # Accepted on purpose: weights written as integers are numbers; the
    # fingerprint is over the router's own document, which writes them as floats.
    d = copy.deepcopy(ring)
    del d["fingerprint"]
    d["params"]["weights"] = {"alpha": 5, "beta": 0.5}
    yield load_case("weights_as_integers", d)
    yield load_case("not_an_object", [jump])


def all_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for gen in (hash_cases, codec_cases, unicode_cases, hash_key_cases, jump_cases, load_cases, route_cases,
                replica_cases, assign_cases, hot_read_cases):
        cases.extend(gen())
    ids = [c["id"] for c in cases]
    if len(set(ids)) != len(ids):
        raise SystemExit("duplicate case ids")
    return cases


def render() -> str:
    cases = all_cases()
    header = {"format": FORMAT, "cases": len(cases), "generator": "tools/gen_conformance.py",
              "ops": sorted({c["op"] for c in cases})}
    lines = [json.dumps(header, ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps(c, separators=(",", ":")) for c in cases]  # ASCII: \u escapes, lone surrogates included
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the frozen file")
    ap.add_argument("--force", action="store_true", help="overwrite a frozen file whose content would change")
    args = ap.parse_args(argv)
    text = render()
    out: Path = args.out
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out}: differs from what {Path(__file__).name} generates", file=sys.stderr)
            return 1
        print(f"{out}: {text.count(chr(10)) - 1} cases, identical")
        return 0
    if out.exists() and out.read_text(encoding="utf-8") != text and not args.force:
        print(f"{out} is frozen and would change; use --force only for a new kit format", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: {text.count(chr(10)) - 1} cases, {len(text.encode()):,} bytes "
          f"(shardhash {shardhash.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
