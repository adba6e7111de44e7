package mask

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/vesta-go/vesta/core"
)

// Config configures a Masker.
type Config struct {
	// Keys are the deployment's secrets; nil does not validate
	// (ErrNoKeys).
	Keys *Keys
	// Tenant binds the masks to one tenant: another tenant's Masker
	// cannot read them. Up to MaxTenantLen bytes of UTF-8 without control
	// characters; "" is the deployment's one tenant.
	Tenant string
	// Kind binds the masks to one kind of ID (orders, users) and is
	// their prefix: masks of kind "ord" read ord_0h3x5cgmc7r2a. 1-16
	// letters and digits, a letter first, without regard to case; ""
	// is no kind and no prefix.
	Kind string
	// Check is what Unmask holds a decoded ID to (see Check).
	Check Check
}

// Masker masks and unmasks the IDs of one tenant and kind: a keyed
// permutation of the 64-bit IDs (Speck64/128 with the key derived for the
// tenant and kind, per slot) and its text. It is immutable and safe for
// concurrent use; Mask, AppendMask and Unmask allocate nothing but Mask's
// string (and an error's).
type Masker struct {
	kind    string // lower case
	tenant  string
	current uint8
	live    [2]bool
	ciphers [2]Speck
	check   *checker
}

// New derives the keys of cfg's tenant and kind and compiles its check.
func New(cfg Config) (*Masker, error) {
	k, err := cfg.Check.compile()
	if err != nil {
		return nil, err
	}
	return newMasker(cfg.Keys, cfg.Tenant, cfg.Kind, k)
}

func newMasker(keys *Keys, tenant, kind string, k *checker) (*Masker, error) {
	if keys == nil {
		return nil, fmt.Errorf("%w: masking needs a key (Config.Keys)", ErrNoKeys)
	}
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	if kind != "" {
		if err := checkKind(kind); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrName, err)
		}
	}
	m := &Masker{kind: strings.ToLower(kind), tenant: tenant, current: keys.current, check: k}
	for slot := range uint8(2) {
		if !keys.Has(int(slot)) {
			continue
		}
		key, err := keys.deriveKey(slot, m.tenant, m.kind)
		if err == nil {
			err = m.ciphers[slot].init(key)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: slot %d: %w", ErrKeys, slot, err)
		}
		m.live[slot] = true
	}
	return m, nil
}

// Kind is the masker's kind, in lower case; "" is none.
func (m *Masker) Kind() string { return m.kind }

// Tenant is the masker's tenant.
func (m *Masker) Tenant() string { return m.tenant }

// Mask returns id's mask: the kind's prefix, if any, and 13 characters.
// Every 64-bit value has one, and Unmask (with Check.Off, or for an ID
// that passes the check) returns it.
func (m *Masker) Mask(id core.ID) string {
	var buf [MaxKindLen + 1 + TextLen]byte
	return string(m.AppendMask(buf[:0], id))
}

// AppendMask appends id's mask to dst.
func (m *Masker) AppendMask(dst []byte, id core.ID) []byte {
	if m.kind != "" {
		dst = append(append(dst, m.kind...), '_')
	}
	return appendBits(dst, m.current, m.ciphers[m.current].Decrypt64(uint64(id)))
}

// Unmask returns the ID whose mask text is, or why it is none:
// ErrSyntax (not a mask), ErrWrongKind (its prefix names another kind),
// ErrRetired (its slot holds no key) or ErrImplausible (it decodes to an
// ID this deployment cannot have issued: another tenant's or kind's mask,
// a retired key's reused, a mistyped or forged text). A text without its
// prefix is read as of the masker's kind.
func (m *Masker) Unmask(text string) (core.ID, error) {
	// The fast path: 13 characters, or the masker's own prefix and 13.
	s := text
	if n := len(m.kind); len(s) == n+1+TextLen && s[n] == '_' && strings.EqualFold(s[:n], m.kind) {
		s = s[n+1:]
	}
	if len(s) != TextLen {
		return m.unmaskSlow(text)
	}
	v, c0, bad := decodeBits(s)
	if bad&0xe0 != 0 {
		return m.unmaskSlow(text)
	}
	slot := c0 >> 4 & 1
	if !m.live[slot] {
		return 0, m.retired(text, slot)
	}
	id := core.ID(m.ciphers[slot].Encrypt64(uint64(c0&15)<<60 | v))
	if why := m.check.check(id); why != "" {
		return 0, m.implausible(text, why)
	}
	return id, nil
}

