"""The cluster file: every field validated at load (depth, router version,
options, names, URLs), and the shard map never falls back to the seed map
after a failover because of a transient metadata error."""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster


def _doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "metadata": "sqlite:meta.db",
        "shards": {s: {"primary": f"sqlite:{s}.db"} for s in ("a", "b")},
        "groups": {"users": {"router": JumpRouter(["a", "b"]).to_dict(),
                             "tables": [{"name": "users", "key": "id"}]}},
    }
    doc.update(over)
    return doc


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    p = tmp_path / "cluster.json"
    p.write_text(json.dumps(doc))
    return p


# ------------------------------------------------------------------ depth (item 11)

@pytest.mark.parametrize("suffix", ["json", "toml"])
def test_deeply_nested_cluster_file_is_a_value_error(tmp_path: Path, suffix: str) -> None:
    p = tmp_path / f"cluster.{suffix}"
    if suffix == "json":
        p.write_text('{"metadata": "sqlite:m.db", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    else:
        p.write_text('metadata = "sqlite:m.db"\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ValueError, match="deep"):
        Cluster.load(p)


def test_nesting_within_the_limit_but_too_deep_for_the_document_is_refused(tmp_path: Path) -> None:
    doc = _doc()
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    doc["groups"]["users"]["router"] = deep
    with pytest.raises(ValueError, match="deep"):
        Cluster.from_dict(doc, base_dir=tmp_path)
    with pytest.raises(ValueError, match="deep"):
        Cluster.load(_write(tmp_path, doc))


# ----------------------------------------------------------- router version (item 12)

@pytest.mark.parametrize("version", [2**63, 2**64 + 5, -1])
def test_router_version_outside_64_bits_is_refused_at_load(tmp_path: Path, version: int) -> None:
    doc = _doc()
    doc["groups"]["users"]["router"].pop("fingerprint", None)
    doc["groups"]["users"]["router"]["version"] = version
    try:
        Cluster.from_dict(doc, base_dir=tmp_path)
    except ValueError as e:
        assert "version" in str(e)
    else:
        pytest.fail(f"version {version} was accepted")


def test_largest_router_version_loads_and_initialises(tmp_path: Path) -> None:
    doc = _doc()
    doc["groups"]["users"]["router"].pop("fingerprint", None)
    doc["groups"]["users"]["router"]["version"] = 2**63 - 1
    for s in ("a", "b"):
        sqlite3.connect(tmp_path / f"{s}.db").execute("CREATE TABLE users (id INTEGER PRIMARY KEY)").connection.close()
    cl = Cluster.from_dict(doc, base_dir=tmp_path)
    cl.init()
    assert cl.router("users").version == 2**63 - 1
    cl.close()


# ------------------------------------------------------------------- options (item 13)

@pytest.mark.parametrize("opt, value", [
    ("wait_timeout", math.nan), ("wait_timeout", math.inf), ("wait_timeout", -1.0), ("wait_timeout", "5"),
    ("wait_timeout", True), ("wait_timeout", 1e300),
    ("retries", -1), ("retries", 1.5), ("retries", True), ("retries", 10**9), ("retries", "3"),
    ("synchronous", "FUL"), ("synchronous", 2), ("synchronous", "FULL; DROP TABLE users"),
    ("timeout", 5),
])
def test_bad_options_are_refused_naming_the_option(tmp_path: Path, opt: str, value: Any) -> None:
    with pytest.raises(ValueError, match=opt):
        Cluster.from_dict(_doc(options={opt: value}), base_dir=tmp_path)
    with pytest.raises(ValueError, match=opt):
        Cluster.from_dict(_doc(), base_dir=tmp_path, **{opt: value})


def test_good_options_are_taken(tmp_path: Path) -> None:
    cl = Cluster.from_dict(_doc(options={"wait_timeout": 2, "retries": 0, "synchronous": "normal"}),
                           base_dir=tmp_path)
    assert (cl.wait_timeout, cl.retries, cl.synchronous) == (2.0, 0, "NORMAL")
    cl.close()


def test_options_must_be_a_table(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="options"):
        Cluster.from_dict(_doc(options=[1, 2]), base_dir=tmp_path)


# -------------------------------------------------------------- other fields (item 13)

@pytest.mark.parametrize("path, value, names", [
    (("metadata",), 5, "metadata"),
    (("metadata",), "oracle://x", "metadata"),
    (("shards", "a", "primary"), "sqlite:a\x00.db", "shards.a.primary"),
    (("shards", "a", "primary"), ["sqlite:a.db"], "shards.a.primary"),
    (("shards", "a", "replicas"), ["ftp://r"], "shards.a.replicas[0]"),
    (("shards", "a", "replica"), ["sqlite:r.db"], "replica"),
    (("groups", "users", "tables"), [{"name": "users", "key": "id", "extra": 1}], "extra"),
    (("groups", "users", "tables"), [{"name": "users", "key": "i d"}], "tables[0].key"),
    (("groups", "users", "tables"), [{"name": "users;", "key": "id"}], "tables[0].name"),
    (("groups", "users", "tables"), [{"name": "_shardhash_units", "key": "id"}], "reserved"),
    (("groups", "users", "tables"), [{"name": "users", "key": "id"}, {"name": "USERS", "key": "id"}],
     "already listed"),
    (("groups", "users", "key_type"), "float", "key_type"),
    (("groups", "users", "routr"), {}, "routr"),
    (("sharding",), 1, "sharding"),
])
def test_every_field_is_validated_naming_it(tmp_path: Path, path: tuple[str, ...], value: Any, names: str) -> None:
    doc = _doc()
    d: Any = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    with pytest.raises(ValueError) as e:
        Cluster.from_dict(doc, base_dir=tmp_path)
    assert names in str(e.value)


@pytest.mark.parametrize("sid", ["", "a b", "a\x00", "-a", "é", "a" * 129])
def test_bad_shard_ids_are_refused(tmp_path: Path, sid: str) -> None:
    doc = _doc()
    doc["shards"][sid] = {"primary": "sqlite:x.db"}
    with pytest.raises(ValueError, match="shard id"):
        Cluster.from_dict(doc, base_dir=tmp_path)


@pytest.mark.parametrize("name", ["users{v2}", "u{pk}", "t{extra}", "a$$b", 'a"b', "a'b", "a;b", "a%b", "a\x00b",
                                  "usérs", "1abc", "", "a" * 49])
def test_hostile_group_table_and_key_names_are_refused_at_load(tmp_path: Path, name: str) -> None:
    for where in ("group", "table", "key"):
        doc = _doc()
        g = doc["groups"]["users"]
        if where == "group":
            doc["groups"] = {name: g}
        elif where == "table":
            g["tables"] = [{"name": name, "key": "id"}]
        else:
            g["tables"] = [{"name": "users", "key": name}]
        with pytest.raises(ValueError, match="not a valid name"):
            Cluster.from_dict(doc, base_dir=tmp_path)


# ----------------------------------------------- shard map after a failover (item 23)

def _cluster(tmp_path: Path) -> Cluster:
    for s in ("a", "b", "b2"):
        sqlite3.connect(tmp_path / f"{s}.db").execute(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)").connection.close()
    return Cluster.from_dict(_doc(), base_dir=tmp_path)


def test_metadata_error_after_failover_propagates_and_is_not_cached(tmp_path: Path) -> None:
    cl = _cluster(tmp_path)
    cl.init()
    cl.failover("b", "sqlite:b2.db")
    cl.prepare_shard("b")  # (the promoted replica's system tables and triggers)
    real = cl.metadata.shard_map
    calls = {"n": 0}

    def flaky() -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise sqlite3.OperationalError("database is locked")
        return real()

    cl.metadata.shard_map = flaky
    cl.refresh()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cl.shard_map()
    # the next read gets the failed-over primary, never the seed's
    assert cl.shard_map()["b"][0] == "sqlite:b2.db"
    key = next(k for k in range(1000) if cl.router().route(k) == "b")
    with cl.transaction(key) as tx:
        tx.execute("INSERT INTO users VALUES (?, 'x')", (key,))
    assert sqlite3.connect(tmp_path / "b2.db").execute("SELECT id FROM users").fetchall() == [(key,)]
    assert sqlite3.connect(tmp_path / "b.db").execute("SELECT id FROM users").fetchall() == []
    cl.close()


def test_uninitialised_store_uses_the_seed_map_with_a_log_record(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    cl = _cluster(tmp_path)
    with caplog.at_level(logging.WARNING, logger="shardhash.migrate"):
        assert cl.shard_map() == {"a": ("sqlite:a.db", []), "b": ("sqlite:b.db", [])}
    assert any("not initialised" in r.getMessage() for r in caplog.records)
    cl.init()
    cl.failover("b", "sqlite:b2.db")
    assert cl.shard_map()["b"][0] == "sqlite:b2.db"
    cl.close()


def test_a_cluster_built_directly_checks_its_names_too(tmp_path: Path) -> None:
    from shardhash.migrate import GroupSpec, TableSpec

    r = JumpRouter(["a", "b"])
    shards: dict[str, tuple[str, list[str]]] = {"a": ("sqlite:a.db", []), "b": ("sqlite:b.db", [])}
    bad = {"g": GroupSpec("g", (TableSpec("t{extra}", "id"),), r)}
    with pytest.raises(ValueError, match="not a valid name"):
        Cluster("sqlite:meta.db", shards, bad, base_dir=tmp_path)
    with pytest.raises(ValueError, match="not a valid name"):
        Cluster("sqlite:meta.db", shards, {"u{pk}": GroupSpec("u{pk}", (TableSpec("t", "id"),), r)},
                base_dir=tmp_path)
    with pytest.raises(ValueError, match="version"):  # (refused by the router itself, before the cluster's check)
        big = JumpRouter(["a", "b"], version=2**63)
        Cluster("sqlite:meta.db", shards, {"g": GroupSpec("g", (TableSpec("t", "id"),), big)}, base_dir=tmp_path)
