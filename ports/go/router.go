// Package shardhash is a dependency-free Go port of the shardhash routing
// protocol: it loads and verifies a router document (shardhash.router/1) and
// routes keys exactly as the Python package does (docs/protocol.md,
// docs/routers.md).
package shardhash

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/big"
	"math/bits"
	"sort"
	"strings"
)

const golden = 0x9e3779b97f4a7c15

// Mix64 is the SplitMix64 finaliser.
func Mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Jump is Lamping & Veach's jump consistent hash of h over n buckets.
func Jump(h uint64, n int) int {
	b, j := int64(-1), int64(0)
	for j < int64(n) {
		b = j
		h = h*2862933555777941757 + 1
		j = int64(float64(b+1) * (2147483648.0 / float64((h>>33)+1)))
	}
	return int(b)
}

type kind int

const (
	kJump kind = iota
	kTable
	kRing
	kRendezvous
	kHashRange
	kRange
	kDirectory
	kWatermark
	kMemento
	kMultiprobe
	kHot
)

// Router is a loaded router document.
type Router struct {
	Type        string
	Shards      []string
	Hasher      *Hasher
	Fingerprint string
	KeyPrefix   int               // 0 when unused
	Zones       map[string]string // nil when unused
	document    map[string]any    // normalised, with its fingerprint
	hasherDoc   any

	kind          kind
	table         []int32
	tokens        []uint64
	owners        []int32
	seeds         []uint64
	weights       []float64
	splits        []uint64
	rangeOwners   []int32
	keySplits     []any // *big.Int or string
	base          *Router
	overrides     map[uint64]int
	old, new      *Router
	watermark     *big.Int
	mementoN      int
	replacer      map[int]int
	bucketShard   map[int]int
	probes        int
	balanceFactor int64
	hot           map[any]int // hot key (*big.Int as its decimal text in a hotInt, or a string) -> fan-out
	ringIdx       []int32     // ringIdx[p]: the first token whose top ringBits bits are >= p
	ringShift     uint
}

// FromJSON loads and verifies a router document.
func FromJSON(data []byte) (*Router, error) {
	v, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	return FromDocument(v)
}

var topRequired = []string{"format", "type", "version", "shards", "hasher", "params"}
var topOptional = []string{"key_prefix", "zones", "fingerprint", "key_type"}
var keyTypes = []string{"int", "str", "bytes", "uuid"}

func intField(v any, what string, lo, hi int64) (int64, error) {
	b, ok := v.(*big.Int)
	if !ok {
		return 0, typeErrorf("%s must be an integer", what)
	}
	if !b.IsInt64() || b.Int64() < lo || b.Int64() > hi {
		return 0, valueErrorf("%s must be in [%d, %d]", what, lo, hi)
	}
	return b.Int64(), nil
}

func uint64Field(v any, what string) (uint64, error) {
	b, ok := v.(*big.Int)
	if !ok {
		return 0, typeErrorf("%s must be an integer", what)
	}
	if b.Sign() < 0 || !b.IsUint64() {
		return 0, valueErrorf("%s must be in [0, 2**64-1]", what)
	}
	return b.Uint64(), nil
}

func shardID(v any, what string) (string, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", valueErrorf("%s must be a non-empty string", what)
	}
	return s, nil
}

