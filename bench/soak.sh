#!/bin/bash
# Soak: ebzipd under a mixed load for SOAK_SECONDS, sampling its resident
# memory, the GPU memory in use and the bytes it holds every SAMPLE_SECONDS
# (issue #4: host and device memory must stay flat under overload).
#
# usage: bench/soak.sh [BUILD_DIR]          (default: build/)
#
# Three loads run side by side, each in a loop until the time is up:
#   small   256 KiB round trips from 32 streams, REL 1e-4 (batched)
#   large   64 MiB round trips from 4 streams, ABS 1e-2 (streamed frame by frame)
#   tight   4 MiB round trips from 8 streams with a 20 ms deadline (many
#           DEADLINE_EXCEEDED: calls that end while queued or running)
# and the server's byte budget is set below what they ask for at once, so
# admission refuses some (RESOURCE_EXHAUSTED): the overload the issue means.
# Prints one line per sample and a verdict on the drift between the first
# sample after warm-up and the last; the CSV goes to $OUT/soak.csv (or the
# work directory).
#
# Environment: EBZIP_RUN, EBZIP_BACKEND as bench/service_bench.sh;
#   SOAK_SECONDS (600), SAMPLE_SECONDS (15), WARMUP_SECONDS (60),
#   EBZIPD_FLAGS (more ebzipd flags).
set -euo pipefail
build=${1:-build}
backend=${EBZIP_BACKEND:-auto}
soak=${SOAK_SECONDS:-600}
every=${SAMPLE_SECONDS:-15}
warmup=${WARMUP_SECONDS:-60}
read -r -a extra_server <<< "${EBZIPD_FLAGS:-}"
# shellcheck source=bench/binaries.sh
source "$(dirname "$0")/binaries.sh"
find_binaries "$build"
PY=$(command -v python3)
work=$(mktemp -d)
csv=${OUT:-$work}/soak.csv
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"${ebzipd[@]}" --listen 127.0.0.1:0 --metrics_listen 127.0.0.1:0 --backend "$backend" \
  --max_queued_bytes $((1536 << 20)) "${extra_server[@]}" 2> "$work/ebzipd.log" &
server=$!
pids+=("$server")
read -r port mport < <("$PY" - "$work/ebzipd.log" <<'PYEOF'
import json, sys, time
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    for line in open(sys.argv[1]):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if "metrics_port" in e:
            print(e["port"], e["metrics_port"]); sys.exit(0)
    time.sleep(0.1)
sys.exit("ebzipd did not start")
PYEOF
)
# The process whose memory counts: the launcher may exec or fork ebzipd.
pid=$(pgrep -n -f "ebzipd --listen 127.0.0.1:0" || echo "$server")
echo "ebzipd pid $pid on :$port (metrics :$mport), backend $backend, ${soak}s"

loop() {  # NAME ARGS...: ebzip_load in a loop until the soak ends
  local name=$1
  shift
  while :; do
    "${load[@]}" --server "127.0.0.1:$port" --method both "$@" >> "$work/$name.log" 2>&1 || true
  done
}
loop small --array_bytes $((256 << 10)) --streams 32 --requests 20000 &
pids+=($!)
loop large --array_bytes $((64 << 20)) --streams 4 --requests 16 --abs 1e-2 &
pids+=($!)
loop tight --array_bytes $((4 << 20)) --streams 8 --requests 400 --timeout_s 0.02 &
pids+=($!)

echo "seconds,rss_mib,gpu_used_mib,held_mib,requests,not_ok" > "$csv"
start=$(date +%s)
while (( $(date +%s) - start < soak )); do
  sleep "$every"
  rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
  gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1 || true)
  read -r held total bad < <(curl -s "127.0.0.1:$mport/metrics" | "$PY" -c '
import sys
held = total = bad = 0.0
for line in sys.stdin:
    if line.startswith("ebzip_queued_bytes "):
        held = float(line.split()[1])
    elif line.startswith("ebzip_requests_total{"):
        v = float(line.split()[-1]); total += v
        if "code=\"OK\"" not in line: bad += v
print(round(held / 2**20), int(total), int(bad))')
  line="$(( $(date +%s) - start )),$rss,${gpu:-0},$held,$total,$bad"
  echo "$line" >> "$csv"
  echo "$line"
done

"$PY" - "$csv" "$warmup" <<'PYEOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
warm = [r for r in rows if int(r["seconds"]) >= int(sys.argv[2])] or rows
first, last = warm[0], warm[-1]
peak_rss = max(int(r["rss_mib"]) for r in warm)
print(f"after warm-up: RSS {first['rss_mib']} -> {last['rss_mib']} MiB (peak {peak_rss}), "
      f"GPU {first['gpu_used_mib']} -> {last['gpu_used_mib']} MiB, "
      f"requests {last['requests']} ({last['not_ok']} not OK)")
PYEOF
echo "codes: $(curl -s "127.0.0.1:$mport/metrics" | grep '^ebzip_requests_total' | sed 's/ebzip_requests_total//' | tr '\n' ' ')"
