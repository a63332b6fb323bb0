package shardhash

import (
	"bufio"
	"fmt"
	"math/big"
	"os"
	"testing"
)

// The worked examples of docs/protocol.md and docs/routers.md; the full
// check is the conformance kit (cmd/shardhash-conformance).
func TestWorkedExamples(t *testing.T) {
	h, _ := HasherFromDoc(mustParse(`{"format": "shardhash.hasher/1", "algorithm": "xxh3_64", "seed": 0,
		"codec": {"format": "shardhash.codec/1", "int_encoding": "le64", "normalization": null,
		"casefold": false, "strip": false}}`))
	for _, c := range []struct {
		key  any
		want uint64
	}{{42, 0xd5a6f8c838df27c8}, {-1, 0x5111c7e47d784413}, {uint64(1<<64 - 1), 0x5111c7e47d784413},
		{"user-42", 0x50fe4b21cf7b09cd}, {Tuple{"tenant-7", 42}, 0x8566294cd42f8bee}} {
		if got, err := h.Hash(c.key); err != nil || got != c.want {
			t.Errorf("hash(%v) = %x, %v; want %x", c.key, got, err, c.want)
		}
	}
	guava := []int{0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83}
	for i, want := range guava {
		if got := Jump(uint64(i), 100); got != want {
			t.Errorf("Jump(%d, 100) = %d, want %d", i, got, want)
		}
	}
}

func TestRefusals(t *testing.T) {
	doc := `{"format": "shardhash.router/1", "type": "jump", "version": 1, "shards": ["a", "b"],
		"hasher": {"format": "shardhash.hasher/1", "algorithm": "xxh3_64", "seed": 0,
		"codec": {"format": "shardhash.codec/1", "int_encoding": "le64", "normalization": null,
		"casefold": false, "strip": false}}, "params": {}, "fingerprint": "00"}`
	if _, err := FromJSON([]byte(doc)); err == nil {
		t.Fatal("a wrong fingerprint was accepted")
	}
	r, err := FromJSON([]byte(doc[:len(doc)-len(`, "fingerprint": "00"}`)] + "}"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []any{true, 1.5, nil, Tuple{}} {
		if _, err := r.Route(bad); err == nil {
			t.Errorf("Route(%v) was accepted", bad)
		}
	}
}

// RouteIndexInt64 (no interface) routes as RouteIndex does, on every router
// document of the conformance kit.
func TestRouteIndexInt64(t *testing.T) {
	f, err := os.Open("../../conformance/cases.jsonl")
	if err != nil {
		t.Skip("the conformance kit is not next to this module:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	keys := []int64{0, 1, -1, 42, 1 << 40, -1 << 63, 1<<63 - 1}
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < 200; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		keys = append(keys, int64(x))
	}
	docs, checked := 0, 0
	for sc.Scan() {
		v, err := ParseJSON(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		c := v.(map[string]any)
		if c["op"] != "route" {
			continue
		}
		r, err := FromDocument(c["document"])
		if err != nil {
			t.Fatal(c["id"], err)
		}
		docs++
		for _, k := range keys {
			a, errA := r.RouteIndexInt64(k)
			b, errB := r.RouteIndex(big.NewInt(k))
			if (errA == nil) != (errB == nil) || a != b {
				t.Fatalf("%v: key %d: RouteIndexInt64 %d, %v; RouteIndex %d, %v", c["id"], k, a, errA, b, errB)
			}
			checked++
		}
	}
	if docs < 50 {
		t.Fatalf("only %d route documents", docs)
	}
	t.Logf("%d keys on %d documents agree", checked, docs)
}

func mustParse(s string) any {
	v, err := ParseJSON([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

func benchRouter(b *testing.B, typ, params string) *Router {
	shards := `"s0"`
	for i := 1; i < 10; i++ {
		shards += fmt.Sprintf(`, "s%d"`, i)
	}
	doc := fmt.Sprintf(`{"format": "shardhash.router/1", "type": %q, "version": 1, "shards": [%s],
		"hasher": {"format": "shardhash.hasher/1", "algorithm": "xxh3_64", "seed": 0,
		"codec": {"format": "shardhash.codec/1", "int_encoding": "le64", "normalization": null,
		"casefold": false, "strip": false}}, "params": %s}`, typ, shards, params)
	r, err := FromJSON([]byte(doc))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

var sink int

// One key's route (int keys, 10 shards) against a map lookup of the same key.
func BenchmarkRouteJump(b *testing.B) {
	r := benchRouter(b, "jump", "{}")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, _ := r.RouteIndexInt64(int64(i))
		sink += j
	}
}

func BenchmarkRouteBucket(b *testing.B) {
	pl := "[0"
	for i := 1; i < 4096; i++ {
		pl += fmt.Sprintf(", %d", i*10/4096)
	}
	r := benchRouter(b, "bucket", `{"placement": `+pl+`]}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, _ := r.RouteIndexInt64(int64(i))
		sink += j
	}
}

func BenchmarkRouteRing(b *testing.B) {
	r := benchRouter(b, "ring", `{"vnodes": 256, "weights": null, "collisions": "error"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, _ := r.RouteIndexInt64(int64(i))
		sink += j
	}
}

func BenchmarkMapLookup(b *testing.B) {
	m := make(map[int]int, 1<<20)
	for i := 0; i < 1<<20; i++ {
		m[i] = i % 10
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink += m[i&(1<<20-1)]
	}
}
