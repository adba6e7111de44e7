#!/usr/bin/env bash
# Installs the programs the tests start for real, when they are missing:
# redis-server (machine-ID leases, segment/redisstore), Debian's chromium
# (the REST page's browser test), python3-msgpack (a MessagePack-RPC client
# in another language) and mariadb-server (segment/mysqlstore, through
# internal/mariadbtest). Idempotent; run by scripts/test.sh before the tests.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
/usr/bin/python3 -c 'import msgpack' >/dev/null 2>&1 || need+=(python3-msgpack)
{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 || need+=(mariadb-server)
[ ${#need[@]} -eq 0 ] && exit 0

echo "== installing ${need[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null || true
$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
# The tests start their own redis-server on a free port; the package's
# service on 6379 is not needed.
if [ -x /usr/sbin/service ] && [[ " ${need[*]} " == *" redis-server "* ]]; then
  $sudo service redis-server stop >/dev/null 2>&1 || true
fi
# Likewise the tests start their own mariadbd in a temporary directory; the
# service the package may have started on 3306 is stopped.
if [ -x /usr/sbin/service ] && [[ " ${need[*]} " == *" mariadb-server "* ]]; then
  $sudo service mariadb stop >/dev/null 2>&1 || true
fi
