package mask

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Keys are a deployment's masking secrets: one per key slot (0 and 1),
// and the slot new masks are made with. A text names its slot, so masks
// of both slots are read while both hold a key: a new secret goes in the
// free slot, becomes current, and the old one is retired (its line
// removed) once no stored or published mask needs it. Keys are immutable
// and never print their secrets.
//
// The key of one tenant and kind is derived from its slot's secret with
// HKDF-SHA256 (RFC 5869), its info naming the slot, the tenant and the
// kind, length-prefixed; see deriveKey.
type Keys struct {
	secrets [2][]byte // nil: the slot holds no key (retired)
	current uint8
}

// MinSecretLen is the shortest secret taken, in bytes: the cipher's key
// size. 32 random bytes are recommended (openssl rand -base64 32).
const MinSecretLen = 16

// maxKeyText bounds a key text: a path mistyped to a large file fails.
const maxKeyText = 64 << 10

// ParseKeys reads key text: one line per slot, "slot N SECRET" with N 0
// or 1 and SECRET base64 (standard alphabet, padded or not) of at least
// MinSecretLen bytes, and "current N" naming the slot new masks use,
// which may be left out when one slot is set. Lines may also be separated
// by ";" (an environment variable); blank lines and lines starting with
// "#" are skipped. A slot set twice, the same secret in both slots, or a
// current slot without a key is refused. Errors name the line, never its
// secret.
//
//	# vesta masking keys
//	slot 0 3q2+7w2hGZ7dBw1TdtvO3YQq5xQe0u1wqM8tKJ9dRzI=
//	slot 1 Tq6kR0m1pW5f0cG9b2C3v8nYhJ4sX7aZ1eD6uL0oQ2k=
//	current 1
func ParseKeys(text string) (*Keys, error) {
	if len(text) > maxKeyText {
		return nil, fmt.Errorf("%w: %d bytes; want the few lines of a key text", ErrKeys, len(text))
	}
	k := &Keys{}
	current := -1
	for i, line := range strings.Split(strings.ReplaceAll(text, ";", "\n"), "\n") {
		n := i + 1
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "slot" && len(f) == 3:
			slot, err := parseSlot(f[1])
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrKeys, n, err)
			}
			if k.secrets[slot] != nil {
				return nil, fmt.Errorf("%w: line %d: slot %d set twice", ErrKeys, n, slot)
			}
			secret, err := decodeSecret(f[2])
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: slot %d: %v", ErrKeys, n, slot, err)
			}
			k.secrets[slot] = secret
		case f[0] == "current" && len(f) == 2:
			slot, err := parseSlot(f[1])
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrKeys, n, err)
			}
			if current >= 0 {
				return nil, fmt.Errorf("%w: line %d: current given twice", ErrKeys, n)
			}
			current = int(slot)
		default:
			// The line may hold a secret: its first word is shown only
			// when it reads as a mistyped keyword.
			if w := f[0]; len(w) <= 12 && strings.Trim(strings.ToLower(w), "abcdefghijklmnopqrstuvwxyz") == "" {
				return nil, fmt.Errorf(`%w: line %d begins %q; want "slot N SECRET" or "current N"`, ErrKeys, n, w)
			}
			return nil, fmt.Errorf(`%w: line %d does not begin with slot or current (its text not shown); want "slot N SECRET" or "current N"`, ErrKeys, n)
		}
	}
	return newKeys(current, k.secrets)
}

// NewKeys returns the keys of two slots, nil for a slot without one, with
// current the slot new masks use (-1: the one slot set).
func NewKeys(current int, slot0, slot1 []byte) (*Keys, error) {
	secrets := [2][]byte{bytes.Clone(slot0), bytes.Clone(slot1)}
	for slot, s := range secrets {
		if s != nil && len(s) < MinSecretLen {
			return nil, fmt.Errorf("%w: slot %d: %d bytes; want at least %d (32 random bytes recommended)", ErrKeys, slot, len(s), MinSecretLen)
		}
	}
	return newKeys(current, secrets)
}

func newKeys(current int, secrets [2][]byte) (*Keys, error) {
	switch {
	case secrets[0] == nil && secrets[1] == nil:
		return nil, fmt.Errorf(`%w: no slot holds a key; want a line "slot 0 SECRET"`, ErrKeys)
	case secrets[0] != nil && secrets[1] != nil && subtle.ConstantTimeCompare(secrets[0], secrets[1]) == 1:
		return nil, fmt.Errorf("%w: slots 0 and 1 hold the same secret: a rotation needs a new one", ErrKeys)
	case current < 0 && secrets[0] != nil && secrets[1] != nil:
		return nil, fmt.Errorf(`%w: both slots hold a key; want a line "current N" naming the one new masks use`, ErrKeys)
	case current < 0 && secrets[0] != nil:
		current = 0
	case current < 0:
		current = 1
	case current > 1:
		return nil, fmt.Errorf("%w: current slot %d; want 0 or 1", ErrKeys, current)
	case secrets[current] == nil:
		return nil, fmt.Errorf("%w: current slot %d holds no key", ErrKeys, current)
	}
	return &Keys{secrets: secrets, current: uint8(current)}, nil
}

// ReadKeyFile reads the key text of a file (ParseKeys).
func ReadKeyFile(path string) (*Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeys, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyText+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKeys, path, err)
	}
	k, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

func parseSlot(s string) (uint8, error) {
	switch s {
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	}
	return 0, fmt.Errorf("slot %q; want 0 or 1", clip(s))
}

func decodeSecret(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(s)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("the secret is not base64 (value not shown)")
	case len(b) < MinSecretLen:
		return nil, fmt.Errorf("the secret is %d bytes; want at least %d (32 random bytes recommended: openssl rand -base64 32)", len(b), MinSecretLen)
	}
	return b, nil
}

// Current is the slot new masks use.
func (k *Keys) Current() int { return int(k.current) }

// Has reports whether slot holds a key; a text of a slot without one is
// refused with ErrRetired.
func (k *Keys) Has(slot int) bool { return slot >= 0 && slot < 2 && k.secrets[slot] != nil }

// String names the slots, never a secret: "slots 0 and 1, current 1".
func (k *Keys) String() string {
	if k == nil {
		return "no keys"
	}
	if k.Has(0) && k.Has(1) {
		return "slots 0 and 1, current " + strconv.Itoa(k.Current())
	}
	return "slot " + strconv.Itoa(k.Current()) + " only"
}

// GoString hides the secrets from %#v too.
func (k *Keys) GoString() string { return "mask.Keys{" + k.String() + "}" }

// deriveKey returns the cipher key of (slot, tenant, kind): HKDF-SHA256
// of the slot's secret, no salt, the info a fixed label and the three
// values, each length-prefixed so that no two triples share an info.
func (k *Keys) deriveKey(slot uint8, tenant, kind string) ([]byte, error) {
	info := "vesta mask v1 slot " + strconv.Itoa(int(slot)) +
		" tenant " + strconv.Itoa(len(tenant)) + ":" + tenant +
		" kind " + strconv.Itoa(len(kind)) + ":" + kind
	return hkdf.Key(sha256.New, k.secrets[slot], nil, info, SpeckKeySize)
}

// MaxTenantLen bounds a tenant's length in bytes.
const MaxTenantLen = 128

// checkTenant: up to MaxTenantLen bytes of UTF-8 without control
// characters; "" is the deployment's one tenant.
func checkTenant(t string) error {
	if len(t) > MaxTenantLen || !utf8.ValidString(t) || strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: tenant %q: want up to %d bytes of UTF-8 without control characters", ErrName, clip(t), MaxTenantLen)
	}
	return nil
}
