#!/bin/bash
# Regions through the service (issue 25): an archive on the server, under
# ebzipd --archive_root, decompressed whole and as regions with
# `ebzip decompress --server ADDR --remote_path NAME [--region R]`; prints
# each region's time as a fraction of the whole remote decompression's.
#
# usage: bench/region_service_bench.sh [BUILD_DIR] [GIB]   (build/, 1)
#
# The field: a smooth float32 cube of GIB GiB (N^3), compressed locally at
# REL 1e-4 with the default options. Regions: one index of dimension 0, and
# a box of 1 % of the array (each side N * 0.215, starting at N * 0.26).
# Times are medians of REPEATS (default 3) runs of the whole command, the
# output file written included. Environment: EBZIP_BACKEND (ebzipd
# --backend, default auto), PY (a python3 with numpy; default Debian's).
set -euo pipefail
build=${1:-build}
gib=${2:-1}
repeats=${REPEATS:-3}
backend=${EBZIP_BACKEND:-auto}
PY=${PY:-/usr/bin/python3}
work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2> /dev/null && wait "$server_pid" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/root"

n=$("$PY" -c "print(int(round(($gib * 2**30 / 4) ** (1 / 3))))")
echo "== ebzip regions through the service: ${n}^3 float32 ($((n * n * n * 4)) B), backend $backend"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git log -1 --format=%h 2> /dev/null || echo unknown), $(nproc) CPUs"
"$PY" - "$n" "$work/field.raw" <<'PYEOF'
import sys
import numpy as np
n, path = int(sys.argv[1]), sys.argv[2]
i = np.arange(n, dtype=np.float64)
with open(path, "wb") as out:
    for z in range(n):  # a plane at a time: bounded memory
        a = (z * n + i)[:, None] * n + i[None, :]
        b = i[None, :] + 0 * i[:, None]
        out.write((np.sin(0.05 * a / n) * np.cos(1e-2 * b) + 1e-3 * np.sin(a / n)).astype("<f4").tobytes())
PYEOF
"$build/client/cli/ebzip" compress --type f32 --shape "$n,$n,$n" --rel 1e-4 "$work/field.raw" \
    -o "$work/root/field.ebz" --quiet
rm -f "$work/field.raw"
echo "archive: $(stat -c %s "$work/root/field.ebz") B"

"$build/server/ebzipd" --listen 127.0.0.1:0 --metrics_listen "" --backend "$backend" \
    --archive_root "$work/root" --max_output_bytes $((64 << 30)) 2> "$work/ebzipd.log" &
server_pid=$!
port=
for _ in $(seq 1 300); do
  port=$("$PY" -c '
import json, sys
for line in open(sys.argv[1]):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("msg") == "ebzipd serving": print(e["port"]); break
' "$work/ebzipd.log" 2> /dev/null || true)
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { cat "$work/ebzipd.log" >&2; exit 1; }

# NAME [REGION]: the median seconds of the command.
median_time() {
  local name=$1 region=${2:-}
  local times=()
  for _ in $(seq 1 "$repeats"); do
    local t0 t1
    t0=$(date +%s%N)
    "$build/client/cli/ebzip" decompress --server "127.0.0.1:$port" --remote_path field.ebz \
        ${region:+--region "$region"} -o "$work/out.raw" -f --quiet
    t1=$(date +%s%N)
    times+=("$("$PY" -c "print(($t1 - $t0) / 1e9)")")
  done
  printf '%s\n' "${times[@]}" | sort -g | sed -n "$(((repeats + 1) / 2))p"
}

full=$(median_time full)
echo "whole array: $full s"
lo=$((n * 26 / 100)); hi=$((lo + n * 215 / 1000))
for spec in "one index of dimension 0|$((n / 2)),:,:" "box of 1 %|$lo:$hi,$lo:$hi,$lo:$hi"; do
  name=${spec%%|*}; region=${spec#*|}
  t=$(median_time "$name" "$region")
  bytes=$(stat -c %s "$work/out.raw")
  echo "region $name [$region]: $t s, $bytes B, $("$PY" -c "print(f'{100 * $t / $full:.2f}')") % of the whole array's time"
done
