"""The conformance runner (``python -m shardhash.conformance``): a port that answers every case
passes, and a port that is wrong anywhere -- one route, one error kind, one missing line -- is
caught, with the case and its input named.  The kit itself and the Go, Java and JavaScript ports
are checked by .ci/post.d/70-ports.sh (they need the source tree and three toolchains)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, KeyCodec, RingRouter, hash_bytes
from shardhash.conformance import FORMAT, check, load_cases, main
from tests._support import child_env

# A port written in Python on the package itself; BUG selects a deliberate mistake.
PORT = r'''
import json, sys
from shardhash import KeyCodec, hash_bytes, load_router
BUG = sys.argv[1] if len(sys.argv) > 1 else ""

def untag(t):
    kind, v = t
    return {"int": int, "str": str, "bytes": bytes.fromhex}[kind](v) if kind != "tuple" else tuple(map(untag, v))

def run(c):
    op = c["op"]
    if op == "hash":
        return {"hash": f"{hash_bytes(bytes.fromhex(c['data']), c['algorithm'], seed=int(c['seed'])) % 2**64:016x}"}
    if op == "encode":
        if BUG == "unsupported":
            return {"unsupported": "no codec here"}
        try:
            return {"encoded": KeyCodec.from_dict(c["codec"]).encode(untag(c["key"])).hex()}
        except (TypeError, ValueError, OverflowError) as e:
            return {"error": "ValueError" if BUG == "error-kind" else type(e).__name__}
    if op == "load":
        try:
            r = load_router(c["document"])
        except (TypeError, ValueError) as e:
            return {"error": "ValueError" if BUG != "error-kind" else "TypeError"}
        return {"fingerprint": r.fingerprint, "shards": list(r.shards)}
    if op == "route":
        r = load_router(c["document"])
        routes = [r.route_index(untag(k)) for k in c["keys"]]
        if BUG == "route":
            routes[3] = (routes[3] + 1) % len(r.shards)
        return {"shards": list(r.shards), "routes": routes}
    return {"unsupported": op}

lines = sys.stdin.read().splitlines()
out = []
for line in lines[1:]:
    c = json.loads(line)
    res = {"id": c["id"], **run(c)}
    out.append(json.dumps(res))
if BUG == "short":
    out = out[:-1]
if BUG == "extra":
    out.append(out[-1])
if BUG == "order":
    out[0], out[1] = out[1], out[0]
print("\n".join(out))
sys.exit(3 if BUG == "exit" else 0)
'''


def _kit(path: Path) -> list[dict[str, Any]]:
    """A small kit of real cases, expected values from the package."""
    jump = JumpRouter(["a", "b", "c", "d"]).to_dict()
    ring = RingRouter(["x", "y", "z"], vnodes=8).to_dict()
    keys: list[Any] = [0, 1, -1, 42, "user-42", "", "日本", b"\x00\xff"]
    tagged = [["int", str(k)] if isinstance(k, int) else ["str", k] if isinstance(k, str) else ["bytes", k.hex()]
              for k in keys]
    from shardhash import load_router

    cases: list[dict[str, Any]] = [
        {"id": "hash/xxh3/0", "op": "hash", "algorithm": "xxh3_64", "seed": "7", "data": "00ff",
         "expect": {"hash": format(hash_bytes(bytes([0, 255]), "xxh3_64", seed=7), "016x")}},
        {"id": "codec/int", "op": "encode", "codec": KeyCodec().to_dict(), "key": ["int", "-1"],
         "expect": {"encoded": "ff" * 8}},
        {"id": "codec/overflow", "op": "encode", "codec": KeyCodec().to_dict(), "key": ["int", str(2**64)],
         "expect": {"error": "OverflowError"}},
        {"id": "load/jump", "op": "load", "document": jump,
         "expect": {"fingerprint": jump["fingerprint"], "shards": ["a", "b", "c", "d"]}},
        {"id": "load/tampered", "op": "load", "document": {**jump, "fingerprint": "0" * 64},
         "expect": {"error": "ValueError"}},
    ]
    for name, doc in (("jump", jump), ("ring", ring)):
        r = load_router(doc)
        cases.append({"id": f"route/{name}", "op": "route", "document": doc, "keys": tagged,
                      "expect": {"shards": list(r.shards), "routes": [r.route_index(k) for k in keys]}})
    header = {"format": FORMAT, "cases": len(cases)}
    path.write_text("\n".join(json.dumps(x) for x in [header, *cases]) + "\n", encoding="utf-8")
    return cases


def _run(tmp_path: Path, *args: str, bug: str = "") -> subprocess.CompletedProcess[str]:
    kit = tmp_path / "cases.jsonl"
    _kit(kit)
    port = tmp_path / "port.py"
    port.write_text(PORT, encoding="utf-8")
    cmd = [sys.executable, "-m", "shardhash.conformance", "--cases", str(kit), *args, "--",
           sys.executable, str(port)] + ([bug] if bug else [])
    return subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=120, check=False)


def test_a_correct_port_passes(tmp_path: Path) -> None:
    p = _run(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "7 of 7 cases pass" in p.stdout


def test_a_wrong_route_is_caught_with_its_input(tmp_path: Path) -> None:
    p = _run(tmp_path, bug="route")
    assert p.returncode == 1
    # the first mismatch: the case, the position in its list, and the key at that position
    assert "FIRST MISMATCH: route/jump: routes[3]: expected" in p.stdout
    assert 'input keys[3] = ["int", "42"]' in p.stdout
    assert "route/ring: routes[3]" in p.stdout  # every failing case is listed


@pytest.mark.parametrize(("bug", "message"), [
    ("error-kind", 'codec/overflow: result: expected {"error": "OverflowError"}, got {"error": "ValueError"}'),
    ("short", "route/ring: no result line"),
    ("extra", "result line(s) after the last case"),
    ("order", "hash/xxh3/0: expected a result line for this id"),
    ("exit", "the port exited with status 3"),
    ("unsupported", "case(s) unsupported, e.g. codec/int"),
])
def test_every_kind_of_wrong_port_fails(tmp_path: Path, bug: str, message: str) -> None:
    p = _run(tmp_path, bug=bug)
    assert p.returncode == 1, p.stdout
    assert message in p.stdout


def test_unsupported_cases_can_be_accepted_but_are_counted(tmp_path: Path) -> None:
    p = _run(tmp_path, "--allow-unsupported", bug="unsupported")
    assert p.returncode == 0, p.stdout
    assert "5 of 7 cases pass; unsupported: encode 2" in p.stdout


def test_load_errors_need_not_name_the_same_kind(tmp_path: Path) -> None:
    # the wrong-kind port answers TypeError to a document the package refuses with ValueError
    p = _run(tmp_path, bug="error-kind")
    assert "load/tampered" not in p.stdout


def test_a_results_file_is_checked_without_a_command(tmp_path: Path) -> None:
    cases = _kit(tmp_path / "cases.jsonl")
    good = [json.dumps({"id": c["id"], **c["expect"]}) for c in cases]
    (tmp_path / "good.txt").write_text("\n".join(good) + "\n", encoding="utf-8")
    assert main(["--cases", str(tmp_path / "cases.jsonl"), "--results", str(tmp_path / "good.txt")]) == 0
    bad = good[:]
    bad[0] = bad[0].replace('"hash": "', '"hash": "f')
    (tmp_path / "bad.txt").write_text("\n".join(bad) + "\n", encoding="utf-8")
    assert main(["--cases", str(tmp_path / "cases.jsonl"), "--results", str(tmp_path / "bad.txt")]) == 1


def test_check_compares_types_exactly() -> None:
    cases = [{"id": "a", "op": "route", "expect": {"routes": [1, 0], "ids": ["b", None]}}]
    assert check(cases, ['{"id": "a", "routes": [1, 0], "ids": ["b", null]}']).ok
    assert not check(cases, ['{"id": "a", "routes": [1, false], "ids": ["b", null]}']).ok
    assert not check(cases, ['{"id": "a", "routes": [1, 0], "ids": ["b", "a"]}']).ok
    assert not check(cases, ['{"id": "a", "routes": [1, 0], "ids": ["b", null], "more": 1}']).ok
    assert not check(cases, ['{"id": "a", "routes": [1, 0]}']).ok
    # a refused key inside a list: any error kind outside the codec ops
    cases = [{"id": "b", "op": "route", "expect": {"routes": [0, "!TypeError"]}}]
    assert check(cases, ['{"id": "b", "routes": [0, "!ValueError"]}']).ok
    assert not check(cases, ['{"id": "b", "routes": [0, 1]}']).ok


def test_a_file_that_is_not_a_kit_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text('{"format": "something/1", "cases": 0}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="header"):
        load_cases(f)
    f.write_text(json.dumps({"format": FORMAT, "cases": 2}) + "\n" + '{"id": "a", "op": "hash", "expect": {}}\n',
                 encoding="utf-8")
    with pytest.raises(ValueError, match="announces 2 cases"):
        load_cases(f)
    assert main(["--cases", str(f), "--results", str(f)]) == 2


def test_a_port_that_cannot_start_fails(tmp_path: Path) -> None:
    kit = tmp_path / "cases.jsonl"
    _kit(kit)
    assert main(["--cases", str(kit), "--", str(tmp_path / "no-such-port")]) == 1
