//go:build !unix

package connlimit

import "math"

// fdLimit: no descriptor limit is known here.
func fdLimit() (limit, open int, err error) { return math.MaxInt, 0, nil }
