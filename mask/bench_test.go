package mask_test

import (
	"encoding/base32"
	"encoding/binary"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

// Masking beside what a user would pick instead, in one run:
//
//   - speck: this package, a Masker of vesta serve's check (AppendMask;
//     Unmask parses, deciphers and checks);
//   - hide-style: the arithmetic of c2h5oh/hide and Optimus, an ID
//     multiplied by an odd constant and XORed with another, modulo 2^64,
//     in the same 13-character text. It is written here, on uint64s,
//     as hide's module is not among those this repository may fetch, and
//     it is not encryption: two pairs of ID and mask give the constants
//     away. Sqids and Hashids (alphabet shuffles, reversed from a few
//     pairs in the same way) have no module here either;
//   - base32: the ID's 8 bytes in Crockford's base32 (encoding/base32),
//     13 characters with no key at all: the cost of the text alone.
//
// BENCHMARKS.md reports them as ratios.

var crockford = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// The hide-style constants: an odd multiplier, its inverse modulo 2^64
// (Newton's iteration) and the XOR.
const (
	hidePrime = 0x9e3779b97f4a7c15 | 1
	hideXOR   = 0x5851f42d4c957f2d
)

var hideInverse = func() uint64 {
	inv := uint64(hidePrime)
	for range 6 {
		inv *= 2 - hidePrime*inv
	}
	return inv
}()

func benchMasker(b *testing.B) (*mask.Masker, core.ID) {
	return mustMasker(b, mustKeys(b, keyLine(0, 1)), "acme", "", serverCheck()), issued(b, 12345)
}

func BenchmarkMask(b *testing.B) {
	b.Run("speck", func(b *testing.B) {
		m, id := benchMasker(b)
		buf := make([]byte, 0, 32)
		b.ReportAllocs()
		for i := range b.N {
			buf = m.AppendMask(buf[:0], id+core.ID(i&0xffff))
		}
	})
	b.Run("hide-style", func(b *testing.B) {
		_, id := benchMasker(b)
		buf := make([]byte, 0, 32)
		b.ReportAllocs()
		for i := range b.N {
			v := (uint64(id)+uint64(i&0xffff))*hidePrime ^ hideXOR
			buf = mask.Text{Bits: v}.AppendTo(buf[:0])
		}
	})
	b.Run("base32", func(b *testing.B) {
		_, id := benchMasker(b)
		buf := make([]byte, 0, 32)
		var raw [8]byte
		b.ReportAllocs()
		for i := range b.N {
			binary.BigEndian.PutUint64(raw[:], uint64(id)+uint64(i&0xffff))
			buf = crockford.AppendEncode(buf[:0], raw[:])
		}
	})
}

// BenchmarkUnmask: text to a checked ID (speck), to an ID (hide-style,
// base32: no check, as they have none). base32 decodes from bytes, the
// cheaper form for it.
func BenchmarkUnmask(b *testing.B) {
	const n = 1 << 10
	b.Run("speck", func(b *testing.B) {
		m, id := benchMasker(b)
		texts := make([]string, n)
		for i := range texts {
			texts[i] = m.Mask(id + core.ID(i))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := m.Unmask(texts[i&(n-1)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hide-style", func(b *testing.B) {
		_, id := benchMasker(b)
		texts := make([]string, n)
		for i := range texts {
			texts[i] = mask.Text{Bits: (uint64(id)+uint64(i))*hidePrime ^ hideXOR}.String()
		}
		b.ReportAllocs()
		b.ResetTimer()
		var sum uint64
		for i := range b.N {
			t, err := mask.Parse(texts[i&(n-1)])
			if err != nil {
				b.Fatal(err)
			}
			sum += (t.Bits ^ hideXOR) * hideInverse
		}
		benchSink = sum
	})
	b.Run("base32", func(b *testing.B) {
		_, id := benchMasker(b)
		texts := make([][]byte, n)
		for i := range texts {
			var raw [8]byte
			binary.BigEndian.PutUint64(raw[:], uint64(id)+uint64(i))
			texts[i] = crockford.AppendEncode(nil, raw[:])
		}
		b.ReportAllocs()
		b.ResetTimer()
		var raw [8]byte
		var sum uint64
		for i := range b.N {
			if _, err := crockford.Decode(raw[:], texts[i&(n-1)]); err != nil {
				b.Fatal(err)
			}
			sum += binary.BigEndian.Uint64(raw[:])
		}
		benchSink = sum
	})
}

// BenchmarkSpeck is the cipher alone, one block at a time: its 27 rounds
// are a chain of dependent rotate, add and xor steps.
func BenchmarkSpeck(b *testing.B) {
	s, err := mask.NewSpeck(make([]byte, mask.SpeckKeySize))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encrypt", func(b *testing.B) {
		var v uint64
		for range b.N {
			v = s.Encrypt64(v)
		}
		benchSink = v
	})
	b.Run("decrypt", func(b *testing.B) {
		var v uint64
		for range b.N {
			v = s.Decrypt64(v)
		}
		benchSink = v
	})
	b.Run("parse", func(b *testing.B) {
		var v uint64
		for range b.N {
			t, _ := mask.Parse("0123456789abc")
			v += t.Bits
		}
		benchSink = v
	})
}

var benchSink uint64

// The hide-style anchor is a permutation: its inverse undoes it.
func TestHideStyleAnchor(t *testing.T) {
	for _, v := range []uint64{0, 1, 259675389170810880, 1<<64 - 1} {
		if got := (v*hidePrime ^ hideXOR ^ hideXOR) * hideInverse; got != v {
			t.Errorf("hide-style inverse of %d: %d", v, got)
		}
	}
}

// BenchmarkSideBySide runs the three of each direction in turns of 4096
// calls within one loop, so that load from other processes falls on all
// of them alike, and reports each one's ns per call and speck's ratios:
// the figures of BENCHMARKS.md.
func BenchmarkSideBySide(b *testing.B) {
	const chunk = 4096
	m, id := benchMasker(b)
	texts := make([]string, chunk)
	hideTexts := make([]string, chunk)
	rawTexts := make([][]byte, chunk)
	for i := range chunk {
		v := id + core.ID(i)
		texts[i] = m.Mask(v)
		hideTexts[i] = mask.Text{Bits: uint64(v)*hidePrime ^ hideXOR}.String()
		var raw [8]byte
		binary.BigEndian.PutUint64(raw[:], uint64(v))
		rawTexts[i] = crockford.AppendEncode(nil, raw[:])
	}
	buf := make([]byte, 0, 32)
	var raw [8]byte
	var sum uint64
	variants := []struct {
		name string
		run  func()
	}{
		{"mask-speck", func() {
			for i := range chunk {
				buf = m.AppendMask(buf[:0], id+core.ID(i))
			}
		}},
		{"mask-hide", func() {
			for i := range chunk {
				buf = mask.Text{Bits: (uint64(id)+uint64(i))*hidePrime ^ hideXOR}.AppendTo(buf[:0])
			}
		}},
		{"mask-base32", func() {
			for i := range chunk {
				binary.BigEndian.PutUint64(raw[:], uint64(id)+uint64(i))
				buf = crockford.AppendEncode(buf[:0], raw[:])
			}
		}},
		{"unmask-speck", func() {
			for _, s := range texts {
				v, err := m.Unmask(s)
				if err != nil {
					b.Fatal(err)
				}
				sum += uint64(v)
			}
		}},
		{"unmask-hide", func() {
			for _, s := range hideTexts {
				t, err := mask.Parse(s)
				if err != nil {
					b.Fatal(err)
				}
				sum += (t.Bits ^ hideXOR) * hideInverse
			}
		}},
		{"unmask-base32", func() {
			for _, s := range rawTexts {
				if _, err := crockford.Decode(raw[:], s); err != nil {
					b.Fatal(err)
				}
				sum += binary.BigEndian.Uint64(raw[:])
			}
		}},
	}
	spent := make([]time.Duration, len(variants))
	rounds := max(1, b.N/chunk)
	b.ResetTimer()
	for range rounds {
		for j, v := range variants {
			t0 := time.Now()
			v.run()
			spent[j] += time.Since(t0)
		}
	}
	b.StopTimer()
	benchSink = sum
	ns := func(j int) float64 { return float64(spent[j]) / float64(rounds*chunk) }
	for j, v := range variants {
		b.ReportMetric(ns(j), v.name+"-ns")
	}
	b.ReportMetric(ns(0)/ns(1), "mask-speck/hide")
	b.ReportMetric(ns(0)/ns(2), "mask-speck/base32")
	b.ReportMetric(ns(3)/ns(4), "unmask-speck/hide")
	b.ReportMetric(ns(3)/ns(5), "unmask-speck/base32")
	b.ReportMetric(0, "ns/op") // the per-variant figures above are the result
}
