// shardhash routing protocol, reference port for JavaScript (Node >= 18, ES modules, no dependencies).
//
// Reads a shardhash router document (format shardhash.router/1), verifies it
// (strict fields, fingerprint) and routes typed keys exactly as the Python
// package does: docs/protocol.md (hashes, key codec) and docs/routers.md
// (placement).  64-bit values are BigInt.
import { createHash } from "node:crypto";
import { CASE_FOLD_DATA, PY_WHITESPACE } from "./casefold_table.mjs";

export const M64 = (1n << 64n) - 1n;
const M32 = 0xffffffffn;

// ---------------------------------------------------------------------------
// Errors: the protocol's three kinds.
export class ShardhashError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind; // "TypeError" | "ValueError" | "OverflowError"
  }
}
const typeError = (m) => new ShardhashError("TypeError", m);
const valueError = (m) => new ShardhashError("ValueError", m);
const overflowError = (m) => new ShardhashError("OverflowError", m);

// ---------------------------------------------------------------------------
// A small strict JSON reader: integers become BigInt (64-bit values are exact),
// other numbers Number; objects have no prototype.  Nesting is limited to 64.
export class PyFloat {
  // A JSON number written with a fraction or an exponent, kept apart from integers.
  constructor(value) { this.value = value; }
}

export function parseJson(text) {
  let i = 0;
  const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const fail = (m) => { throw valueError(`invalid JSON at offset ${i}: ${m}`); };
  const value = (depth) => {
    ws();
    const c = text[i];
    if (c === "{" || c === "[") {
      if (depth >= 64) fail("nested deeper than 64 levels");
      i++;
      if (c === "[") {
        const out = [];
        ws();
        if (text[i] === "]") { i++; return out; }
        for (;;) {
          out.push(value(depth + 1));
          ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "]") { i++; return out; }
          fail("expected , or ]");
        }
      }
      const out = Object.create(null);
      ws();
      if (text[i] === "}") { i++; return out; }
      for (;;) {
        ws();
        if (text[i] !== "\"") fail("expected a key");
        const k = string();
        ws();
        if (text[i] !== ":") fail("expected :");
        i++;
        out[k] = value(depth + 1);
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; return out; }
        fail("expected , or }");
      }
    }
    if (c === "\"") return string();
    if (text.startsWith("true", i)) { i += 4; return true; }
    if (text.startsWith("false", i)) { i += 5; return false; }
    if (text.startsWith("null", i)) { i += 4; return null; }
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === "") fail("unexpected character");
    i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) return BigInt(m[0]);
    return new PyFloat(Number(m[0]));
  };
  const string = () => {
    i++;
    let out = "";
    for (;;) {
      const c = text[i++];
      if (c === undefined) fail("unterminated string");
      if (c === "\"") return out;
      if (c === "\\") {
        const e = text[i++];
        const map = { "\"": "\"", "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
        if (e === "u") {
          const h = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("bad \\u escape");
          out += String.fromCharCode(parseInt(h, 16));
          i += 4;
        } else if (e in map) out += map[e];
        else fail("bad escape");
      } else {
        if (c < " ") fail("control character in string");
        out += c;
      }
    }
  };
  const v = value(0);
  ws();
  if (i !== text.length) fail("trailing data");
  return v;
}

// Python's repr of a float (the canonical JSON writes floats this way).
export function pyFloatRepr(x) {
  if (!Number.isFinite(x)) throw valueError("NaN and infinities are not allowed in documents");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mant, exp] = Math.abs(x).toExponential().split("e");
  const digits = mant.replace(".", "");
  const decpt = Number(exp) + 1; // value = 0.digits * 10^decpt
  if (decpt > 16 || decpt < -3) {
    const e = decpt - 1;
    const es = (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0");
    return sign + digits[0] + (digits.length > 1 ? "." + digits.slice(1) : "") + "e" + es;
  }
  if (decpt <= 0) return sign + "0." + "0".repeat(-decpt) + digits;
  if (decpt >= digits.length) return sign + digits + "0".repeat(decpt - digits.length) + ".0";
  return sign + digits.slice(0, decpt) + "." + digits.slice(decpt);
}

function compareCodePoints(a, b) {
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i), y = b.codePointAt(j);
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return (a.length - i) - (b.length - j) < 0 ? -1 : (a.length - i) === (b.length - j) ? 0 : 1;
}

function quote(s) {
  let out = "\"";
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === "\"") out += "\\\"";
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + "\"";
}

// Canonical JSON: keys sorted by code point, no whitespace, non-ASCII as itself.
export function canonicalJson(v) {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "bigint") return v.toString();
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : pyFloatRepr(v);
  if (typeof v === "string") return quote(v);
  if (Array.isArray(v)) return "[" + v.map(canonicalJson).join(",") + "]";
  const keys = Object.keys(v).sort(compareCodePoints);
  return "{" + keys.map((k) => quote(k) + ":" + canonicalJson(v[k])).join(",") + "}";
}

// ---------------------------------------------------------------------------
// Hash functions (docs/protocol.md section 1).  Each returns the 64-bit routing value.
const P32_1 = 0x9e3779b1, P32_2 = 0x85ebca77, P32_3 = 0xc2b2ae3d, P32_4 = 0x27d4eb2f, P32_5 = 0x165667b1;
const P64_1 = 0x9e3779b185ebca87n, P64_2 = 0xc2b2ae3d27d4eb4fn, P64_3 = 0x165667b19e3779f9n,
  P64_4 = 0x85ebca77c2b2ae63n, P64_5 = 0x27d4eb2f165667c5n;
const MX1 = 0x165667919e3779f9n, MX2 = 0x9fb21c651e98df25n;
const SECRET = Uint8Array.from(
  ("b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671fcb79e64eccc0e578825ad07dccff7221b808" +
    "4674f743248ee03590e6813a264c3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8a8fa763fe3" +
    "9c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49" +
    "d316552629d4689e2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e").match(/../g),
  (h) => parseInt(h, 16));

const r32 = (p, i) => (p[i] | (p[i + 1] << 8) | (p[i + 2] << 16) | (p[i + 3] << 24)) >>> 0;
const r64 = (p, i) => BigInt(r32(p, i)) | (BigInt(r32(p, i + 4)) << 32n);
const rotl32 = (x, r) => ((x << r) | (x >>> (32 - r))) >>> 0;
const rotl64 = (x, r) => ((x << BigInt(r)) | (x >> BigInt(64 - r))) & M64;
const mul32 = (a, b) => Math.imul(a, b) >>> 0;

