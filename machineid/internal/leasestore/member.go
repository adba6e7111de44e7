package leasestore

import (
	"unicode/utf8"

	"github.com/vesta-go/vesta/core"
)

// Bounds of member records (machineid's member.go): every field is
// clipped when written and read, and a stored record longer than
// MaxMemberBytes is skipped unread, so a listing of the whole machine-ID
// space stays small whatever the store holds.
const (
	MaxMemberBytes = 1024 // a record is ~300 bytes
	MaxHostBytes   = 128
	MaxAddrBytes   = 128
	MaxTextBytes   = 64 // version, provider, range, state, run
)

// RawMember is one member record as a store read it: its machine ID (from
// the key), its value, or why it could not be read.
type RawMember struct {
	Key   string // for notes
	ID    core.MachineID
	Value string
	Skip  string // non-empty: not read, because
}

// Clip cuts s to at most n bytes, on a rune boundary, and drops control
// characters: a record is shown to operators as it is.
func Clip(s string, n int) string {
	clean := true
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if !clean {
		b := make([]rune, 0, len(s))
		for _, r := range s {
			if r >= ' ' && r != 0x7f && r != utf8.RuneError {
				b = append(b, r)
			}
		}
		s = string(b)
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
