//go:build unix

package connlimit

import (
	"math"
	"os"
	"syscall"
)

// fdLimit returns RLIMIT_NOFILE's soft limit and the descriptors open.
func fdLimit() (limit, open int, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return math.MaxInt, 0, err
	}
	limit = math.MaxInt
	if rl.Cur < uint64(math.MaxInt) {
		limit = int(rl.Cur)
	}
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if fds, err := os.ReadDir(dir); err == nil {
			return limit, len(fds) - 1, nil // less the directory read
		}
	}
	return limit, 0, nil
}