// FromDocument loads and verifies a parsed document (as ParseJSON returns it).
func FromDocument(v any) (*Router, error) {
	doc, err := fields(v, topRequired, topOptional, "router document")
	if err != nil {
		return nil, err
	}
	if doc["format"] != "shardhash.router/1" {
		return nil, valueErrorf("format must be \"shardhash.router/1\"")
	}
	if ver, ok := doc["version"].(*big.Int); !ok {
		return nil, typeErrorf("version must be an integer")
	} else if ver.Sign() < 0 {
		return nil, valueErrorf("version must be >= 0")
	}
	r := &Router{hasherDoc: doc["hasher"]}
	r.Type, _ = doc["type"].(string)
	if r.Hasher, err = HasherFromDoc(doc["hasher"]); err != nil {
		return nil, err
	}
	if kp, ok := doc["key_prefix"]; ok {
		p, err := intField(kp, "key_prefix", 1, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		r.KeyPrefix = int(p)
	}
	if kt, ok := doc["key_type"]; ok {
		ktd, err := fields(kt, []string{"format", "type"}, nil, "key_type")
		if err != nil {
			return nil, err
		}
		if ktd["format"] != "shardhash.keytype/1" {
			return nil, valueErrorf("key_type format must be shardhash.keytype/1")
		}
		good := false
		switch t := ktd["type"].(type) {
		case string:
			good = contains(keyTypes, t)
		case []any:
			good = len(t) >= 2
			for _, x := range t {
				s, ok := x.(string)
				good = good && ok && contains(keyTypes, s)
			}
		}
		if !good {
			return nil, valueErrorf("unknown key_type type")
		}
	}
	list, ok := doc["shards"].([]any)
	if !ok {
		return nil, typeErrorf("shards must be a list")
	}
	if len(list) == 0 {
		return nil, valueErrorf("shards must not be empty")
	}
	shards := make([]string, len(list))
	seen := map[string]bool{}
	for i, x := range list {
		s, err := shardID(x, "shards entry")
		if err != nil {
			return nil, err
		}
		if seen[s] {
			return nil, valueErrorf("duplicate shard id %q", s)
		}
		seen[s] = true
		shards[i] = s
	}
	params, ok := doc["params"].(map[string]any)
	if !ok {
		return nil, typeErrorf("params must be an object")
	}
	nested := map[string]*Router{}
	r.Shards = shards
	if err := r.build(params, nested); err != nil {
		return nil, err
	}
	if len(r.Shards) != len(shards) {
		return nil, valueErrorf("shards do not match the parameters")
	}
	for i := range shards {
		if r.Shards[i] != shards[i] {
			return nil, valueErrorf("shards do not match the parameters")
		}
	}
	if z, ok := doc["zones"]; ok {
		zd, err := fields(z, r.Shards, nil, "zones")
		if err != nil {
			return nil, err
		}
		r.Zones = map[string]string{}
		for _, s := range r.Shards {
			name, err := shardID(zd[s], "zone name")
			if err != nil {
				return nil, err
			}
			r.Zones[s] = name
		}
	}
	// The fingerprint: the canonical JSON of the normalised document without it.
	norm := map[string]any{}
	for k, x := range doc {
		if k != "fingerprint" {
			norm[k] = x
		}
	}
	np := map[string]any{}
	for k, x := range params {
		np[k] = x
	}
	if w, ok := np["weights"].(map[string]any); ok {
		nw := map[string]any{}
		for k, x := range w {
			if b, isInt := x.(*big.Int); isInt {
				f, _ := new(big.Float).SetInt(b).Float64()
				nw[k] = Float(f)
			} else {
				nw[k] = x
			}
		}
		np["weights"] = nw
	}
	if b, isInt := np["bucket_seconds"].(*big.Int); isInt && r.Type == "hot" {
		f, _ := new(big.Float).SetInt(b).Float64()
		np["bucket_seconds"] = Float(f)
	}
	for k, n := range nested {
		np[k] = n.document
	}
	norm["params"] = np
	text, err := CanonicalJSON(norm)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(text))
	r.Fingerprint = hex.EncodeToString(sum[:])
	if fp, ok := doc["fingerprint"]; ok && fp != r.Fingerprint {
		return nil, valueErrorf("fingerprint mismatch: the document says %v, its content hashes to %s", fp, r.Fingerprint)
	}
	norm["fingerprint"] = r.Fingerprint
	r.document = norm
	return r, nil
}

func weightsOf(v any, shards []string) (map[string]float64, error) {
	if v == nil {
		return nil, nil
	}
	w, err := fields(v, nil, shards, "weights")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, x := range w {
		var f float64
		switch n := x.(type) {
		case Float:
			f = float64(n)
		case *big.Int:
			f, _ = new(big.Float).SetInt(n).Float64()
		default:
			return nil, typeErrorf("weight of %s must be a number", k)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
			return nil, valueErrorf("weight of %s must be finite and > 0", k)
		}
		out[k] = f
	}
	return out, nil
}

func fullWeights(w map[string]float64, shards []string) []float64 {
	out := make([]float64, len(shards))
	for i, s := range shards {
		out[i] = 1.0
		if x, ok := w[s]; ok {
			out[i] = x
		}
	}
	return out
}

func allEqual(f []float64) bool {
	for _, x := range f {
		if x != f[0] {
			return false
		}
	}
	return true
}

