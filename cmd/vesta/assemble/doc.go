// Package assemble is the wiring of `vesta serve`: it builds the servers
// one configuration runs, in order: the listeners, the machine-ID lease,
// the generator on it, the segment sequences and the central, REST and
// metrics servers. `vesta serve` and the repository's own tools (the load
// generator tools/vesta-bench, the page's browser tests) build their
// servers here, so a benchmark measures the server as it is served.
//
// It sits above every package it wires (conf, central, rest, machineid,
// segment) and below the binary alone: the wiring lives beside the binary,
// and internal/ holds only the small libraries the product packages share.
// It is importable so that the tools, modules of their own, can build the
// same servers; it makes no promise of a stable API to other programs.
//
// The nemesis build tag adds a clock-fault hook (nemesis.go); the default
// build has none.
package assemble
