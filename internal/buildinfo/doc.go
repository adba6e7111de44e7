// Package buildinfo says which build of vesta is running: the version
// stamped at build time (make build, the image) or the module's own, and
// the VCS revision Go recorded. vesta version, the start-up log, GET
// /v1/info, the operator's page, the fleet records in the lease store and
// the vesta_build_info metric (package prommetrics) all read it here, so
// they never disagree.
package buildinfo
