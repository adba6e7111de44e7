#!/usr/bin/env bash
# Checks deploy/systemd/vesta.service with systemd's own parser, from a clean
# checkout: `make systemd-verify`, and the unit test of package deploy.
# Usage: scripts/systemd-verify.sh [UNIT] (default deploy/systemd/vesta.service).
#
# systemd-analyze verify fails on an ExecStart binary that is not installed,
# so vesta is built into a temporary directory and a copy of the unit, its
# /usr/local/bin/vesta pointed there, is verified (no build for a unit that
# does not run it). systemd-analyze reports
# unknown keys and bad values as warnings with exit status 0: any line that
# names the unit fails here.
set -euo pipefail
cd "$(dirname "$0")/.."

unit=${1:-deploy/systemd/vesta.service}
GO=${GO:-go}
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-verify: systemd-analyze not found (Debian's systemd package; scripts/deps.sh installs it)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if grep -qF /usr/local/bin/vesta "$unit"; then
  $GO build -o "$tmp/vesta" ./cmd/vesta
fi
name=$(basename "$unit")
sed "s|/usr/local/bin/vesta|$tmp/vesta|g" "$unit" >"$tmp/$name"
out=$(systemd-analyze verify "$tmp/$name" 2>&1) || { echo "$out" >&2; exit 1; }
if grep -F "$name" <<<"$out" >&2; then
  echo "systemd-verify: $unit has the warnings above" >&2
  exit 1
fi
echo "systemd-verify: $unit ok"
