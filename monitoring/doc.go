// Package monitoring holds the monitoring kit of vesta, as files, and the
// tests that keep them true:
//
//   - rules/vesta.rules.yml: Prometheus alert rules (server down, fenced,
//     lease lost, clocks, time guard, ceiling waits, server errors, segment
//     store, client fallback and breakers), unit-tested by tests/vesta.test.yml.
//   - prometheus.yml: Prometheus for the compose fleet of deploy/.
//   - grafana/: a dashboard of every vesta metric, and the provisioning
//     files that load it with its data source.
//   - metrics.txt: the catalogue of metric names, types and labels the kit
//     may query.
//
// The tests run promtool check rules, promtool test rules and promtool check
// config (Debian's prometheus package; scripts/deps.sh installs it), check
// that every alert has a firing and a quiet unit test, that every metric and
// label the rules and the dashboard query is in the catalogue, that the
// catalogue is true to the code, and that every dashboard query parses.
package monitoring
