// Conformance adapter: reads shardhash.conformance/1 cases (stdin, or a file
// given as the first argument) and writes one result line per case.
//   node ports/js/conformance.mjs < conformance/cases.jsonl
import { readFileSync } from "node:fs";
import {
  Hasher, KeyCodec, PyFloat, Router, ShardhashError, UUID, hashBytes, jump, parseJson,
} from "./shardhash.mjs";

const hex = (b) => Buffer.from(b).toString("hex");
const hex64 = (h) => h.toString(16).padStart(16, "0");

// Tagged JSON key -> the port's key value (docs: conformance/README.md).
class Rejected { constructor(what) { this.what = what; } }
function untag(t) {
  const [kind, v] = t;
  switch (kind) {
    case "int": return BigInt(v);
    case "str": return v;
    case "bytes": return Uint8Array.from(Buffer.from(v, "hex"));
    case "uuid": return new UUID(v);
    case "tuple": return v.map(untag);
    case "bool": return v;
    case "none": return null;
    case "float": return new Rejected(v);
    default: throw new Error(`unknown key tag ${kind}`);
  }
}

function errorKind(e) {
  if (e instanceof ShardhashError) return e.kind;
  throw e; // a bug in the port, not a refusal
}

function routeAll(router, keys) {
  const routes = [], ids = [], keyHashes = [];
  for (const t of keys) {
    try {
      const key = untag(t);
      const i = router.routeIndex(key);
      routes.push(i);
      ids.push(router.shards[i]);
      keyHashes.push(router.routesOnHash ? hex64(router.hasher.hash(key)) : null);
    } catch (e) {
      routes.push("!" + errorKind(e));
      ids.push(null);
      keyHashes.push(null);
    }
  }
  return { routes, ids, keyHashes };
}

function run(c) {
  switch (c.op) {
    case "hash":
      return { hash: hex64(hashBytes(Buffer.from(c.data, "hex"), c.algorithm, BigInt(c.seed))) };
    case "encode":
      return { encoded: hex(new KeyCodec(c.codec).encode(untag(c.key))) };
    case "hash_key": {
      const h = new Hasher(c.hasher);
      return { hashes: c.keys.map((k) => hex64(h.hash(untag(k)))) };
    }
    case "jump":
      return { buckets: c.hashes.map((h) => jump(BigInt(h), Number(c.n))) };
    case "load": {
      const r = new Router(c.document);
      return { fingerprint: r.fingerprint, shards: r.shards };
    }
    case "route": {
      const r = new Router(c.document);
      const { routes, ids, keyHashes } = routeAll(r, c.keys);
      const hashRoutes = c.hashes.map((h) => r.routeHash(BigInt(h)));
      return { shards: r.shards, key_hashes: keyHashes, routes, ids, hash_routes: hashRoutes };
    }
    case "replicas": {
      const r = new Router(c.document);
      return { lists: c.hashes.map((h) => r.replicasHash(BigInt(h), Number(c.n), c.zones)) };
    }
    case "assign": {
      const r = new Router(c.document);
      return { routes: r.assignHashes(c.hashes.map((h) => BigInt(h))) };
    }
    case "hot_read": {
      const r = new Router(c.document);
      return { reads: c.keys.map((k) => r.routeRead(untag(k))) };
    }
    default:
      return { unsupported: `op ${c.op}` };
  }
}

// Rejected keys (floats) must fail inside the codec like any other non-key.
const origEncode = KeyCodec.prototype.encode;
KeyCodec.prototype.encode = function encode(key) {
  if (key instanceof Rejected || key instanceof PyFloat) throw new ShardhashError("TypeError", "floats are not keys");
  return origEncode.call(this, key);
};

const text = readFileSync(process.argv[2] ?? 0, "utf8");
const out = [];
for (const line of text.split("\n")) {
  if (!line.trim()) continue;
  const c = parseJson(line);
  if (!("op" in c)) continue; // the header
  let res;
  try {
    res = run(c);
  } catch (e) {
    res = { error: errorKind(e) };
  }
  out.push(JSON.stringify({ id: c.id, ...res }));
}
process.stdout.write(out.join("\n") + "\n");
