package mask

import "errors"

// Sentinel errors. Callers test them with errors.Is; the messages of
// returned errors add the details (the text, the slot, the kinds), never
// a secret and never the ID a refused text decoded to.
var (
	// ErrSyntax: text that is not a masked ID: not 13 Crockford base32
	// characters, optionally after a kind prefix ("ord_").
	ErrSyntax = errors.New("mask: not a masked ID")

	// ErrWrongKind: the text's prefix names another kind than the one it
	// is unmasked as (an order mask given as a user's).
	ErrWrongKind = errors.New("mask: a mask of another kind")

	// ErrRetired: the text names a key slot that holds no key: its key
	// was retired (or was never set), so no ID is recovered from it.
	ErrRetired = errors.New("mask: its key slot is retired")

	// ErrImplausible: the text decodes to an ID this deployment cannot
	// have issued (its time ahead of the clock or before mask.not_before,
	// a machine ID outside its method's range, another version or type).
	// It is the answer to a mask of another tenant or kind, of a retired
	// key reused, and to a mistyped or forged text, told apart before any
	// database lookup.
	ErrImplausible = errors.New("mask: not a masked ID of this deployment")

	// ErrNoKeys: masking was asked of an issuer or server that has no key
	// (mask.key_file, VESTA_MASK_KEY_FILE or VESTA_MASK_KEY).
	ErrNoKeys = errors.New("mask: no masking key")

	// ErrKeys: key text or a key that cannot be used (its syntax, a short
	// or repeated secret, a current slot without a key). The message says
	// where, never what the secret is.
	ErrKeys = errors.New("mask: invalid keys")

	// ErrName: a tenant or kind that cannot be used.
	ErrName = errors.New("mask: invalid tenant or kind")

	// ErrCheck: a Check field that cannot be used; the message names it.
	ErrCheck = errors.New("mask: invalid check")
)
