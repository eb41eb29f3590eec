#!/usr/bin/env bash
# The main job for now: compress a real field (ETOPO5 relief, from Debian's
# ferret-datasets) at several bounds, decompress it, and show ratio and error.
set -euo pipefail
build=${1:-build}
ebzip="$build/client/cli/ebzip"
field=/usr/share/ferret-vis/data/etopo5.cdf:ROSE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build/bench/ebzip_export_field" "$field" "$work/etopo5.raw" >/dev/null
for rel in 1e-2 1e-3 1e-4 1e-5; do
  echo "== REL $rel"
  "$ebzip" compress --rel "$rel" "$field" -o "$work/etopo5.ebz" -f
  "$ebzip" decompress "$work/etopo5.ebz" -o "$work/etopo5.out" --quiet -f
  bound=$("$ebzip" info "$work/etopo5.ebz" | awk '/^error bound/ {print $NF}')
  "$ebzip" compare --type f32 "$work/etopo5.raw" "$work/etopo5.out" --abs "$bound"
done
echo "== what the archive at REL 1e-5 holds"
"$ebzip" info "$work/etopo5.ebz"
