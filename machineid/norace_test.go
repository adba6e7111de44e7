//go:build !race

package machineid

const raceEnabled = false
