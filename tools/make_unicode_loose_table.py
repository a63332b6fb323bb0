"""Build ``shardhash/compat/_unicode_loose_table.py``: the primary collation
weights that Vitess's ``unicode_loose_md5`` / ``unicode_loose_xxhash``
vindexes hash.

Vitess folds a key with ``golang.org/x/text/collate`` (``language.English``,
``collate.Loose``: primary strength only; Vitess keeps a copy of that
package's tables, CLDR 23 / Unicode 6.2 collation data).  The weights are
facts of those tables, so they are read out of the Go package itself rather
than re-derived: ``--dump XTEXT`` writes a small Go program into a private
copy of an ``x/text`` source tree (``XTEXT``, e.g. the Debian package
``golang-golang-x-text-dev``), runs it, and writes

* for every code point, the key of the one-character string;
* for every contraction starter, each complete suffix of its contraction
  trie and the primaries of the contraction's collation elements.

The module keeps only what the rules do not compute: code points whose
weights are not the implicit ones (``x/text``'s ``implicitPrimary``: the
code point plus 0x10000 / 0x20000 for ideographs, 0x50000 otherwise) and
are not Hangul syllables (decomposed to jamo), the implicit ideograph
ranges, and the contractions.

    python tools/make_unicode_loose_table.py [--dump /path/to/golang.org/x/text]
    python tools/make_unicode_loose_table.py --check

``--check`` also recomputes, with ``x/text``, the keys of the frozen inputs of
``tests/vectors/compat/vitess_unicode_loose_xtext.tsv`` (random strings over
many scripts, combining marks and the contractions, drawn once with a fixed
seed); without Go or the ``x/text`` tree it names what it leaves out.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "shardhash" / "compat" / "_unicode_loose_table.py"

GO_COLLATE = '''package collate

import (
	"golang.org/x/text/internal/colltab"
	"golang.org/x/text/language"
)

func ZZTable(t language.Tag) *colltab.Table {
	return getTable(locales[colltab.MatchLang(t, tags)])
}
'''

GO_COLLTAB = '''package colltab

import "unicode/utf8"

type ZZSuffix struct {
	Suffix string
	Elems  []Elem
	Leaf   bool
}

func (t *Table) zzPrims(ce Elem) []Elem {
	if ce.ctype() == ceNormal {
		return []Elem{ce}
	}
	return t.appendExpansion(nil, ce)
}

func (t *Table) ZZContractions(r rune) (bool, []ZZSuffix) {
	var b [4]byte
	n := utf8.EncodeRune(b[:], r)
	ce, _ := t.Index.lookup(b[:n])
	if ce.ctype() != ceContractionIndex {
		return false, nil
	}
	index, cnt, offset := splitContractIndex(ce)
	var out []ZZSuffix
	var walk func(states ContractTrieSet, n int, prefix []byte)
	walk = func(states ContractTrieSet, n int, prefix []byte) {
		for i := 0; i < n; i++ {
			e := states[i]
			if e.N != final {
				p := append(append([]byte{}, prefix...), e.L)
				if e.I != noIndex && utf8.Valid(p) {
					out = append(out, ZZSuffix{string(p), t.zzPrims(Elem(t.ContractElem[int(e.I)+offset])), false})
				}
				walk(states[int(e.H)+n:], int(e.N), p)
			} else {
				for c := int(e.L); c <= int(e.H); c++ {
					p := append(append([]byte{}, prefix...), byte(c))
					if utf8.Valid(p) {
						ce := Elem(t.ContractElem[c-int(e.L)+int(e.I)+offset])
						out = append(out, ZZSuffix{string(p), t.zzPrims(ce), true})
					}
				}
			}
		}
	}
	walk(t.ContractTries[index:], cnt, nil)
	return true, out
}
'''

GO_MAIN = '''package main

import (
	"bufio"
	"fmt"
	"os"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

func main() {
	col := collate.New(language.English, collate.Loose)
	tab := collate.ZZTable(language.English)
	buf := new(collate.Buffer)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	switch os.Args[1] {
	case "runes":
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if r >= 0xD800 && r <= 0xDFFF {
				continue
			}
			es, _ := tab.AppendNextString(nil, string(r))
			ideo := 0
			if unicode.Is(unicode.Ideographic, r) {
				ideo = 1
			}
			fmt.Fprintf(w, "%x\\t", r)
			for i, e := range es {
				if i > 0 {
					fmt.Fprint(w, " ")
				}
				fmt.Fprintf(w, "%x.%x", e.Primary(), e.CCC())
			}
			fmt.Fprintf(w, "\\t%d\\n", ideo)
		}
	case "contractions":
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if r >= 0xD800 && r <= 0xDFFF {
				continue
			}
			ok, sfx := tab.ZZContractions(r)
			if !ok {
				continue
			}
			for _, s := range sfx {
				fmt.Fprintf(w, "%x\\t", r)
				for i, c := range s.Suffix {
					if i > 0 {
						fmt.Fprint(w, " ")
					}
					fmt.Fprintf(w, "%x", c)
				}
				fmt.Fprint(w, "\\t")
				for i, e := range s.Elems {
					if i > 0 {
						fmt.Fprint(w, " ")
					}
					fmt.Fprintf(w, "%x.%x", e.Primary(), e.CCC())
				}
				fmt.Fprintf(w, "\\t%v\\n", s.Leaf)
			}
		}
	case "keys": // hex UTF-8 on stdin, one a line -> hex key
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var b []byte
			fmt.Sscanf(sc.Text(), "%x", &b)
			if !utf8.Valid(b) {
				fmt.Fprintln(w, "invalid")
				continue
			}
			fmt.Fprintf(w, "%x\\n", col.Key(buf, b))
			buf.Reset()
		}
	}
}
'''


def build_dumper(xtext: Path, work: Path) -> Path:
    """A private copy of the x/text tree with the dump program; returns the binary."""
    tree = work / "gopath" / "src" / "golang.org" / "x" / "text"
    shutil.copytree(xtext, tree)
    (tree / "collate" / "zz_dump.go").write_text(GO_COLLATE)
    (tree / "internal" / "colltab" / "zz_dump.go").write_text(GO_COLLTAB)
    (tree / "cmd" / "zzdump").mkdir(parents=True, exist_ok=True)
    (tree / "cmd" / "zzdump" / "main.go").write_text(GO_MAIN)
    exe = work / "zzdump"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(work / "gopath"), "GOCACHE": str(work / "cache"),
           "GOFLAGS": ""}
    subprocess.run(["go", "build", "-o", str(exe), "golang.org/x/text/cmd/zzdump"], check=True, env=env)
    return exe


def _elems(text: str) -> list[tuple[int, int]]:
    """``"p.c p.c"`` (hex primary and canonical combining class) as pairs."""
    return [(int(p, 16), int(c, 16)) for p, c in (e.split(".") for e in text.split())]


def _implicit(r: int, ideo: bool) -> int:
    if ideo:
        return r + (0x10000 if (0x4E00 <= r <= 0x9FFF or 0xF900 <= r <= 0xFAFF) else 0x20000)
    return r + 0x50000


def build(runes_tsv: str, contr_tsv: str) -> str:
    explicit = bytearray()
    ideo_ranges: list[list[int]] = []
    last = -1
    count = 0
    for line in runes_tsv.splitlines():
        rs, es, ideo = line.split("\t")
        r = int(rs, 16)
        p = _elems(es)
        if ideo == "1" and p == [(_implicit(r, True), 0)]:
            if ideo_ranges and ideo_ranges[-1][1] == r - 1:
                ideo_ranges[-1][1] = r
            else:
                ideo_ranges.append([r, r])
            continue
        if p == [(_implicit(r, False), 0)] or 0xAC00 <= r <= 0xD7A3:
            continue
        # one record: code point delta (3 bytes), element count (1 byte), then per
        # collation element its primary weight (3 bytes) and combining class (1 byte)
        explicit += (r - last).to_bytes(3, "big") + bytes([len(p)])
        for w, c in p:
            explicit += w.to_bytes(3, "big") + bytes([c])
        last = r
        count += 1
    contractions = []
    for line in contr_tsv.splitlines():
        rs, sfx, ps, leaf = line.split("\t")
        contractions.append((int(rs, 16), tuple(int(c, 16) for c in sfx.split()), tuple(_elems(ps)),
                             leaf == "true"))
    blob = base64.b85encode(zlib.compress(bytes(explicit), 9)).decode()
    lines = [
        '"""Primary collation weights of ``golang.org/x/text/collate`` (CLDR 23 root',
        'collation, Unicode 6.2; ``language.English``, ``collate.Loose``), as Vitess\'s',
        '``unicode_loose_*`` vindexes use them.  Generated by',
        '``tools/make_unicode_loose_table.py`` from that package\'s tables; do not edit."""',
        "",
        "# the collation elements of the code points whose weights are not the implicit ones:",
        "# zlib, then base85; records of a 3-byte code point delta, a 1-byte element count and",
        "# per element a 3-byte primary weight and a 1-byte canonical combining class",
        f"EXPLICIT_COUNT = {count}",
        "EXPLICIT = (",
    ]
    for i in range(0, len(blob), 96):
        lines.append(f"    {blob[i:i + 96]!r}")
    lines.append(")")
    lines.append("# ideographs with implicit weights (code point + 0x10000 in the CJK unified and")
    lines.append("# compatibility blocks, + 0x20000 elsewhere): inclusive ranges")
    lines.append("IDEOGRAPH_RANGES = (")
    for a, b in ideo_ranges:
        lines.append(f"    (0x{a:X}, 0x{b:X}),")
    lines.append(")")
    lines.append("# (starter, suffix code points, (primary, combining class) per element, leaf):")
    lines.append("# every complete contraction")
    lines.append("CONTRACTIONS = (")
    for start, suffix, elems, is_leaf in contractions:
        lines.append(f"    (0x{start:X}, ({''.join(f'0x{c:X}, ' for c in suffix)}), "
                     f"({''.join(f'(0x{w:X}, {c}), ' for w, c in elems)}), {is_leaf}),")
    lines.append(")")
    return "\n".join(lines) + "\n"


