//go:build unix

package core

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock. The lock belongs to the
// open file description, so it ends when the file is closed or the process
// dies, however it dies.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// noFollow makes opening the lock file fail on a symlink.
const noFollow = syscall.O_NOFOLLOW

// modesMatter: Unix modes decide who may open the guard's files.
const modesMatter = true
