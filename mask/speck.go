package mask

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Speck64/128 (Beaulieu, Shors, Smith, Treatman-Clark, Weeks and Wingers,
// "The SIMON and SPECK Families of Lightweight Block Ciphers", 2013): a
// 64-bit block of two 32-bit words (x, y), a 128-bit key of four words
// (l2, l1, l0, k0), 27 rounds, rotations α = 8 and β = 3. One block is
// exactly one ID, so the cipher is a keyed permutation of the 64-bit
// values: every ID has one mask, every mask one ID, and no extra bits are
// spent. Its full-round security stands (the best published attacks
// reach fewer rounds); speck_test.go checks the paper's test vector in
// words and in bytes.
//
// Byte order, for the crypto/cipher.Block form: that of the designers'
// implementation guide, words little-endian with the low word first: a
// key is k0, l0, l1, l2, and a block y then x. As a uint64 a block is
// x<<32 | y, the little-endian reading of its 8 bytes.

// SpeckRounds is the round count of Speck64/128.
const SpeckRounds = 27

// SpeckKeySize and SpeckBlockSize are Speck64/128's key and block sizes
// in bytes.
const (
	SpeckKeySize   = 16
	SpeckBlockSize = 8
)

// Speck is a Speck64/128 cipher with its round keys expanded. It
// implements crypto/cipher.Block and, for the hot path, Encrypt64 and
// Decrypt64 on a uint64. It is immutable and safe for concurrent use.
type Speck struct {
	rk [SpeckRounds]uint32
}

var _ cipher.Block = (*Speck)(nil)

// NewSpeck expands a 16-byte key (k0, l0, l1, l2, each little-endian).
func NewSpeck(key []byte) (*Speck, error) {
	s := new(Speck)
	if err := s.init(key); err != nil {
		return nil, err
	}
	return s, nil
}

// init is the paper's key schedule: l[i+3] = (k[i] + (l[i] >>> 8)) ^ i,
// k[i+1] = (k[i] <<< 3) ^ l[i+3].
func (s *Speck) init(key []byte) error {
	if len(key) != SpeckKeySize {
		return fmt.Errorf("%w: a Speck64/128 key is %d bytes, not %d", ErrKeys, SpeckKeySize, len(key))
	}
	k := binary.LittleEndian.Uint32(key[0:])
	var l [SpeckRounds + 2]uint32
	l[0] = binary.LittleEndian.Uint32(key[4:])
	l[1] = binary.LittleEndian.Uint32(key[8:])
	l[2] = binary.LittleEndian.Uint32(key[12:])
	for i := range SpeckRounds - 1 {
		s.rk[i] = k
		l[i+3] = (k + bits.RotateLeft32(l[i], -8)) ^ uint32(i)
		k = bits.RotateLeft32(k, 3) ^ l[i+3]
	}
	s.rk[SpeckRounds-1] = k
	return nil
}

// Encrypt64 enciphers the block x<<32 | y.
func (s *Speck) Encrypt64(v uint64) uint64 {
	x, y := uint32(v>>32), uint32(v)
	for _, k := range &s.rk {
		x = (bits.RotateLeft32(x, -8) + y) ^ k
		y = bits.RotateLeft32(y, 3) ^ x
	}
	return uint64(x)<<32 | uint64(y)
}

// Decrypt64 is Encrypt64's inverse.
func (s *Speck) Decrypt64(v uint64) uint64 {
	x, y := uint32(v>>32), uint32(v)
	for i := SpeckRounds - 1; i >= 0; i-- {
		y = bits.RotateLeft32(y^x, -3)
		x = bits.RotateLeft32((x^s.rk[i])-y, 8)
	}
	return uint64(x)<<32 | uint64(y)
}

// BlockSize is 8.
func (s *Speck) BlockSize() int { return SpeckBlockSize }

// Encrypt enciphers the first 8 bytes of src into dst (y, then x, each
// little-endian).
func (s *Speck) Encrypt(dst, src []byte) {
	if len(src) < SpeckBlockSize || len(dst) < SpeckBlockSize {
		panic("mask: Speck: input not a full block")
	}
	binary.LittleEndian.PutUint64(dst, s.Encrypt64(binary.LittleEndian.Uint64(src)))
}

// Decrypt deciphers the first 8 bytes of src into dst.
func (s *Speck) Decrypt(dst, src []byte) {
	if len(src) < SpeckBlockSize || len(dst) < SpeckBlockSize {
		panic("mask: Speck: input not a full block")
	}
	binary.LittleEndian.PutUint64(dst, s.Decrypt64(binary.LittleEndian.Uint64(src)))
}
