//go:build !race

package mask_test

const raceEnabled = false