// unmaskSlow is Unmask for the texts the fast path does not read: it
// finds what is wrong with them (or reads a text of another kind's prefix
// as such).
func (m *Masker) unmaskSlow(text string) (core.ID, error) {
	t, err := Parse(text)
	if err != nil {
		return 0, err
	}
	if t.Kind != "" && !strings.EqualFold(t.Kind, m.kind) {
		return 0, m.wrongKind(text, t.Kind)
	}
	if !m.live[t.Slot] {
		return 0, m.retired(text, t.Slot)
	}
	id := core.ID(m.ciphers[t.Slot].Encrypt64(t.Bits))
	if why := m.check.check(id); why != "" {
		return 0, m.implausible(text, why)
	}
	return id, nil
}

func (m *Masker) retired(text string, slot uint8) error {
	return fmt.Errorf("%w: %q is a mask of key slot %d, which holds no key", ErrRetired, clip(text), slot)
}

func (m *Masker) wrongKind(text, kind string) error {
	if m.kind == "" {
		return fmt.Errorf("%w: %q is a mask of kind %q; this masker has no kind", ErrWrongKind, clip(text), strings.ToLower(kind))
	}
	return fmt.Errorf("%w: %q is a mask of kind %q, not %q", ErrWrongKind, clip(text), strings.ToLower(kind), m.kind)
}

func (m *Masker) implausible(text, why string) error {
	return fmt.Errorf("%w: %q is no mask of tenant %q, kind %q under the keys held (%s): another tenant's or kind's, a retired key's, or mistyped",
		ErrImplausible, clip(text), clip(m.tenant), m.kind, why)
}

// Rejection is the share of random 13-character texts Unmask refuses
// now: those of a slot without a key, and those whose decoded ID the
// check refuses (their IDs are as good as random). A text of another
// tenant or kind without its prefix is refused as often. It falls as the
// layout's time fills (NotBefore holds it up).
func (m *Masker) Rejection() float64 { return rejection(m.check, m.live[0], m.live[1]) }

func rejection(k *checker, live ...bool) float64 {
	n := 0
	for _, l := range live {
		if l {
			n++
		}
	}
	return 1 - k.accepted()*float64(n)/2
}

// Maskers are the Maskers of one deployment's keys and check, by tenant
// and kind, made on first use: what a server holds to mask for any
// caller. The number kept is bounded, so callers naming ever new tenants
// cost derivations, not memory.
type Maskers struct {
	keys  *Keys
	check *checker
	mu    sync.Mutex
	byKey map[[2]string]*Masker
}

// maxMaskers bounds Maskers' cache; past it an entry is dropped.
const maxMaskers = 4096

// NewMaskers compiles check for keys.
func NewMaskers(keys *Keys, check Check) (*Maskers, error) {
	if keys == nil {
		return nil, fmt.Errorf("%w: masking needs a key", ErrNoKeys)
	}
	k, err := check.compile()
	if err != nil {
		return nil, err
	}
	return &Maskers{keys: keys, check: k, byKey: map[[2]string]*Masker{}}, nil
}

// Masker returns the Masker of tenant and kind.
func (ms *Maskers) Masker(tenant, kind string) (*Masker, error) {
	key := [2]string{tenant, strings.ToLower(kind)}
	ms.mu.Lock()
	m := ms.byKey[key]
	ms.mu.Unlock()
	if m != nil {
		return m, nil
	}
	m, err := newMasker(ms.keys, tenant, kind, ms.check)
	if err != nil {
		return nil, err
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if len(ms.byKey) >= maxMaskers {
		for k := range ms.byKey { // a random one
			delete(ms.byKey, k)
			break
		}
	}
	ms.byKey[key] = m
	return m, nil
}

// Keys are the keys the Maskers use.
func (ms *Maskers) Keys() *Keys { return ms.keys }

// Rejection is Masker.Rejection, the same for every tenant and kind.
func (ms *Maskers) Rejection() float64 { return rejection(ms.check, ms.keys.Has(0), ms.keys.Has(1)) }

// RejectionText formats a rejection share as a percentage to the tenth
// that never rounds up to 100%.
func RejectionText(r float64) string {
	p := math.Floor(r*1000) / 10
	return fmt.Sprintf("%.1f%%", p)
}
