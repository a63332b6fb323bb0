// One key's route (BigInt and Number keys, 10 shards) against a Map lookup of the same key:
//   node ports/js/bench.mjs [N]
import { Router } from "./shardhash.mjs";

const n = Number(process.argv[2] ?? 300000);
const shards = Array.from({ length: 10 }, (_, i) => `"s${i}"`).join(", ");
const router = (type, params) => Router.fromJson(`{"format": "shardhash.router/1", "type": "${type}", "version": 1,
  "shards": [${shards}], "hasher": {"format": "shardhash.hasher/1", "algorithm": "xxh3_64", "seed": 0,
  "codec": {"format": "shardhash.codec/1", "int_encoding": "le64", "normalization": null, "casefold": false,
  "strip": false}}, "params": ${params}}`);

const placement = Array.from({ length: 4096 }, (_, i) => Math.floor((i * 10) / 4096));
const routers = {
  jump: router("jump", "{}"),
  bucket: router("bucket", `{"placement": [${placement.join(", ")}]}`),
  ring: router("ring", `{"vnodes": 256, "weights": null, "collisions": "error"}`),
};
const keys = Array.from({ length: n }, (_, i) => BigInt(i));
const map = new Map();
for (let i = 0; i < 1 << 20; i++) map.set(BigInt(i), i % 10);
const numMap = new Map();
for (let i = 0; i < 1 << 20; i++) numMap.set(i, i % 10);

function time(label, fn) {
  let s = 0;
  for (let r = 0; r < 3; r++) for (let i = 0; i < n; i++) s += fn(i); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) s += fn(i);
  const ns = Number(process.hrtime.bigint() - t0) / n;
  console.log(`${label.padEnd(34)} ${ns.toFixed(1).padStart(7)} ns  (${s})`);
}

for (const [name, r] of Object.entries(routers)) time(`${name}.routeIndex(BigInt)`, (i) => r.routeIndex(keys[i]));
for (const [name, r] of Object.entries(routers)) time(`${name}.routeIndex(number)`, (i) => r.routeIndex(i));
time("Map<BigInt, number>.get (1M keys)", (i) => map.get(keys[i & 0xfffff]));
time("Map<number, number>.get (1M keys)", (i) => numMap.get(i & 0xfffff));
