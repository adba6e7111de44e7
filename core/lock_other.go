//go:build !unix

package core

import "os"

// lockFile is a no-op where flock does not exist: the mark still works, only
// the guard against two processes sharing a directory is missing.
func lockFile(*os.File) error { return nil }

// noFollow is zero where the flag does not exist.
const noFollow = 0

// modesMatter is false where file modes are not Unix permissions.
const modesMatter = false