function xxh32(p, seed) {
  const len = p.length;
  let i = 0, acc;
  const round = (a, lane) => mul32(rotl32((a + mul32(lane, P32_2)) >>> 0, 13), P32_1);
  if (len >= 16) {
    let a1 = (seed + P32_1 + P32_2) >>> 0, a2 = (seed + P32_2) >>> 0, a3 = seed >>> 0, a4 = (seed - P32_1) >>> 0;
    while (len - i >= 16) {
      a1 = round(a1, r32(p, i)); a2 = round(a2, r32(p, i + 4));
      a3 = round(a3, r32(p, i + 8)); a4 = round(a4, r32(p, i + 12));
      i += 16;
    }
    acc = (rotl32(a1, 1) + rotl32(a2, 7) + rotl32(a3, 12) + rotl32(a4, 18)) >>> 0;
  } else acc = (seed + P32_5) >>> 0;
  acc = (acc + len) >>> 0;
  for (; len - i >= 4; i += 4) acc = mul32(rotl32((acc + mul32(r32(p, i), P32_3)) >>> 0, 17), P32_4);
  for (; i < len; i++) acc = mul32(rotl32((acc + mul32(p[i], P32_5)) >>> 0, 11), P32_1);
  acc ^= acc >>> 15; acc = mul32(acc, P32_2);
  acc ^= acc >>> 13; acc = mul32(acc, P32_3);
  acc ^= acc >>> 16;
  return BigInt(acc >>> 0);
}

const xxh64Round = (acc, lane) => (rotl64((acc + lane * P64_2) & M64, 31) * P64_1) & M64;
const xxh64Merge = (acc, a) => (((acc ^ xxh64Round(0n, a)) * P64_1) + P64_4) & M64;
function xxh64Avalanche(h) {
  h ^= h >> 33n; h = (h * P64_2) & M64;
  h ^= h >> 29n; h = (h * P64_3) & M64;
  return h ^ (h >> 32n);
}

function xxh64(p, seed) {
  const len = p.length;
  let i = 0, acc;
  if (len >= 32) {
    let a1 = (seed + P64_1 + P64_2) & M64, a2 = (seed + P64_2) & M64, a3 = seed, a4 = (seed - P64_1) & M64;
    while (len - i >= 32) {
      a1 = xxh64Round(a1, r64(p, i)); a2 = xxh64Round(a2, r64(p, i + 8));
      a3 = xxh64Round(a3, r64(p, i + 16)); a4 = xxh64Round(a4, r64(p, i + 24));
      i += 32;
    }
    acc = (rotl64(a1, 1) + rotl64(a2, 7) + rotl64(a3, 12) + rotl64(a4, 18)) & M64;
    acc = xxh64Merge(acc, a1); acc = xxh64Merge(acc, a2); acc = xxh64Merge(acc, a3); acc = xxh64Merge(acc, a4);
  } else acc = (seed + P64_5) & M64;
  acc = (acc + BigInt(len)) & M64;
  for (; len - i >= 8; i += 8) acc = (rotl64(acc ^ xxh64Round(0n, r64(p, i)), 27) * P64_1 + P64_4) & M64;
  if (len - i >= 4) {
    acc = (rotl64(acc ^ ((BigInt(r32(p, i)) * P64_1) & M64), 23) * P64_2 + P64_3) & M64;
    i += 4;
  }
  for (; i < len; i++) acc = (rotl64(acc ^ ((BigInt(p[i]) * P64_5) & M64), 11) * P64_1) & M64;
  return xxh64Avalanche(acc);
}

function xxh3Avalanche(x) {
  x ^= x >> 37n; x = (x * MX1) & M64;
  return x ^ (x >> 32n);
}
const fold64 = (a, b) => { const m = a * b; return (m & M64) ^ (m >> 64n); };
const mix16 = (p, i, s, j, seed) =>
  fold64(r64(p, i) ^ ((r64(s, j) + seed) & M64), r64(p, i + 8) ^ ((r64(s, j + 8) - seed) & M64));
