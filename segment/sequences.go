package segment

import "context"

// Sequences issues the numbers of segment sequences: dense and increasing
// per tag within one issuer, unique across every issuer of one store. It is
// what the servers take (central.Config.Sequences, rest.Config.Sequences),
// so that a caller can stand another in; *Sequencer implements it.
type Sequences interface {
	// Next returns the next number of tag.
	Next(ctx context.Context, tag string) (int64, error)
	// NextN returns n numbers of tag, increasing.
	NextN(ctx context.Context, tag string, n int) ([]int64, error)
	// Ready is nil while numbers can be issued, else why not (the store is
	// unreachable and buffers ran out).
	Ready() error
}

var _ Sequences = (*Sequencer)(nil)
