package rest

import (
	"net/textproto"
	"testing"
)

// The header keys read with first (no canonicalizing) are in the
// canonical form net/http stores them under, or they would never match.
func TestFirstKeysCanonical(t *testing.T) {
	for _, k := range []string{"Sec-Fetch-Site", ClientHeader, "User-Agent", "Origin"} {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("%q is stored as %q", k, c)
		}
	}
}
