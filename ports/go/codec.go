package shardhash

import (
	"encoding/binary"
	"encoding/hex"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Keys: int, int8..int64, uint, uint8..uint64, *big.Int (in [-2^63, 2^64-1]),
// string, []byte, UUID, Tuple (a compound key).  bool, floats and anything
// else are a TypeError.

// UUID is a UUID key: its 16 bytes in RFC 4122 order.
type UUID [16]byte

// ParseUUID reads the usual text forms (with or without hyphens, braces, urn:uuid:).
func ParseUUID(s string) (UUID, error) {
	var u UUID
	t := strings.ToLower(strings.TrimPrefix(strings.ToLower(s), "urn:uuid:"))
	t = strings.NewReplacer("{", "", "}", "", "-", "").Replace(t)
	b, err := hex.DecodeString(t)
	if err != nil || len(b) != 16 {
		return u, valueErrorf("not a UUID: %q", s)
	}
	copy(u[:], b)
	return u, nil
}

// Tuple is a compound key: each part encoded, preceded by its length (4 bytes, little-endian).
type Tuple []any

// KeyCodec turns keys into bytes (docs/protocol.md section 2).
type KeyCodec struct {
	Decimal       bool   // int_encoding "decimal" (else "le64")
	Normalization string // "", "NFC", "NFD", "NFKC", "NFKD"
	Casefold      bool
	Strip         bool
}

var codecFields = []string{"format", "int_encoding", "normalization", "casefold", "strip"}

// CodecFromDoc reads a shardhash.codec/1 document.
func CodecFromDoc(v any) (*KeyCodec, error) {
	doc, err := fields(v, codecFields, nil, "codec document")
	if err != nil {
		return nil, err
	}
	if doc["format"] != "shardhash.codec/1" {
		return nil, valueErrorf("codec format must be \"shardhash.codec/1\"")
	}
	c := &KeyCodec{}
	switch doc["int_encoding"] {
	case "le64":
	case "decimal":
		c.Decimal = true
	default:
		return nil, valueErrorf("int_encoding must be le64 or decimal")
	}
	switch n := doc["normalization"].(type) {
	case nil:
	case string:
		if n != "NFC" && n != "NFD" && n != "NFKC" && n != "NFKD" {
			return nil, valueErrorf("normalization must be null, NFC, NFD, NFKC or NFKD")
		}
		c.Normalization = n
	default:
		return nil, valueErrorf("normalization must be null or a string")
	}
	var ok bool
	if c.Casefold, ok = doc["casefold"].(bool); !ok {
		return nil, typeErrorf("casefold must be a boolean")
	}
	if c.Strip, ok = doc["strip"].(bool); !ok {
		return nil, typeErrorf("strip must be a boolean")
	}
	return c, nil
}

var (
	caseFold   map[rune]string
	whitespace map[rune]bool
)

func init() {
	caseFold = map[rune]string{}
	for _, e := range strings.Split(caseFoldData, ";") {
		k, v, _ := strings.Cut(e, ":")
		cp, _ := strconv.ParseUint(k, 16, 32)
		var b strings.Builder
		for _, x := range strings.Fields(v) {
			r, _ := strconv.ParseUint(x, 16, 32)
			b.WriteRune(rune(r))
		}
		caseFold[rune(cp)] = b.String()
	}
	whitespace = map[rune]bool{}
	for _, r := range pyWhitespace {
		whitespace[r] = true
	}
}

func (c *KeyCodec) appendStr(buf []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, valueErrorf("string key %q is not valid UTF-8", s)
	}
	if c.Normalization == "" && !c.Casefold && !c.Strip {
		return append(buf, s...), nil
	}
	if c.Strip {
		s = strings.TrimFunc(s, func(r rune) bool { return whitespace[r] })
	}
	if c.Normalization != "" {
		var err error
		if s, err = normalize(c.Normalization, s); err != nil {
			return nil, err
		}
	}
	if c.Casefold {
		var b strings.Builder
		for _, r := range s {
			if f, ok := caseFold[r]; ok {
				b.WriteString(f)
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
		if c.Normalization != "" {
			var err error
			if s, err = normalize(c.Normalization, s); err != nil {
				return nil, err
			}
		}
	}
	return append(buf, s...), nil
}

var (
	minKey = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 63))
	maxKey = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(1))
)

func (c *KeyCodec) appendInt(buf []byte, neg bool, bits uint64) []byte {
	if c.Decimal {
		if neg {
			return strconv.AppendInt(buf, int64(bits), 10)
		}
		return strconv.AppendUint(buf, bits, 10)
	}
	return binary.LittleEndian.AppendUint64(buf, bits)
}

