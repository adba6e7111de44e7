//go:build race

package mask_test

// raceEnabled: the race detector makes each memory access dozens of times
// slower, and the statistical tests' loops have no goroutines to race:
// under it they run a tenth of their counts (said in their logs); the
// full counts are the runs without -race.
const raceEnabled = true
