#!/usr/bin/env bash
# Installs the programs the tests start for real, when they are missing:
# redis-server (machine-ID leases, segment/redisstore), redis-sentinel
# (failover of a Redis that lost acknowledged writes), iptables (silent
# network partitions of the integration tests' hosts in network namespaces;
# `ip` comes with iproute2), Debian's chromium (the REST page's browser
# test), python3-msgpack (a MessagePack-RPC client in another language),
# nodejs and npm (the README's Node client; npm installs its msgpack package),
# mariadb-server (segment/mysqlstore, through internal/testkit/mariadbtest),
# etcd-server (etcd, the clusters of internal/testkit/etcdtest), faketime
# (libfaketime: the nemesis steps a Redis's clock with it), and for the deploy
# and monitoring kits podman with runc (the image test), podman-compose and
# the CNI dnsname plugin (the compose kit's fleet, with Debian's 1.0.x),
# systemd-analyze (the unit's check) and promtool (the alert rules; Debian's
# prometheus package); wrk (make bench-compare's HTTP load generator).
# Idempotent; run by scripts/test.sh before the tests.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v iptables >/dev/null 2>&1 || need+=(iptables) # also how podman publishes ports
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
/usr/bin/python3 -c 'import msgpack' >/dev/null 2>&1 || need+=(python3-msgpack)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v podman-compose >/dev/null 2>&1 || need+=(podman-compose)
# Compose's service names (redis) resolve on podman's CNI networks only with
# the dnsname plugin.
[ -x /usr/lib/cni/dnsname ] || need+=(golang-github-containernetworking-plugin-dnsname)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 || need+=(mariadb-server)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || need+=(faketime)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
[ ${#need[@]} -eq 0 ] && exit 0

echo "== installing ${need[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null || true
$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
# The tests start their own redis-server and redis-sentinel on free ports;
# the packages' services on 6379 and 26379 are not needed.
if [ -x /usr/sbin/service ]; then
  for svc in redis-server redis-sentinel; do
    if [[ " ${need[*]} " == *" $svc "* ]]; then
      $sudo service "$svc" stop >/dev/null 2>&1 || true
    fi
  done
fi
# Nor is the prometheus package's server: the tests use its promtool.
if [ -x /usr/sbin/service ] && [[ " ${need[*]} " == *" prometheus "* ]]; then
  $sudo service prometheus stop >/dev/null 2>&1 || true
fi
# Likewise the tests start their own mariadbd in a temporary directory; the
# service the package may have started on 3306 is stopped.
if [ -x /usr/sbin/service ] && [[ " ${need[*]} " == *" mariadb-server "* ]]; then
  $sudo service mariadb stop >/dev/null 2>&1 || true
fi
# And their own etcd members on free ports; the package's etcd on 2379 and
# 2380 is stopped too.
if [ -x /usr/sbin/service ] && [[ " ${need[*]} " == *" etcd-server "* ]]; then
  $sudo service etcd stop >/dev/null 2>&1 || true
fi
