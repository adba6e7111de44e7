// Package netnstest makes test hosts out of Linux network namespaces, so
// that integration tests can run servers on addresses of their own and cut
// the network between them for real: a network (New) is a bridge in a
// namespace of its own; each host (Net.Host) is a namespace joined to the
// bridge by a veth pair, with an address of a private test subnet that
// exists only inside the test's namespaces (the bridge has no link to the
// machine's own network, so parallel runs cannot collide, nor reach
// anything else).
//
// A host runs commands inside its namespace (Host.Command, `ip netns exec`)
// and the test dials into it (Host.Dial, from a thread switched into the
// namespace), which reaches the host's loopback too, so a test keeps
// talking to a server while that server is cut off from the others.
// Partitions: Host.Drop (iptables DROP in the host's namespace: silent, the
// peers' packets vanish), Split (two groups of hosts, each dropping the
// other), Host.LinkDown (the veth down: loud, sends fail at once),
// Host.Heal.
//
// Every namespace is named after the test process's pid and removed in
// t.Cleanup, even when the test fails; namespaces left by a killed run
// (whose pid is gone) are removed by the next New. It needs root
// (CAP_NET_ADMIN and CAP_SYS_ADMIN), `ip` (iproute2) and `iptables`, which
// scripts/deps.sh installs; without them a test fails rather than skips, so
// that a CI run lacking them cannot pass unnoticed. Under go test
// -short (package testkit's inner loop) New skips the test.
package netnstest
