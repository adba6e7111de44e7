package mask

import (
	"fmt"
	"strings"
)

// The text form of a mask: an optional kind prefix and "_", then 13
// characters of Crockford's base32 holding 65 bits, highest first: the key
// slot (1 bit) and the 64 masked bits.
//
//	ord_0h3x5cgmc7r2a    kind ord, slot 0 (a first character 0-f)
//	gk2p0y6s1ztq4        no kind, slot 1 (a first character g-z)
//
// Crockford's alphabet has no I, L, O or U, so no two characters look
// alike; reading takes either case and I, L as 1 and O as 0, as Crockford
// says. Masks are written in lower case. The alphabet is in ASCII order,
// so texts of one slot sort as their masked bits do (which tells nothing
// of the IDs' order).
const (
	// TextLen is the length of a mask without its prefix.
	TextLen = 13
	// MaxKindLen bounds a kind (and so a prefix) in bytes.
	MaxKindLen = 16
)

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// decode maps a character to its 5-bit value, or 0xff.
var decode = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(alphabet) {
		c := alphabet[i]
		t[c] = byte(i)
		if c >= 'a' {
			t[c-'a'+'A'] = byte(i)
		}
	}
	for _, c := range "iIlL" {
		t[c] = 1
	}
	t['o'], t['O'] = 0, 0
	return t
}()

// Text is a mask taken apart, before any key is used on it.
type Text struct {
	// Kind is the prefix as written, without its "_"; "" when the text
	// has none. Kinds compare without regard to case.
	Kind string
	// Slot is the key slot, 0 or 1.
	Slot uint8
	// Bits are the 64 masked bits.
	Bits uint64
}

// Parse takes a mask's text apart: [kind "_"] and 13 characters. It
// allocates nothing: Kind is a piece of s.
func Parse(s string) (Text, error) {
	var t Text
	if len(s) != TextLen {
		if len(s) < TextLen+2 || s[len(s)-TextLen-1] != '_' {
			return t, syntaxError(s, "want 13 characters of 0-9 a-z (no i, l, o, u), optionally after a kind and _")
		}
		t.Kind = s[:len(s)-TextLen-1]
		if err := checkKind(t.Kind); err != nil {
			return Text{}, syntaxError(s, "its prefix: "+err.Error())
		}
		s = s[len(s)-TextLen:]
	}
	v, c0, bad := decodeBits(s)
	if bad&0xe0 != 0 {
		return Text{}, syntaxError(s, badChar(s))
	}
	t.Slot, t.Bits = c0>>4&1, uint64(c0&15)<<60|v
	return t, nil
}

// decodeBits reads 13 characters: the low 60 bits of the value, the
// first character's 5 bits, and the OR of every character's table value
// (bits 0xe0 set: a character outside the alphabet). The 13 lookups are
// independent and joined pairwise, so that reading is not a chain of 13
// shifts.
func decodeBits(s string) (v uint64, c0, bad byte) {
	_ = s[TextLen-1]
	c0 = decode[s[0]]
	c1, c2, c3, c4 := decode[s[1]], decode[s[2]], decode[s[3]], decode[s[4]]
	c5, c6, c7, c8 := decode[s[5]], decode[s[6]], decode[s[7]], decode[s[8]]
	c9, c10, c11, c12 := decode[s[9]], decode[s[10]], decode[s[11]], decode[s[12]]
	bad = ((c0 | c1) | (c2 | c3)) | ((c4 | c5) | (c6 | c7)) | ((c8 | c9) | (c10 | c11)) | c12
	hi := (uint64(c1&31)<<55 | uint64(c2&31)<<50) | (uint64(c3&31)<<45 | uint64(c4&31)<<40) | uint64(c5&31)<<35
	mid := (uint64(c6&31)<<30 | uint64(c7&31)<<25) | (uint64(c8&31)<<20 | uint64(c9&31)<<15)
	lo := (uint64(c10&31)<<10 | uint64(c11&31)<<5) | uint64(c12&31)
	return hi | mid | lo, c0, bad
}

// String is the text of t: its kind, "_" and 13 characters, in lower case.
func (t Text) String() string { return string(t.AppendTo(make([]byte, 0, len(t.Kind)+1+TextLen))) }

// AppendTo appends t's text to dst.
func (t Text) AppendTo(dst []byte) []byte {
	for i := range len(t.Kind) {
		c := t.Kind[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	if t.Kind != "" {
		dst = append(dst, '_')
	}
	return appendBits(dst, t.Slot, t.Bits)
}

// appendBits writes the 13 characters of (slot, bits).
func appendBits(dst []byte, slot uint8, v uint64) []byte {
	return append(dst,
		alphabet[(slot&1)<<4|uint8(v>>60)],
		alphabet[v>>55&31], alphabet[v>>50&31], alphabet[v>>45&31], alphabet[v>>40&31],
		alphabet[v>>35&31], alphabet[v>>30&31], alphabet[v>>25&31], alphabet[v>>20&31],
		alphabet[v>>15&31], alphabet[v>>10&31], alphabet[v>>5&31], alphabet[v&31])
}

// checkKind: 1-16 ASCII letters and digits, a letter first.
func checkKind(k string) error {
	if k == "" || len(k) > MaxKindLen {
		return fmt.Errorf("kind %q: want 1-%d letters and digits, a letter first", clip(k), MaxKindLen)
	}
	for i := range len(k) {
		c := k[i] | 0x20 // lower case for letters
		letter := 'a' <= c && c <= 'z'
		if !letter && (i == 0 || k[i] < '0' || k[i] > '9') {
			return fmt.Errorf("kind %q: want 1-%d letters and digits, a letter first", clip(k), MaxKindLen)
		}
	}
	return nil
}

func syntaxError(s, why string) error {
	return fmt.Errorf("%w: %q: %s", ErrSyntax, clip(s), why)
}

// badChar names the first character outside the alphabet.
func badChar(s string) string {
	for i := range len(s) {
		if decode[s[i]] == 0xff {
			switch c := s[i]; {
			case c == 'u' || c == 'U':
				return fmt.Sprintf("character %d is %q, which Crockford's base32 leaves out (it has no i, l, o, u)", i+1, c)
			case c < 0x20 || c >= 0x7f:
				return fmt.Sprintf("character %d is byte %#02x, not one of 0-9 a-z", i+1, c)
			default:
				return fmt.Sprintf("character %d is %q, not one of 0-9 a-z", i+1, c)
			}
		}
	}
	return "bad characters"
}

// clip keeps hostile input from flooding error messages and logs.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