func isPrime(n int64) bool {
	if n < 2 {
		return false
	}
	for d := int64(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func (r *Router) setOwners(v any, count int) error {
	owners, ok := v.([]any)
	if !ok || len(owners) != count {
		return valueErrorf("owners must have one entry per range")
	}
	ids := []string{}
	r.rangeOwners = make([]int32, count)
	for i, x := range owners {
		s, err := shardID(x, "owner")
		if err != nil {
			return err
		}
		j := indexOf(ids, s)
		if j < 0 {
			ids = append(ids, s)
			j = len(ids) - 1
		}
		r.rangeOwners[i] = int32(j)
	}
	r.Shards = ids
	return nil
}

func compareKeys(a, b any) int {
	switch x := a.(type) {
	case *big.Int:
		return x.Cmp(b.(*big.Int))
	default:
		return strings.Compare(a.(string), b.(string)) // UTF-8 byte order is code point order
	}
}

func (r *Router) build(p map[string]any, nested map[string]*Router) error {
	shards := r.Shards
	n := len(shards)
	check := func(req ...string) error {
		_, err := fields(p, req, nil, r.Type+" params")
		return err
	}
	var err error
	switch r.Type {
	case "modulo", "jump":
		if err = check(); err != nil {
			return err
		}
		if r.Type == "jump" {
			r.kind = kJump
		} else {
			r.kind = kTable
			r.table = make([]int32, n)
			for i := range r.table {
				r.table[i] = int32(i)
			}
		}
	case "ring", "bounded":
		req := []string{"vnodes", "weights", "collisions"}
		if _, ok := p["tokens"]; ok {
			req = []string{"tokens", "collisions"}
		}
		if r.Type == "bounded" {
			req = append(req, "balance_factor")
		}
		if err = check(req...); err != nil {
			return err
		}
		if r.Type == "bounded" {
			if r.balanceFactor, err = intField(p["balance_factor"], "balance_factor", 100, math.MaxInt32); err != nil {
				return err
			}
		}
		coll, _ := p["collisions"].(string)
		if coll != "error" && coll != "first" {
			return valueErrorf("collisions must be error or first")
		}
		type entry struct {
			pos   uint64
			shard string
			i     int
		}
		var entries []entry
		if t, ok := p["tokens"]; ok {
			td, err := fields(t, shards, nil, "tokens")
			if err != nil {
				return err
			}
			for _, s := range shards {
				list, ok := td[s].([]any)
				if !ok || len(list) == 0 {
					return valueErrorf("shard %s needs at least one token", s)
				}
				for i, x := range list {
					pos, err := uint64Field(x, "token")
					if err != nil {
						return err
					}
					entries = append(entries, entry{pos, s, i})
				}
			}
		} else {
			vnodes, err := intField(p["vnodes"], "vnodes", 1, 1<<20)
			if err != nil {
				return err
			}
			w, err := weightsOf(p["weights"], shards)
			if err != nil {
				return err
			}
			total := 0
			for _, s := range shards {
				wt := 1.0
				if x, ok := w[s]; ok {
					wt = x
				}
				count := int(math.Max(1, math.Floor(float64(vnodes)*wt+0.5)))
				total += count
				if total > 1<<22 {
					return valueErrorf("too many ring tokens (limit 2**22)")
				}
				for i := 0; i < count; i++ {
					h, err := r.Hasher.Hash(s + ":" + itoa(i))
					if err != nil {
						return err
					}
					entries = append(entries, entry{h, s, i})
				}
			}
		}
		sort.Slice(entries, func(a, b int) bool {
			x, y := entries[a], entries[b]
			if x.pos != y.pos {
				return x.pos < y.pos
			}
			if x.shard != y.shard {
				return x.shard < y.shard
			}
			return x.i < y.i
		})
		for k, e := range entries {
			if len(r.tokens) > 0 && r.tokens[len(r.tokens)-1] == e.pos {
				if coll == "error" || entries[k-1].shard == e.shard {
					return valueErrorf("two tokens at position %d", e.pos)
				}
				continue
			}
			r.tokens = append(r.tokens, e.pos)
			r.owners = append(r.owners, int32(indexOf(shards, e.shard)))
		}
		r.kind = kRing
		r.buildRingIndex()
	case "rendezvous":
		if err = check("weights"); err != nil {
			return err
		}
		w, err := weightsOf(p["weights"], shards)
		if err != nil {
			return err
		}
		for _, s := range shards {
			h, err := r.Hasher.Hash(s)
			if err != nil {
				return err
			}
			r.seeds = append(r.seeds, Mix64(h))
		}
		if full := fullWeights(w, shards); !allEqual(full) {
			r.weights = full
		}
		r.kind = kRendezvous
	case "maglev":
		if err = check("table_size", "weights"); err != nil {
			return err
		}
		m, err := intField(p["table_size"], "table_size", 1, 1<<24)
		if err != nil {
			return err
		}
		if !isPrime(m) || m < int64(n) {
			return valueErrorf("table_size must be a prime >= the number of shards")
		}
		w, err := weightsOf(p["weights"], shards)
		if err != nil {
			return err
		}
		full := fullWeights(w, shards)
		var rel []float64
		if !allEqual(full) {
			mx := full[0]
			for _, x := range full {
				mx = math.Max(mx, x)
			}
			for _, x := range full {
				rel = append(rel, x/mx)
			}
		}
		ids := make([]uint64, n)
		for i, s := range shards {
			if ids[i], err = r.Hasher.Hash(s); err != nil {
				return err
			}
		}
		r.table = maglevTable(ids, rel, int(m))
		r.kind = kTable
	case "bucket":
		if err = check("placement"); err != nil {
			return err
		}
		pl, ok := p["placement"].([]any)
		if !ok || len(pl) == 0 || len(pl) > 1<<24 {
			return valueErrorf("placement must be a non-empty list")
		}
		r.table = make([]int32, len(pl))
		for i, x := range pl {
			v, err := intField(x, "placement entry", 0, int64(n-1))
			if err != nil {
				return err
			}
			r.table[i] = int32(v)
		}
		r.kind = kTable
	case "hash_range":
		if err = check("splits", "owners"); err != nil {
			return err
		}
		sp, ok := p["splits"].([]any)
		if !ok {
			return typeErrorf("splits must be a list")
		}
		for i, x := range sp {
			v, err := uint64Field(x, "split")
			if err != nil {
				return err
			}
			if v == 0 || (i > 0 && v <= r.splits[i-1]) {
				return valueErrorf("splits must increase strictly, from 1")
			}
			r.splits = append(r.splits, v)
		}
		if err = r.setOwners(p["owners"], len(sp)+1); err != nil {
			return err
		}
		r.kind = kHashRange
	case "range":
		if err = check("splits", "owners"); err != nil {
			return err
		}
		sp, ok := p["splits"].([]any)
		if !ok {
			return typeErrorf("splits must be a list")
		}
		allInt, allStr := true, true
		for _, x := range sp {
			_, isInt := x.(*big.Int)
			_, isStr := x.(string)
			allInt, allStr = allInt && isInt, allStr && isStr
		}
		if !allInt && !allStr {
			return typeErrorf("range splits must be all integers or all strings")
		}
		for i, x := range sp {
			if i > 0 && compareKeys(x, sp[i-1]) <= 0 {
				return valueErrorf("splits must increase strictly")
			}
		}
		r.keySplits = sp
		if err = r.setOwners(p["owners"], len(sp)+1); err != nil {
			return err
		}
		r.kind = kRange
	case "directory":
		if err = check("base", "overrides"); err != nil {
			return err
		}
		if r.base, err = FromDocument(p["base"]); err != nil {
			return err
		}
		if r.base.kind == kRange || r.base.kind == kWatermark {
			return valueErrorf("a directory's base must route hashes")
		}
		nested["base"] = r.base
		ids := append([]string{}, r.base.Shards...)
		r.overrides = map[uint64]int{}
		ov, ok := p["overrides"].([]any)
		if !ok {
			return typeErrorf("overrides must be a list")
		}
		for _, x := range ov {
			pair, ok := x.([]any)
			if !ok || len(pair) != 2 {
				return valueErrorf("an override is a [key, shard] pair")
			}
			var key any
			switch k := pair[0].(type) {
			case *big.Int, string:
				key = k
			default:
				return valueErrorf("override keys are integers or strings")
			}
			s, err := shardID(pair[1], "override shard")
			if err != nil {
				return err
			}
			if indexOf(ids, s) < 0 {
				ids = append(ids, s)
			}
			h, err := r.Hasher.Hash(key)
			if err != nil {
				return err
			}
			if _, dup := r.overrides[h]; dup {
				return valueErrorf("two override keys share a hash")
			}
			r.overrides[h] = indexOf(ids, s)
		}
		r.Shards = ids
		r.kind = kDirectory
	case "watermark":
		if err = check("old", "new", "watermark"); err != nil {
			return err
		}
		if r.old, err = FromDocument(p["old"]); err != nil {
			return err
		}
		if r.new, err = FromDocument(p["new"]); err != nil {
			return err
		}
		nested["old"], nested["new"] = r.old, r.new
		wm, ok := p["watermark"].(*big.Int)
		if !ok {
			return typeErrorf("watermark must be an integer")
		}
		r.watermark = wm
		ids := append([]string{}, r.old.Shards...)
		for _, s := range r.new.Shards {
			if indexOf(ids, s) < 0 {
				ids = append(ids, s)
			}
		}
		r.Shards = ids
		r.kind = kWatermark
	case "memento":
		if err = check("buckets", "removed"); err != nil {
			return err
		}
		nb, err := intField(p["buckets"], "buckets", 1, math.MaxInt32)
		if err != nil {
			return err
		}
		rm, ok := p["removed"].([]any)
		if !ok {
			return typeErrorf("removed must be a list")
		}
		r.mementoN = int(nb)
		r.replacer = map[int]int{}
		for k, x := range rm {
			b, err := intField(x, "removed bucket", 0, nb-1)
			if err != nil {
				return err
			}
			if _, dup := r.replacer[int(b)]; dup {
				return valueErrorf("bucket %d removed twice", b)
			}
			r.replacer[int(b)] = int(nb) - k - 1
		}
		if len(rm) >= int(nb) || int(nb)-len(rm) != n {
			return valueErrorf("buckets - removed must equal the number of shards")
		}
		r.bucketShard = map[int]int{}
		s := 0
		for b := 0; b < int(nb); b++ {
			if _, gone := r.replacer[b]; !gone {
				r.bucketShard[b] = s
				s++
			}
		}
		r.kind = kMemento
	case "multiprobe":
		if err = check("probes"); err != nil {
			return err
		}
		pr, err := intField(p["probes"], "probes", 1, 64)
		if err != nil {
			return err
		}
		r.probes = int(pr)
		type tok struct {
			t uint64
			i int32
		}
		toks := make([]tok, n)
		for i, s := range shards {
			h, err := r.Hasher.Hash(s)
			if err != nil {
				return err
			}
			toks[i] = tok{Mix64(h), int32(i)}
		}
		sort.Slice(toks, func(a, b int) bool { return toks[a].t < toks[b].t })
		for i, t := range toks {
			if i > 0 && t.t == toks[i-1].t {
				return valueErrorf("two shards share a token")
			}
			r.tokens = append(r.tokens, t.t)
			r.owners = append(r.owners, t.i)
		}
		r.kind = kMultiprobe
	case "hot":
		if err = check("base", "hot", "write", "bucket_seconds"); err != nil {
			return err
		}
		if r.base, err = FromDocument(p["base"]); err != nil {
			return err
		}
		if r.base.kind == kRange || r.base.kind == kWatermark || r.base.kind == kHot {
			return typeErrorf("a hot-key router's base must be a hash router")
		}
		nested["base"] = r.base
		mine, err := CanonicalJSON(r.hasherDoc)
		if err != nil {
			return err
		}
		bases, err := CanonicalJSON(p["base"].(map[string]any)["hasher"])
		if err != nil {
			return err
		}
		if mine != bases || r.KeyPrefix != r.base.KeyPrefix {
			return valueErrorf("hot document: 'hasher'/'key_prefix' differ from the base router's")
		}
		write, _ := p["write"].(string)
		if write != "random" && write != "round_robin" && write != "time" {
			return valueErrorf("write must be random, round_robin or time")
		}
		if write == "time" {
			var v float64
			switch b := p["bucket_seconds"].(type) {
			case Float:
				v = float64(b)
			case *big.Int:
				v, _ = new(big.Float).SetInt(b).Float64()
			default:
				v = math.NaN()
			}
			if !(v >= 1e-6) || math.IsInf(v, 0) || math.IsInf(253402300799.0/v, 0) {
				return valueErrorf("write='time' needs bucket_seconds, a finite number >= 1e-06")
			}
		} else if p["bucket_seconds"] != nil {
			return valueErrorf("bucket_seconds only applies to write='time'")
		}
		list, ok := p["hot"].([]any)
		if !ok {
			return valueErrorf("hot must be a list of [key, fan_out] pairs")
		}
		r.hot = map[any]int{}
		for _, x := range list {
			pair, ok := x.([]any)
			if !ok || len(pair) != 2 {
				return valueErrorf("hot must be a list of [key, fan_out] pairs")
			}
			var id any
			switch k := pair[0].(type) {
			case *big.Int:
				id = hotInt(k.String())
			case string:
				id = k
			default:
				return typeErrorf("hot keys must be int or str")
			}
			if _, dup := r.hot[id]; dup {
				return valueErrorf("hot key %v given twice", pair[0])
			}
			f, err := intField(pair[1], "fan_out", 2, 1024)
			if err != nil {
				return err
			}
			r.hot[id] = int(f)
		}
		r.Shards = r.base.Shards
		r.kind = kHot
	default:
		return valueErrorf("unknown router type %q", r.Type)
	}
	return nil
}

// hotInt is an integer hot key, by its decimal text.
type hotInt string

// RouteRead lists, for a hot-key router, every (shard index, sub-key) holding
// rows of key, in sub-key order: sub-key 0 is the key itself, sub-key i the
// string "<key>#<i>"; a cold key has only sub-key 0.
func (r *Router) RouteRead(key any) ([][2]int, error) {
	if r.kind != kHot {
		return nil, typeErrorf("RouteRead is for hot-key routers")
	}
	var id any
	var text string
	if b, ok := toBig(key); ok {
		text = b.String()
		id = hotInt(text)
	} else if s, ok := key.(string); ok {
		text, id = s, s
	}
	n, hot := 0, false
	if id != nil {
		n, hot = r.hot[id]
	}
	if !hot {
		i, err := r.RouteIndex(key)
		if err != nil {
			return nil, err
		}
		return [][2]int{{i, 0}}, nil
	}
	out := make([][2]int, n)
	for i := 0; i < n; i++ {
		var k any = key
		if i > 0 {
			k = text + "#" + itoa(i)
		}
		j, err := r.base.RouteIndex(k)
		if err != nil {
			return nil, err
		}
		out[i] = [2]int{j, i}
	}
	return out, nil
}

// buildRingIndex indexes the sorted tokens by their top bits (about two
// prefixes per token), so that a lookup searches a few tokens, not all.
func (r *Router) buildRingIndex() {
	bits := uint(1)
	for 1<<bits < 2*len(r.tokens) && bits < 20 {
		bits++
	}
	r.ringShift = 64 - bits
	r.ringIdx = make([]int32, 1<<bits+1)
	j := 0
	for p := 0; p <= 1<<bits; p++ {
		for j < len(r.tokens) && (p == 1<<bits || r.tokens[j]>>r.ringShift < uint64(p)) {
			j++
		}
		r.ringIdx[p] = int32(j)
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

func maglevTable(ids []uint64, rel []float64, m int) []int32 {
	n := len(ids)
	pos := make([]int, n)
	skip := make([]int, n)
	for i, x := range ids {
		pos[i] = int(Mix64(x^0x6f66667365743a31) % uint64(m))
		skip[i] = int(Mix64(x^0x736b69703a312121)%uint64(m-1)) + 1
	}
	credit := make([]float64, n)
	table := make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	filled := 0
	for {
		for i := 0; i < n; i++ {
			if rel != nil {
				credit[i] += rel[i]
				if credit[i] < 1.0 {
					continue
				}
				credit[i] -= 1.0
			}
			c := pos[i]
			for table[c] >= 0 {
				c = (c + skip[i]) % m
			}
			table[c] = int32(i)
			pos[i] = (c + skip[i]) % m
			filled++
			if filled == m {
				return table
			}
		}
	}
}

// lowerBound is the first i with a[i] >= x (len(a) if none).
func lowerBound(a []uint64, x uint64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// RouteHash is the shard index of a 64-bit hash.
func (r *Router) RouteHash(h uint64) (int, error) {
	switch r.kind {
	case kJump:
		return Jump(h, len(r.Shards)), nil
	case kTable:
		return int(r.table[h%uint64(len(r.table))]), nil
	case kRing:
		p := h >> r.ringShift
		lo, hi := int(r.ringIdx[p]), int(r.ringIdx[p+1])
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if r.tokens[m] < h {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo == len(r.tokens) {
			lo = 0
		}
		return int(r.owners[lo]), nil
	case kRendezvous:
		best, bestScore := 0, math.Inf(-1)
		var bestX uint64
		for i, seed := range r.seeds {
			x := Mix64(h ^ seed)
			if r.weights == nil {
				if i == 0 || x > bestX {
					best, bestX = i, x
				}
				continue
			}
			s := r.score(x, i)
			if i == 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		return best, nil
	case kHashRange:
		return int(r.rangeOwners[sort.Search(len(r.splits), func(i int) bool { return r.splits[i] > h })]), nil
	case kMemento:
		return r.bucketShard[r.mementoBucket(h)], nil
	case kMultiprobe:
		var bestD uint64
		best := -1
		for i := 0; i < r.probes; i++ {
			pr := Mix64(h + uint64(i+1)*golden)
			j := lowerBound(r.tokens, pr)
			if j == len(r.tokens) {
				j = 0
			}
			d := r.tokens[j] - pr
			if best < 0 || d < bestD || (d == bestD && int(r.owners[j]) < best) {
				best, bestD = int(r.owners[j]), d
			}
		}
		return best, nil
	case kDirectory:
		if o, ok := r.overrides[h]; ok {
			return o, nil
		}
		return r.base.RouteHash(h)
	case kHot:
		return r.base.RouteHash(h)
	}
	return 0, typeErrorf("%s routers do not route hashes", r.Type)
}

func (r *Router) score(x uint64, i int) float64 {
	u := float64((x>>11)|1) / 9007199254740992.0
	return -r.weights[i] / math.Log(u)
}

func (r *Router) mementoBucket(h uint64) int {
	get := func(b int) int {
		if c, ok := r.replacer[b]; ok {
			return c
		}
		return -1
	}
	b := Jump(h, r.mementoN)
	c := get(b)
	for c >= 0 {
		x := Mix64((h ^ 0x6d656d656e746f31) + uint64(b)*golden)
		hi, _ := bits.Mul64(x, uint64(c))
		b = int(hi)
		nx := get(b)
		for nx >= c {
			b, nx = nx, get(nx)
		}
		c = nx
	}
	return b
}

// RoutesOnHash is false for range and watermark routers (they place the raw key).
func (r *Router) RoutesOnHash() bool { return r.kind != kRange && r.kind != kWatermark }

func toBig(key any) (*big.Int, bool) {
	switch k := key.(type) {
	case *big.Int:
		return k, true
	case int:
		return big.NewInt(int64(k)), true
	case int64:
		return big.NewInt(k), true
	case int32:
		return big.NewInt(int64(k)), true
	case uint64:
		return new(big.Int).SetUint64(k), true
	case uint32:
		return new(big.Int).SetUint64(uint64(k)), true
	case uint:
		return new(big.Int).SetUint64(uint64(k)), true
	}
	return nil, false
}

// RouteIndex is the shard index of a key.
func (r *Router) RouteIndex(key any) (int, error) {
	if r.KeyPrefix > 0 {
		if t, ok := key.(Tuple); ok {
			if r.KeyPrefix == 1 {
				key = t[0]
			} else if len(t) > r.KeyPrefix {
				key = t[:r.KeyPrefix]
			}
		} else if r.KeyPrefix > 1 {
			return 0, typeErrorf("key_prefix %d needs a tuple key", r.KeyPrefix)
		}
	}
	switch r.kind {
	case kRange:
		var k any
		if _, isStr := r.keySplits[0].(string); isStr {
			s, ok := key.(string)
			if !ok {
				return 0, typeErrorf("this range router's keys are strings")
			}
			k = s
		} else {
			b, ok := toBig(key)
			if !ok {
				return 0, typeErrorf("this range router's keys are integers")
			}
			k = b
		}
		return int(r.rangeOwners[sort.Search(len(r.keySplits), func(i int) bool { return compareKeys(r.keySplits[i], k) > 0 })]), nil
	case kWatermark:
		b, ok := toBig(key)
		if !ok {
			return 0, typeErrorf("watermark keys must be integers")
		}
		if b.Cmp(r.watermark) >= 0 {
			s, err := r.new.Route(key)
			if err != nil {
				return 0, err
			}
			return indexOf(r.Shards, s), nil
		}
		return r.old.RouteIndex(key)
	}
	if r.kind == kHot {
		return r.base.RouteIndex(key)
	}
	h, err := r.Hasher.Hash(key)
	if err != nil {
		return 0, err
	}
	return r.RouteHash(h)
}

// RouteIndexInt64 is RouteIndex for an integer key, without boxing it in an interface.
func (r *Router) RouteIndexInt64(k int64) (int, error) {
	if r.KeyPrefix > 1 || r.kind == kRange || r.kind == kWatermark {
		return r.RouteIndex(k)
	}
	return r.RouteHash(r.Hasher.HashInt64(k))
}

// RouteInt64 is Route for an integer key, without boxing it in an interface.
func (r *Router) RouteInt64(k int64) (string, error) {
	i, err := r.RouteIndexInt64(k)
	if err != nil {
		return "", err
	}
	return r.Shards[i], nil
}

// Route is the shard id of a key.
func (r *Router) Route(key any) (string, error) {
	i, err := r.RouteIndex(key)
	if err != nil {
		return "", err
	}
	return r.Shards[i], nil
}

const rehashSalt = 0x7265706c69636131

// Preference is the preference order P(h) of docs/routers.md 2.17.
func (r *Router) Preference(h uint64) ([]int, error) {
	n := len(r.Shards)
	walk := func(tokens []uint64, owners []int32) []int {
		j := lowerBound(tokens, h)
		if j == len(tokens) {
			j = 0
		}
		seen := make([]bool, n)
		var out []int
		for s := 0; s < len(tokens) && len(out) < n; s++ {
			o := int(owners[(j+s)%len(tokens)])
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
		return out
	}
	switch r.kind {
	case kRing:
		return walk(r.tokens, r.owners), nil
	case kHashRange:
		toks := make([]uint64, 0, len(r.splits)+1)
		for _, s := range r.splits {
			toks = append(toks, s-1)
		}
		return walk(append(toks, ^uint64(0)), r.rangeOwners), nil
	case kRendezvous:
		idx := make([]int, n)
		xs := make([]uint64, n)
		sc := make([]float64, n)
		for i, seed := range r.seeds {
			idx[i] = i
			xs[i] = Mix64(h ^ seed)
			if r.weights != nil {
				sc[i] = r.score(xs[i], i)
			}
		}
		sort.SliceStable(idx, func(a, b int) bool {
			i, j := idx[a], idx[b]
			if r.weights == nil {
				return xs[i] > xs[j]
			}
			return sc[i] > sc[j]
		})
		return idx, nil
	case kMultiprobe:
		score := make([]uint64, len(r.tokens))
		for j, t := range r.tokens {
			score[j] = ^uint64(0)
			first := true
			for i := 0; i < r.probes; i++ {
				d := t - Mix64(h+uint64(i+1)*golden)
				if first || d < score[j] {
					score[j], first = d, false
				}
			}
		}
		idx := make([]int, len(r.tokens))
		for j := range idx {
			idx[j] = j
		}
		sort.Slice(idx, func(a, b int) bool {
			i, j := idx[a], idx[b]
			if score[i] != score[j] {
				return score[i] < score[j]
			}
			return r.owners[i] < r.owners[j]
		})
		out := make([]int, len(idx))
		for k, j := range idx {
			out[k] = int(r.owners[j])
		}
		return out, nil
	case kJump, kTable, kMemento:
		seen := make([]bool, n)
		var out []int
		for a := 0; a < 8*n && len(out) < n; a++ {
			x := h
			if a > 0 {
				x = Mix64((h ^ rehashSalt) + uint64(a)*golden)
			}
			s, _ := r.RouteHash(x)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		for s := 0; s < n; s++ {
			if !seen[s] {
				out = append(out, s)
			}
		}
		return out, nil
	}
	return nil, typeErrorf("%s routers have no replica lists", r.Type)
}

// ReplicasHash is the list of n replicas (shard indices) of a hash; zones
// (shard id -> zone) overrides the router's own, nil keeps them.
func (r *Router) ReplicasHash(h uint64, n int, zones map[string]string) ([]int, error) {
	if n < 1 || n > len(r.Shards) {
		return nil, valueErrorf("n must be in 1..%d", len(r.Shards))
	}
	pref, err := r.Preference(h)
	if err != nil {
		return nil, err
	}
	if zones == nil {
		zones = r.Zones
	}
	if zones == nil {
		return pref[:n], nil
	}
	zoneOf := make([]string, len(r.Shards))
	all := map[string]bool{}
	for i, s := range r.Shards {
		zoneOf[i] = zones[s]
		all[zones[s]] = true
	}
	used := map[string]bool{}
	var out, skipped []int
	take := func(list []int) {
		for _, s := range list {
			if len(out) < n {
				out = append(out, s)
			}
		}
	}
	for _, s := range pref {
		if len(out) == n {
			break
		}
		switch {
		case len(used) == len(all):
			out = append(out, s)
		case used[zoneOf[s]]:
			skipped = append(skipped, s)
		default:
			used[zoneOf[s]] = true
			out = append(out, s)
			if len(used) == len(all) {
				take(skipped)
				skipped = nil
			}
		}
	}
	take(skipped)
	return out, nil
}

// AssignHashes places one batch of hashes in order under a bounded-loads
// router's capacity (unit sizes): cap = ceil(T * f / (100 * N)).
func (r *Router) AssignHashes(hashes []uint64) ([]int, error) {
	if r.Type != "bounded" {
		return nil, typeErrorf("assign is for bounded routers")
	}
	n := int64(len(r.Shards))
	cap := (int64(len(hashes))*r.balanceFactor + 100*n - 1) / (100 * n)
	load := make([]int64, n)
	out := make([]int, len(hashes))
	for k, h := range hashes {
		j := lowerBound(r.tokens, h)
		if j == len(r.tokens) {
			j = 0
		}
		out[k] = -1
		for s := 0; s < len(r.tokens); s++ {
			o := r.owners[(j+s)%len(r.tokens)]
			if load[o]+1 <= cap {
				load[o]++
				out[k] = int(o)
				break
			}
		}
	}
	return out, nil
}
