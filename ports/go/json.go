package shardhash

import (
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON values as this package reads them: nil, bool, *big.Int (integers, exact),
// Float (numbers with a fraction or an exponent), string, []any, map[string]any.
// A lone surrogate escape (\ud800) is kept as its 3-byte WTF-8 form, which is
// not valid UTF-8, so that whatever uses the string refuses it.

// Float is a JSON number written with a fraction or an exponent.
type Float float64

type jsonReader struct {
	s string
	i int
}

// ParseJSON reads one JSON document strictly (nesting limited to 64 levels).
func ParseJSON(data []byte) (any, error) {
	r := &jsonReader{s: string(data)}
	v, err := r.value(0)
	if err != nil {
		return nil, err
	}
	r.ws()
	if r.i != len(r.s) {
		return nil, r.fail("trailing data")
	}
	return v, nil
}

func (r *jsonReader) fail(m string) error {
	return valueErrorf("invalid JSON at offset %d: %s", r.i, m)
}

func (r *jsonReader) ws() {
	for r.i < len(r.s) && strings.IndexByte(" \t\n\r", r.s[r.i]) >= 0 {
		r.i++
	}
}

func (r *jsonReader) value(depth int) (any, error) {
	r.ws()
	if r.i >= len(r.s) {
		return nil, r.fail("unexpected end")
	}
	switch c := r.s[r.i]; {
	case c == '[':
		if depth >= 64 {
			return nil, r.fail("nested deeper than 64 levels")
		}
		r.i++
		out := []any{}
		r.ws()
		if r.i < len(r.s) && r.s[r.i] == ']' {
			r.i++
			return out, nil
		}
		for {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			r.ws()
			if r.i < len(r.s) && r.s[r.i] == ',' {
				r.i++
				continue
			}
			if r.i < len(r.s) && r.s[r.i] == ']' {
				r.i++
				return out, nil
			}
			return nil, r.fail("expected , or ]")
		}
	case c == '{':
		if depth >= 64 {
			return nil, r.fail("nested deeper than 64 levels")
		}
		r.i++
		out := map[string]any{}
		r.ws()
		if r.i < len(r.s) && r.s[r.i] == '}' {
			r.i++
			return out, nil
		}
		for {
			r.ws()
			if r.i >= len(r.s) || r.s[r.i] != '"' {
				return nil, r.fail("expected a key")
			}
			k, err := r.str()
			if err != nil {
				return nil, err
			}
			r.ws()
			if r.i >= len(r.s) || r.s[r.i] != ':' {
				return nil, r.fail("expected :")
			}
			r.i++
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out[k] = v
			r.ws()
			if r.i < len(r.s) && r.s[r.i] == ',' {
				r.i++
				continue
			}
			if r.i < len(r.s) && r.s[r.i] == '}' {
				r.i++
				return out, nil
			}
			return nil, r.fail("expected , or }")
		}
	case c == '"':
		return r.str()
	case strings.HasPrefix(r.s[r.i:], "true"):
		r.i += 4
		return true, nil
	case strings.HasPrefix(r.s[r.i:], "false"):
		r.i += 5
		return false, nil
	case strings.HasPrefix(r.s[r.i:], "null"):
		r.i += 4
		return nil, nil
	default:
		return r.number()
	}
}

func (r *jsonReader) number() (any, error) {
	start := r.i
	isFloat := false
	if r.i < len(r.s) && r.s[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	intStart := r.i
	if digits() == 0 || (r.s[intStart] == '0' && r.i-intStart > 1) {
		return nil, r.fail("bad number")
	}
	if r.i < len(r.s) && r.s[r.i] == '.' {
		isFloat = true
		r.i++
		if digits() == 0 {
			return nil, r.fail("bad number")
		}
	}
	if r.i < len(r.s) && (r.s[r.i] == 'e' || r.s[r.i] == 'E') {
		isFloat = true
		r.i++
		if r.i < len(r.s) && (r.s[r.i] == '+' || r.s[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return nil, r.fail("bad number")
		}
	}
	text := r.s[start:r.i]
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, r.fail("bad number")
		}
		return Float(f), nil
	}
	b, _ := new(big.Int).SetString(text, 10)
	return b, nil
}

func (r *jsonReader) hex4() (rune, bool) {
	if r.i+4 > len(r.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(r.s[r.i:r.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	r.i += 4
	return rune(v), true
}

func (r *jsonReader) str() (string, error) {
	r.i++
	var b strings.Builder
	for {
		if r.i >= len(r.s) {
			return "", r.fail("unterminated string")
		}
		c := r.s[r.i]
		r.i++
		switch {
		case c == '"':
			return b.String(), nil
		case c == '\\':
			if r.i >= len(r.s) {
				return "", r.fail("bad escape")
			}
			e := r.s[r.i]
			r.i++
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				u, ok := r.hex4()
				if !ok {
					return "", r.fail("bad \\u escape")
				}
				if utf16.IsSurrogate(u) && u < 0xdc00 && strings.HasPrefix(r.s[r.i:], "\\u") {
					save := r.i
					r.i += 2
					if lo, ok := r.hex4(); ok && lo >= 0xdc00 && lo <= 0xdfff {
						b.WriteRune(utf16.DecodeRune(u, lo))
						continue
					}
					r.i = save
				}
				if utf16.IsSurrogate(u) { // WTF-8: not valid UTF-8
					b.WriteByte(byte(0xe0 | (u >> 12)))
					b.WriteByte(byte(0x80 | ((u >> 6) & 0x3f)))
					b.WriteByte(byte(0x80 | (u & 0x3f)))
				} else {
					b.WriteRune(u)
				}
			default:
				return "", r.fail("bad escape")
			}
		case c < 0x20:
			return "", r.fail("control character in string")
		default:
			b.WriteByte(c)
		}
	}
}

// PyFloatRepr writes a float as Python's repr does (the canonical JSON's floats).
func PyFloatRepr(x float64) (string, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "", valueErrorf("NaN and infinities are not allowed in documents")
	}
	if x == 0 {
		if math.Signbit(x) {
			return "-0.0", nil
		}
		return "0.0", nil
	}
	sign := ""
	if x < 0 {
		sign = "-"
		x = -x
	}
	e := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±XX, shortest round-trip digits
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	ex, _ := strconv.Atoi(exp)
	decpt := ex + 1
	switch {
	case decpt > 16 || decpt < -3:
		es := strconv.Itoa(abs(decpt - 1))
		if len(es) < 2 {
			es = "0" + es
		}
		if decpt-1 < 0 {
			es = "-" + es
		} else {
			es = "+" + es
		}
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		return sign + m + "e" + es, nil
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits, nil
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0", nil
	default:
		return sign + digits[:decpt] + "." + digits[decpt:], nil
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func quoteJSON(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range s { // invalid bytes were refused before
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteString(strconv.FormatInt(int64(c)>>4, 16))
				b.WriteString(strconv.FormatInt(int64(c)&15, 16))
			} else {
				b.WriteRune(c)
			}
		}
	}
	b.WriteByte('"')
}

// CanonicalJSON writes a value as the fingerprint needs it: keys sorted by
// code point (byte order of UTF-8 is code point order), no whitespace,
// non-ASCII characters as themselves.
func CanonicalJSON(v any) (string, error) {
	var b strings.Builder
	if err := canonical(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func canonical(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case *big.Int:
		b.WriteString(x.String())
	case Float:
		s, err := PyFloatRepr(float64(x))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case string:
		if !utf8.ValidString(x) {
			return valueErrorf("the document holds a string that is not valid UTF-8 (a lone surrogate)")
		}
		quoteJSON(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := canonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			if !utf8.ValidString(k) {
				return valueErrorf("the document holds a key that is not valid UTF-8")
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			quoteJSON(b, k)
			b.WriteByte(':')
			if err := canonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return typeErrorf("cannot write %T as JSON", v)
	}
	return nil
}