const swap64 = (x) => {
  let r = 0n;
  for (let k = 0; k < 8; k++) { r = (r << 8n) | (x & 0xffn); x >>= 8n; }
  return r;
};
const swap32 = (x) => (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;

function xxh3(p, seed) {
  const len = p.length, s = SECRET;
  if (len <= 16) {
    if (len > 8) {
      const lo = (((r64(s, 24) ^ r64(s, 32)) + seed) & M64) ^ r64(p, 0);
      const hi = (((r64(s, 40) ^ r64(s, 48)) - seed) & M64) ^ r64(p, len - 8);
      return xxh3Avalanche((BigInt(len) + swap64(lo) + hi + fold64(lo, hi)) & M64);
    }
    if (len >= 4) {
      const first = BigInt(r32(p, 0)), last = BigInt(r32(p, len - 4));
      const mod = seed ^ (BigInt(swap32(Number(seed & M32))) << 32n);
      let x = (((r64(s, 8) ^ r64(s, 16)) - mod) & M64) ^ (last | (first << 32n));
      x ^= rotl64(x, 49) ^ rotl64(x, 24);
      x = (x * MX2) & M64;
      x ^= (x >> 35n) + BigInt(len);
      x = (x * MX2) & M64;
      return x ^ (x >> 28n);
    }
    if (len > 0) {
      const combined = BigInt((p[len - 1] | (len << 8) | (p[0] << 16) | (p[len >> 1] << 24)) >>> 0);
      const k = (BigInt((r32(s, 0) ^ r32(s, 4)) >>> 0) + seed) & M64;
      return xxh64Avalanche(k ^ combined);
    }
    return xxh64Avalanche(seed ^ r64(s, 56) ^ r64(s, 64));
  }
  if (len <= 128) {
    let acc = (BigInt(len) * P64_1) & M64;
    const rounds = (len - 1) >> 5;
    for (let r = rounds; r >= 0; r--) {
      acc += mix16(p, 16 * r, s, 32 * r, seed) + mix16(p, len - 16 * (r + 1), s, 32 * r + 16, seed);
    }
    return xxh3Avalanche(acc & M64);
  }
  if (len <= 240) {
    let acc = (BigInt(len) * P64_1) & M64;
    for (let k = 0; k < 8; k++) acc += mix16(p, 16 * k, s, 16 * k, seed);
    acc = xxh3Avalanche(acc & M64);
    for (let k = 8; k < len >> 4; k++) acc += mix16(p, 16 * k, s, 16 * (k - 8) + 3, seed);
    acc += mix16(p, len - 16, s, 119, seed);
    return xxh3Avalanche(acc & M64);
  }
  let sec = SECRET;
  if (seed !== 0n) {
    sec = new Uint8Array(192);
    const dv = new DataView(sec.buffer);
    for (let k = 0; k < 12; k++) {
      dv.setBigUint64(16 * k, (r64(SECRET, 16 * k) + seed) & M64, true);
      dv.setBigUint64(16 * k + 8, (r64(SECRET, 16 * k + 8) - seed) & M64, true);
    }
  }
  const acc = [BigInt(P32_3), P64_1, P64_2, P64_3, P64_4, BigInt(P32_2), P64_5, BigInt(P32_1)];
  const stripe = (off, so) => {
    const d = [];
    for (let k = 0; k < 8; k++) d.push(r64(p, off + 8 * k));
    for (let k = 0; k < 8; k++) {
      const x = d[k] ^ r64(sec, so + 8 * k);
      acc[k] = (acc[k] + (x & M32) * (x >> 32n) + d[k ^ 1]) & M64;
    }
  };
  const block = 64 * 16;
  const nblocks = Math.floor((len - 1) / block);
  for (let b = 0; b < nblocks; b++) {
    for (let n = 0; n < 16; n++) stripe(b * block + 64 * n, 8 * n);
    for (let k = 0; k < 8; k++) {
      let a = acc[k];
      a ^= a >> 47n;
      a ^= r64(sec, 128 + 8 * k);
      acc[k] = (a * BigInt(P32_1)) & M64;
    }
  }
  const nstripes = Math.floor((len - nblocks * block - 1) / 64);
  for (let n = 0; n < nstripes; n++) stripe(nblocks * block + 64 * n, 8 * n);
  stripe(len - 64, 192 - 71);
  let result = (BigInt(len) * P64_1) & M64;
  for (let k = 0; k < 4; k++) {
    result += fold64(acc[2 * k] ^ r64(sec, 11 + 16 * k), acc[2 * k + 1] ^ r64(sec, 11 + 16 * k + 8));
  }
  return xxh3Avalanche(result & M64);
}

function murmur3_32(p, seed) {
  const c1 = 0xcc9e2d51, c2 = 0x1b873593;
  let h = Number(seed) >>> 0;
  const len = p.length, nb = len >> 2;
  const scr = (k) => mul32(rotl32(mul32(k, c1), 15), c2);
  for (let b = 0; b < nb; b++) {
    h = rotl32((h ^ scr(r32(p, 4 * b))) >>> 0, 13);
    h = (mul32(h, 5) + 0xe6546b64) >>> 0;
  }
  let k = 0;
  for (let t = len & 3; t > 0; t--) k = ((k << 8) | p[4 * nb + t - 1]) >>> 0;
  if (len & 3) h = (h ^ scr(k)) >>> 0;
  h = (h ^ len) >>> 0;
  h ^= h >>> 16; h = mul32(h, 0x85ebca6b);
  h ^= h >>> 13; h = mul32(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return BigInt(h >>> 0);
}

function fmix64(k) {
  k ^= k >> 33n; k = (k * 0xff51afd7ed558ccdn) & M64;
  k ^= k >> 33n; k = (k * 0xc4ceb9fe1a85ec53n) & M64;
  return k ^ (k >> 33n);
}

function murmur3_128(p, seed) {
  const c1 = 0x87c37b91114253d5n, c2 = 0x4cf5ad432745937fn;
  let h1 = seed, h2 = seed;
  const len = p.length, nb = len >> 4;
  const sk1 = (k) => (rotl64((k * c1) & M64, 31) * c2) & M64;
  const sk2 = (k) => (rotl64((k * c2) & M64, 33) * c1) & M64;
  for (let b = 0; b < nb; b++) {
    h1 ^= sk1(r64(p, 16 * b));
    h1 = rotl64(h1, 27); h1 = (h1 + h2) & M64; h1 = (h1 * 5n + 0x52dce729n) & M64;
    h2 ^= sk2(r64(p, 16 * b + 8));
    h2 = rotl64(h2, 31); h2 = (h2 + h1) & M64; h2 = (h2 * 5n + 0x38495ab5n) & M64;
  }
  const t = 16 * nb, rem = len & 15;
  let k1 = 0n, k2 = 0n;
  for (let i = rem; i > 8; i--) k2 = (k2 << 8n) | BigInt(p[t + i - 1]);
  for (let i = Math.min(rem, 8); i > 0; i--) k1 = (k1 << 8n) | BigInt(p[t + i - 1]);
  if (rem > 8) h2 ^= sk2(k2);
  if (rem > 0) h1 ^= sk1(k1);
  h1 ^= BigInt(len); h2 ^= BigInt(len);
  h1 = (h1 + h2) & M64; h2 = (h2 + h1) & M64;
  h1 = fmix64(h1); h2 = fmix64(h2);
  h1 = (h1 + h2) & M64;
  return h1;
}

function fnv1a32(p) {
  let h = 0x811c9dc5;
  for (const b of p) h = mul32(h ^ b, 0x01000193);
  return BigInt(h >>> 0);
}

function fnv1a64(p) {
  let h = 0xcbf29ce484222325n;
  for (const b of p) h = ((h ^ BigInt(b)) * 0x100000001b3n) & M64;
  return h;
}

// name -> [widest seed, fn(bytes, seed) -> 64-bit routing value]
export const ALGORITHMS = {
  xxh3_64: [M64, xxh3],
  xxh64: [M64, xxh64],
  xxh32: [M32, (p, s) => xxh32(p, Number(s))],
  murmur3_32: [M32, murmur3_32],
  murmur3_128: [M32, murmur3_128],
  fnv1a_32: [0n, fnv1a32],
  fnv1a_64: [0n, fnv1a64],
};

/** The 64-bit routing value of `data` (a Uint8Array) under `algorithm` and `seed` (BigInt). */
export function hashBytes(data, algorithm, seed = 0n) {
  const a = ALGORITHMS[algorithm];
  if (!a) throw valueError(`unknown algorithm ${JSON.stringify(algorithm)}`);
  if (seed < 0n) throw valueError(`seed must be >= 0, got ${seed}`);
  if (seed > a[0]) {
    if (a[0] === 0n) throw valueError(`${algorithm} takes no seed, got ${seed}`);
    throw overflowError(`seed ${seed} is too wide for ${algorithm}`);
  }
  return a[1](data, seed);
}

// ---------------------------------------------------------------------------
// The key codec (docs/protocol.md section 2).

/** A UUID key (RFC 4122 bytes). */
export class UUID {
  constructor(text) {
    const hex = String(text).toLowerCase().replace(/^urn:uuid:/, "").replace(/[{}-]/g, "");
    if (!/^[0-9a-f]{32}$/.test(hex)) throw valueError(`not a UUID: ${text}`);
    this.bytes = Uint8Array.from(hex.match(/../g), (h) => parseInt(h, 16));
  }
}

let caseFold = null;
function foldTable() {
  if (caseFold === null) {
    caseFold = new Map();
    for (const e of CASE_FOLD_DATA.split(";")) {
      const [k, v] = e.split(":");
      caseFold.set(parseInt(k, 16), String.fromCodePoint(...v.split(" ").map((x) => parseInt(x, 16))));
    }
  }
  return caseFold;
}
const WHITESPACE = new Set(PY_WHITESPACE);

function pyStrip(s) {
  const cps = Array.from(s);
  let a = 0, b = cps.length;
  while (a < b && WHITESPACE.has(cps[a].codePointAt(0))) a++;
  while (b > a && WHITESPACE.has(cps[b - 1].codePointAt(0))) b--;
  return cps.slice(a, b).join("");
}

function pyCasefold(s) {
  const t = foldTable();
  let out = "";
  for (const ch of s) {
    const f = t.get(ch.codePointAt(0));
    out += f === undefined ? ch : f;
  }
  return out;
}

const NORMS = ["NFC", "NFD", "NFKC", "NFKD"];
const CODEC_FIELDS = ["format", "int_encoding", "normalization", "casefold", "strip"];
const INT_MIN = -(1n << 63n);

function checkFields(doc, required, optional, what) {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc) || doc instanceof PyFloat) {
    throw typeError(`${what} must be an object`);
  }
  for (const k of Object.keys(doc)) {
    if (!required.includes(k) && !optional.includes(k)) throw valueError(`unknown field ${JSON.stringify(k)} in ${what}`);
  }
  for (const k of required) if (!(k in doc)) throw valueError(`missing field ${JSON.stringify(k)} in ${what}`);
}

