//go:build nemesis

package conf

// EnvNemesisClock names the clock-fault file of a binary built with the
// test-only nemesis tag (cmd/vesta/assemble reads it). Only that build
// knows it: Load skips it there without reading it, and a default build
// refuses it as it refuses any unknown VESTA_* variable, so a test hook is
// never set on a release binary unnoticed.
const EnvNemesisClock = "VESTA_NEMESIS_CLOCK_FILE"

// testHookEnv reports the variables of the build's test hooks, which are
// no keys.
func testHookEnv(name string) bool { return name == EnvNemesisClock }
