// Package deploy holds the deploy kit of vesta serve, as files, and the tests
// that keep them true:
//
//   - Containerfile and rootfs/: a minimal image FROM scratch (the static
//     binary, CA certificates, user 65532, /etc/vesta/vesta.yaml); built by
//     scripts/image.sh (make image) with podman or docker, no registry needed.
//   - k8s/: a StatefulSet fleet on the k8s machine-ID provider, its Services,
//     ConfigMap, PodDisruptionBudget and NetworkPolicy, locked (REST's token
//     and RPC's mutual TLS from Secrets), and Redis with AOF;
//     k8s/cert-manager issues the TLS Secret; tools/k8svalidate, a module of
//     its own, decodes them strictly into the Kubernetes API types.
//   - systemd/vesta.service: a sandboxed unit (DynamicUser, ProtectSystem=strict,
//     StateDirectory for the time guard).
//   - compose.yaml: a local fleet of three servers on Redis leases, REST's
//     token from the secret file secrets/vesta-token; compose.monitoring.yaml
//     adds Prometheus and Grafana from monitoring/.
//
// docs/deploy.md is the kit's manual, and the tests run its commands as
// written (only names, the image's tag and free host ports substituted):
// they build the image with podman and run the doc's podman block, run its
// podman-compose lines against a recorder standing in for podman, verify
// the unit with make systemd-verify, and load every configuration the kit
// ships with package conf, so that an unknown key or variable fails here,
// not in a rollout. The tests need podman, runc, podman-compose and
// systemd-analyze (scripts/deps.sh installs them) and fail without them.
package deploy