const isInt = (v) => typeof v === "bigint";
const isStr = (v) => typeof v === "string";

export class KeyCodec {
  constructor(doc) {
    checkFields(doc, CODEC_FIELDS, [], "codec document");
    if (doc.format !== "shardhash.codec/1") throw valueError(`codec format must be "shardhash.codec/1"`);
    if (doc.int_encoding !== "le64" && doc.int_encoding !== "decimal") throw valueError("bad int_encoding");
    if (doc.normalization !== null && !NORMS.includes(doc.normalization)) throw valueError("bad normalization");
    if (typeof doc.casefold !== "boolean") throw typeError("casefold must be a boolean");
    if (typeof doc.strip !== "boolean") throw typeError("strip must be a boolean");
    this.intEncoding = doc.int_encoding;
    this.normalization = doc.normalization;
    this.casefold = doc.casefold;
    this.strip = doc.strip;
  }

  encodeStr(s) {
    if (!s.isWellFormed()) throw valueError("string key is not valid UTF-8 (a lone surrogate)");
    if (this.strip) s = pyStrip(s);
    if (this.normalization !== null) s = s.normalize(this.normalization);
    if (this.casefold) {
      s = pyCasefold(s);
      if (this.normalization !== null) s = s.normalize(this.normalization);
    }
    return new TextEncoder().encode(s);
  }

  encodeInt(v) {
    if (v < INT_MIN || v > M64) throw overflowError(`integer key ${v} is outside [-2**63, 2**64-1]`);
    if (this.intEncoding === "decimal") return new TextEncoder().encode(v.toString());
    const out = new Uint8Array(8);
    new DataView(out.buffer).setBigUint64(0, v & M64, true);
    return out;
  }

  /** Bytes hashed for a key: BigInt or safe-integer Number, string, Uint8Array, UUID, or an Array (compound). */
  encode(key) {
    if (typeof key === "string") return this.encodeStr(key);
    if (key instanceof Uint8Array) return key;
    if (typeof key === "boolean") throw typeError("booleans are not keys");
    if (typeof key === "bigint") return this.encodeInt(key);
    if (typeof key === "number") {
      if (Number.isSafeInteger(key)) return this.encodeInt(BigInt(key));
      throw typeError(`${key} is not a key: use a BigInt for large integers`);
    }
    if (key instanceof UUID) return key.bytes;
    if (Array.isArray(key)) {
      if (key.length === 0) throw valueError("the empty tuple is not a key");
      const parts = [];
      let n = 0;
      for (const part of key) {
        const b = this.encode(part);
        const head = new Uint8Array(4);
        new DataView(head.buffer).setUint32(0, b.length, true);
        parts.push(head, b);
        n += 4 + b.length;
      }
      const out = new Uint8Array(n);
      let o = 0;
      for (const b of parts) { out.set(b, o); o += b.length; }
      return out;
    }
    throw typeError(`not a key: ${String(key)}`);
  }
}

export class Hasher {
  constructor(doc) {
    checkFields(doc, ["format", "algorithm", "seed", "codec"], [], "hasher document");
    if (doc.format !== "shardhash.hasher/1") throw valueError(`hasher format must be "shardhash.hasher/1"`);
    if (!isStr(doc.algorithm) || !(doc.algorithm in ALGORITHMS)) throw valueError("unknown algorithm");
    if (!isInt(doc.seed)) throw typeError("seed must be an integer");
    hashBytes(new Uint8Array(0), doc.algorithm, doc.seed); // checks the seed's range
    this.algorithm = doc.algorithm;
    this.seed = doc.seed;
    this.fn = ALGORITHMS[doc.algorithm][1];
    this.codec = new KeyCodec(doc.codec);
  }

  hash(key) { return this.fn(this.codec.encode(key), this.seed); }
}


// ---------------------------------------------------------------------------
// Fast path for the common case: an integer key, the default le64 codec and
// xxh3_64 (an 8-byte input), routed by jump, a table or a ring.  The same
// arithmetic as above on 64-bit values held as two uint32 Numbers (no BigInt
// allocation); the conformance kit checks it against the BigInt path's answers.
const R = new Uint32Array(2); // result of mul64 / the fast hash: R[0] high, R[1] low 32 bits (a typed array:
// storing a double in a module variable would allocate)

function mul64(ah, al, bh, bl) { // (ah:al) * (bh:bl) mod 2^64 -> R[0]:R[1]
  const a0 = al & 0xffff, a1 = al >>> 16, b0 = bl & 0xffff, b1 = bl >>> 16;
  const p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  R[1] = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  const hi = p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16);
  R[0] = (hi + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

const MX2_H = 0x9fb21c65, MX2_L = 0x1e98df25;
const JUMP_H = 0x27bb2ee6, JUMP_L = 0x87b0b0fd; // 2862933555777941757

// xxh3_64 of the 8 bytes vh:vl (little-endian), with the precomputed (secret words - seed mix) kh:kl.
function xxh3Int(vh, vl, kh, kl) {
  // x = k ^ (last | first << 32): first = the low word, last = the high word
  let xh = (kh ^ vl) >>> 0, xl = (kl ^ vh) >>> 0;
  // x ^= rotl(x, 49) ^ rotl(x, 24)
  const r49h = ((xl << 17) | (xh >>> 15)) >>> 0, r49l = ((xh << 17) | (xl >>> 15)) >>> 0;
  const r24h = ((xh << 24) | (xl >>> 8)) >>> 0, r24l = ((xl << 24) | (xh >>> 8)) >>> 0;
  xh = (xh ^ r49h ^ r24h) >>> 0; xl = (xl ^ r49l ^ r24l) >>> 0;
  mul64(xh, xl, MX2_H, MX2_L); xh = R[0]; xl = R[1];
  xl = (xl ^ ((xh >>> 3) + 8)) >>> 0; // x ^= (x >> 35) + len
  mul64(xh, xl, MX2_H, MX2_L); xh = R[0]; xl = R[1];
  R[1] = (xl ^ ((xl >>> 28) | (xh << 4))) >>> 0; // x ^= x >> 28
  R[0] = (xh ^ (xh >>> 28)) >>> 0;
}

function jumpFast(hh, hl, n) {
  let b = -1, j = 0;
  while (j < n) {
    b = j;
    mul64(hh, hl, JUMP_H, JUMP_L);
    hl = R[1] + 1; hh = R[0];
    if (hl === 0x100000000) { hl = 0; hh = (hh + 1) >>> 0; }
    j = Math.trunc((b + 1) * (2147483648.0 / ((hh >>> 1) + 1)));
  }
  return b;
}

const TWO32 = 4294967296;
const INT_MIN_BIG = -(1n << 63n);

// ---------------------------------------------------------------------------
// Placement (docs/routers.md section 2).
const GOLDEN = 0x9e3779b97f4a7c15n;

export function mix64(z) {
  z &= M64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return z ^ (z >> 31n);
}

/** Jump consistent hash of a 64-bit hash (BigInt) over n buckets. */
export function jump(h, n) {
  let b = -1, j = 0;
  while (j < n) {
    b = j;
    h = (h * 2862933555777941757n + 1n) & M64;
    j = Math.trunc((b + 1) * (2147483648.0 / Number((h >> 33n) + 1n)));
  }
  return b;
}

function lowerBound(arr, x) { // first i with arr[i] >= x
  let lo = 0, hi = arr.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (arr[m] < x) lo = m + 1; else hi = m; }
  return lo;
}
function upperBound(arr, x, cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0)) { // first i with arr[i] > x
  let lo = 0, hi = arr.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (cmp(arr[m], x) <= 0) lo = m + 1; else hi = m; }
  return lo;
}

