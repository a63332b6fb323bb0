package shardhash

import (
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Unicode normalisation (NFC, NFD, NFKC, NFKD) from the tables in
// normalize_table.go (written by tools/gen_conformance_tables.py from
// Python's unicodedata, so this port normalises with Python's Unicode
// version): full decomposition by table (Hangul syllables by arithmetic),
// canonical reordering by combining class, then canonical composition for
// the composed forms (UAX #15).

var (
	normOnce sync.Once
	nfdMap   map[rune][]rune
	nfkdMap  map[rune][]rune
	cccMap   map[rune]uint8
	compMap  map[[2]rune]rune
)

func parseRunes(s string) []rune {
	var out []rune
	for _, x := range strings.Fields(s) {
		v, _ := strconv.ParseUint(x, 16, 32)
		out = append(out, rune(v))
	}
	return out
}

func loadNormTables() {
	table := func(data string, fn func(k rune, v []rune)) {
		for _, e := range strings.Split(data, ";") {
			k, v, _ := strings.Cut(e, ":")
			cp, _ := strconv.ParseUint(k, 16, 32)
			fn(rune(cp), parseRunes(v))
		}
	}
	nfdMap, nfkdMap, cccMap, compMap = map[rune][]rune{}, map[rune][]rune{}, map[rune]uint8{}, map[[2]rune]rune{}
	table(nfdData, func(k rune, v []rune) { nfdMap[k] = v })
	table(nfkdData, func(k rune, v []rune) { nfkdMap[k] = v })
	table(cccData, func(k rune, v []rune) { cccMap[k] = uint8(v[0]) })
	table(compData, func(k rune, v []rune) { compMap[[2]rune{v[0], v[1]}] = k })
}

const (
	sBase  = 0xAC00
	lBase  = 0x1100
	vBase  = 0x1161
	tBase  = 0x11A7
	lCount = 19
	vCount = 21
	tCount = 28
	nCount = vCount * tCount
	sCount = lCount * nCount
)

func decompose(s string, compat bool) []rune {
	var out []rune
	for _, r := range s {
		if r >= sBase && r < sBase+sCount {
			i := r - sBase
			out = append(out, lBase+i/nCount, vBase+(i%nCount)/tCount)
			if t := i % tCount; t != 0 {
				out = append(out, tBase+t)
			}
			continue
		}
		if compat {
			if d, ok := nfkdMap[r]; ok {
				out = append(out, d...)
				continue
			}
		}
		if d, ok := nfdMap[r]; ok {
			out = append(out, d...)
			continue
		}
		out = append(out, r)
	}
	// canonical ordering: each run of non-starters sorted (stably) by combining class
	for i := 0; i < len(out); {
		if cccMap[out[i]] == 0 {
			i++
			continue
		}
		j := i
		for j < len(out) && cccMap[out[j]] != 0 {
			j++
		}
		run := out[i:j]
		sort.SliceStable(run, func(a, b int) bool { return cccMap[run[a]] < cccMap[run[b]] })
		i = j
	}
	return out
}

func composePair(a, b rune) (rune, bool) {
	if a >= lBase && a < lBase+lCount && b >= vBase && b < vBase+vCount {
		return sBase + ((a-lBase)*vCount+(b-vBase))*tCount, true
	}
	if a >= sBase && a < sBase+sCount && (a-sBase)%tCount == 0 && b > tBase && b < tBase+tCount {
		return a + (b - tBase), true
	}
	c, ok := compMap[[2]rune{a, b}]
	return c, ok
}

func compose(d []rune) []rune {
	out := make([]rune, 0, len(d))
	starter, lastCC := -1, -1 // lastCC -1: nothing since the starter
	for _, c := range d {
		cc := int(cccMap[c])
		if starter >= 0 && (lastCC == -1 || (lastCC != 0 && lastCC < cc)) {
			if x, ok := composePair(out[starter], c); ok {
				out[starter] = x
				continue
			}
		}
		if cc == 0 {
			starter, lastCC = len(out), -1
		} else {
			lastCC = cc
		}
		out = append(out, c)
	}
	return out
}

// normalize applies a Unicode normalisation form ("NFC", "NFD", "NFKC", "NFKD").
func normalize(form, s string) (string, error) {
	normOnce.Do(loadNormTables)
	d := decompose(s, form == "NFKC" || form == "NFKD")
	if form == "NFC" || form == "NFKC" {
		d = compose(d)
	}
	return string(d), nil
}