// Append appends the bytes hashed for key to buf.
func (c *KeyCodec) Append(buf []byte, key any) ([]byte, error) {
	switch k := key.(type) {
	case string:
		return c.appendStr(buf, k)
	case []byte:
		return append(buf, k...), nil
	case bool:
		return nil, typeErrorf("booleans are not keys")
	case int:
		return c.appendInt(buf, k < 0, uint64(k)), nil
	case int64:
		return c.appendInt(buf, k < 0, uint64(k)), nil
	case int32:
		return c.appendInt(buf, k < 0, uint64(k)), nil
	case int16:
		return c.appendInt(buf, k < 0, uint64(k)), nil
	case int8:
		return c.appendInt(buf, k < 0, uint64(k)), nil
	case uint:
		return c.appendInt(buf, false, uint64(k)), nil
	case uint64:
		return c.appendInt(buf, false, k), nil
	case uint32:
		return c.appendInt(buf, false, uint64(k)), nil
	case uint16:
		return c.appendInt(buf, false, uint64(k)), nil
	case uint8:
		return c.appendInt(buf, false, uint64(k)), nil
	case *big.Int:
		if k.Cmp(minKey) < 0 || k.Cmp(maxKey) > 0 {
			return nil, overflowErrorf("integer key %s is outside [-2**63, 2**64-1]", k)
		}
		if k.Sign() < 0 {
			return c.appendInt(buf, true, uint64(k.Int64())), nil
		}
		return c.appendInt(buf, false, k.Uint64()), nil
	case UUID:
		return append(buf, k[:]...), nil
	case Tuple:
		if len(k) == 0 {
			return nil, valueErrorf("the empty tuple is not a key")
		}
		for _, part := range k {
			at := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			var err error
			if buf, err = c.Append(buf, part); err != nil {
				return nil, err
			}
			binary.LittleEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		}
		return buf, nil
	}
	return nil, typeErrorf("not a key: %v (%T)", key, key)
}

// Encode is the bytes hashed for key.
func (c *KeyCodec) Encode(key any) ([]byte, error) { return c.Append(nil, key) }

// Hasher maps a key to its 64-bit routing value (a shardhash.hasher/1 document).
type Hasher struct {
	Algorithm string
	Seed      uint64
	Codec     *KeyCodec
}

// HasherFromDoc reads a shardhash.hasher/1 document.
func HasherFromDoc(v any) (*Hasher, error) {
	doc, err := fields(v, []string{"format", "algorithm", "seed", "codec"}, nil, "hasher document")
	if err != nil {
		return nil, err
	}
	if doc["format"] != "shardhash.hasher/1" {
		return nil, valueErrorf("hasher format must be \"shardhash.hasher/1\"")
	}
	alg, _ := doc["algorithm"].(string)
	widest, ok := Algorithms[alg]
	if !ok {
		return nil, valueErrorf("unknown algorithm %v", doc["algorithm"])
	}
	seed, ok := doc["seed"].(*big.Int)
	if !ok {
		return nil, typeErrorf("seed must be an integer")
	}
	if seed.Sign() < 0 {
		return nil, valueErrorf("seed must be >= 0")
	}
	if !seed.IsUint64() || seed.Uint64() > widest {
		if widest == 0 {
			return nil, valueErrorf("%s takes no seed", alg)
		}
		return nil, overflowErrorf("seed %s is too wide for %s", seed, alg)
	}
	codec, err := CodecFromDoc(doc["codec"])
	if err != nil {
		return nil, err
	}
	return &Hasher{Algorithm: alg, Seed: seed.Uint64(), Codec: codec}, nil
}

// Hash is the key's 64-bit routing value.
func (h *Hasher) Hash(key any) (uint64, error) {
	var scratch [64]byte
	b, err := h.Codec.Append(scratch[:0], key)
	if err != nil {
		return 0, err
	}
	return HashBytes(b, h.Algorithm, h.Seed), nil
}

// HashInt64 is Hash for an integer key, without boxing it in an interface.
func (h *Hasher) HashInt64(k int64) uint64 {
	if h.Codec.Decimal {
		var scratch [24]byte
		return HashBytes(strconv.AppendInt(scratch[:0], k, 10), h.Algorithm, h.Seed)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(k))
	return HashBytes(b[:], h.Algorithm, h.Seed)
}

// fields checks that v is an object with exactly the required fields and
// perhaps the optional ones.
func fields(v any, required, optional []string, what string) (map[string]any, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, typeErrorf("%s must be an object", what)
	}
	for k := range doc {
		if !contains(required, k) && !contains(optional, k) {
			return nil, valueErrorf("unknown field %q in %s", k, what)
		}
	}
	for _, k := range required {
		if _, ok := doc[k]; !ok {
			return nil, valueErrorf("missing field %q in %s", k, what)
		}
	}
	return doc, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