function isPrime(n) {
  if (n < 2) return false;
  for (let d = 2; d * d <= n; d++) if (n % d === 0) return false;
  return true;
}

function checkShardId(s, what) {
  if (!isStr(s) || s === "") throw valueError(`${what} must be a non-empty string`);
}

function checkShardList(shards) {
  if (!Array.isArray(shards) || shards.length === 0) throw valueError("shards must be a non-empty list");
  const seen = new Set();
  shards.forEach((s, i) => {
    checkShardId(s, `shards[${i}]`);
    if (seen.has(s)) throw valueError(`duplicate shard id ${JSON.stringify(s)}`);
    seen.add(s);
  });
}

function sameList(a, b) { return a.length === b.length && a.every((x, i) => x === b[i]); }

function uint64(v, what) {
  if (!isInt(v)) throw typeError(`${what} must be an integer`);
  if (v < 0n || v > M64) throw valueError(`${what} must be in [0, 2**64-1]`);
  return v;
}

function smallInt(v, what, lo, hi) {
  if (!isInt(v)) throw typeError(`${what} must be an integer`);
  if (v < BigInt(lo) || v > BigInt(hi)) throw valueError(`${what} must be in [${lo}, ${hi}]`);
  return Number(v);
}

function weightsOf(w, shards, what) {
  if (w === null) return null;
  checkFields(w, [], shards, `${what} weights`);
  const out = {};
  for (const [k, v] of Object.entries(w)) {
    const x = v instanceof PyFloat ? v.value : isInt(v) ? Number(v) : NaN;
    if (!(v instanceof PyFloat) && !isInt(v)) throw typeError(`weight of ${k} must be a number`);
    if (!Number.isFinite(x) || x <= 0) throw valueError(`weight of ${k} must be finite and > 0`);
    out[k] = x;
  }
  return out;
}

// Normalised copy for the fingerprint: weights are floats; nested documents carry their fingerprints.
function normalise(doc, nested) {
  const out = Object.create(null);
  for (const [k, v] of Object.entries(doc)) if (k !== "fingerprint") out[k] = v;
  const p = Object.create(null);
  for (const [k, v] of Object.entries(doc.params)) p[k] = v;
  if (p.weights !== undefined && p.weights !== null && typeof p.weights === "object") {
    const w = Object.create(null);
    for (const [k, v] of Object.entries(p.weights)) w[k] = isInt(v) ? new PyFloat(Number(v)) : v;
    p.weights = w;
  }
  if (doc.type === "hot" && isInt(p.bucket_seconds)) p.bucket_seconds = new PyFloat(Number(p.bucket_seconds));
  for (const [k, r] of Object.entries(nested)) p[k] = r.document;
  out.params = p;
  return out;
}

const TOP_REQUIRED = ["format", "type", "version", "shards", "hasher", "params"];
const TOP_OPTIONAL = ["key_prefix", "zones", "fingerprint", "key_type"];
const KEY_TYPES = ["int", "str", "bytes", "uuid"];
const REHASH_SALT = 0x7265706c69636131n;

/** A router loaded from a shardhash.router/1 document. */
export class Router {
  /** From JSON text. */
  static fromJson(text) { return new Router(parseJson(text)); }

  /** From a parsed document (as parseJson returns it). */
  constructor(doc) {
    checkFields(doc, TOP_REQUIRED, TOP_OPTIONAL, "router document");
    if (doc.format !== "shardhash.router/1") throw valueError(`format must be "shardhash.router/1"`);
    if (!isInt(doc.version)) throw typeError("version must be an integer");
    if (doc.version < 0n) throw valueError("version must be >= 0");
    this.type = doc.type;
    this.hasher = new Hasher(doc.hasher);
    this.keyPrefix = null;
    if ("key_prefix" in doc) this.keyPrefix = smallInt(doc.key_prefix, "key_prefix", 1, 2 ** 31);
    if ("key_type" in doc) {
      const kt = doc.key_type;
      checkFields(kt, ["format", "type"], [], "key_type");
      if (kt.format !== "shardhash.keytype/1") throw valueError("key_type format must be shardhash.keytype/1");
      const t = kt.type;
      const ok = isStr(t) ? KEY_TYPES.includes(t) : Array.isArray(t) && t.length >= 2 && t.every((x) => KEY_TYPES.includes(x));
      if (!ok) throw valueError("unknown key_type type");
    }
    if (!Array.isArray(doc.shards)) throw typeError("shards must be a list");
    checkShardList(doc.shards);
    const p = doc.params;
    if (p === null || typeof p !== "object" || Array.isArray(p)) throw typeError("params must be an object");
    this.nested = {};
    this.#build(doc, p);
    if (!sameList(this.shards, doc.shards)) throw valueError("shards do not match the parameters");
    if ("zones" in doc) {
      const z = doc.zones;
      checkFields(z, this.shards, [], "zones");
      for (const s of this.shards) checkShardId(z[s], `zones[${s}]`);
      this.zones = z;
    } else this.zones = null;
    this.#setupFast();
    const norm = normalise(doc, this.nested);
    const text = canonicalJson(norm);
    if (!text.isWellFormed()) throw valueError("the document holds a lone surrogate");
    this.fingerprint = createHash("sha256").update(new TextEncoder().encode(text)).digest("hex");
    if ("fingerprint" in doc && doc.fingerprint !== this.fingerprint) {
      throw valueError(`fingerprint mismatch: document says ${doc.fingerprint}, its content hashes to ${this.fingerprint}`);
    }
    norm.fingerprint = this.fingerprint;
    this.document = norm;
  }

