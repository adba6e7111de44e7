package client

// pieces is a queue of pieces (server replies), each handed out from its
// front without copying: the ID prefetch and the per-tag sequence buffers
// hold their numbers in one. Pushing a piece takes constant time, and
// nothing allocates or copies in proportion to what is buffered, so the
// lock that guards it is never held for long: appending replies to one
// slice instead copied the buffer into a new array under the lock, whose
// allocation's GC assist held callers up to 0.8 ms. It is not safe for
// concurrent use; its owner's lock guards it.
type pieces[T any] struct {
	queue [][]T // queue[0] is never empty
	n     int   // values in queue
}

// push appends a piece; the queue owns it from then on.
func (q *pieces[T]) push(p []T) {
	if len(p) > 0 {
		q.queue = append(q.queue, p)
		q.n += len(p)
	}
}

// take removes and returns up to k values (at least one: q.n > 0) from the
// queue of the first piece. The result is capped, so appending to it copies;
// it shares the piece's array with the values left, which go to later
// takers, disjoint.
func (q *pieces[T]) take(k int) []T {
	p := q.queue[0]
	k = min(k, len(p))
	out := p[:k:k]
	if k == len(p) {
		q.queue[0] = nil
		q.queue = q.queue[1:]
		if len(q.queue) == 0 {
			q.queue = q.queue[:0:0] // let the spent array go
		}
	} else {
		q.queue[0] = p[k:]
	}
	q.n -= k
	return out
}

// first is the length of the first piece (0: empty).
func (q *pieces[T]) first() int {
	if len(q.queue) == 0 {
		return 0
	}
	return len(q.queue[0])
}
