// Package mask turns IDs into public texts that hide what they are, and
// back: a keyed permutation of the 64-bit ID, reversible only with the
// key, and a short text for it.
//
// A time-ordered ID tells whoever sees it when it was made, on which
// machine, and how many came before it in its second: two order IDs
// subtracted give a day's volume, a user ID gives a sign-up time, and
// neighbouring IDs can be walked. A mask tells none of this:
//
//	259675389170810880  ->  ord_4yk3wzn2mvgn9
//
// # The permutation
//
// The 64 bits are one block of Speck64/128 (see Speck; its test vectors
// are the designers'), under a key derived with HKDF-SHA256 from the
// deployment's secret, bound to a tenant and a kind of ID: the same ID
// masks differently for each tenant and kind, and a mask of one does not
// unmask as another. The mask is the block's decryption and unmasking its
// encryption: Speck enciphers in three dependent steps a round and
// deciphers in four, and unmasking is the hot path (every request naming
// a mask), masking being done once per ID. Masks of consecutive IDs show
// no order (Spearman's rho over 10^6 of them within ±0.01).
//
// # The text
//
// 13 characters of Crockford's base32 (no I, L, O or U; either case;
// written in lower case) holding 65 bits: the key slot and the 64 masked
// bits; a Masker with a kind writes it as a prefix, "ord_", which its
// Unmask requires to be its own (ErrWrongKind) or absent. Parse and
// Text.String are the text alone, without a key.
//
// # Keys and rotation
//
// Keys holds up to two secrets, in slots 0 and 1, and names the current
// one; a mask's text names its slot, so masks of both stay readable while
// both hold a key. To rotate: put a new secret in the free slot and roll
// it out; make it current and roll that out; once no stored or published
// mask of the old slot is needed, remove its line: its masks are then
// refused (ErrRetired). ParseKeys reads the key text, ReadKeyFile a file
// of it; neither ever prints a secret.
//
// # Refusing what is not a mask
//
// A text carries only one bit more than an ID, so a mistyped, random or
// forged text, or another tenant's mask, decodes to some 64-bit value.
// Unmask refuses it before any lookup when that value is no ID the
// deployment can have issued (Check: a time ahead of the clock or before
// NotBefore, another version or type, a machine ID outside its method's
// range): under vesta serve's defaults 99.6% of random texts (Rejection
// computes the share, which falls as the layout's 34 years fill; a
// NotBefore holds it up, and is needed for the vesta and leaf layouts,
// whose epochs lie further back). What passes is a valid-looking ID that
// the caller's lookup will not find, or will find and must still
// authorize.
//
// # What masking does not do
//
// It hides the ID; it does not sign it. Whoever holds the key (every
// server of the deployment, and any program given the key file) can mask
// any ID, so a mask proves nothing about who made it, and an application
// still checks that the caller may see the row. A client still sees how
// many masks it was given, and when. Texts of one kind share a prefix,
// and texts of one slot their first character's half of the alphabet.
//
// The package imports only the standard library and core.
package mask
