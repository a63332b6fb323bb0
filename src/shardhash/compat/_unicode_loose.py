"""The collation key Vitess's ``unicode_loose_md5`` / ``unicode_loose_xxhash``
vindexes hash: the primary weights of ``golang.org/x/text/collate`` with
``language.English`` and ``collate.Loose`` (case, accents and width are
ignored), each written as 2 big-endian bytes, or 3 with the top bit set when
it is above 0x7FFF.

The weights are facts of that package's tables (CLDR 23 root collation,
Unicode 6.2), read out of it by ``tools/make_unicode_loose_table.py``; the
rules reproduced here are those of its ``colltab`` iterator: the input is read
as it is (not normalised first; precomposed characters have their own table
entries), one code point at a time, except that a contraction starter takes
the longest contraction that follows it, contiguous or skipping combining
marks of a lower canonical class (the skipped marks are weighed after it);
Hangul syllables are weighed as their jamo; a code point the table does not
list gets an implicit weight (the code point plus 0x10000 for the CJK unified
and compatibility ideographs, plus 0x20000 for other ideographs, plus 0x50000
for everything else).

Pure Python; strings of characters that start no contraction and carry no
combining class (most text) are translated by ``str.translate``.
"""

from __future__ import annotations

import base64
import bisect
import re
import unicodedata
import zlib
from typing import Final

from . import _unicode_loose_table as _t

# Ideographs added after the Unicode version of the generator's Go toolchain
# (Unicode 13): Vitess built with Go 1.21 or newer (Unicode 15.0) treats them as
# ideographs too.  Unicode 14.0: U+9FFD..9FFF, U+2A6DE..2A6DF, U+2B735..2B738;
# Unicode 15.0: U+2B739, U+31350..323AF.
_LATER_IDEOGRAPHS: Final = ((0x9FFD, 0x9FFF), (0x2A6DE, 0x2A6DF), (0x2B735, 0x2B739), (0x31350, 0x323AF))


Elems = tuple[tuple[int, int], ...]  # (primary weight, canonical combining class) per collation element


def _load_explicit() -> dict[int, Elems]:
    raw = zlib.decompress(base64.b85decode("".join(_t.EXPLICIT)))
    out: dict[int, Elems] = {}
    i = 0
    r = -1
    while i < len(raw):
        r += int.from_bytes(raw[i:i + 3], "big")
        n = raw[i + 3]
        i += 4
        out[r] = tuple((int.from_bytes(raw[i + 4 * j:i + 4 * j + 3], "big"), raw[i + 4 * j + 3]) for j in range(n))
        i += 4 * n
    if len(out) != _t.EXPLICIT_COUNT:  # pragma: no cover - a damaged table
        raise RuntimeError("the unicode_loose weight table is damaged")
    return out


_EXPLICIT: Final = _load_explicit()
_IDEO_RANGES: Final = sorted([*_t.IDEOGRAPH_RANGES, *_LATER_IDEOGRAPHS])
_IDEO_STARTS: Final = [a for a, _ in _IDEO_RANGES]

# contractions: starter -> {suffix: elements}; proper prefixes of suffixes (trie states with children)
_CONTRACT: Final[dict[int, dict[tuple[int, ...], Elems]]] = {}
_PREFIXES: Final[dict[int, set[tuple[int, ...]]]] = {}
for _r, _sfx, _es, _leaf in _t.CONTRACTIONS:
    _CONTRACT.setdefault(_r, {})[_sfx] = _es
    _pre = _PREFIXES.setdefault(_r, set())
    for _k in range(1, len(_sfx)):
        _pre.add(_sfx[:_k])
del _r, _sfx, _es, _leaf, _pre

_MAX_COMBINING = 30  # colltab's maxCombiningCharacters


def _is_ideograph(r: int) -> bool:
    i = bisect.bisect_right(_IDEO_STARTS, r) - 1
    return i >= 0 and r <= _IDEO_RANGES[i][1]


