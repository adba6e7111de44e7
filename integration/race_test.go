//go:build race

package integration_test

// raceEnabled: the tests run with -race, and so does the vesta binary they
// build.
const raceEnabled = true
