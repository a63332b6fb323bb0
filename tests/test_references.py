"""The pure-Python references rebuild the frozen vectors from their documents.

``tests/vectors/routers/*.json`` and ``replicas/*.json`` were written by the
references in ``shardhash._reference`` (tools/make_router_vectors.py,
tools/make_replica_vectors.py).  Here each reference rebuilds every expected
value of its file from the file's document alone, and the references are
shown to import none of shardhash's compiled modules (so a defect in the
compiled hashing cannot be copied into the expected values).  The generators'
``--check`` mode (run by tools/check_vectors.sh) is shown to catch a changed
digit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import shardhash
from shardhash._reference.hasher import ALGORITHMS, ReferenceHasher, encode_key
from shardhash._reference.jump import jump
from shardhash._reference.replicas import replica_lists
from shardhash._reference.routing import ReferenceRouter
from tests._support import VECTORS

ROOT = Path(__file__).resolve().parent.parent
ROUTER_FILES = sorted(p.name for p in (VECTORS / "routers").glob("*.json") if p.name != "jump_hash.json")
REPLICA_FILES = sorted(p.name for p in (VECTORS / "replicas").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", ROUTER_FILES)
def test_reference_rebuilds_router_vectors(name: str) -> None:
    vec = _load(VECTORS / "routers" / name)
    ref = ReferenceRouter(vec["document"])
    if "hashes" in vec:
        assert len(vec["hashes"]) == len(vec["routes"]) > 0
        assert [ref.route_hash(h) for h in vec["hashes"]] == vec["routes"]
    keys = [tuple(k) if t else k for k, t in zip(vec["keys"], vec["key_is_tuple"], strict=True)]
    assert len(keys) == len(vec["key_routes"]) > 0
    assert [ref.route_key(k) for k in keys] == vec["key_routes"]


def test_reference_jump_rebuilds_jump_hash_vectors() -> None:
    """jump_hash.json comes from the jump-consistent-hash package and Guava."""
    vec = _load(VECTORS / "routers" / "jump_hash.json")
    assert len(vec["cases"]) >= 9
    for case in vec["cases"]:
        assert [jump(k, case["num_buckets"]) for k in case["keys"]] == case["buckets"]


@pytest.mark.parametrize("name", REPLICA_FILES)
def test_reference_rebuilds_replica_vectors(name: str) -> None:
    vec = _load(VECTORS / "replicas" / name)
    assert vec["cases"] and vec["hashes"]
    for case in vec["cases"]:
        got = replica_lists(vec["document"], vec["hashes"], case["n"], case["zones"])
        assert got == case["lists"], (case["n"], case["zones"])


def test_vector_files_are_all_covered() -> None:
    """A new vector file is rebuilt here too (every router type, every replica file)."""
    assert len(ROUTER_FILES) >= 24 and len(REPLICA_FILES) >= 21
    types = {_load(VECTORS / "routers" / n)["document"]["type"] for n in ROUTER_FILES}
    assert types >= {"jump", "modulo", "ring", "rendezvous", "maglev", "bucket", "hash_range", "directory",
                     "memento", "multiprobe", "bounded", "range", "watermark"}


# ------------------------------------------------------------ the reference hasher


def test_reference_hasher_reproduces_hashes_tsv() -> None:
    """Every row of hashes.tsv (routing value: 32-bit zero-extended, murmur3_128's h1)."""
    buf = bytes((((i * 2654435761 + 1013904223) & 0xFFFFFFFF) >> 24) for i in range(2048))
    lines = [ln for ln in (VECTORS / "hashes.tsv").read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert lines[0].split("\t") == ["algorithm", "seed", "length", "expected"]
    seen = set()
    for ln in lines[1:]:
        algorithm, seed, length, expected = ln.split("\t")
        hz = ReferenceHasher(algorithm, int(seed), {"int_encoding": "le64", "normalization": None,
                                                    "casefold": False, "strip": False})
        assert hz.hash_bytes(buf[:int(length)]) == int(expected, 16) & (2**64 - 1), ln
        seen.add(algorithm)
    assert seen == set(ALGORITHMS)


def _key(doc: Any) -> Any:
    tag, value = doc
    if tag == "tuple":
        return tuple(_key(p) for p in value)
    readers: dict[str, Any] = {"str": str, "bytes": bytes.fromhex, "int": int, "uuid": uuid.UUID,
                               "bool": bool, "none": lambda v: None, "float": float}
    return readers[tag](value)


def test_reference_codec_reproduces_codec_tsv() -> None:
    """Every row of codec.tsv: the bytes and xxh3_64 of a key, or the rejection's type."""
    lines = [ln for ln in (VECTORS / "codec.tsv").read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    errors = {"!TypeError": TypeError, "!ValueError": ValueError, "!OverflowError": OverflowError}
    for ln in lines[1:]:
        int_encoding, form, casefold, strip, key, encoded, xxh3 = ln.split("\t")
        codec = {"int_encoding": int_encoding, "normalization": None if form == "-" else form,
                 "casefold": casefold == "1", "strip": strip == "1"}
        k = _key(json.loads(key))
        if encoded.startswith("!"):
            with pytest.raises(errors[encoded]):
                encode_key(k, codec)
        else:
            assert encode_key(k, codec).hex() == ("" if encoded == "-" else encoded), ln
            assert ReferenceHasher("xxh3_64", 0, codec)(k) == int(xxh3, 16), ln
    assert len(lines) > 700


# ------------------------------------------------------- independent of the compiled code

_ISOLATED = r"""
import importlib, json, pkgutil, sys, types

src, vectors = sys.argv[1], sys.argv[2]
# shardhash/__init__.py imports the compiled modules; stand in for the package
# so that only what the references themselves import is loaded.
pkg = types.ModuleType("shardhash")
pkg.__path__ = [src]
sys.modules["shardhash"] = pkg


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.startswith("shardhash.") and not name.startswith("shardhash._reference"):
            raise ImportError(f"a reference imported {name}")
        return None


sys.meta_path.insert(0, Refuse())
import shardhash._reference as ref_pkg

names = [m.name for m in pkgutil.iter_modules(ref_pkg.__path__)]
for n in names:
    importlib.import_module(f"shardhash._reference.{n}")
from shardhash._reference.replicas import replica_lists
from shardhash._reference.routing import ReferenceRouter

vec = json.load(open(f"{vectors}/routers/ring_32bit.json", encoding="utf-8"))
assert [ReferenceRouter(vec["document"]).route_hash(h) for h in vec["hashes"]] == vec["routes"]
vec = json.load(open(f"{vectors}/replicas/multiprobe.json", encoding="utf-8"))
case = vec["cases"][-1]
assert replica_lists(vec["document"], vec["hashes"], case["n"], case["zones"]) == case["lists"]
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "shardhash")
extensions = sorted(m for m, mod in sys.modules.items()
                    if str(getattr(mod, "__file__", "") or "").endswith((".so", ".pyd"))
                    and m.split(".")[0] == "shardhash")
print(json.dumps({"modules": names, "loaded": loaded, "extensions": extensions}))
"""


def test_references_import_no_compiled_module() -> None:
    src = os.path.dirname(shardhash.__file__)
    proc = subprocess.run([sys.executable, "-c", _ISOLATED, src, str(VECTORS)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"hasher", "routing", "replicas", "ring"} <= set(out["modules"])
    assert out["extensions"] == []
    assert all(m == "shardhash" or m.startswith("shardhash._reference") for m in out["loaded"]), out["loaded"]
    assert "shardhash._hashing" not in out["loaded"]


# ------------------------------------------------------------ the generators' --check


@pytest.mark.parametrize("tool, folder", [("make_router_vectors", "routers"), ("make_replica_vectors", "replicas")])
def test_check_mode_fails_on_a_changed_digit(tool: str, folder: str, tmp_path: Path) -> None:
    if not (ROOT / "tools").is_dir():
        pytest.skip("the generators are not beside this test tree (a copy of tests/ without tools/)")
    copy = tmp_path / folder
    shutil.copytree(VECTORS / folder, copy)
    cmd = [sys.executable, str(ROOT / "tools" / f"{tool}.py"), "--check", "--out", str(copy)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(shardhash.__file__)),
                                                        os.environ.get("PYTHONPATH", "")])}
    victim = copy / "ring.json"
    text = victim.read_text(encoding="utf-8")
    key = '"lists": [' if folder == "replicas" else '"routes": ['
    at = text.index(key) + len(key)
    at += next(i for i, c in enumerate(text[at:]) if c.isdigit())
    victim.write_text(text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:], encoding="utf-8")
    bad = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "ring.json: DIFFERS" in bad.stdout
    assert " files regenerated, 1 problem(s)" in bad.stdout  # the other files are identical