XTEXT_DEFAULT = Path("/usr/share/gocode/src/golang.org/x/text")  # Debian's golang-golang-x-text-dev
XTEXT_VECTORS = ROOT / "tests" / "vectors" / "compat" / "vitess_unicode_loose_xtext.tsv"


def _keys(exe: Path, inputs: list[str]) -> list[str]:
    """x/text's collation keys (hex) of hex UTF-8 inputs."""
    out = subprocess.run([str(exe), "keys"], input="\n".join(inputs) + "\n", check=True, capture_output=True,
                         text=True).stdout.split("\n")
    return out[:len(inputs)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", metavar="XTEXT", type=Path, default=XTEXT_DEFAULT,
                    help="a golang.org/x/text source tree (read only; copied); default: %(default)s")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true",
                    help="regenerate the table in memory and compare it with the module, and recompute "
                         "the keys of vitess_unicode_loose_xtext.tsv's (frozen) inputs")
    args = ap.parse_args()
    if not (args.dump / "collate" / "tables.go").is_file() or shutil.which("go") is None:
        msg = f"needs the go toolchain and a golang.org/x/text source tree ({args.dump})"
        if args.check:
            print(f"left out: the unicode_loose table and vitess_unicode_loose_xtext.tsv ({msg})")
            return 0
        print(msg, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_dumper(args.dump, Path(tmp))
        runes = subprocess.run([str(exe), "runes"], check=True, capture_output=True, text=True).stdout
        contr = subprocess.run([str(exe), "contractions"], check=True, capture_output=True, text=True).stdout
        text = build(runes, contr)
        if not args.check:
            args.out.write_text(text)
            print(f"wrote {args.out}", file=sys.stderr)
            return 0
        status = 0
        if text != OUT.read_text():
            print(f"DIFFERS: {OUT.relative_to(ROOT)}")
            status = 1
        rows = [ln.split("\t") for ln in XTEXT_VECTORS.read_text().splitlines()
                if ln and not ln.startswith("#")][1:]
        keys = _keys(exe, [r[0] for r in rows])
        bad = [r[0] for r, k in zip(rows, keys) if r[1] != k]
        if bad:
            print(f"DIFFERS: {XTEXT_VECTORS.relative_to(ROOT)}: {len(bad)} keys, e.g. {bad[:3]}")
            status = 1
        if status == 0:
            print(f"ok: {OUT.relative_to(ROOT)} and {len(rows)} keys of {XTEXT_VECTORS.name}")
        return status


if __name__ == "__main__":
    sys.exit(main())