  #build(doc, p) {
    const t = this.type;
    const shards = doc.shards;
    const n = shards.length;
    this.shards = shards;
    const params = (req, opt = []) => checkFields(p, req, opt, `${t} params`);
    if (t === "modulo" || t === "jump") {
      params([]);
      if (t === "modulo") { this.table = shards.map((_, i) => i); this.kind = "table"; } else this.kind = "jump";
    } else if (t === "ring" || t === "bounded") {
      const extra = t === "bounded" ? ["balance_factor"] : [];
      if ("tokens" in p) params(["tokens", "collisions", ...extra]);
      else params(["vnodes", "weights", "collisions", ...extra]);
      if (t === "bounded") this.balanceFactor = smallInt(p.balance_factor, "balance_factor", 100, 2 ** 31);
      if (p.collisions !== "error" && p.collisions !== "first") throw valueError("collisions must be error or first");
      const entries = []; // [pos, shard, i]
      if ("tokens" in p) {
        checkFields(p.tokens, shards, [], "tokens");
        shards.forEach((s) => {
          const list = p.tokens[s];
          if (!Array.isArray(list) || list.length === 0) throw valueError(`shard ${s} needs at least one token`);
          list.forEach((v, i) => entries.push([uint64(v, `tokens[${s}][${i}]`), s, i]));
        });
      } else {
        const vnodes = smallInt(p.vnodes, "vnodes", 1, 2 ** 20);
        const w = weightsOf(p.weights, shards, "ring");
        let total = 0;
        for (const s of shards) {
          const count = Math.max(1, Math.floor(vnodes * (w && s in w ? w[s] : 1.0) + 0.5));
          total += count;
          if (total > 2 ** 22) throw valueError("too many ring tokens (limit 2**22)");
          for (let i = 0; i < count; i++) entries.push([this.hasher.hash(`${s}:${i}`), s, i]);
        }
      }
      entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : compareCodePoints(a[1], b[1]) || a[2] - b[2]));
      const index = new Map(shards.map((s, i) => [s, i]));
      this.tokens = [];
      this.owners = [];
      for (let k = 0; k < entries.length; k++) {
        const [pos, s] = entries[k];
        if (this.tokens.length && this.tokens[this.tokens.length - 1] === pos) {
          const prev = entries[k - 1][1];
          if (p.collisions === "error" || prev === s) throw valueError(`two tokens at position ${pos}`);
          continue;
        }
        this.tokens.push(pos);
        this.owners.push(index.get(s));
      }
      this.kind = "ring";
    } else if (t === "rendezvous") {
      params(["weights"]);
      const w = weightsOf(p.weights, shards, "rendezvous");
      this.seeds = shards.map((s) => mix64(this.hasher.hash(s)));
      const full = shards.map((s) => (w && s in w ? w[s] : 1.0));
      this.weights = full.some((x) => x !== full[0]) ? full : null;
      this.kind = "rendezvous";
    } else if (t === "maglev") {
      params(["table_size", "weights"]);
      const m = smallInt(p.table_size, "table_size", 1, 2 ** 24);
      if (!isPrime(m) || m < n) throw valueError("table_size must be a prime >= the number of shards");
      const w = weightsOf(p.weights, shards, "maglev");
      const full = shards.map((s) => (w && s in w ? w[s] : 1.0));
      const mx = Math.max(...full);
      const rel = full.some((x) => x !== full[0]) ? full.map((x) => x / mx) : null;
      this.table = maglevTable(shards.map((s) => this.hasher.hash(s)), rel, m);
      this.kind = "table";
    } else if (t === "bucket") {
      params(["placement"]);
      if (!Array.isArray(p.placement) || p.placement.length === 0 || p.placement.length > 2 ** 24) {
        throw valueError("placement must be a non-empty list");
      }
      this.table = p.placement.map((v, i) => smallInt(v, `placement[${i}]`, 0, n - 1));
      this.kind = "table";
    } else if (t === "hash_range") {
      params(["splits", "owners"]);
      this.splits = p.splits.map((v, i) => uint64(v, `splits[${i}]`));
      this.splits.forEach((s, i) => {
        if (s === 0n || (i > 0 && s <= this.splits[i - 1])) throw valueError("splits must increase strictly, from 1");
      });
      this.#owners(p.owners, this.splits.length + 1);
      this.kind = "hash_range";
    } else if (t === "range") {
      params(["splits", "owners"]);
      if (!Array.isArray(p.splits)) throw typeError("splits must be a list");
      const allInt = p.splits.every(isInt), allStr = p.splits.every(isStr);
      if (!allInt && !allStr) throw typeError("range splits must be all integers or all strings");
      this.splitKind = allInt ? "int" : "str";
      this.splits = p.splits;
      this.splits.forEach((s, i) => {
        if (i > 0 && this.#cmpKey(s, this.splits[i - 1]) <= 0) throw valueError("splits must increase strictly");
      });
      this.#owners(p.owners, this.splits.length + 1);
      this.kind = "range";
    } else if (t === "directory") {
      params(["base", "overrides"]);
      this.base = new Router(p.base);
      if (this.base.kind === "range" || this.base.kind === "watermark") throw valueError("a directory's base routes hashes");
      this.nested = { base: this.base };
      const ids = [...this.base.shards];
      this.overrides = new Map();
      if (!Array.isArray(p.overrides)) throw typeError("overrides must be a list");
      for (const o of p.overrides) {
        if (!Array.isArray(o) || o.length !== 2 || !(isInt(o[0]) || isStr(o[0]))) throw valueError("bad override");
        checkShardId(o[1], "override shard");
        if (!ids.includes(o[1])) ids.push(o[1]);
        const h = this.hasher.hash(o[0]);
        if (this.overrides.has(h)) throw valueError("two override keys share a hash");
        this.overrides.set(h, ids.indexOf(o[1]));
      }
      this.shards = ids;
      this.kind = "directory";
    } else if (t === "watermark") {
      params(["old", "new", "watermark"]);
      this.old = new Router(p.old);
      this.new = new Router(p.new);
      this.nested = { old: this.old, new: this.new };
      if (!isInt(p.watermark)) throw typeError("watermark must be an integer");
      this.watermark = p.watermark;
      this.shards = [...this.old.shards, ...this.new.shards.filter((s) => !this.old.shards.includes(s))];
      this.kind = "watermark";
    } else if (t === "memento") {
      params(["buckets", "removed"]);
      const nb = smallInt(p.buckets, "buckets", 1, 2 ** 31 - 1);
      if (!Array.isArray(p.removed)) throw typeError("removed must be a list");
      const removed = p.removed.map((v, i) => smallInt(v, `removed[${i}]`, 0, nb - 1));
      if (new Set(removed).size !== removed.length || removed.length >= nb) throw valueError("bad removed list");
      if (nb - removed.length !== n) throw valueError("buckets - removed must equal the number of shards");
      this.mementoN = nb;
      this.replacer = new Map();
      removed.forEach((b, k) => this.replacer.set(b, nb - k - 1));
      this.bucketShard = new Map();
      let s = 0;
      for (let b = 0; b < nb; b++) if (!this.replacer.has(b)) this.bucketShard.set(b, s++);
      this.kind = "memento";
    } else if (t === "multiprobe") {
      params(["probes"]);
      this.probes = smallInt(p.probes, "probes", 1, 64);
      const toks = shards.map((s, i) => [mix64(this.hasher.hash(s)), i]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      for (let i = 1; i < toks.length; i++) if (toks[i][0] === toks[i - 1][0]) throw valueError("two shards share a token");
      this.tokens = toks.map((x) => x[0]);
      this.owners = toks.map((x) => x[1]);
      this.kind = "multiprobe";
    } else if (t === "hot") {
      params(["base", "hot", "write", "bucket_seconds"]);
      this.base = new Router(p.base);
      if (this.base.kind === "range" || this.base.kind === "watermark" || this.base.kind === "hot") {
        throw typeError("a hot-key router's base must be a hash router");
      }
      this.nested = { base: this.base };
      if (canonicalJson(doc.hasher) !== canonicalJson(p.base.hasher) || this.keyPrefix !== this.base.keyPrefix) {
        throw valueError("hot document: 'hasher'/'key_prefix' differ from the base router's");
      }
      if (!["random", "round_robin", "time"].includes(p.write)) throw valueError("write must be random, round_robin or time");
      const bs = p.bucket_seconds;
      if (p.write === "time") {
        const v = bs instanceof PyFloat ? bs.value : isInt(bs) ? Number(bs) : NaN;
        if (!(Number.isFinite(v) && v >= 1e-6 && Number.isFinite(253402300799.0 / v))) {
          throw valueError("write='time' needs bucket_seconds, a finite number >= 1e-06");
        }
      } else if (bs !== null) {
        throw valueError("bucket_seconds only applies to write='time'");
      }
      if (!Array.isArray(p.hot)) throw valueError("hot must be a list of [key, fan_out] pairs");
      this.hot = new Map(); // "i:<int>" or "s:<str>" -> fan_out
      for (const pair of p.hot) {
        if (!Array.isArray(pair) || pair.length !== 2) throw valueError("hot must be a list of [key, fan_out] pairs");
        const [k, f] = pair;
        if (!isInt(k) && !isStr(k)) throw typeError("hot keys must be int or str");
        const id = isInt(k) ? `i:${k}` : `s:${k}`;
        if (this.hot.has(id)) throw valueError(`hot key ${k} given twice`);
        this.hot.set(id, smallInt(f, "fan_out", 2, 1024));
      }
      this.shards = this.base.shards;
      this.kind = "hot";
    } else {
      throw valueError(`unknown router type ${JSON.stringify(t)}`);
    }
  }

  /** A hot-key router's reads: every [shard index, sub-key] holding rows of key, sub-key order. */
  routeRead(key) {
    if (this.kind !== "hot") throw typeError("routeRead is for hot-key routers");
    if (typeof key === "number" && Number.isSafeInteger(key)) key = BigInt(key);
    const id = typeof key === "bigint" ? `i:${key}` : typeof key === "string" ? `s:${key}` : null;
    const n = id === null ? undefined : this.hot.get(id);
    if (n === undefined) return [[this.routeIndex(key), 0]];
    const out = [];
    for (let i = 0; i < n; i++) out.push([this.base.routeIndex(i === 0 ? key : `${key}#${i}`), i]);
    return out;
  }

  #setupFast() {
    const h = this.hasher;
    this.fast = h.algorithm === "xxh3_64" && h.codec.intEncoding === "le64" && this.keyPrefix === null &&
      (this.kind === "jump" || this.kind === "table" || this.kind === "ring");
    if (!this.fast) return;
    const mod = h.seed ^ (BigInt(swap32(Number(h.seed & M32))) << 32n);
    const k = ((r64(SECRET, 8) ^ r64(SECRET, 16)) - mod) & M64;
    this.kh = Number(k >> 32n); this.kl = Number(k & M32);
    if (this.kind === "ring") {
      this.tokHi = Uint32Array.from(this.tokens, (t) => Number(t >> 32n));
      this.tokLo = Uint32Array.from(this.tokens, (t) => Number(t & M32));
      // ringIdx[p]: the first token whose top `bits` bits are >= p (about two prefixes per token)
      let bits = 1;
      while (2 ** bits < 2 * this.tokens.length && bits < 20) bits++;
      this.ringShift = 32 - bits;
      this.ringIdx = new Int32Array(2 ** bits + 1);
      let j = 0;
      for (let p = 0; p <= 2 ** bits; p++) {
        while (j < this.tokens.length && (p === 2 ** bits || this.tokHi[j] >>> this.ringShift < p)) j++;
        this.ringIdx[p] = j;
      }
    } else if (this.kind === "table") {
      this.tableI32 = Int32Array.from(this.table);
    }
  }

  // routeIndex for an integer key on the fast path (R[0]:R[1] = the key's hash).
  #routeFast() {
    const hh = R[0], hl = R[1];
    if (this.kind === "jump") return jumpFast(hh, hl, this.shards.length);
    if (this.kind === "table") {
      const m = this.tableI32.length;
      let r = hh % m;
      r = (r * 65536 + (hl >>> 16)) % m;
      r = (r * 65536 + (hl & 0xffff)) % m;
      return this.tableI32[r];
    }
    const th = this.tokHi, tl = this.tokLo;
    const p = hh >>> this.ringShift;
    let lo = this.ringIdx[p], hi = this.ringIdx[p + 1];
    while (lo < hi) { // first token >= h
      const m = (lo + hi) >>> 1;
      if (th[m] < hh || (th[m] === hh && tl[m] < hl)) lo = m + 1; else hi = m;
    }
    return this.owners[lo < th.length ? lo : 0];
  }

  #owners(owners, count) {
    if (!Array.isArray(owners) || owners.length !== count) throw valueError("owners must have one entry per range");
    const ids = [];
    owners.forEach((s, i) => { checkShardId(s, `owners[${i}]`); if (!ids.includes(s)) ids.push(s); });
    this.rangeOwners = owners.map((s) => ids.indexOf(s));
    this.shards = ids;
  }

  #cmpKey(a, b) {
    if (typeof a === "bigint") return a < b ? -1 : a > b ? 1 : 0;
    return compareCodePoints(a, b);
  }

  /** Shard index of a 64-bit hash (BigInt). */
  routeHash(h) {
    switch (this.kind) {
      case "jump": return jump(h, this.shards.length);
      case "table": return this.table[Number(h % BigInt(this.table.length))];
      case "ring": {
        const i = lowerBound(this.tokens, h);
        return this.owners[i < this.tokens.length ? i : 0];
      }
      case "rendezvous": return this.#rendezvousOrder(h, true)[0];
      case "hash_range": return this.rangeOwners[upperBound(this.splits, h)];
      case "memento": return this.bucketShard.get(this.#mementoBucket(h));
      case "multiprobe": return this.#multiprobe(h);
      case "directory": {
        const o = this.overrides.get(h);
        return o !== undefined ? o : this.base.routeHash(h);
      }
      case "hot": return this.base.routeHash(h);
      default: throw typeError(`${this.type} routers do not route hashes`);
    }
  }

  /** Shard index of a key (BigInt/Number, string, Uint8Array, UUID, Array for a compound key). */
  routeIndex(key) {
    if (this.fast) {
      if (typeof key === "number" && Number.isSafeInteger(key)) {
        const lo = key % TWO32;
        xxh3Int(((Math.floor(key / TWO32) % TWO32) + TWO32) % TWO32 >>> 0, (lo + TWO32) % TWO32 >>> 0,
          this.kh, this.kl);
        return this.#routeFast();
      }
      if (typeof key === "bigint") {
        if (key < INT_MIN_BIG || key > M64) throw overflowError(`integer key ${key} is outside [-2**63, 2**64-1]`);
        const v = key & M64;
        xxh3Int(Number(v >> 32n), Number(v & M32), this.kh, this.kl);
        return this.#routeFast();
      }
    }
    if (this.keyPrefix !== null) {
      if (Array.isArray(key)) key = this.keyPrefix === 1 ? key[0] : key.slice(0, this.keyPrefix);
      else if (this.keyPrefix > 1) throw typeError(`key_prefix ${this.keyPrefix} needs a tuple key`);
    }
    if (this.kind === "range") {
      const want = this.splitKind === "int" ? "bigint" : "string";
      if (typeof key === "number" && Number.isSafeInteger(key)) key = BigInt(key);
      if (typeof key !== want) throw typeError(`range keys must be ${this.splitKind}s`);
      return this.rangeOwners[upperBound(this.splits, key, (a, b) => this.#cmpKey(a, b))];
    }
    if (this.kind === "watermark") {
      if (typeof key === "number" && Number.isSafeInteger(key)) key = BigInt(key);
      if (typeof key !== "bigint") throw typeError("watermark keys must be integers");
      if (key >= this.watermark) return this.shards.indexOf(this.new.route(key));
      return this.old.routeIndex(key);
    }
    if (this.kind === "hot") return this.base.routeIndex(key);
    return this.routeHash(this.hasher.hash(key));
  }

  /** Shard id of a key. */
  route(key) { return this.shards[this.routeIndex(key)]; }

  get routesOnHash() { return this.kind !== "range" && this.kind !== "watermark"; }

  #mementoBucket(h) {
    const r = this.replacer;
    let b = jump(h, this.mementoN);
    let c = r.has(b) ? r.get(b) : -1;
    while (c >= 0) {
      const x = mix64(((h ^ 0x6d656d656e746f31n) + BigInt(b) * GOLDEN) & M64);
      b = Number((x * BigInt(c)) >> 64n);
      let nx = r.has(b) ? r.get(b) : -1;
      while (nx >= c) { b = nx; nx = r.has(b) ? r.get(b) : -1; }
      c = nx;
    }
    return b;
  }

  #probes(h) {
    const out = [];
    for (let i = 0; i < this.probes; i++) out.push(mix64((h + BigInt(i + 1) * GOLDEN) & M64));
    return out;
  }

  #multiprobe(h) {
    let bestD = null, best = 0;
    for (const pr of this.#probes(h)) {
      let j = lowerBound(this.tokens, pr);
      if (j === this.tokens.length) j = 0;
      const d = (this.tokens[j] - pr) & M64;
      if (bestD === null || d < bestD || (d === bestD && this.owners[j] < best)) { bestD = d; best = this.owners[j]; }
    }
    return best;
  }

  #rendezvousOrder(h, firstOnly) {
    const scores = this.seeds.map((seed, i) => {
      const x = mix64(h ^ seed);
      if (this.weights === null) return x;
      const u = Number((x >> 11n) | 1n) / 9007199254740992.0;
      return -this.weights[i] / Math.log(u);
    });
    if (firstOnly) {
      let best = 0;
      for (let i = 1; i < scores.length; i++) if (scores[i] > scores[best]) best = i;
      return [best];
    }
    return scores.map((_, i) => i).sort((a, b) => (scores[a] > scores[b] ? -1 : scores[a] < scores[b] ? 1 : a - b));
  }

  /** Preference order P(h) (docs/routers.md 2.17). */
  preference(h) {
    const n = this.shards.length;
    const walk = (tokens, owners) => {
      let j = lowerBound(tokens, h);
      if (j === tokens.length) j = 0;
      const seen = [];
      for (let s = 0; s < tokens.length && seen.length < n; s++) {
        const o = owners[(j + s) % tokens.length];
        if (!seen.includes(o)) seen.push(o);
      }
      return seen;
    };
    switch (this.kind) {
      case "ring": return walk(this.tokens, this.owners);
      case "hash_range": return walk([...this.splits.map((s) => s - 1n), M64], this.rangeOwners);
      case "rendezvous": return this.#rendezvousOrder(h, false);
      case "multiprobe": {
        const pr = this.#probes(h);
        const score = this.tokens.map((t) => pr.reduce((m, p) => { const d = (t - p) & M64; return d < m ? d : m; }, M64 + 1n));
        const idx = this.tokens.map((_, j) => j);
        idx.sort((a, b) => (score[a] < score[b] ? -1 : score[a] > score[b] ? 1 : this.owners[a] - this.owners[b]));
        return idx.map((j) => this.owners[j]);
      }
      case "jump": case "table": case "memento": {
        const seen = [];
        const mark = new Set();
        for (let a = 0; a < 8 * n; a++) {
          const x = a === 0 ? h : mix64(((h ^ REHASH_SALT) + BigInt(a) * GOLDEN) & M64);
          const s = this.routeHash(x);
          if (!mark.has(s)) { mark.add(s); seen.push(s); }
          if (seen.length === n) break;
        }
        for (let s = 0; s < n; s++) if (!mark.has(s)) seen.push(s);
        return seen;
      }
      default: throw typeError(`${this.type} routers have no replica lists`);
    }
  }

  /** The n replicas of a hash, as shard indices; zones: {shard id: zone} or null for the router's own. */
  replicasHash(h, n, zones = null) {
    if (!Number.isInteger(n) || n < 1 || n > this.shards.length) throw valueError(`n must be in 1..${this.shards.length}`);
    const pref = this.preference(h);
    const z = zones ?? this.zones;
    if (z === null) return pref.slice(0, n);
    const zoneOf = this.shards.map((s) => z[s]);
    const nzones = new Set(zoneOf).size;
    const out = [], used = new Set();
    let skipped = [];
    for (const s of pref) {
      if (out.length === n) break;
      if (used.size === nzones) out.push(s);
      else if (used.has(zoneOf[s])) skipped.push(s);
      else {
        used.add(zoneOf[s]);
        out.push(s);
        if (used.size === nzones) { out.push(...skipped.slice(0, n - out.length)); skipped = []; }
      }
    }
    out.push(...skipped.slice(0, n - out.length));
    return out;
  }

  /** Bounded loads (unweighted): the shard of each hash of one batch, placed in order. */
  assignHashes(hashes) {
    if (this.type !== "bounded") throw typeError("assign is for bounded routers");
    const n = this.shards.length, total = BigInt(hashes.length);
    const denom = 100n * BigInt(n);
    const cap = Number((total * BigInt(this.balanceFactor) + denom - 1n) / denom);
    const load = new Array(n).fill(0);
    return hashes.map((h) => {
      let j = lowerBound(this.tokens, h);
      if (j === this.tokens.length) j = 0;
      for (let s = 0; s < this.tokens.length; s++) {
        const o = this.owners[(j + s) % this.tokens.length];
        if (load[o] + 1 <= cap) { load[o]++; return o; }
      }
      throw valueError("no shard has room"); // cannot happen for unit sizes
    });
  }
}

function maglevTable(ids, rel, m) {
  const n = ids.length;
  const bm = BigInt(m);
  const offset = ids.map((x) => Number(mix64(x ^ 0x6f66667365743a31n) % bm));
  const skip = ids.map((x) => Number(mix64(x ^ 0x736b69703a312121n) % (bm - 1n)) + 1);
  const pos = offset.slice(); // permutation[i][next[i]]
  const credit = new Array(n).fill(0.0);
  const table = new Int32Array(m).fill(-1);
  let filled = 0;
  for (;;) {
    for (let i = 0; i < n; i++) {
      if (rel !== null) {
        credit[i] += rel[i];
        if (credit[i] < 1.0) continue;
        credit[i] -= 1.0;
      }
      let c = pos[i];
      while (table[c] >= 0) c = (c + skip[i]) % m;
      table[c] = i;
      pos[i] = (c + skip[i]) % m;
      if (++filled === m) return Array.from(table);
    }
  }
}
