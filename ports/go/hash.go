package shardhash

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Error is a refused input, of one of the protocol's three kinds.
type Error struct {
	Kind string // "TypeError", "ValueError", "OverflowError", or "Unsupported" (this port lacks the feature)
	Msg  string
}

func (e *Error) Error() string { return e.Kind + ": " + e.Msg }

func typeErrorf(f string, a ...any) error     { return &Error{"TypeError", fmt.Sprintf(f, a...)} }
func valueErrorf(f string, a ...any) error    { return &Error{"ValueError", fmt.Sprintf(f, a...)} }
func overflowErrorf(f string, a ...any) error { return &Error{"OverflowError", fmt.Sprintf(f, a...)} }

const (
	p32_1 uint32 = 0x9E3779B1
	p32_2 uint32 = 0x85EBCA77
	p32_3 uint32 = 0xC2B2AE3D
	p32_4 uint32 = 0x27D4EB2F
	p32_5 uint32 = 0x165667B1
	p64_1 uint64 = 0x9E3779B185EBCA87
	p64_2 uint64 = 0xC2B2AE3D27D4EB4F
	p64_3 uint64 = 0x165667B19E3779F9
	p64_4 uint64 = 0x85EBCA77C2B2AE63
	p64_5 uint64 = 0x27D4EB2F165667C5
	mx1   uint64 = 0x165667919E3779F9
	mx2   uint64 = 0x9FB21C651E98DF25
)

var xxh3Secret = [192]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

func r32(p []byte, i int) uint32 { return binary.LittleEndian.Uint32(p[i:]) }
func r64(p []byte, i int) uint64 { return binary.LittleEndian.Uint64(p[i:]) }

// XXH32 of data.
func XXH32(p []byte, seed uint32) uint32 {
	n := len(p)
	i := 0
	var acc uint32
	round := func(a, lane uint32) uint32 { return bits.RotateLeft32(a+lane*p32_2, 13) * p32_1 }
	if n >= 16 {
		a1, a2, a3, a4 := seed+p32_1+p32_2, seed+p32_2, seed, seed-p32_1
		for ; n-i >= 16; i += 16 {
			a1 = round(a1, r32(p, i))
			a2 = round(a2, r32(p, i+4))
			a3 = round(a3, r32(p, i+8))
			a4 = round(a4, r32(p, i+12))
		}
		acc = bits.RotateLeft32(a1, 1) + bits.RotateLeft32(a2, 7) + bits.RotateLeft32(a3, 12) + bits.RotateLeft32(a4, 18)
	} else {
		acc = seed + p32_5
	}
	acc += uint32(n)
	for ; n-i >= 4; i += 4 {
		acc = bits.RotateLeft32(acc+r32(p, i)*p32_3, 17) * p32_4
	}
	for ; i < n; i++ {
		acc = bits.RotateLeft32(acc+uint32(p[i])*p32_5, 11) * p32_1
	}
	acc ^= acc >> 15
	acc *= p32_2
	acc ^= acc >> 13
	acc *= p32_3
	acc ^= acc >> 16
	return acc
}

func xxh64Round(acc, lane uint64) uint64 { return bits.RotateLeft64(acc+lane*p64_2, 31) * p64_1 }
func xxh64Merge(acc, a uint64) uint64    { return (acc^xxh64Round(0, a))*p64_1 + p64_4 }
func xxh64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= p64_2
	h ^= h >> 29
	h *= p64_3
	return h ^ h>>32
}

// XXH64 of data.
func XXH64(p []byte, seed uint64) uint64 {
	n := len(p)
	i := 0
	var acc uint64
	if n >= 32 {
		a1, a2, a3, a4 := seed+p64_1+p64_2, seed+p64_2, seed, seed-p64_1
		for ; n-i >= 32; i += 32 {
			a1 = xxh64Round(a1, r64(p, i))
			a2 = xxh64Round(a2, r64(p, i+8))
			a3 = xxh64Round(a3, r64(p, i+16))
			a4 = xxh64Round(a4, r64(p, i+24))
		}
		acc = bits.RotateLeft64(a1, 1) + bits.RotateLeft64(a2, 7) + bits.RotateLeft64(a3, 12) + bits.RotateLeft64(a4, 18)
		acc = xxh64Merge(xxh64Merge(xxh64Merge(xxh64Merge(acc, a1), a2), a3), a4)
	} else {
		acc = seed + p64_5
	}
	acc += uint64(n)
	for ; n-i >= 8; i += 8 {
		acc = bits.RotateLeft64(acc^xxh64Round(0, r64(p, i)), 27)*p64_1 + p64_4
	}
	if n-i >= 4 {
		acc = bits.RotateLeft64(acc^uint64(r32(p, i))*p64_1, 23)*p64_2 + p64_3
		i += 4
	}
	for ; i < n; i++ {
		acc = bits.RotateLeft64(acc^uint64(p[i])*p64_5, 11) * p64_1
	}
	return xxh64Avalanche(acc)
}

