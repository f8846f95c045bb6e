#!/usr/bin/env bash
# The archive .krew.yaml points to: the npm package (exactly what `npm pack` ships) with its production
# dependencies installed from the lock file, as package/… in mesh-migrate.tar.gz.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/mesh-migrate.tar.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tarball="$(npm pack --ignore-scripts --pack-destination "$work" --silent)"
tar -xzf "$work/$tarball" -C "$work"
cp package-lock.json "$work/package/"
(cd "$work/package" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent && rm package-lock.json)
tar -czf "$out" -C "$work" package
echo "Wrote $out"
