// Self-test of what the conformance kit cannot see: integer keys given as
// Numbers, and the integer fast path (xxh3_64, le64, jump/table/ring) against
// the general BigInt path, over every router document of the kit.
//   node ports/js/test.mjs [conformance/cases.jsonl]
import { readFileSync } from "node:fs";
import { Router, parseJson } from "./shardhash.mjs";

const kit = process.argv[2] ?? new URL("../../conformance/cases.jsonl", import.meta.url);
const ints = [0, 1, -1, 2, 7, 42, 255, 256, 65535, 2 ** 31 - 1, -(2 ** 31), 2 ** 32 - 1, 2 ** 32, -(2 ** 32),
  2 ** 40 + 3, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
let x = 0x9e3779b97f4a7c15n;
const bigs = [0n, -1n, (1n << 63n) - 1n, -(1n << 63n), 1n << 63n, (1n << 64n) - 1n];
for (let i = 0; i < 300; i++) {
  x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
  bigs.push(x, x - (1n << 63n));
}
let checked = 0, fast = 0;
const fail = (m) => { console.error(m); process.exitCode = 1; };
for (const line of readFileSync(kit, "utf8").split("\n")) {
  if (!line.includes('"op":"route"')) continue;
  const c = parseJson(line);
  const r = new Router(c.document);
  if (!r.routesOnHash) continue;
  const slow = new Router(c.document);
  slow.fast = false;
  if (r.fast) fast++;
  for (const k of ints) {
    let a, b, e;
    try { a = r.routeIndex(k); b = slow.routeIndex(BigInt(k)); } catch (err) { e = err; }
    if (e) { if (r.keyPrefix === null || r.keyPrefix === 1) fail(`${c.id}: ${k}: ${e.message}`); continue; }
    if (a !== b) fail(`${c.id}: Number key ${k} routes to ${a}, BigInt key to ${b}`);
    checked++;
  }
  for (const k of bigs) {
    let a, b, e;
    try { a = r.routeIndex(k); b = slow.routeIndex(k); } catch (err) { e = err; }
    if (e) { if (r.keyPrefix === null || r.keyPrefix === 1) fail(`${c.id}: ${k}: ${e.message}`); continue; }
    if (a !== b) fail(`${c.id}: key ${k}: fast path ${a}, BigInt path ${b}`);
    checked++;
  }
  for (const k of [1n << 64n, -(1n << 63n) - 1n]) {
    try { r.routeIndex(k); fail(`${c.id}: ${k} was accepted`); } catch (err) {
      if (err.kind !== "OverflowError" && err.kind !== "TypeError") fail(`${c.id}: ${k}: ${err.message}`);
    }
  }
}
if (fast < 10) fail(`only ${fast} documents take the fast path`);
if (process.exitCode) console.error("FAILED");
else console.log(`${checked} integer keys agree (${fast} documents on the fast path)`);