def _single(r: int) -> Elems:
    """The collation elements of one code point, contractions aside."""
    w = _EXPLICIT.get(r)
    if w is not None:
        return w
    if 0xAC00 <= r <= 0xD7A3:  # Hangul syllable: its jamo (L V [T])
        s = r - 0xAC00
        jamo = [0x1100 + s // 588, 0x1161 + (s % 588) // 28]
        if s % 28:
            jamo.append(0x11A7 + s % 28)
        return tuple(e for j in jamo for e in _EXPLICIT[j])
    if _is_ideograph(r):
        return ((r + (0x10000 if (0x4E00 <= r <= 0x9FFF or 0xF900 <= r <= 0xFAFF) else 0x20000), 0),)
    return ((r + 0x50000, 0),)


def _cccs(c: int) -> tuple[int, int]:
    """Canonical combining classes of the first and last character of the NFD of ``c``."""
    if c < 0x300:
        return 0, 0
    d = unicodedata.normalize("NFD", chr(c))
    return unicodedata.combining(d[0]), unicodedata.combining(d[-1])


def _contraction(r: int, s: list[int], start: int, end: int) -> tuple[Elems, int, list[int]]:
    """Match the contraction of starter ``r`` against ``s[start:end]``.

    Returns its elements, how many code points after the starter it consumed
    and the skipped combining marks to weigh after it."""
    table = _CONTRACT[r]
    prefixes = _PREFIXES[r]
    state: tuple[int, ...] = ()
    result: tuple[int, ...] = ()
    pindex = 0
    done = False

    def scan(p: int, limit: int) -> int:
        nonlocal state, result, pindex, done
        while p < limit:
            nxt = state + (s[p],)
            full = nxt in table
            if full:
                result, pindex = nxt, p + 1 - start
            if nxt in prefixes:
                state = nxt
                p += 1
                continue
            if full:
                done = True
                return p + 1
            break
        return p

    p = scan(start, end)
    buf: list[int] = []
    bufp = 0
    if not done and p < end and s[p] >= 0x80:
        p0 = p
        lead, trail = _cccs(s[p])
        p += 1
        if lead != 0:
            prev = trail
            limit = p
            while limit < end and _cccs(s[limit])[0] != 0:
                limit += 1
            while p < end and not done and s[p] >= 0x80:
                lead, trail = _cccs(s[p])
                if lead == 0 or prev >= lead:
                    break
                prev = trail
                pp = scan(p, limit)
                if pp != p:
                    buf.extend(s[p0:p])
                    if pindex == pp - start:
                        bufp = len(buf)
                    p = p0 = pp
                else:
                    p += 1
    elems = table[result] if result else _single(r)
    return elems, pindex, buf[:bufp]


def _append_next(s: list[int], i: int, out: list[tuple[int, int]]) -> int:
    """Append the elements of the code point (or contraction) at ``s[i]``; return how many code points it took."""
    r = s[i]
    if r not in _CONTRACT:
        out.extend(_single(r))
        return 1
    elems, used, skipped = _contraction(r, s, i + 1, len(s))
    out.extend(elems)
    j = 0
    while j < len(skipped):
        j += _append_next(skipped, j, out)
    return 1 + used


def elements(text: str) -> list[tuple[int, int]]:
    """The collation elements of ``text`` in colltab's iterator order: runs of
    combining marks out of canonical order are put in order, as it does."""
    s = [ord(c) for c in text]
    el: list[tuple[int, int]] = []
    pos = 0
    n = 0  # elements already settled (colltab's Iter.N)

    def append_next() -> bool:
        nonlocal pos
        if pos >= len(s):
            return False
        pos += _append_next(s, pos, el)
        return True

    def next_segment() -> bool:
        nonlocal n, el
        if n == len(el) and not append_next():
            return False
        prev = el[-1][1]
        if prev == 0:
            n = len(el)
            return True
        if el[n][1] == 0:
            n += 1
            while n < len(el) and el[n][1] == 0:
                n += 1
            return True
        while True:
            p = len(el)
            if not append_next():
                break
            ccc = el[p][1]
            if ccc == 0 or len(el) - n > _MAX_COMBINING:
                n = p
                return True
            if ccc < prev:  # colltab's doNorm: move the new elements back past higher classes
                k = p
                p -= 1
                while p > n and ccc < el[p - 1][1]:
                    p -= 1
                el = el[:p] + el[k:] + el[p:k]
            else:
                prev = ccc
        done = len(el) != n
        n = len(el)
        return done

    while next_segment():
        pass
    return el


def primaries(text: str) -> list[int]:
    """The primary collation weights of ``text`` (no trailing-space trimming)."""
    return [p for p, _ in elements(text) if p]


def _encode(weights: list[int]) -> bytes:
    key = bytearray()
    for w in weights:
        if w <= 0x7FFF:
            key += w.to_bytes(2, "big")
        else:
            key += (w | 0x800000).to_bytes(3, "big")
    return bytes(key)


def _fast_tables() -> tuple[dict[int, str], re.Pattern[str]]:
    """A ``str.translate`` table from each "simple" BMP character to its key
    bytes (as latin-1 text), and a pattern matching any character that is not
    simple.  Simple: it continues no contraction (no contraction's suffix has
    it), its first collation element has no combining class and neither has
    its first character after canonical decomposition.  In a string of simple
    characters no contraction can match (a starter weighs alone), and each
    character's elements open a new segment, so the iterator reorders
    nothing: the string weighs as its characters one by one."""
    suffix_chars = {c for suffixes in _CONTRACT.values() for sfx in suffixes for c in sfx}
    table: dict[int, str] = {}
    slow: list[str] = []
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        elems = _single(cp)
        if cp in suffix_chars or (elems and elems[0][1]) or _cccs(cp)[0]:
            slow.append(re.escape(chr(cp)))
            continue
        table[cp] = _encode([p for p, _ in elems if p]).decode("latin-1")
    return table, re.compile("[^\u0000-\uffff]|[" + "".join(slow) + "]")


_FAST: tuple[dict[int, str], re.Pattern[str]] | None = None


def loose_key(data: bytes) -> bytes:
    """Vitess's normalised form of a key's bytes: valid UTF-8 required,
    trailing ASCII spaces dropped, then the primary weights."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"cannot normalize a string containing invalid UTF-8: {data!r:.80}") from None
    text = text.rstrip(" ")
    global _FAST
    if _FAST is None:
        _FAST = _fast_tables()
    table, slow = _FAST
    if slow.search(text) is None:  # every character weighs alone: translated in C
        return text.translate(table).encode("latin-1")
    return _encode(primaries(text))


def flat_tables() -> dict[str, object]:
    """The tables above as flat lists of ints, for the C kernel
    (``shardhash/_core/compat/sh_unicode_loose.h``) to build its lookup
    tables from once, so that the weights have one source:

    * ``elems``: a pool of collation elements, each ``primary << 8 | class``;
    * ``explicit_cp`` / ``explicit_off`` / ``explicit_cnt``: the code points
      with explicit elements (ascending), their elements' place in the pool;
    * ``ideographs``: the implicit ideograph ranges, ``[first, last]`` each;
    * ``ccc_cp`` / ``ccc_lead`` / ``ccc_trail``: every code point whose
      :func:`_cccs` is not ``(0, 0)``, with it;
    * ``contractions``: ``(starter, suffix, offset, count)``, by starter;
    * ``max_suffix``, ``max_combining``."""
    elems: list[int] = []
    pool: dict[Elems, int] = {}

    def place(es: Elems) -> int:
        off = pool.get(es)
        if off is None:
            off = pool[es] = len(elems)
            elems.extend(p << 8 | c for p, c in es)
        return off

    cps = sorted(_EXPLICIT)
    offs = [place(_EXPLICIT[r]) for r in cps]
    ccc_cp: list[int] = []
    lead: list[int] = []
    trail: list[int] = []
    for c in range(0x300, 0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        if unicodedata.combining(ch) or unicodedata.decomposition(ch):
            a, b = _cccs(c)
            if a or b:
                ccc_cp.append(c)
                lead.append(a)
                trail.append(b)
    contractions = [(r, sfx, place(es), len(es)) for r in sorted(_CONTRACT) for sfx, es in _CONTRACT[r].items()]
    return {
        "elems": elems, "explicit_cp": cps, "explicit_off": offs, "explicit_cnt": [len(_EXPLICIT[r]) for r in cps],
        "ideographs": [list(rg) for rg in _IDEO_RANGES], "ccc_cp": ccc_cp, "ccc_lead": lead, "ccc_trail": trail,
        "contractions": contractions, "max_suffix": max(len(s) for _, s, _, _ in contractions),
        "max_combining": _MAX_COMBINING,
    }
