// Package validate checks the Kubernetes manifests of deploy/k8s against the
// Kubernetes API types: every document is decoded strictly into its
// k8s.io/api type (an unknown or duplicated field is an error), then checked
// for what vesta needs (probes on /healthz and /readyz, a grace period longer
// than the 10s shutdown, a non-root read-only container with a volume for the
// time guard, a machine-ID provider that gives every pod its own ID, Redis
// with AOF) and for its locks (the token and TLS files from Secrets, probes
// that need neither, NetworkPolicies that admit only labelled clients and
// Prometheus, cert-manager's example issuing the TLS Secret). It is a module
// of its own, so that the product's go.mod does not carry the Kubernetes API;
// scripts/test.sh runs its tests.
package validate
