package mask_test

import (
	"bytes"
	"crypto/cipher"
	"encoding/hex"
	"testing"

	"github.com/vesta-go/vesta/mask"
)

// The test vector of Speck64/128 from the designers' paper (Beaulieu et
// al., "The SIMON and SPECK Families of Lightweight Block Ciphers", 2013,
// appendix C), in the paper's words:
//
//	Key        1b1a1918 13121110 0b0a0908 03020100   (l2, l1, l0, k0)
//	Plaintext  3b726574 7475432d                     (x, y)
//	Ciphertext 8c6fa548 454e028b                     (x, y)
//
// and in the bytes of the designers' implementation guide, each word
// little-endian with the low word first (k0 l0 l1 l2; y x): the key 00 01
// 02 03 08 09 0a 0b 10 11 12 13 18 19 1a 1b, the plaintext "-Cutter;".
func TestSpeckVector(t *testing.T) {
	key := mustHex(t, "0001020308090a0b1011121318191a1b")
	s, err := mask.NewSpeck(key)
	if err != nil {
		t.Fatal(err)
	}
	const pt, ct = uint64(0x3b726574_7475432d), uint64(0x8c6fa548_454e028b)
	if got := s.Encrypt64(pt); got != ct {
		t.Errorf("Encrypt64(%#x) = %#x; want %#x", pt, got, ct)
	}
	if got := s.Decrypt64(ct); got != pt {
		t.Errorf("Decrypt64(%#x) = %#x; want %#x", ct, got, pt)
	}

	var b cipher.Block = s
	ptBytes, ctBytes := []byte("-Cutter;"), mustHex(t, "8b024e4548a56f8c")
	got := make([]byte, 8)
	b.Encrypt(got, ptBytes)
	if !bytes.Equal(got, ctBytes) {
		t.Errorf("Encrypt(%q) = %x; want %x", ptBytes, got, ctBytes)
	}
	b.Decrypt(got, got) // in place
	if !bytes.Equal(got, ptBytes) {
		t.Errorf("Decrypt = %q; want %q", got, ptBytes)
	}
	if b.BlockSize() != 8 {
		t.Errorf("BlockSize %d", b.BlockSize())
	}
}

func TestSpeckKeySize(t *testing.T) {
	for _, n := range []int{0, 8, 15, 17, 32} {
		if _, err := mask.NewSpeck(make([]byte, n)); err == nil {
			t.Errorf("a %d-byte key: no error", n)
		}
	}
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
