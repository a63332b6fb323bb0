// The JavaScript port's XXH32 and XXH64 against Debian's node-xxhashjs
// (xxhashjs 0.2.2), on every length 0..600 of a fixed buffer and 5,000
// pseudo-random inputs, seeded:
//   NODE_PATH=/usr/share/nodejs node ports/js/crosscheck.mjs [path to xxhashjs]
// (Debian installs node modules in /usr/share/nodejs; a nodejs not from Debian needs NODE_PATH)
import { createRequire } from "node:module";
import { hashBytes } from "./shardhash.mjs";

const require = createRequire(import.meta.url);
const XXH = require(process.argv[2] ?? "/usr/share/nodejs/xxhashjs");

const buf = Buffer.alloc(600);
for (let i = 0; i < buf.length; i++) buf[i] = Number(((BigInt(i) * 2654435761n + 1013904223n) & 0xffffffffn) >> 24n);
const inputs = [];
for (let n = 0; n <= buf.length; n++) inputs.push(buf.subarray(0, n));
let x = 0x9e3779b97f4a7c15n;
for (let k = 0; k < 5000; k++) {
  x = (x * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  const b = Buffer.alloc(Number(x >> 56n));
  for (let i = 0; i < b.length; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    b[i] = Number(x >> 56n);
  }
  inputs.push(b);
}
let bad = 0;
inputs.forEach((p, i) => {
  const seed = (i * 0x9e3779b1) >>> 0;
  const data = Uint8Array.from(p);
  const peer32 = BigInt(XXH.h32(Buffer.from(p), seed).toNumber());
  if (hashBytes(data, "xxh32", BigInt(seed)) !== peer32) { console.log(`xxh32 of ${p.length} bytes differs`); bad++; }
  const peer64 = BigInt("0x" + XXH.h64(Buffer.from(p), seed).toString(16));
  if (hashBytes(data, "xxh64", BigInt(seed)) !== peer64) { console.log(`xxh64 of ${p.length} bytes differs`); bad++; }
});
if (bad) process.exit(1);
console.log(`${inputs.length} inputs x 2 hashes agree`);