func xxh3Avalanche(x uint64) uint64 {
	x ^= x >> 37
	x *= mx1
	return x ^ x>>32
}

func fold64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func mix16(p []byte, i int, s []byte, j int, seed uint64) uint64 {
	return fold64(r64(p, i)^(r64(s, j)+seed), r64(p, i+8)^(r64(s, j+8)-seed))
}

// XXH3_64 of data (the seeded variant).
func XXH3(p []byte, seed uint64) uint64 {
	n := len(p)
	s := xxh3Secret[:]
	switch {
	case n > 240:
		return xxh3Long(p, seed)
	case n > 128:
		acc := uint64(n) * p64_1
		for k := 0; k < 8; k++ {
			acc += mix16(p, 16*k, s, 16*k, seed)
		}
		acc = xxh3Avalanche(acc)
		for k := 8; k < n>>4; k++ {
			acc += mix16(p, 16*k, s, 16*(k-8)+3, seed)
		}
		acc += mix16(p, n-16, s, 119, seed)
		return xxh3Avalanche(acc)
	case n > 16:
		acc := uint64(n) * p64_1
		for r := (n - 1) >> 5; r >= 0; r-- {
			acc += mix16(p, 16*r, s, 32*r, seed) + mix16(p, n-16*(r+1), s, 32*r+16, seed)
		}
		return xxh3Avalanche(acc)
	case n > 8:
		lo := ((r64(s, 24) ^ r64(s, 32)) + seed) ^ r64(p, 0)
		hi := ((r64(s, 40) ^ r64(s, 48)) - seed) ^ r64(p, n-8)
		return xxh3Avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + fold64(lo, hi))
	case n >= 4:
		first, last := uint64(r32(p, 0)), uint64(r32(p, n-4))
		mod := seed ^ uint64(bits.ReverseBytes32(uint32(seed)))<<32
		x := ((r64(s, 8) ^ r64(s, 16)) - mod) ^ (last | first<<32)
		x ^= bits.RotateLeft64(x, 49) ^ bits.RotateLeft64(x, 24)
		x *= mx2
		x ^= (x >> 35) + uint64(n)
		x *= mx2
		return x ^ x>>28
	case n > 0:
		combined := uint32(p[n-1]) | uint32(n)<<8 | uint32(p[0])<<16 | uint32(p[n>>1])<<24
		k := uint64(r32(s, 0)^r32(s, 4)) + seed
		return xxh64Avalanche(k ^ uint64(combined))
	default:
		return xxh64Avalanche(seed ^ r64(s, 56) ^ r64(s, 64))
	}
}

func xxh3Long(p []byte, seed uint64) uint64 {
	sec := xxh3Secret
	if seed != 0 {
		for k := 0; k < 12; k++ {
			binary.LittleEndian.PutUint64(sec[16*k:], r64(xxh3Secret[:], 16*k)+seed)
			binary.LittleEndian.PutUint64(sec[16*k+8:], r64(xxh3Secret[:], 16*k+8)-seed)
		}
	}
	s := sec[:]
	n := len(p)
	acc := [8]uint64{uint64(p32_3), p64_1, p64_2, p64_3, p64_4, uint64(p32_2), p64_5, uint64(p32_1)}
	stripe := func(off, so int) {
		var d [8]uint64
		for k := 0; k < 8; k++ {
			d[k] = r64(p, off+8*k)
		}
		for k := 0; k < 8; k++ {
			x := d[k] ^ r64(s, so+8*k)
			acc[k] += (x&0xffffffff)*(x>>32) + d[k^1]
		}
	}
	const block = 64 * 16
	nblocks := (n - 1) / block
	for b := 0; b < nblocks; b++ {
		for j := 0; j < 16; j++ {
			stripe(b*block+64*j, 8*j)
		}
		for k := 0; k < 8; k++ {
			a := acc[k]
			a ^= a >> 47
			a ^= r64(s, 128+8*k)
			acc[k] = a * uint64(p32_1)
		}
	}
	nstripes := (n - nblocks*block - 1) / 64
	for j := 0; j < nstripes; j++ {
		stripe(nblocks*block+64*j, 8*j)
	}
	stripe(n-64, 192-71)
	result := uint64(n) * p64_1
	for k := 0; k < 4; k++ {
		result += fold64(acc[2*k]^r64(s, 11+16*k), acc[2*k+1]^r64(s, 11+16*k+8))
	}
	return xxh3Avalanche(result)
}

