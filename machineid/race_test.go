//go:build race

package machineid

// raceEnabled: the race detector slows the simulation about sixfold.
const raceEnabled = true