// Murmur3_32 is MurmurHash3_x86_32.
func Murmur3_32(p []byte, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(p)
	nb := n / 4
	scr := func(k uint32) uint32 { return bits.RotateLeft32(k*c1, 15) * c2 }
	for b := 0; b < nb; b++ {
		h = bits.RotateLeft32(h^scr(r32(p, 4*b)), 13)*5 + 0xe6546b64
	}
	var k uint32
	for t := n & 3; t > 0; t-- {
		k = k<<8 | uint32(p[4*nb+t-1])
	}
	if n&3 != 0 {
		h ^= scr(k)
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	return h ^ h>>16
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	return k ^ k>>33
}

// Murmur3_128 is MurmurHash3_x64_128: (h1, h2); the routing value is h1.
func Murmur3_128(p []byte, seed uint32) (uint64, uint64) {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	h1, h2 := uint64(seed), uint64(seed)
	n := len(p)
	nb := n / 16
	sk1 := func(k uint64) uint64 { return bits.RotateLeft64(k*c1, 31) * c2 }
	sk2 := func(k uint64) uint64 { return bits.RotateLeft64(k*c2, 33) * c1 }
	for b := 0; b < nb; b++ {
		h1 ^= sk1(r64(p, 16*b))
		h1 = (bits.RotateLeft64(h1, 27)+h2)*5 + 0x52dce729
		h2 ^= sk2(r64(p, 16*b+8))
		h2 = (bits.RotateLeft64(h2, 31)+h1)*5 + 0x38495ab5
	}
	t, rem := 16*nb, n&15
	var k1, k2 uint64
	for i := rem; i > 8; i-- {
		k2 = k2<<8 | uint64(p[t+i-1])
	}
	for i := min(rem, 8); i > 0; i-- {
		k1 = k1<<8 | uint64(p[t+i-1])
	}
	if rem > 8 {
		h2 ^= sk2(k2)
	}
	if rem > 0 {
		h1 ^= sk1(k1)
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// FNV1a32 is 32-bit FNV-1a.
func FNV1a32(p []byte) uint32 {
	h := uint32(0x811c9dc5)
	for _, b := range p {
		h = (h ^ uint32(b)) * 0x01000193
	}
	return h
}

// FNV1a64 is 64-bit FNV-1a.
func FNV1a64(p []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, b := range p {
		h = (h ^ uint64(b)) * 0x100000001b3
	}
	return h
}

// Algorithms lists the hash functions of the protocol and their widest seed.
var Algorithms = map[string]uint64{
	"xxh3_64": ^uint64(0), "xxh64": ^uint64(0), "xxh32": 0xffffffff, "murmur3_32": 0xffffffff,
	"murmur3_128": 0xffffffff, "fnv1a_32": 0, "fnv1a_64": 0,
}

// HashBytes is the 64-bit routing value of data under an algorithm and seed
// (the seed must be within the algorithm's range; see Algorithms).
func HashBytes(data []byte, algorithm string, seed uint64) uint64 {
	switch algorithm {
	case "xxh3_64":
		return XXH3(data, seed)
	case "xxh64":
		return XXH64(data, seed)
	case "xxh32":
		return uint64(XXH32(data, uint32(seed)))
	case "murmur3_32":
		return uint64(Murmur3_32(data, uint32(seed)))
	case "murmur3_128":
		h1, _ := Murmur3_128(data, uint32(seed))
		return h1
	case "fnv1a_32":
		return uint64(FNV1a32(data))
	case "fnv1a_64":
		return FNV1a64(data)
	}
	panic("unknown algorithm " + algorithm)
}
